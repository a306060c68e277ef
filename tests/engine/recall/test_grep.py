"""`lcm grep` over a known corpus: exact hits in every mode, scope and back-end."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import lcm
from tests.support.recall_corpus import build_recall_corpus, drop_full_text_tables


@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("recall")
    files = root / "lcm-files"
    (root / "openclaw.json").write_text(
        json.dumps({"plugins": {"entries": {"lossless-claw": {"config": {"largeFilesDir": str(files)}}}}})
    )
    ids = build_recall_corpus(root / "lcm.db", files)
    return root, ids


@pytest.fixture(scope="module")
def no_fts_dir(corpus_dir: tuple[Path, dict[str, Any]], tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("recall-nofts")
    shutil.copy(corpus_dir[0] / "openclaw.json", root / "openclaw.json")
    shutil.copy(corpus_dir[0] / "lcm.db", root / "lcm.db")
    drop_full_text_tables(root / "lcm.db")
    return root


def grep(root: Path, *args: str) -> dict[str, Any]:
    out = lcm("--openclaw-dir", str(root), "grep", *args)
    assert out.code == 0, out.stderr
    body: dict[str, Any] = out.json
    return body


def grep_error(root: Path, *args: str) -> tuple[int, dict[str, Any]]:
    out = lcm("--openclaw-dir", str(root), "grep", *args)
    return out.code, out.error


def ids(body: dict[str, Any], kind: str) -> list[Any]:
    return [h["id"] for h in body["data"]["hits"] if h["type"] == kind]


FAMILY = ("--session-key", "agent:main:main")


def test_full_text_over_the_session_family(corpus_dir: tuple[Path, dict[str, Any]]) -> None:
    root, c = corpus_dir
    body = grep(root, "billing", "--mode", "full_text", *FAMILY)
    assert ids(body, "message") == [2, 1, c["old"][0]]  # active + archived rows, newest first
    assert ids(body, "summary") == [c["condensed"], c["leaf_a"]]
    meta = body["meta"]
    assert meta["searchPath"] == {"messages": "fts5", "summaries": "fts5"}
    assert meta["scopes"] == ["messages", "summaries"]
    assert meta["scope"] == {"kind": "sessionFamily", "conversationIds": [c["main"], c["archived"]]}
    assert meta["complete"] is True and meta["truncatedBy"] == {}
    summary = [h for h in body["data"]["hits"] if h["type"] == "summary"][0]
    assert (summary["kind"], summary["depth"], summary["conversationId"]) == ("condensed", 1, c["main"])
    message = [h for h in body["data"]["hits"] if h["type"] == "message"][0]
    assert message["snippet"] == "The billing deploy failed: timeout connecting to postgres"
    assert message["timestamp"] == "2026-07-01 09:01:00" and message["role"] == "assistant"


def test_conversation_and_all_conversation_scopes(corpus_dir: tuple[Path, dict[str, Any]]) -> None:
    root, c = corpus_dir
    one = grep(
        root, "billing", "--mode", "full_text", "--scope", "messages", "--conversation-id", str(c["main"])
    )
    assert ids(one, "message") == [2, 1] and one["meta"]["scope"]["kind"] == "conversation"
    every = grep(root, "billing", "--mode", "full_text", "--scope", "messages", "--all-conversations")
    assert ids(every, "message") == [2, 1, c["elsewhere"][0], c["old"][0]]
    assert every["meta"]["scope"] == {"kind": "all", "conversationIds": None}


def test_regex_is_case_sensitive_first_match_and_alternation_works(
    corpus_dir: tuple[Path, dict[str, Any]],
) -> None:
    root, _ = corpus_dir
    body = grep(root, "bill(ing)? (deploy|service)", "--all-conversations")  # auto: regex syntax
    assert body["meta"]["mode"] == "regex" and body["meta"]["modeRequested"] == "auto"
    assert ids(body, "message") == [2, 1]
    assert ids(body, "summary") == []  # "Billing deploy" has a capital B
    assert [h["match"] for h in body["data"]["hits"]] == ["billing deploy", "billing service"]
    # The snippet is the match with its context, as full text gives it.
    first = body["data"]["hits"][0]["snippet"]
    assert first == "The billing deploy failed: timeout connecting to postgres"
    assert body["meta"]["searchPath"] == {"messages": "regex", "summaries": "regex"}
    assert body["meta"]["sort"] == "recency"
    assert body["meta"]["sources"]["messages"]["scannedRows"] == 10


def test_relevance_and_hybrid_sorts_return_ranked_hits(corpus_dir: tuple[Path, dict[str, Any]]) -> None:
    root, _ = corpus_dir
    for sort in ("relevance", "hybrid"):
        body = grep(
            root,
            "billing",
            "--mode",
            "full_text",
            "--all-conversations",
            "--sort",
            sort,
            "--scope",
            "messages",
        )
        ranks = [h["rank"] for h in body["data"]["hits"]]
        assert sorted(ids(body, "message")) == [1, 2, 9, 10]
        assert ranks == sorted(ranks) and body["meta"]["sort"] == sort
    regex = grep(root, "billing", "--mode", "regex", "--all-conversations", "--sort", "relevance")
    assert regex["meta"]["sort"] == "recency" and regex["meta"]["sortRequested"] == "relevance"


def test_bad_patterns_are_structured_errors_naming_the_mode(corpus_dir: tuple[Path, dict[str, Any]]) -> None:
    root, _ = corpus_dir
    code, err = grep_error(root, "billing|deploy", "--mode", "full_text", *FAMILY)
    assert code == 2 and err["code"] == "INVALID_PATTERN" and err["details"]["acceptedBy"] == "regex"
    assert "--mode regex" in err["message"]
    code, err = grep_error(root, "([", "--mode", "regex", *FAMILY)
    assert code == 2 and err["code"] == "INVALID_PATTERN" and err["details"]["acceptedBy"] == "full_text"
    code, err = grep_error(root, "   ", *FAMILY)
    assert code == 2 and err["details"]["reason"] == "empty"
    code, err = grep_error(root, '"" ""', "--mode", "full_text", *FAMILY)
    assert code == 2 and err["details"]["reason"] == "empty"
    code, err = grep_error(root, "a" * 501, "--mode", "regex", *FAMILY)
    assert code == 2 and err["details"]["reason"] == "too long"
    # Inside quotes, regex characters are literal text and allowed.
    body = grep(root, '"127.0.0.1:5432"', "--mode", "full_text", *FAMILY)
    assert ids(body, "message") == [6]


def test_scope_is_required_and_unambiguous(corpus_dir: tuple[Path, dict[str, Any]]) -> None:
    root, c = corpus_dir
    code, err = grep_error(root, "billing")
    assert code == 2 and err["code"] == "MISSING_SELECTOR" and "--all-conversations" in err["message"]
    code, err = grep_error(root, "billing", "--conversation-id", str(c["main"]), "--all-conversations")
    assert code == 2 and err["code"] == "INVALID_SELECTOR"
    code, err = grep_error(root, "billing", "--session-key", "agent:nobody")
    assert code == 3 and err["code"] == "CONVERSATION_NOT_FOUND"


def test_cjk_goes_to_like_for_messages_and_trigram_for_summaries(
    corpus_dir: tuple[Path, dict[str, Any]],
) -> None:
    root, c = corpus_dir
    body = grep(root, "连接超时", "--mode", "full_text", *FAMILY)
    assert ids(body, "message") == [3] and ids(body, "summary") == [c["leaf_b"]]
    assert body["meta"]["searchPath"] == {"messages": "like", "summaries": "trigram"}
    short = grep(root, "超时", "--mode", "full_text", "--scope", "summaries", *FAMILY)
    assert ids(short, "summary") == [c["leaf_b"]] and short["meta"]["searchPath"] == {"summaries": "like"}
    regex = grep(root, "连接.超", *FAMILY)
    assert ids(regex, "message") == [] and ids(grep(root, "连接超", *FAMILY), "message") == [3]


def test_emoji_and_combining_marks(corpus_dir: tuple[Path, dict[str, Any]], no_fts_dir: Path) -> None:
    root, _ = corpus_dir
    emoji = grep(root, "🚀", "--mode", "full_text", "--scope", "messages", *FAMILY)
    assert ids(emoji, "message") == [4] and emoji["meta"]["searchPath"] == {"messages": "like"}
    assert ids(grep(root, "🚀 launch", *FAMILY), "message") == [4]
    # FTS5's unicode61 folds the accent away: composed and decomposed both match.
    accent = grep(root, "café", "--mode", "full_text", "--scope", "messages", *FAMILY)
    assert ids(accent, "message") == [5] and accent["meta"]["searchPath"] == {"messages": "fts5"}
    # Without FTS the LIKE path compares NFC-normalized, case-folded text.
    folded = grep(no_fts_dir, "CAFÉ", "--mode", "full_text", "--scope", "messages", *FAMILY)
    assert ids(folded, "message") == [5] and folded["meta"]["searchPath"] == {"messages": "like"}
    decomposed = grep(no_fts_dir, "cafe\u0301", "--mode", "full_text", "--scope", "messages", *FAMILY)
    assert ids(decomposed, "message") == [5]


def test_database_without_fts_tables_falls_back_to_like_and_says_so(
    corpus_dir: tuple[Path, dict[str, Any]], no_fts_dir: Path
) -> None:
    root, _ = corpus_dir
    args = ("billing", "--mode", "full_text", *FAMILY)
    with_fts, without = grep(root, *args), grep(no_fts_dir, *args)
    assert without["meta"]["searchPath"] == {"messages": "like", "summaries": "like"}
    assert ids(without, "message") == ids(with_fts, "message")
    assert ids(without, "summary") == ids(with_fts, "summary")
    cjk = grep(no_fts_dir, "连接超时", "--mode", "full_text", *FAMILY)
    assert cjk["meta"]["searchPath"] == {"messages": "like", "summaries": "like"}
    assert ids(cjk, "message") == [3]


def walk(root: Path, *args: str) -> list[tuple[str, Any]]:
    seen: list[tuple[str, Any]] = []
    cursor: str | None = None
    for _ in range(50):
        extra = ("--cursor", cursor) if cursor else ()
        body = grep(root, *args, *extra)
        seen += [(h["type"], h["id"]) for h in body["data"]["hits"]]
        cursor = body["pagination"]["nextCursor"]
        assert body["pagination"]["hasMore"] is (cursor is not None)
        if cursor is None:
            assert body["meta"]["complete"] is True
            return seen
        assert body["meta"]["complete"] is False
    raise AssertionError("pagination did not end")


@pytest.mark.parametrize(
    "args",
    [
        ("billing", "--mode", "full_text", "--all-conversations", "--limit", "1"),
        ("billing", "--mode", "full_text", "--all-conversations", "--limit", "1", "--sort", "relevance"),
        ("billing", "--mode", "full_text", "--all-conversations", "--limit", "1", "--sort", "hybrid"),
        ("i", "--all-conversations", "--limit", "2"),
    ],
    ids=["fts-recency", "fts-relevance", "fts-hybrid", "regex"],
)
def test_pages_have_no_gaps_or_repeats(
    corpus_dir: tuple[Path, dict[str, Any]], args: tuple[str, ...]
) -> None:
    root, _ = corpus_dir
    paged = walk(root, *args)
    whole = grep(root, *[a if a not in ("1", "2") else "200" for a in args])
    # Each source pages on its own (both scopes interleave per page), in the same order.
    for kind in ("message", "summary"):
        assert [i for t, i in paged if t == kind] == ids(whole, kind), kind
    assert len(set(paged)) == len(paged) and whole["pagination"]["hasMore"] is False


def test_no_fts_pages_have_no_gaps(no_fts_dir: Path) -> None:
    paged = walk(no_fts_dir, "billing", "--mode", "full_text", "--all-conversations", "--limit", "1")
    assert [i for t, i in paged if t == "message"] == [2, 1, 10, 9]


def test_cursor_is_bound_to_its_search(corpus_dir: tuple[Path, dict[str, Any]]) -> None:
    root, _ = corpus_dir
    body = grep(root, "billing", "--mode", "full_text", "--all-conversations", "--limit", "1")
    cursor = body["pagination"]["nextCursor"]
    code, err = grep_error(root, "deploy", "--mode", "full_text", "--all-conversations", "--cursor", cursor)
    assert code == 2 and err["code"] == "INVALID_CURSOR"
    code, err = grep_error(root, "billing", "--all-conversations", "--cursor", "not-a-cursor")
    assert code == 2 and err["code"] == "INVALID_CURSOR"


def test_time_filters(corpus_dir: tuple[Path, dict[str, Any]]) -> None:
    root, _ = corpus_dir
    body = grep(
        root,
        "billing",
        "--mode",
        "full_text",
        "--all-conversations",
        "--scope",
        "messages",
        "--before",
        "2026-07-01T09:01:00Z",
    )
    assert ids(body, "message") == [1, 10, 9]
    regex = grep(
        root, "billing", "--all-conversations", "--scope", "messages", "--after", "2026-07-01T08:00:00Z"
    )
    assert ids(regex, "message") == [2, 1, 10]


def test_catastrophic_regex_is_cut_by_the_deadline_and_the_cursor_moves_on(
    corpus_dir: tuple[Path, dict[str, Any]],
) -> None:
    root, c = corpus_dir
    args = ("(a+)+$", "--conversation-id", str(c["main"]), "--scope", "messages", "--deadline-ms", "300")
    started = time.monotonic()
    body = grep(root, *args)
    assert time.monotonic() - started < 5
    meta = body["meta"]
    assert meta["complete"] is False and meta["truncatedBy"] == {"messages": "deadline"}
    assert meta["sources"]["messages"]["unsearchedIds"] == [7]
    rest = grep(root, *args, "--cursor", body["pagination"]["nextCursor"])
    assert rest["meta"]["complete"] is True and rest["data"]["hits"] == []
    assert rest["meta"]["sources"]["messages"]["scannedRows"] == 6  # messages 6..1


def test_files_scope(corpus_dir: tuple[Path, dict[str, Any]]) -> None:
    root, c = corpus_dir
    body = grep(root, "billing", "--mode", "regex", "--scope", "files", "--conversation-id", str(c["main"]))
    hits = body["data"]["hits"]
    assert [(h["id"], h["line"], h["byteOffset"], h["match"]) for h in hits] == [
        ("file_text000000000001", 2, 13, "billing"),
        ("file_text000000000001", 3, 48, "billing"),
        ("file_text000000000001", 3, 63, "billing"),
    ]
    skipped = {s["fileId"]: s["reason"] for s in body["meta"]["sources"]["files"]["skipped"]}
    assert skipped == {
        "file_png0000000000001": "not text (image/png)",
        "file_outside00000001": "outside largeFilesDir",
    }
    assert body["meta"]["searchPath"] == {"files": "regex"}
    words = grep(
        root, "BILLING twice", "--mode", "full_text", "--scope", "files", "--conversation-id", str(c["main"])
    )
    assert [(h["line"], h["match"]) for h in words["data"]["hits"]] == [
        (2, "billing"),
        (3, "billing"),
        (3, "billing"),
    ]
    assert words["meta"]["searchPath"] == {"files": "like"}
    one = grep(root, "line", "--scope", "files", "--file-id", "file_text000000000001", "--all-conversations")
    assert {h["id"] for h in one["data"]["hits"]} == {"file_text000000000001"}


def test_file_id_errors(corpus_dir: tuple[Path, dict[str, Any]]) -> None:
    root, c = corpus_dir
    main = ("--conversation-id", str(c["main"]))
    code, err = grep_error(root, "x", "--scope", "files", "--file-id", "file_nope", *main)
    assert code == 3 and err["code"] == "FILE_NOT_FOUND" and err["details"] == {"fileIds": ["file_nope"]}
    code, err = grep_error(root, "x", "--scope", "files", "--file-id", "file_otherconv000001", *main)
    assert code == 3 and err["code"] == "NOT_IN_SCOPE"
    code, err = grep_error(root, "x", "--file-id", "file_text000000000001", *main)
    assert code == 2 and err["code"] == "INVALID_ARGUMENT"


def test_bad_option_values(corpus_dir: tuple[Path, dict[str, Any]]) -> None:
    root, _ = corpus_dir
    for option, value in (
        ("--mode", "fuzzy"),
        ("--scope", "all"),
        ("--sort", "best"),
        ("--deadline-ms", "0"),
    ):
        code, err = grep_error(root, "x", "--all-conversations", option, value)
        assert code == 2 and err["code"] == "INVALID_ARGUMENT", option


def test_grep_is_reachable_through_the_python_door(corpus_dir: tuple[Path, dict[str, Any]]) -> None:
    from lcm_cli.engine.api import call

    root, _ = corpus_dir
    envelope = call(
        "grep",
        {"mode": "full_text", "all_conversations": True, "scope": "messages"},
        args=("billing",),
        openclaw_dir=str(root),
    )
    assert envelope["command"] == "grep" and envelope["meta"]["searchPath"] == {"messages": "fts5"}


@pytest.mark.parametrize(
    "words",
    [
        ["grep", "billing", "--mode", "full_text", "--all-conversations"],
        ["grep", "billing", "--scope", "files", "--all-conversations"],
        ["describe", "file_text000000000001"],
        ["expand", "sum_cond00000000000"],
        ["expand-query", "why?", "--query", "billing", "--all-conversations"],
        ["export", "--conversation-id", "1", "--to", "jsonl"],
    ],
    ids=lambda words: " ".join(words[:3]),
)
def test_recall_commands_stay_light(corpus_dir: tuple[Path, dict[str, Any]], words: list[str]) -> None:
    from tests.test_startup import loaded_modules

    assert loaded_modules("--openclaw-dir", str(corpus_dir[0]), *words) == []


@pytest.mark.parametrize("mode", ["full_text", "regex", "like"])
def test_walk_with_ties_and_rows_inserted_during_the_walk(tmp_path: Path, mode: str) -> None:
    from lcm_cli.engine.db.store import Store

    db = tmp_path / "ties.db"
    with Store.open(db) as store:
        cid = store.create_conversation("s-ties", session_key="agent:ties")
        rows = [
            {"role": "user", "content": f"tie word {i}", "created_at": "2026-07-01 10:00:00"}
            for i in range(6)
        ]
        rows += [{"role": "user", "content": "tie early", "created_at": "2026-07-01 09:00:00"}]
        store.add_messages(cid, rows)
    if mode == "like":
        drop_full_text_tables(db)
    args = [
        "--db",
        str(db),
        "grep",
        "tie",
        "--conversation-id",
        str(cid),
        "--scope",
        "messages",
        "--limit",
        "2",
    ]
    if mode != "regex":
        args += ["--mode", "full_text"]
    seen: list[int] = []
    cursor = None
    for page in range(10):
        out = lcm(*args, *(["--cursor", cursor] if cursor else []))
        assert out.code == 0, out.stderr
        body = out.json
        seen += [h["id"] for h in body["data"]["hits"]]
        cursor = body["pagination"]["nextCursor"]
        if page == 0:
            with Store.open(db) as store:  # a live writer adds a newer match mid-walk
                store.add_message(cid, "user", "tie newest", created_at="2026-07-01 11:00:00")
        if cursor is None:
            break
    assert seen == [6, 5, 4, 3, 2, 1, 7]


def test_recall_operations_through_hook_and_serve(corpus_dir: tuple[Path, dict[str, Any]]) -> None:
    import subprocess
    import sys

    root, c = corpus_dir
    exe = [str(Path(sys.executable).with_name("lcm"))]
    hook = subprocess.run(
        exe + ["--openclaw-dir", str(root), "hook", "grep"],
        input=json.dumps(
            {"pattern": "billing", "mode": "full_text", "allConversations": True, "scope": "messages"}
        ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert hook.returncode == 0, hook.stderr
    body = json.loads(hook.stdout)
    assert ids(body, "message") == [2, 1, 10, 9] and body["meta"]["searchPath"] == {"messages": "fts5"}
    requests = [
        {"id": 1, "method": "describe", "params": {"itemId": c["leaf_a"]}},
        {"id": 2, "method": "expand", "params": {"summaryId": c["leaf_a"]}},
        {"id": 3, "method": "export", "params": {"conversationId": c["main"], "to": "jsonl"}},
    ]
    serve = subprocess.run(
        exe + ["--openclaw-dir", str(root), "serve", "--stdio"],
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True,
        text=True,
        timeout=60,
    )
    replies = {r["id"]: r["result"] for r in map(json.loads, serve.stdout.splitlines())}
    assert replies[1]["data"]["sourceMessageIds"] == [1, 2]
    assert [m["messageId"] for m in replies[2]["data"]["messages"]] == [1, 2]
    assert replies[3]["data"]["document"].count('"type":"message"') == 8


@pytest.fixture(scope="module")
def random_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """600 messages in 6 conversations, random words and times (ids not in time order)."""
    import random

    from lcm_cli.engine.db.store import Store

    rng = random.Random(7)
    db = tmp_path_factory.mktemp("recall-random") / "lcm.db"
    words = "alpha beta gamma delta omega sigma".split()
    with Store.open(db) as store:
        for c in range(6):
            cid = store.create_conversation(
                f"s{c}", session_key="agent:fam" if c < 3 else f"agent:k{c}", active=c in (0, 3, 4, 5)
            )
            rows = [
                {
                    "role": "user",
                    "content": " ".join(rng.choices(words, k=4)),
                    # Coarse times: many ties; conversations overlap in time.
                    "created_at": f"2026-0{rng.randint(1, 9)}-1{rng.randint(0, 9)} 10:00:0{rng.randint(0, 2)}",
                }
                for _ in range(100)
            ]
            ids = store.add_messages(cid, rows)
            for leaf in range(10):
                store.add_leaf_summary(
                    cid,
                    ids[leaf * 10 : leaf * 10 + 10],
                    " ".join(rng.choices(words, k=6)),
                    summary_id=f"sum_r{c}_{leaf:02d}",
                )
    return db


@pytest.mark.parametrize(
    "extra",
    [
        ["--all-conversations"],
        ["--session-key", "agent:fam"],
        ["--conversation-id", "4"],
        ["--all-conversations", "--before", "2026-05-01T00:00:00Z"],
        ["--all-conversations", "--between", "2026-03-01T00:00:00Z..2026-07-01T00:00:00Z"],
    ],
    ids=["all", "family", "one", "before", "between"],
)
@pytest.mark.parametrize("word", ["alpha", "omega sigma"])
def test_newest_matches_walk_equals_the_plain_join(
    random_corpus: Path, monkeypatch: pytest.MonkeyPatch, extra: list[str], word: str
) -> None:
    from lcm_cli.engine.recall import grep_newest

    args = [
        "--db",
        str(random_corpus),
        "grep",
        word,
        "--mode",
        "full_text",
        "--scope",
        "messages",
        "--limit",
        "7",
        *extra,
    ]

    def walk_ids() -> list[int]:
        seen: list[int] = []
        cursor = None
        while True:
            out = lcm(*args, *(["--cursor", cursor] if cursor else []))
            assert out.code == 0, out.stderr
            seen += [h["id"] for h in out.json["data"]["hits"]]
            cursor = out.json["pagination"]["nextCursor"]
            if cursor is None:
                return seen

    monkeypatch.setattr(grep_newest, "NEWEST_MIN_MATCHES", 1)
    windowed = walk_ids()
    monkeypatch.setattr(grep_newest, "NEWEST_MIN_MATCHES", 10**12)
    joined = walk_ids()
    assert windowed == joined and len(windowed) == len(set(windowed)) and windowed


@pytest.mark.parametrize(
    "extra",
    [[], ["--before", "2026-09-05T00:00:00Z"], ["--sort", "relevance"]],
    ids=["all", "before", "relevance"],
)
def test_newest_summaries_index_walk_equals_the_plain_join(
    random_corpus: Path, monkeypatch: pytest.MonkeyPatch, extra: list[str]
) -> None:
    from lcm_cli.engine.recall import grep_newest

    args = ["--db", str(random_corpus), "grep", "alpha", "--mode", "full_text", "--scope", "summaries"]
    args += ["--all-conversations", "--limit", "4", *extra]

    def walk_ids() -> list[str]:
        seen: list[str] = []
        cursor = None
        while True:
            out = lcm(*args, *(["--cursor", cursor] if cursor else []))
            assert out.code == 0, out.stderr
            seen += [h["id"] for h in out.json["data"]["hits"]]
            cursor = out.json["pagination"]["nextCursor"]
            if cursor is None:
                return seen

    monkeypatch.setattr(grep_newest, "NEWEST_MIN_SUMMARY_MATCHES", 1)
    walked = walk_ids()
    monkeypatch.setattr(grep_newest, "_newest_summaries", lambda *a: None)
    joined = walk_ids()
    assert walked == joined and len(walked) == len(set(walked)) and len(walked) > 8


def test_a_broken_fts_table_falls_back_to_like_and_says_so(
    corpus_dir: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    import sqlite3

    root = tmp_path / "broken"
    root.mkdir()
    shutil.copy(corpus_dir[0] / "openclaw.json", root / "openclaw.json")
    shutil.copy(corpus_dir[0] / "lcm.db", root / "lcm.db")
    conn = sqlite3.connect(root / "lcm.db")
    conn.execute("DROP TABLE messages_fts_data")  # the virtual table stays, its storage is gone
    conn.commit()
    conn.close()
    body = grep(root, "billing", "--mode", "full_text", "--scope", "messages", *FAMILY)
    assert body["meta"]["searchPath"] == {"messages": "like"}
    assert ids(body, "message") == [2, 1, 9]


@pytest.fixture(scope="module")
def half_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """6,000 messages in 8 interleaved conversations; ``common`` in every other one."""
    from lcm_cli.engine.db.store import Store

    db = tmp_path_factory.mktemp("recall-half") / "lcm.db"
    with Store.open(db) as store:
        convs = [store.create_conversation(f"h{c}", session_key=f"agent:h{c}") for c in range(8)]
        for chunk in range(30):  # ids of one conversation interleave with the others'
            for c, cid in enumerate(convs):
                rows = []
                for i in range(25):
                    n = (chunk * 25 + i) * 8 + c
                    word = "common" if n % 2 == 0 else "other"
                    minute = n // 3  # ties: three messages a minute
                    rows.append(
                        {"role": "user", "content": f"{word} text {n}", "created_at": _minute_stamp(minute)}
                    )
                store.add_messages(cid, rows)
    return db


def _minute_stamp(minute: int) -> str:
    from datetime import datetime, timedelta, timezone

    moment = datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(minutes=minute)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


class _Reads:
    """Every search query of one call, with how many rows it fetched."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        from lcm_cli.engine.recall import grep_sql

        self.fetched: list[tuple[str, int]] = []
        real = grep_sql.run

        def spy(q: Any, sql: str, params: list[Any]) -> Any:
            rows = real(q, sql, params)
            self.fetched.append((" ".join(sql.split()), len(rows)))
            return rows

        monkeypatch.setattr(grep_sql, "run", spy)

    def largest(self, skip: str = "json_each") -> int:
        """The most rows one query fetched (the per-conversation heads excepted)."""
        return max(n for sql, n in self.fetched if skip not in sql)

    def total(self) -> int:
        return sum(n for _, n in self.fetched)


