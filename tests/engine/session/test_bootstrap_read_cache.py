"""Bootstrap's in-process read cache (docs/reference/engine.md §3.1 step 7, made safe).

A full read that wrote nothing is remembered with everything it depended on; the same
call on the same state does not read the file again, and any change reads it again.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import lcm_cli.engine.transcript.reader as transcript_module
from lcm_cli.engine.db.store import Store
from lcm_cli.engine.session.bootstrap import bootstrap_session
from lcm_cli.engine.session.ingest import IngestSettings, ingest_messages
from tests.support.transcripts import append_lines, write_transcript


def test_unchanged_file_is_not_read_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[str] = []
    real = transcript_module.scan_transcript

    def counting(path: Any) -> Any:
        reads.append(str(path))
        return real(path)

    monkeypatch.setattr(transcript_module, "scan_transcript", counting)
    settings = IngestSettings(str(tmp_path / "files"))
    path = tmp_path / "s1.jsonl"
    write_transcript(path, session_id="s1", messages=20, seed=5)
    with Store.open(tmp_path / "lcm.db") as store:
        # The conversation holds rows the transcript does not: no overlap, nothing written.
        ingest_messages(store, settings, "s1", [{"role": "user", "content": "only live"}])

        def boot() -> dict[str, Any]:
            return bootstrap_session(store, settings, "s1", str(path), max_tokens=10**6)

        first = boot()
        assert first["reason"] == "conversation already has messages" and "readCache" not in first
        again = boot()
        assert again["readCache"] == "hit" and again["reason"] == first["reason"]
        assert again["transcriptMessages"] == first["transcriptMessages"]
        assert len(reads) == 1
        # A new stored row is a new state: read again.
        ingest_messages(store, settings, "s1", [{"role": "user", "content": "another live one"}])
        assert "readCache" not in boot() and len(reads) == 2
        assert boot()["readCache"] == "hit" and len(reads) == 2
        # So is a grown file.
        append_lines(path, [{"type": "custom", "id": "zz01", "parentId": None, "data": {}}])
        assert "readCache" not in boot() and len(reads) == 3
