"""Read operations: status, conversations, messages and summaries."""
