"""Reading OpenClaw session transcripts: JSONL files and the host's SQLite session stores."""
