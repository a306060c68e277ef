"""Reading OpenClaw session transcripts: JSONL files and the host's SQLite session stores.

Used by session (bootstrap, ingest, the append-only fast path), maintenance (rotate) and
migrate; see :mod:`lcm_cli.engine.transcript.reader` for the reader's steps.
"""
