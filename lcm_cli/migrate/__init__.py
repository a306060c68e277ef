"""Reading OpenClaw session transcripts and importing them (a later issue)."""
