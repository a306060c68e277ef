"""Recall benchmark: grep, describe, expand and export on the 500,000-message database.

Reuses bench_read.py's cached database (``ensure_database``), its process launcher and
its report table; run it with the venv's interpreter:

    .venv/bin/python benchmarks/bench_recall.py [--runs N] [--json] [--db PATH]

Targets (whole processes, median): full-text grep across all conversations 150 ms, regex
over the 14,000-message conversation 300 ms, describe 80 ms, export of that conversation
2 s. The script reports; it always exits 0.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_read import (  # noqa: E402 - the sibling script is the shared harness
    DATA_DIR,
    DB_FILE,
    Bench,
    check_output,
    clean_env,
    ensure_database,
    find_lcm,
    note,
    peak_rss_kib,
    pick_targets,
    render_table,
    run_process,
    time_in_process,
    verdict,
)

# Queries for full-text grep, from rare to common: a word in a few dozen messages (picked
# from the index), a two-word AND, a word in ~1% of messages, and a word in ~7% (worst
# case: ~35,000 matches that all have to be ordered by time).
FULL_TEXT_QUERIES = (("1% word", "kodaly"), ("two words", "timeout retry"), ("7% word", "deploy"))


def rare_term(db_path: Path) -> str | None:
    """An indexed word that occurs in 20-60 messages (FTS5's vocabulary, on a side connection)."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, 'messages_fts', 'row')")
        row = conn.execute(
            "SELECT term FROM temp.vocab WHERE doc BETWEEN 20 AND 60 ORDER BY term LIMIT 1"
        ).fetchone()
        return row[0] if row else None
    except sqlite3.Error:
        return None
    finally:
        conn.close()


def _check_export(bench: Bench, code: int, out: bytes, err: bytes) -> None:
    if code != 0:
        bench.error = f"exit {code}: {err.decode(errors='replace')[:300]}"
    elif not out.startswith(b"{") or b'"type":"session"' not in out[:200]:
        bench.error = "export did not start with a session header"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="timed runs per command (default 7)")
    parser.add_argument("--json", action="store_true", help="machine-readable results on stdout")
    parser.add_argument("--lcm", help="lcm executable to time (default: next to sys.executable)")
    parser.add_argument("--db", help="time this existing lcm.db instead of the built one (read only)")
    opts = parser.parse_args(argv)

    lcm = find_lcm(opts.lcm)
    if not lcm.exists():
        note(f"no lcm at {lcm}: run with the venv's python or pass --lcm")
        return 0
    if opts.db:
        db_path = Path(opts.db).resolve()
    else:
        ensure_database(False)
        db_path = DATA_DIR / DB_FILE
    big, condensed = pick_targets(db_path)
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    big_count = conn.execute("SELECT COUNT(*) FROM messages WHERE conversation_id = ?", (big,)).fetchone()[0]
    conn.close()
    note(
        f"database {db_path}: big conversation {big} has {big_count:,} messages; condensed summary {condensed}"
    )

    with tempfile.TemporaryDirectory(prefix="lcm-bench-recall-") as openclaw_dir:
        env = clean_env(openclaw_dir)
        common = {"db": str(db_path), "openclaw_dir": openclaw_dir, "env": env}
        g = [str(lcm), "--db", str(db_path), "--openclaw-dir", openclaw_dir]
        export_path = Path(openclaw_dir) / "export.jsonl"
        # The floor: what any lcm process costs on this machine before it does any work.
        benches = [Bench("lcm --version (floor)", [str(lcm), "--version"], None)]
        rare = rare_term(db_path)
        queries = ((("rare word", rare),) if rare else ()) + FULL_TEXT_QUERIES
        for label, query in queries:
            params = {"mode": "full_text", "all_conversations": True, "limit": 20}
            benches.append(
                Bench(
                    f"grep full_text {label} ({query!r}), all conversations",
                    g + ["grep", query, "--mode", "full_text", "--all-conversations", "--limit", "20"],
                    150,
                    "grep",
                    params,
                    (query,),
                )
            )
        benches += [
            Bench(
                "grep full_text 'timeout retry' --scope messages, all conversations",
                g
                + [
                    "grep",
                    "timeout retry",
                    "--mode",
                    "full_text",
                    "--all-conversations",
                    "--scope",
                    "messages",
                ],
                150,
                "grep",
                {"mode": "full_text", "all_conversations": True, "scope": "messages"},
                ("timeout retry",),
            ),
            Bench(
                f"grep regex over conversation {big} ({big_count:,} messages)",
                g + ["grep", r"retry\s+\w+ timeout", "--conversation-id", str(big), "--scope", "messages"],
                300,
                "grep",
                {"conversation_id": big, "scope": "messages"},
                (r"retry\s+\w+ timeout",),
            ),
            Bench(
                f"describe {condensed}",
                g + ["describe", str(condensed)],
                80,
                "describe",
                {},
                (str(condensed),),
            ),
            Bench(
                f"expand {condensed}",
                g + ["expand", str(condensed)],
                None,
                "expand",
                {},
                (str(condensed),),
            ),
            Bench(
                f"export --conversation-id {big} --to jsonl (stdout)",
                g + ["export", "--conversation-id", str(big), "--to", "jsonl"],
                2000,
            ),
            Bench(
                f"export --conversation-id {big} --to markdown (stdout)",
                g + ["export", "--conversation-id", str(big), "--to", "markdown"],
                2000,
            ),
        ]

        note("warming up (one untimed run each) ...")
        for b in benches:
            _, code, out, err = run_process(b.argv, env)
            b.out_bytes = len(out)
            if b.operation is None and "--version" not in b.argv:
                if "jsonl" in b.argv:
                    _check_export(b, code, out, err)
                elif code != 0:
                    b.error = f"exit {code}"
            else:
                check_output(b, code, out, err)
                if not b.error:
                    envelope = json.loads(out)
                    meta = envelope.get("meta", {})
                    if "searchPath" in meta:
                        note(
                            f"  {b.name}: {envelope['pagination']['returned']} hits, "
                            f"searchPath {meta['searchPath']}, complete {meta['complete']}"
                        )
            if b.error:
                note(f"  {b.name}: {b.error}")
        note(f"timing {opts.runs} runs of each, round-robin ...")
        for _ in range(opts.runs):
            for b in benches:
                if not b.error:
                    ms, _, _, _ = run_process(b.argv, env)
                    b.times_ms.append(ms)
        note("measuring peak RSS ...")
        for b in benches:
            rss = None if b.error else peak_rss_kib(b.argv, env)
            if rss is not None:
                b.rss_kib.append(rss)
        note("timing in-process ...")
        for b in benches:
            if not b.error:
                time_in_process(b, common, opts.runs)
        export_path.unlink(missing_ok=True)

    if opts.json:
        results: list[dict[str, Any]] = []
        for b in benches:
            status, target, _ = verdict(b, None)
            results.append(
                {
                    "name": b.name,
                    "medianMs": b.median_ms,
                    "targetMs": target,
                    "maxRssMiB": b.max_rss_mib,
                    "inProcessMs": b.in_process_ms,
                    "stdoutBytes": b.out_bytes,
                    "result": status,
                    "error": b.error,
                }
            )
        print(json.dumps({"database": str(db_path), "bigConversation": big, "results": results}, indent=2))
        return 0
    print(
        f"lcm: {lcm}   python {sys.version.split()[0]}   SQLite {sqlite3.sqlite_version}   runs: {opts.runs}"
    )
    print(render_table(benches, {}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
