"""The host's session lifecycle: ingest, bootstrap, turns, and session operations."""
