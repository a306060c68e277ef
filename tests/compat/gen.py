"""Random OpenClaw state dirs from a seed, with the answer each file must give.

Every file records how many persistable messages it holds (``expected``), so a test can
check the importer without a second implementation: file kinds are full transcripts
(header, entry ids, a non-persisted role, damaged lines), legacy id-less files, JSON-array
files, and files with nothing to import (empty, blank, header-only, garbage-only).
Names cover the classes the reference's ``localeCompare`` order must get right: ASCII
with mixed case, digits, ``-``, ``_`` and ``.``; UUIDs; accented Latin; CJK.
"""

from __future__ import annotations

import json
import os
import random
import uuid
from dataclasses import dataclass
from pathlib import Path

ASCII = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_."
ACCENTED = "éèàâäçñóöúüíÉÀÇÑÖÜøæßœł"
CJK = "会话测试日本語中文東京話试语한국어かなカナ"
TEXTS = (
    "hello",
    "line one\nline two",
    "emoji 👋🏽 pair",
    "sep\u2028inside\u2029here",
    'tab\tand "quotes"',
    "",
)
EMPTY_KINDS = ("empty", "blank", "header_only", "garbage")


@dataclass
class TranscriptFile:
    path: Path
    kind: str
    expected: int  # persistable messages the importer must find


def random_name(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.35:
        stem = "".join(rng.choice(ASCII) for _ in range(rng.randint(1, 12)))
    elif roll < 0.55:
        stem = str(uuid.UUID(int=rng.getrandbits(128)))
        stem = stem.upper() if rng.random() < 0.3 else stem
    elif roll < 0.8:
        stem = "".join(rng.choice(ASCII + ACCENTED) for _ in range(rng.randint(1, 10)))
    else:
        stem = "".join(rng.choice(ASCII[:26] + CJK + "-_") for _ in range(rng.randint(1, 8)))
    return stem.strip(".") or "x"


def _message(rng: random.Random, index: int) -> dict[str, object]:
    role = "user" if index % 2 == 0 else "assistant"
    text = rng.choice(TEXTS) or "(empty)"
    content: object = text if role == "user" else [{"type": "text", "text": text}]
    return {"role": role, "content": content, "timestamp": 1_780_000_000_000 + index * 1000}


def write_file(rng: random.Random, path: Path, kind: str, session_id: str) -> TranscriptFile:
    n = rng.randint(1, 6)
    lines: list[str] = []
    expected = 0
    if kind == "full":
        lines.append(json.dumps({"type": "session", "id": session_id, "timestamp": "2026-05-01T00:00:00Z"}))
        parent = None
        for i in range(n):
            entry_id = f"e{i:03d}"
            lines.append(
                json.dumps(
                    {"type": "message", "id": entry_id, "parentId": parent, "message": _message(rng, i)},
                    ensure_ascii=rng.random() < 0.5,
                )
            )
            parent = entry_id
            expected += 1
            if rng.random() < 0.2:
                lines.append("{damaged line")
            if rng.random() < 0.15:  # message-shaped but not persisted, still on the leaf path
                lines.append(
                    json.dumps(
                        {
                            "type": "message",
                            "id": f"b{i:03d}",
                            "parentId": parent,
                            "message": {"role": "bashExecution", "content": "ls"},
                        }
                    )
                )
                parent = f"b{i:03d}"
    elif kind == "legacy":
        lines += [json.dumps(_message(rng, i), ensure_ascii=False) for i in range(n)]
        expected = n
    elif kind == "array":
        lines.append(json.dumps([_message(rng, i) for i in range(n)]))
        expected = n
    elif kind == "header_only":
        lines.append(json.dumps({"type": "session", "id": session_id}))
    elif kind == "blank":
        lines += ["", "   ", ""]
    elif kind == "garbage":
        lines += ["not json", "{", "[1, 2"]
    path.write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")
    return TranscriptFile(path, kind, expected)


def build_state_dir(seed: int, root: Path) -> list[TranscriptFile]:
    """``root/agents/*/sessions/*.jsonl``; file stems (hence session ids) are unique."""
    rng = random.Random(seed)
    agents = ["main"] + [random_name(rng) for _ in range(rng.randint(0, 3))]
    files: list[TranscriptFile] = []
    used: set[str] = set()
    for agent in agents:
        sessions = root / "agents" / agent / "sessions"
        sessions.mkdir(parents=True, exist_ok=True)
        for _ in range(rng.randint(0, 7)):
            stem = random_name(rng)
            if stem.casefold() in used:
                continue
            used.add(stem.casefold())
            kind = rng.choice(("full", "full", "legacy", "array") + EMPTY_KINDS)
            files.append(write_file(rng, sessions / f"{stem}.jsonl", kind, f"{stem}-session"))
    return files


def add_symlink(root: Path, target: Path) -> Path:
    """A linked transcript in the main agent's sessions dir (the reference skips it)."""
    link = root / "agents" / "main" / "sessions" / "linked-copy.jsonl"
    os.symlink(target, link)
    return link
