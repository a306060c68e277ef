"""Summarizers: one interface, an offline extractive default, an OpenAI-compatible client.

Modules: ``base`` (request, protocols, errors) · ``factory`` (``build_summarizer``,
``build_chat_model``) · ``escalation`` (``summarize_with_escalation``,
``compaction_fallback``) · ``extractive`` · ``openai_compat`` · ``fallback`` (deterministic
fallbacks, emergency summarizer) · ``sanitize`` (reasoning and directive hygiene,
truncation) · ``guards`` (circuit breaker, spend guard) · ``prompts`` and ``prompt_ops``
(templates and `lcm prompts`). Nothing is imported here, so importing one module stays cheap.
"""