def test_full_text_common_word_reads_in_bounded_steps_and_stops_when_the_page_is_full(
    half_corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """3,000 matches: the page of 20 reads a few hundred rows, never the match set."""
    from lcm_cli.engine.recall import grep_newest

    reads = _Reads(monkeypatch)
    monkeypatch.setattr(grep_newest, "STEP_ROWS", 64)
    args = ["--db", str(half_corpus), "grep", "common", "--mode", "full_text", "--all-conversations"]
    out = lcm(*args, "--scope", "messages", "--limit", "20")
    assert out.code == 0, out.stderr
    hits = out.json["data"]["hits"]
    assert len(hits) == 20 and out.json["meta"]["complete"] is False
    assert [h["snippet"].split()[0] for h in hits] == ["common"] * 20
    assert reads.largest() <= 64  # no step fetches more than STEP_ROWS rows
    assert reads.total() < 600  # of 6,000 messages, 3,000 matching
    # The same page as the plain join (which reads every match).
    monkeypatch.setattr(grep_newest, "NEWEST_MIN_MATCHES", 10**12)
    joined = lcm(*args, "--scope", "messages", "--limit", "20")
    assert [h["id"] for h in joined.json["data"]["hits"]] == [h["id"] for h in hits]
    assert joined.json["pagination"]["hasMore"] is out.json["pagination"]["hasMore"] is True


@pytest.mark.parametrize(
    "extra",
    [
        ["--all-conversations"],
        ["--conversation-id", "3"],
        ["--all-conversations", "--between", "2026-01-01T10:00:00Z..2026-01-02T02:00:00Z"],
    ],
    ids=["all", "one", "between"],
)
def test_tiny_steps_and_probe_runs_page_exactly_as_the_join(
    half_corpus: Path, monkeypatch: pytest.MonkeyPatch, extra: list[str]
) -> None:
    """Steps of 2-8 rows and one full-text probe per id: every page as the plain join's."""
    from lcm_cli.engine.recall import grep_newest

    args = ["--db", str(half_corpus), "grep", "common", "--mode", "full_text", "--scope", "messages"]
    args += ["--limit", "400", *extra]

    def walk_ids() -> list[int]:
        seen: list[int] = []
        cursor = None
        for _ in range(40):
            out = lcm(*args, *(["--cursor", cursor] if cursor else []))
            assert out.code == 0, out.stderr
            seen += [h["id"] for h in out.json["data"]["hits"]]
            cursor = out.json["pagination"]["nextCursor"]
            if cursor is None:
                break
        return seen

    monkeypatch.setattr(grep_newest, "STEP_ROWS", 8)
    monkeypatch.setattr(grep_newest, "FIRST_STEP_ROWS", 2)
    monkeypatch.setattr(grep_newest, "RUN_GAP", 0)
    monkeypatch.setattr(grep_newest, "NEWEST_MIN_MATCHES", 1)
    walked = walk_ids()
    monkeypatch.setattr(grep_newest, "NEWEST_MIN_MATCHES", 10**12)
    joined = walk_ids()
    assert walked == joined and len(walked) == len(set(walked)) and walked


def test_regex_candidates_come_in_bounded_steps(half_corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Regex over every conversation: the newest-first candidates are read in steps, not
    by sorting the whole table; the answer is unchanged."""
    from lcm_cli.engine.recall import grep_newest, grep_sources

    args = ["--db", str(half_corpus), "grep", "comm[o]n", "--all-conversations", "--scope", "messages"]
    args += ["--limit", "30", "--scan-limit", "200"]
    baseline = lcm(*args).json
    reads = _Reads(monkeypatch)
    monkeypatch.setattr(grep_newest, "STEP_ROWS", 16)
    monkeypatch.setattr(grep_sources, "REGEX_BATCH", 16)
    out = lcm(*args)
    assert out.code == 0, out.stderr
    assert [h["id"] for h in out.json["data"]["hits"]] == [h["id"] for h in baseline["data"]["hits"]]
    assert reads.largest() <= 16 and reads.total() < 600


@pytest.mark.parametrize("index", ["aligned", "repaired"])
@pytest.mark.parametrize("extra", [[], ["--before", "2026-09-05T00:00:00Z"]], ids=["all", "before"])
def test_summary_walk_in_tiny_steps_pages_as_the_join(
    random_corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, index: str, extra: list[str]
) -> None:
    """The summary walk probes the index at each summary's own rowid; where a repair moved
    rows elsewhere it reads the match set instead. Either way: the join's pages."""
    import sqlite3

    from lcm_cli.engine.recall import grep_newest

    db = tmp_path / "lcm.db"
    shutil.copy(random_corpus, db)
    if index == "repaired":  # re-indexed rows get new rowids, as `doctor apply` gives them
        conn = sqlite3.connect(db)
        for table in ("summaries_fts", "summaries_fts_cjk"):
            ids = [r[0] for r in conn.execute(f"SELECT summary_id FROM {table} ORDER BY rowid LIMIT 5")]
            for summary_id in ids:
                conn.execute(f"DELETE FROM {table} WHERE summary_id = ?", (summary_id,))
                conn.execute(
                    f"INSERT INTO {table} (summary_id, content) SELECT summary_id, content FROM summaries "
                    "WHERE summary_id = ?",
                    (summary_id,),
                )
        conn.commit()
        conn.close()
    args = ["--db", str(db), "grep", "alpha", "--mode", "full_text", "--scope", "summaries"]
    args += ["--all-conversations", "--limit", "4", *extra]
    walked_with: list[str] = []
    real_walk = grep_newest.walk_summaries

    def spy(q: Any, pos: Any, keep: Any) -> Any:
        found = real_walk(q, pos, keep)
        walked_with.append("probes" if found is not None else "gave up")
        return found

    def walk_ids() -> list[str]:
        seen: list[str] = []
        cursor = None
        while True:
            out = lcm(*args, *(["--cursor", cursor] if cursor else []))
            assert out.code == 0, out.stderr
            seen += [h["id"] for h in out.json["data"]["hits"]]
            assert all(h["snippet"] for h in out.json["data"]["hits"])
            cursor = out.json["pagination"]["nextCursor"]
            if cursor is None:
                return seen

    monkeypatch.setattr(grep_newest, "STEP_ROWS", 4)
    monkeypatch.setattr(grep_newest, "FIRST_STEP_ROWS", 2)
    monkeypatch.setattr(grep_newest, "NEWEST_MIN_SUMMARY_MATCHES", 1)
    monkeypatch.setattr(grep_newest, "walk_summaries", spy)
    walked = walk_ids()
    assert walked_with and ("gave up" in walked_with) is (index == "repaired" and not extra)
    monkeypatch.setattr(grep_newest, "_newest_summaries", lambda *a: None)
    joined = walk_ids()
    assert walked == joined and len(walked) == len(set(walked)) and len(walked) > 8


# --------------------------------------------------------------------------------------
# One call answers: the limit is the whole answer, every hit names its conversation
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("billing", "--mode", "full_text"),
        ("billing", "--mode", "full_text", "--sort", "relevance"),
        ("billing", "--mode", "full_text", "--sort", "hybrid"),
        ("i", "--mode", "regex"),
        ("billing",),  # auto
    ],
    ids=["fts-recency", "fts-relevance", "fts-hybrid", "regex", "auto"],
)
@pytest.mark.parametrize("limit", ["1", "3"])
def test_limit_is_the_whole_answer_and_pages_continue_the_merged_order(
    corpus_dir: tuple[Path, dict[str, Any]], args: tuple[str, ...], limit: str
) -> None:
    root, _ = corpus_dir
    first = grep(root, *args, "--all-conversations", "--limit", limit)
    assert len(first["data"]["hits"]) == first["pagination"]["returned"] == int(limit)
    assert sum(first["data"]["counts"].values()) == int(limit)
    whole = grep(root, *args, "--all-conversations", "--limit", "500")
    assert whole["meta"]["complete"] is True
    merged = [(h["type"], h["id"]) for h in whole["data"]["hits"]]
    assert {t for t, _ in merged} == {"message", "summary"}  # both sources, one order
    assert walk(root, *args, "--all-conversations", "--limit", limit) == merged


