"""Compaction: folding messages into the summary DAG, and its operations."""
