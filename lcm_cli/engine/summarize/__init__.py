"""Summarizers: one interface (`base`), an offline extractive default, an OpenAI-compatible client."""