def test_recency_merges_sources_newest_first(corpus_dir: tuple[Path, dict[str, Any]]) -> None:
    import sqlite3

    root, _ = corpus_dir
    hits = grep(root, "billing", "--mode", "full_text", "--all-conversations")["data"]["hits"]
    conn = sqlite3.connect(root / "lcm.db")
    days = [conn.execute("SELECT julianday(?)", (h["timestamp"],)).fetchone()[0] for h in hits]
    conn.close()
    assert days == sorted(days, reverse=True)


def test_every_hit_names_its_conversation_and_session_key(corpus_dir: tuple[Path, dict[str, Any]]) -> None:
    import sqlite3

    root, c = corpus_dir
    conn = sqlite3.connect(root / "lcm.db")
    keys = dict(conn.execute("SELECT conversation_id, session_key FROM conversations").fetchall())
    conn.close()
    for args in (
        ("billing", "--mode", "full_text"),
        ("bill", "--mode", "regex"),
        ("billing", "--scope", "files"),
    ):
        hits = grep(root, *args, "--all-conversations")["data"]["hits"]
        assert hits
        for hit in hits:
            assert hit["sessionKey"] == keys[hit["conversationId"]], hit
            assert list(hit)[2:4] == ["conversationId", "sessionKey"]
    table = lcm("--openclaw-dir", str(root), "grep", "billing", "--all-conversations", "--format", "table")
    assert table.code == 0 and "Session key agent:main:main" in table.stdout and "Conv 1" in table.stdout


