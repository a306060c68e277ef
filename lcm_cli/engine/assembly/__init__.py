"""Context assembly: what the model sees each turn."""
