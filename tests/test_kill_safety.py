"""A kill at any instant leaves the previous consistent state (or the next one), never a mix."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import lcm_process

BATCH = 3000


def test_config_set_killed_at_random_moments_leaves_old_or_new_file(tmp_path: Path) -> None:
    config = tmp_path / "openclaw.json"
    body = {"gateway": {"note": "x" * 200_000}, "plugins": {"entries": {"lossless-claw": {"config": {}}}}}
    config.write_text(json.dumps(body, indent=2))
    exe = Path(sys.executable).with_name("lcm")
    rng = random.Random(7)
    for attempt in range(12):
        value = 10 + attempt
        proc = subprocess.Popen(
            [str(exe), "--openclaw-dir", str(tmp_path), "config", "set", "freshTailCount", str(value)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(rng.uniform(0.0, 0.25))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        saved = json.loads(config.read_text())  # always whole, parseable JSON
        assert saved["gateway"] == body["gateway"]
        current = saved["plugins"]["entries"]["lossless-claw"]["config"].get("freshTailCount")
        assert current is None or 10 <= current <= value
    # Kill-free run still works afterwards, whatever temp files a kill left behind.
    done = lcm_process("--openclaw-dir", str(tmp_path), "config", "set", "freshTailCount", "99")
    assert done.code == 0, done.stderr
    assert (
        json.loads(config.read_text())["plugins"]["entries"]["lossless-claw"]["config"]["freshTailCount"]
        == 99
    )


WRITER = """
import sys
from lcm_cli.engine.store import Store
store = Store.open(sys.argv[1])
with store.transaction():
    cid = store.create_conversation("killed")
    store.add_messages(cid, [{"role": "user", "content": "row %d " % i * 20} for i in range(int(sys.argv[2]))])
    print("inside", flush=True)
    import time; time.sleep(30)
"""


def test_store_transaction_killed_midway_leaves_nothing_half_written(tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    from lcm_cli.engine.store import Store

    with Store.open(db) as store:
        before = store.create_conversation("kept")
        store.add_messages(before, [{"role": "user", "content": "kept"}])
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(db), str(BATCH)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "inside"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert [r[0] for r in conn.execute("SELECT session_id FROM conversations")] == ["kept"]
        assert conn.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == 1
        assert conn.execute("SELECT COUNT(*) FROM context_items").fetchone()[0] == 1
    finally:
        conn.close()
    out = lcm_process("--db", str(db), "status")
    assert out.code == 0 and out.json["data"]["status"]["messages"]["count"] == 1