def test_auto_runs_full_text_for_words_and_regex_for_regex_syntax(
    corpus_dir: tuple[Path, dict[str, Any]],
) -> None:
    root, _ = corpus_dir
    words = grep(root, "billing deploy", *FAMILY)
    assert words["meta"]["mode"] == "full_text" and words["meta"]["modeRequested"] == "auto"
    assert words["meta"]["searchPath"] == {"messages": "fts5", "summaries": "fts5"}
    assert "scanLimit" not in words["meta"]
    regex = grep(root, "billing (deploy|service)", *FAMILY)
    assert regex["meta"]["mode"] == "regex" and regex["meta"]["scanLimit"] == 20_000
    explicit = grep(root, "billing", "--mode", "full_text", *FAMILY)
    assert "modeRequested" not in explicit["meta"]


def test_regex_row_budget_stops_the_scan_and_says_so(corpus_dir: tuple[Path, dict[str, Any]]) -> None:
    """The row budget is deterministic: the same rows every time, named in truncatedBy."""
    root, _ = corpus_dir
    args = ("bill.ng", "--mode", "regex", "--all-conversations", "--scope", "messages")
    budgeted = grep(root, *args, "--scan-limit", "3")
    meta = budgeted["meta"]
    assert meta["complete"] is False and meta["truncatedBy"] == {"messages": "scanLimit"}
    assert meta["scanLimit"] == 3 and meta["sources"]["messages"]["scannedRows"] == 3
    assert budgeted["pagination"]["hasMore"] is True
    again = grep(root, *args, "--scan-limit", "3")
    assert again["data"]["hits"] == budgeted["data"]["hits"]
    whole = grep(root, *args)
    assert whole["meta"]["complete"] is True and whole["meta"]["truncatedBy"] == {}
    assert walk(root, *args, "--scan-limit", "3") == [(h["type"], h["id"]) for h in whole["data"]["hits"]]


