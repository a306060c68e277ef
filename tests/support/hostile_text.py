"""Stored text that talks to a terminal: every C0 and C1 control and the common escapes.

:func:`poison` writes it into the messages, summaries, session keys, titles and file paths
of a copy of ``examples/openclaw``, as an agent or a tool could have stored it.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

C0 = "".join(chr(code) for code in range(0x20))
C1 = "".join(chr(code) for code in range(0x80, 0xA0))
ESCAPES = (
    "\x1b[2J\x1b[H",  # CSI: clear the screen, cursor home
    "\x1b]52;c;aGVsbG8=\x07",  # OSC 52: write the clipboard
    "\x1b]8;;https://evil.example/\x1b\\link\x1b]8;;\x1b\\",  # OSC 8: a hyperlink
    "\x1bP1$r0m\x1b\\",  # DCS
    "\x9b31m",  # a bare C1 CSI
    "ab\x08\x08",  # backspace
    "over\rwrite",  # carriage return
    "\x07\x7f",  # BEL, DEL
)
NASTY = "evil " + "".join(ESCAPES) + C0 + "\x7f" + C1 + " end"
# What no renderer for people may print: every control but the layout's TAB and LF.
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
KEY = "agent:main:" + NASTY.replace("\x00", "")  # argv cannot carry NUL; the database can
SUMMARY = "sum_1b2c3d4e5f607182"
FILE_ID = "file_0123456789abcdef"


def poison(state_dir: Path) -> None:
    """Put :data:`NASTY` into every kind of stored text of conversation 2 of ``state_dir/lcm.db``."""
    conn = sqlite3.connect(state_dir / "lcm.db")
    with conn:
        conn.execute(
            "UPDATE conversations SET session_key = ?, title = ? WHERE conversation_id = 2", (KEY, NASTY)
        )
        conn.execute("UPDATE messages SET content = ? || content WHERE conversation_id = 2", (NASTY + "\n",))
        conn.execute("UPDATE message_parts SET text_content = ? || text_content", (NASTY,))
        conn.execute("UPDATE summaries SET content = ? || content", (NASTY + "\n",))
        conn.execute(
            "UPDATE conversation_bootstrap_state SET session_file_path = ?", (f"/tmp/{NASTY}.jsonl",)
        )
        conn.execute(
            """INSERT INTO large_files (file_id, conversation_id, file_name, mime_type, byte_size,
               line_count, storage_uri, exploration_summary) VALUES (?, 2, ?, ?, 10, 1, ?, ?)""",
            (FILE_ID, f"{NASTY}.txt", "text/plain", f"file:///tmp/{NASTY}.txt", NASTY),
        )
    conn.close()