def test_regex_snippets_have_context_and_the_match(corpus_dir: tuple[Path, dict[str, Any]]) -> None:
    root, _ = corpus_dir
    hits = grep(root, "timeout", "--mode", "regex", "--all-conversations")["data"]["hits"]
    assert hits
    for hit in hits:
        assert hit["match"] == "timeout"
        assert "timeout" in hit["snippet"] and len(hit["snippet"]) > len("timeout")
        assert len(hit["snippet"]) <= 200


def test_files_limit_is_exact_and_pages_continue_inside_a_file(
    corpus_dir: tuple[Path, dict[str, Any]],
) -> None:
    root, c = corpus_dir
    args = ("billing", "--mode", "regex", "--scope", "files", "--conversation-id", str(c["main"]))
    whole = grep(root, *args)
    assert len(whole["data"]["hits"]) == 3
    one = grep(root, *args, "--limit", "1")
    assert len(one["data"]["hits"]) == 1 and one["meta"]["truncatedBy"] == {"files": "limit"}
    seen: list[tuple[Any, ...]] = []
    cursor = None
    for _ in range(10):
        body = grep(root, *args, "--limit", "2", *(["--cursor", cursor] if cursor else []))
        assert len(body["data"]["hits"]) <= 2
        seen += [(h["id"], h["line"], h["byteOffset"]) for h in body["data"]["hits"]]
        cursor = body["pagination"]["nextCursor"]
        if cursor is None:
            break
    assert seen == [(h["id"], h["line"], h["byteOffset"]) for h in whole["data"]["hits"]]


def test_a_deadline_during_a_large_regex_budget_still_moves_the_cursor_on(
    half_corpus: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Candidates are read batch by batch, each scanned before the next: a deadline that
    falls anywhere leaves the rows scanned so far behind it, so every page makes progress
    and the pages together are the whole answer. (The deadline is forced after a fixed
    number of queries: no wall time.)"""
    from lcm_cli.engine.recall import grep_newest, grep_sources, grep_sql

    args = ["--db", str(half_corpus), "grep", "comm[o]n", "--all-conversations", "--scope", "messages"]
    args += ["--limit", "500", "--scan-limit", "6000"]
    whole = lcm(*args).json
    assert whole["meta"]["complete"] is False and len(whole["data"]["hits"]) == 500
    monkeypatch.setattr(grep_newest, "STEP_ROWS", 64)
    monkeypatch.setattr(grep_sources, "REGEX_BATCH", 100)
    real = grep_sql.run
    calls: dict[Any, int] = {}  # keyed by the deadline itself: an id() could be reused

    def expiring(q: Any, sql: str, params: list[Any]) -> Any:
        n = calls[q.deadline] = calls.get(q.deadline, 0) + 1
        if n > 12:
            q.deadline.ends = 0.0  # out of time from here on
        return real(q, sql, params)

    monkeypatch.setattr(grep_sql, "run", expiring)
    seen: list[int] = []
    cursor = None
    pages = 0
    while len(seen) < 500:
        body = lcm(*args, *(["--cursor", cursor] if cursor else [])).json
        pages += 1
        assert body["meta"]["truncatedBy"] in ({"messages": "deadline"}, {"messages": "limit"})
        assert body["meta"]["sources"]["messages"]["scannedRows"] > 0
        seen += [h["id"] for h in body["data"]["hits"]]
        cursor = body["pagination"]["nextCursor"]
        assert cursor is not None and pages < 100
    assert pages > 1 and seen[:500] == [h["id"] for h in whole["data"]["hits"]]
