"""Keyset pagination of the three list commands (cli-contract.md §8, §11.3, §11.5, §11.7).

Every test builds a real lcm.db through the write Store and walks the pages by feeding
each ``nextCursor`` back, checking the concatenated walk against the order the contract
defines: ``julianday(timestamp) DESC, id DESC`` (timestamps compared as instants, so the
two stored shapes interleave correctly and equal instants tie on the id).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lcm_cli.engine.db.store import Store
from tests.conftest import lcm

BASE = datetime(2026, 7, 1, 9, 0, 0, tzinfo=timezone.utc)
PAGINATION_KEYS = ["limit", "returned", "hasMore", "nextCursor"]
ID_KEY = {"conversations": "conversationId", "messages": "messageId", "summaries": "summaryId"}
DECOY_CREATED_AT = "2030-01-01 00:00:00"  # created_at of summaries whose coverage is latest_at


# --------------------------------------------------------------------------------------
# timestamps


def shaped(moment: datetime, style: str) -> str:
    """``moment`` written the way lcm.db stores it.

    ``sql``: SQLite ``datetime('now')`` text (whole seconds, no zone); ``iso``: JavaScript
    ``toISOString()``; ``offset``: ISO with a +02:00 offset (julianday accepts it too).
    """
    if style == "sql":
        assert moment.microsecond == 0
        return moment.strftime("%Y-%m-%d %H:%M:%S")
    if style == "iso":
        return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
    if style == "offset":
        local = moment.astimezone(timezone(timedelta(hours=2)))
        return local.strftime("%Y-%m-%dT%H:%M:%S") + "+02:00"
    raise AssertionError(style)


def at(seconds: float) -> datetime:
    return BASE + timedelta(seconds=seconds)


@dataclass(frozen=True)
class Row:
    """One listed row: its id and the instant its sort timestamp denotes."""

    key: Any
    instant: datetime


def expected_order(rows: Sequence[Row]) -> list[Any]:
    """The contract's order: instant DESC, then id DESC."""
    return [r.key for r in sorted(rows, key=lambda r: (r.instant, r.key), reverse=True)]


# --------------------------------------------------------------------------------------
# database builders (real files through the Store)


def add_conversations(path: Path, stamps: Sequence[tuple[datetime, str]]) -> list[Row]:
    """One conversation per stamp, ``updated_at`` = that stamp."""
    with Store.open(path) as store, store.transaction():
        rows = []
        for moment, style in stamps:
            text = shaped(moment, style)
            cid = store.create_conversation(
                f"sess-{len(rows)}-{text}",
                created_at=shaped(BASE - timedelta(days=1), "sql"),
                updated_at=text,
            )
            rows.append(Row(cid, moment))
        return rows


def add_messages(
    path: Path,
    stamps: Sequence[tuple[datetime, str]],
    conversation_id: int | None = None,
    session_key: str | None = None,
) -> tuple[int, list[Row]]:
    """Messages with the given ``created_at`` stamps in one (new or given) conversation."""
    with Store.open(path) as store, store.transaction():
        cid = conversation_id or store.create_conversation(
            "sess-messages", session_key=session_key, created_at=shaped(BASE, "sql")
        )
        ids = store.add_messages(
            cid,
            [
                {
                    "role": "user" if i % 2 else "assistant",
                    "content": f"m{i}",
                    "created_at": shaped(m, s),
                    "token_count": 1,
                }
                for i, (m, s) in enumerate(stamps)
            ],
        )
        return cid, [Row(mid, m) for mid, (m, _) in zip(ids, stamps)]


@dataclass(frozen=True)
class SummarySpec:
    summary_id: str
    moment: datetime
    style: str
    via_latest: bool = True  # coverage from latest_at (else latest_at NULL, coverage = created_at)
    conversation: int = 0  # index into the conversations created for the build


def add_summaries(
    path: Path, specs: Sequence[SummarySpec], conversations: int = 1
) -> tuple[list[int], list[Row]]:
    """Leaf summaries whose coverage time (COALESCE(latest_at, created_at)) is each spec's stamp."""
    with Store.open(path) as store, store.transaction():
        existing = [
            r[0]
            for r in store.conn.execute("SELECT conversation_id FROM conversations ORDER BY conversation_id")
        ]
        while len(existing) < conversations:
            existing.append(
                store.create_conversation(
                    f"sess-sum-{len(existing)}", session_key=f"agent:sum:{len(existing)}"
                )
            )
        rows = []
        for spec in specs:
            cid = existing[spec.conversation]
            mid = store.add_message(
                cid, "user", f"source of {spec.summary_id}", created_at=shaped(BASE, "sql")
            )
            stamp = shaped(spec.moment, spec.style)
            sid = store.add_leaf_summary(
                cid,
                [mid],
                f"summary {spec.summary_id}",
                summary_id=spec.summary_id,
                created_at=DECOY_CREATED_AT if spec.via_latest else stamp,
            )
            latest = stamp if spec.via_latest else None
            store.conn.execute(
                "UPDATE summaries SET earliest_at = ?, latest_at = ? WHERE summary_id = ?",
                (latest, latest, sid),
            )
            rows.append(Row(sid, spec.moment))
        return existing, rows


# --------------------------------------------------------------------------------------
# walking


def check_envelope(envelope: dict[str, Any], limit: int) -> None:
    """The shape every list page must have."""
    assert list(envelope) == ["ok", "command", "data", "pagination", "meta"]
    page = envelope["pagination"]
    assert list(page) == PAGINATION_KEYS
    assert page["limit"] == limit
    assert page["returned"] == len(envelope["data"]["items"])
    assert page["returned"] <= limit
    assert isinstance(page["hasMore"], bool)
    if page["hasMore"]:
        assert page["returned"] == limit
        assert isinstance(page["nextCursor"], str) and page["nextCursor"]
    else:
        assert page["nextCursor"] is None


def pages(args: Sequence[str], limit: int, max_pages: int = 2000) -> Iterator[dict[str, Any]]:
    """Yield each page's envelope, following nextCursor until it is null."""
    cursor = None
    for _ in range(max_pages):
        argv = [*args, "--limit", str(limit)]
        if cursor is not None:
            argv += ["--cursor", cursor]
        out = lcm(*argv)
        assert out.code == 0, out.stderr
        envelope = out.json
        check_envelope(envelope, limit)
        yield envelope
        cursor = envelope["pagination"]["nextCursor"]
        if cursor is None:
            return
    raise AssertionError("walk did not terminate")


def walk(args: Sequence[str], limit: int, resource: str) -> list[Any]:
    """All ids in walk order (asserting no duplicates)."""
    seen: list[Any] = []
    for envelope in pages(args, limit):
        seen.extend(item[ID_KEY[resource]] for item in envelope["data"]["items"])
    assert len(seen) == len(set(seen)), f"duplicates in walk: {seen}"
    return seen


def list_args(db: Path, resource: str, *extra: str) -> list[str]:
    return ["--db", str(db), resource, "list", *extra]


# A mixed timeline: both shapes, equal instants in different shapes, sub-second ISO rows,
# and an ISO row that sorts before a SQL row as text but after it as an instant.
MIXED = [
    (at(0), "sql"),
    (at(0), "iso"),
    (at(0), "offset"),
    (at(60), "iso"),
    (at(60), "sql"),
    (at(30.5), "iso"),
    (at(30), "sql"),
    (at(31), "sql"),
    (at(-3600), "iso"),
    (at(-1800), "sql"),
    (at(3600), "sql"),
    (at(3600), "iso"),
    (at(3600.001), "iso"),
    (at(3599.999), "iso"),
    (at(86400), "offset"),
    (at(86400), "sql"),
]
LIMITS = [1, 2, 3, 5, 7, 16, 17, 50]


# --------------------------------------------------------------------------------------
# full walks, exact global order


@pytest.mark.parametrize("limit", LIMITS)
def test_conversations_walk_exact_order(tmp_path: Path, limit: int) -> None:
    db = tmp_path / "lcm.db"
    rows = add_conversations(db, MIXED)
    assert walk(list_args(db, "conversations"), limit, "conversations") == expected_order(rows)


@pytest.mark.parametrize("limit", LIMITS)
def test_messages_walk_exact_order(tmp_path: Path, limit: int) -> None:
    db = tmp_path / "lcm.db"
    cid, rows = add_messages(db, MIXED, session_key="agent:test:messages")
    # Another conversation's messages interleave in time but must never show up.
    add_messages(db, [(at(15), "sql"), (at(45), "iso")], conversation_id=None)
    got = walk(list_args(db, "messages", "--conversation-id", str(cid)), limit, "messages")
    assert got == expected_order(rows)
    by_key = walk(list_args(db, "messages", "--session-key", "agent:test:messages"), limit, "messages")
    assert by_key == expected_order(rows)


def mixed_summary_specs() -> list[SummarySpec]:
    specs = []
    for i, (moment, style) in enumerate(MIXED):
        specs.append(SummarySpec(f"sum_{i:04d}", moment, style, via_latest=i % 3 != 0, conversation=i % 2))
    return specs


@pytest.mark.parametrize("limit", LIMITS)
def test_summaries_walk_global_exact_order(tmp_path: Path, limit: int) -> None:
    db = tmp_path / "lcm.db"
    _, rows = add_summaries(db, mixed_summary_specs(), conversations=2)
    assert walk(list_args(db, "summaries"), limit, "summaries") == expected_order(rows)


@pytest.mark.parametrize("limit", [1, 3, 8, 50])
def test_summaries_walk_scoped_exact_order(tmp_path: Path, limit: int) -> None:
    db = tmp_path / "lcm.db"
    specs = mixed_summary_specs()
    cids, rows = add_summaries(db, specs, conversations=2)
    for index, cid in enumerate(cids):
        mine = [r for r, s in zip(rows, specs) if s.conversation == index]
        got = walk(list_args(db, "summaries", "--conversation-id", str(cid)), limit, "summaries")
        assert got == expected_order(mine)
        out = lcm(*list_args(db, "summaries", "--conversation-id", str(cid), "--limit", str(limit)))
        assert out.json["data"]["conversationId"] == cid
    by_key = walk(list_args(db, "summaries", "--session-key", "agent:sum:1"), 4, "summaries")
    assert by_key == expected_order([r for r, s in zip(rows, specs) if s.conversation == 1])


def test_summaries_global_listing_has_null_conversation_id(tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    add_summaries(db, mixed_summary_specs()[:3], conversations=2)
    out = lcm(*list_args(db, "summaries", "--limit", "1"))
    assert out.json["data"]["conversationId"] is None


def test_summary_coverage_ignores_created_at_when_latest_at_is_set(tmp_path: Path) -> None:
    """Sort key is COALESCE(latest_at, created_at): a summary created last but covering
    the oldest span sorts last; one without latest_at sorts by its created_at."""
    db = tmp_path / "lcm.db"
    specs = [
        SummarySpec("sum_a", at(0), "iso", via_latest=True),  # created 2030, covers 09:00
        SummarySpec("sum_b", at(120), "sql", via_latest=False),  # created (and covers) 09:02
        SummarySpec("sum_c", at(60), "iso", via_latest=True),
    ]
    add_summaries(db, specs)
    items = lcm(*list_args(db, "summaries")).json["data"]["items"]
    assert [i["summaryId"] for i in items] == ["sum_b", "sum_c", "sum_a"]
    assert [i["coverageAt"] for i in items] == [
        shaped(at(120), "sql"),
        shaped(at(60), "iso"),
        shaped(at(0), "iso"),
    ]
    assert items[2]["createdAt"] == DECOY_CREATED_AT


# --------------------------------------------------------------------------------------
# ties and timestamp shapes


def test_many_messages_sharing_one_instant_page_by_id(tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    stamps = [(at(0), ("sql", "iso", "offset")[i % 3]) for i in range(31)]
    cid, rows = add_messages(db, stamps)
    expected = sorted((r.key for r in rows), reverse=True)
    for limit in (1, 4, 10, 30, 31, 32):
        assert walk(list_args(db, "messages", "--conversation-id", str(cid)), limit, "messages") == expected


def test_many_conversations_sharing_one_instant_page_by_id(tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    rows = add_conversations(db, [(at(0), ("sql", "iso")[i % 2]) for i in range(23)])
    expected = sorted((r.key for r in rows), reverse=True)
    for limit in (1, 5, 22, 23):
        assert walk(list_args(db, "conversations"), limit, "conversations") == expected


def test_many_summaries_sharing_one_instant_page_by_text_id(tmp_path: Path) -> None:
    """Ties break on summary_id DESC as text (byte order: 'Z' < '_' < 'a', '10' < '9')."""
    db = tmp_path / "lcm.db"
    ids = ["sum_9", "sum_10", "sum_a", "sum_Z", "sum__", "sum_aa", "sum_A0", "sum_z", "sum_0", "sum_-"]
    specs = [
        SummarySpec(sid, at(0), ("sql", "iso")[i % 2], via_latest=bool(i % 2)) for i, sid in enumerate(ids)
    ]
    add_summaries(db, specs)
    expected = sorted(ids, reverse=True)
    for limit in (1, 3, 9, 10):
        assert walk(list_args(db, "summaries"), limit, "summaries") == expected


def test_equal_instants_in_different_shapes_are_ties(tmp_path: Path) -> None:
    """'2026-07-01 09:00:00', '2026-07-01T09:00:00.000Z' and '...T11:00:00+02:00' are one
    instant: ordered purely by id, and a cursor taken at any of them resumes correctly."""
    db = tmp_path / "lcm.db"
    cid, rows = add_messages(
        db,
        [(at(0), "sql"), (at(0), "iso"), (at(0), "offset"), (at(0), "sql"), (at(-1), "iso"), (at(1), "sql")],
    )
    ids = [r.key for r in rows]
    expected = [ids[5], ids[3], ids[2], ids[1], ids[0], ids[4]]
    for limit in (1, 2, 3):
        assert walk(list_args(db, "messages", "--conversation-id", str(cid)), limit, "messages") == expected


def test_instant_order_not_text_order(tmp_path: Path) -> None:
    """As text, '2026-07-01 10:00:00' < '2026-07-01T09:30:00.000Z'; as instants it is later."""
    db = tmp_path / "lcm.db"
    cid, rows = add_messages(db, [(at(3600), "sql"), (at(1800), "iso"), (at(1799), "sql"), (at(3601), "iso")])
    ids = [r.key for r in rows]
    got = walk(list_args(db, "messages", "--conversation-id", str(cid)), 1, "messages")
    assert got == [ids[3], ids[0], ids[1], ids[2]]


def test_sub_second_iso_rows_interleave_with_whole_second_rows(tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    stamps = [(at(10), "sql"), (at(10.001), "iso"), (at(9.999), "iso"), (at(10), "iso"), (at(11), "sql")]
    rows = add_conversations(db, stamps)
    ids = [r.key for r in rows]
    assert walk(list_args(db, "conversations"), 2, "conversations") == [
        ids[4],
        ids[1],
        ids[3],
        ids[0],
        ids[2],
    ]


# --------------------------------------------------------------------------------------
# rows inserted in the middle of a walk (second Store connection)


def _walk_with_inserts(
    args: list[str], limit: int, resource: str, inserts: dict[int, Any]
) -> tuple[list[Any], list[tuple[Any, list[Row]]]]:
    """Walk, calling ``inserts[n]()`` (returning the new Rows) right after page n.

    Returns the ids in walk order and, per insert, (last id shown before it, new rows).
    """
    seen: list[Any] = []
    log: list[tuple[Any, list[Row]]] = []
    for number, envelope in enumerate(pages(args, limit)):
        seen.extend(item[ID_KEY[resource]] for item in envelope["data"]["items"])
        if number in inserts:
            log.append((seen[-1], inserts[number]()))
    return seen, log


def _check_walk_after_inserts(
    seen: list[Any], before: list[Any], final: list[Any], log: list[tuple[Any, list[Row]]]
) -> None:
    """No duplicates; every pre-existing row exactly once; and the walk is exactly the final
    global order minus the inserted rows that sorted before the cursor when inserted."""
    assert len(seen) == len(set(seen)), f"duplicates: {seen}"
    for key in before:
        assert seen.count(key) == 1, key
    hidden = {row.key for cut, rows in log for row in rows if final.index(row.key) < final.index(cut)}
    assert seen == [k for k in final if k not in hidden]


def test_messages_inserted_mid_walk(tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    cid, rows = add_messages(db, [(at(i * 10), ("sql", "iso")[i % 2]) for i in range(20)])
    before = expected_order(rows)
    added: list[Row] = []

    def insert(stamps: list[tuple[datetime, str]]) -> Any:
        def run() -> list[Row]:
            with Store.open(db) as store:  # a second, independent writer connection
                ids = store.add_messages(
                    cid, [{"role": "user", "content": "late", "created_at": shaped(m, s)} for m, s in stamps]
                )
            new = [Row(i, m) for i, (m, _) in zip(ids, stamps)]
            added.extend(new)
            return new

        return run

    limit = 4
    # Page 0 shows instants 190..160; the cursor sits at 160.
    inserts = {
        0: insert(
            [
                (at(1000), "sql"),  # newer than everything: must not appear
                (at(160), "iso"),  # same instant as the cursor row, higher id: sorts before it
                (at(155), "sql"),  # older than the cursor: must appear
                (at(-5), "iso"),  # older than everything: must appear last
            ]
        ),
        # Page 2 ends at instant 90: 95 is behind the cursor, 85 and 0 ahead of it.
        2: insert([(at(95), "iso"), (at(500), "sql"), (at(85), "sql"), (at(0), "sql")]),
    }
    seen, log = _walk_with_inserts(
        list_args(db, "messages", "--conversation-id", str(cid)), limit, "messages", inserts
    )
    final = expected_order(rows + added)
    _check_walk_after_inserts(seen, before, final, log)
    late = [r.key for r in added]
    assert late[0] not in seen and late[5] not in seen  # newer than everything
    assert late[1] not in seen  # tie with the cursor row but a higher id
    assert late[4] not in seen  # 95: between pages already shown
    assert late[2] in seen and late[6] in seen and late[7] in seen  # 155, 85, 0
    assert seen[-1] == late[3]  # -5 is the oldest row of all
    # The late row at 0 ties with message 1 and has the higher id, so it comes first.
    assert seen[-3:] == [late[7], rows[0].key, late[3]]


def test_conversations_inserted_mid_walk(tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    rows = add_conversations(db, [(at(i * 60), ("iso", "sql")[i % 2]) for i in range(12)])
    before = expected_order(rows)
    added: list[Row] = []

    def insert(moments: list[tuple[datetime, str]]) -> Any:
        def run() -> list[Row]:
            with Store.open(db) as store:
                new = [Row(store.create_conversation("late", updated_at=shaped(m, s)), m) for m, s in moments]
            added.extend(new)
            return new

        return run

    # Page 0 shows 660..540, page 1 480..360; 240 is still ahead when inserted.
    inserts = {
        0: insert([(at(99999), "sql"), (at(10), "iso"), (at(-60), "sql")]),
        1: insert([(at(240), "iso")]),
    }
    seen, log = _walk_with_inserts(list_args(db, "conversations"), 3, "conversations", inserts)
    final = expected_order(rows + added)
    _check_walk_after_inserts(seen, before, final, log)
    assert added[0].key not in seen
    assert added[1].key in seen and added[2].key in seen and added[3].key in seen


def test_summaries_inserted_mid_walk(tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    specs = [
        SummarySpec(f"sum_m{i:02d}", at(i * 10), ("sql", "iso")[i % 2], via_latest=bool(i % 3))
        for i in range(15)
    ]
    _, rows = add_summaries(db, specs)
    before = expected_order(rows)
    added: list[Row] = []

    def insert(new: list[SummarySpec]) -> Any:
        def run() -> list[Row]:
            rows_added = add_summaries(db, new)[1]  # opens its own Store connection
            added.extend(rows_added)
            return rows_added

        return run

    # Page 0 (limit 5) shows 140..100; the cursor is (100, sum_m10).
    inserts = {
        0: insert(
            [
                SummarySpec("sum_zz", at(100), "iso"),  # tie with the cursor, larger id: before it
                SummarySpec("sum_a0", at(100), "sql", via_latest=False),  # tie, smaller id: after it
                SummarySpec("sum_new", at(5000), "iso"),
                SummarySpec("sum_old", at(-10), "sql"),
            ]
        ),
    }
    seen, log = _walk_with_inserts(list_args(db, "summaries"), 5, "summaries", inserts)
    final = expected_order(rows + added)
    _check_walk_after_inserts(seen, before, final, log)
    assert "sum_zz" not in seen and "sum_new" not in seen
    assert "sum_a0" in seen and seen[-1] == "sum_old"
    assert seen.index("sum_a0") == 5  # first row of page 1


def test_rows_deleted_mid_walk_do_not_break_the_walk(tmp_path: Path) -> None:
    """The cursor holds a position, not a row: deleting the cursor row itself is harmless."""
    db = tmp_path / "lcm.db"
    rows = add_conversations(db, [(at(i), "sql") for i in range(9)])
    order = expected_order(rows)
    walker = pages(list_args(db, "conversations"), 3)
    first = [i["conversationId"] for i in next(walker)["data"]["items"]]
    assert first == order[:3]
    with Store.open(db) as store, store.transaction():
        store.conn.execute("DELETE FROM conversations WHERE conversation_id = ?", (first[-1],))
    rest = [i["conversationId"] for env in walker for i in env["data"]["items"]]
    assert rest == order[3:]


# --------------------------------------------------------------------------------------
# filters are repeated by the caller, not stored in the cursor


def test_messages_walk_with_role_and_time_filters(tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    stamps = [(at(i * 30), ("sql", "iso")[i % 2]) for i in range(24)]
    cid, rows = add_messages(db, stamps)  # odd index -> user, even -> assistant
    users = [r for i, r in enumerate(rows) if i % 2]
    args = list_args(db, "messages", "--conversation-id", str(cid), "--role", "user")
    assert walk(args, 3, "messages") == expected_order(users)
    window = [r for r in rows if at(120) <= r.instant < at(540)]
    args = list_args(
        db,
        "messages",
        "--conversation-id",
        str(cid),
        "--after",
        "2026-07-01T09:02:00Z",
        "--before",
        "2026-07-01T09:09:00Z",
    )
    assert walk(args, 2, "messages") == expected_order(window)


def test_summaries_walk_with_kind_and_depth_filters(tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    specs = [SummarySpec(f"sum_k{i:02d}", at(i * 60), ("sql", "iso")[i % 2]) for i in range(8)]
    cids, rows = add_summaries(db, specs)
    with Store.open(db) as store:
        cond = store.add_condensed_summary(
            cids[0],
            [r.key for r in rows[:3]],
            "condensed",
            summary_id="sum_cond",
            created_at=shaped(at(5), "sql"),
        )
    assert cond == "sum_cond"
    leaves = walk(list_args(db, "summaries", "--kind", "leaf"), 3, "summaries")
    assert leaves == expected_order(rows)
    assert walk(list_args(db, "summaries", "--depth", "0"), 2, "summaries") == expected_order(rows)
    assert walk(list_args(db, "summaries", "--depth", "1"), 1, "summaries") == ["sum_cond"]
    everything = walk(list_args(db, "summaries"), 4, "summaries")
    assert sorted(everything) == sorted([r.key for r in rows] + ["sum_cond"])


def test_cursor_is_not_bound_to_filters_or_conversation(tmp_path: Path) -> None:
    """A cursor carries only (timestamp, id): reused with other filters or another
    conversation it is accepted and positions that listing."""
    db = tmp_path / "lcm.db"
    cid, rows = add_messages(db, [(at(i * 10), "sql") for i in range(6)])
    cid2, rows2 = add_messages(db, [(at(i * 10 + 5), "iso") for i in range(6)])
    out = lcm(*list_args(db, "messages", "--conversation-id", str(cid), "--role", "user", "--limit", "1"))
    cursor = out.json["pagination"]["nextCursor"]
    first = out.json["data"]["items"][0]
    # Same conversation, no role filter: everything strictly after the cursor position.
    out = lcm(*list_args(db, "messages", "--conversation-id", str(cid), "--cursor", cursor, "--limit", "500"))
    assert out.code == 0
    order = expected_order(rows)
    assert [i["messageId"] for i in out.json["data"]["items"]] == order[order.index(first["messageId"]) + 1 :]
    # Another conversation: rows of that conversation older than the cursor instant.
    out = lcm(
        *list_args(db, "messages", "--conversation-id", str(cid2), "--cursor", cursor, "--limit", "500")
    )
    assert out.code == 0
    cut = next(r.instant for r in rows if r.key == first["messageId"])
    assert [i["messageId"] for i in out.json["data"]["items"]] == expected_order(
        [r for r in rows2 if r.instant < cut]
    )


def test_empty_cursor_means_first_page(tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    rows = add_conversations(db, [(at(i), "sql") for i in range(3)])
    out = lcm(*list_args(db, "conversations", "--cursor", "", "--limit", "2"))
    assert out.code == 0
    assert [i["conversationId"] for i in out.json["data"]["items"]] == expected_order(rows)[:2]


# --------------------------------------------------------------------------------------
# --limit


def _count_rows(resource: str, db: Path, n: int) -> list[str]:
    """Build ``n`` rows of ``resource``; return the list argv (without --limit)."""
    if resource == "conversations":
        add_conversations(db, [(at(i), ("sql", "iso")[i % 2]) for i in range(n)])
        return list_args(db, "conversations")
    if resource == "messages":
        cid, _ = add_messages(db, [(at(i), ("sql", "iso")[i % 2]) for i in range(n)])
        return list_args(db, "messages", "--conversation-id", str(cid))
    add_summaries(db, [SummarySpec(f"sum_{i:05d}", at(i), ("sql", "iso")[i % 2]) for i in range(n)])
    return list_args(db, "summaries")


@pytest.mark.parametrize("resource", ["conversations", "messages", "summaries"])
def test_limit_500_and_default_50(tmp_path: Path, resource: str) -> None:
    db = tmp_path / "lcm.db"
    args = _count_rows(resource, db, 501)
    envelopes = list(pages(args, 500))
    assert [e["pagination"]["returned"] for e in envelopes] == [500, 1]
    assert envelopes[0]["pagination"]["hasMore"] is True
    assert envelopes[1]["pagination"] == {"limit": 500, "returned": 1, "hasMore": False, "nextCursor": None}
    ids = [i[ID_KEY[resource]] for e in envelopes for i in e["data"]["items"]]
    assert len(set(ids)) == 501
    default = lcm(*args)
    assert default.json["pagination"]["limit"] == 50
    assert default.json["pagination"]["returned"] == 50
    assert default.json["pagination"]["hasMore"] is True
    assert [i[ID_KEY[resource]] for i in default.json["data"]["items"]] == ids[:50]


@pytest.mark.parametrize("resource", ["conversations", "messages", "summaries"])
def test_limit_1_walks_one_row_per_page(tmp_path: Path, resource: str) -> None:
    db = tmp_path / "lcm.db"
    args = _count_rows(resource, db, 7)
    envelopes = list(pages(args, 1))
    assert len(envelopes) == 7
    assert [e["pagination"]["returned"] for e in envelopes] == [1] * 7
    assert [e["pagination"]["hasMore"] for e in envelopes] == [True] * 6 + [False]


@pytest.mark.parametrize("resource", ["conversations", "messages", "summaries"])
def test_exactly_limit_rows_has_no_more(tmp_path: Path, resource: str) -> None:
    """limit + 1 are fetched: exactly `limit` rows is one page with a null cursor."""
    db = tmp_path / "lcm.db"
    args = _count_rows(resource, db, 5)
    out = lcm(*args, "--limit", "5")
    assert out.json["pagination"] == {"limit": 5, "returned": 5, "hasMore": False, "nextCursor": None}
    out = lcm(*args, "--limit", "4")
    assert out.json["pagination"]["hasMore"] is True
    last = lcm(*args, "--limit", "4", "--cursor", out.json["pagination"]["nextCursor"])
    assert last.json["pagination"] == {"limit": 4, "returned": 1, "hasMore": False, "nextCursor": None}


def test_empty_lists_have_null_cursor(tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    with Store.open(db) as store:
        cid = store.create_conversation("empty")
    for args in (
        list_args(db, "messages", "--conversation-id", str(cid)),
        list_args(db, "summaries"),
        list_args(db, "summaries", "--conversation-id", str(cid)),
    ):
        out = lcm(*args, "--limit", "3")
        assert out.code == 0
        assert out.json["data"]["items"] == []
        assert out.json["pagination"] == {"limit": 3, "returned": 0, "hasMore": False, "nextCursor": None}
    with Store.open(tmp_path / "none.db"):
        pass
    out = lcm("--db", str(tmp_path / "none.db"), "conversations", "list")
    assert out.json["pagination"] == {"limit": 50, "returned": 0, "hasMore": False, "nextCursor": None}


LIST_COMMANDS = [
    ["conversations", "list"],
    ["messages", "list", "--conversation-id", "1"],
    ["summaries", "list"],
    ["summaries", "list", "--conversation-id", "1"],
]
BAD_LIMITS = [
    "0",
    "501",
    "abc",
    "",
    "1.5",
    "5 ",
    " 5",
    "+5",
    "1e2",
    "0x10",
    "00",
    "-1",
    "5000",
    "99999999999999999999",
]


@pytest.mark.parametrize("command", LIST_COMMANDS, ids=" ".join)
@pytest.mark.parametrize("value", BAD_LIMITS)
def test_bad_limit_is_invalid_argument_with_value(db_path: Path, command: list[str], value: str) -> None:
    out = lcm("--db", str(db_path), *command, f"--limit={value}")
    assert out.code == 2
    error = out.error
    assert error["code"] == "INVALID_ARGUMENT"
    assert error["details"] == {"value": value}


@pytest.mark.parametrize("command", LIST_COMMANDS, ids=" ".join)
def test_limit_validated_before_the_database_is_opened(tmp_path: Path, command: list[str]) -> None:
    out = lcm("--db", str(tmp_path / "missing.db"), *command, "--limit", "0")
    assert out.code == 2
    assert out.error == {
        "code": "INVALID_ARGUMENT",
        "message": out.error["message"],
        "details": {"value": "0"},
    }


def test_negative_limit_as_separate_token_is_a_parser_error(db_path: Path) -> None:
    """`--limit -1`: the parser sees an option-like token where a value belongs."""
    out = lcm("--db", str(db_path), "conversations", "list", "--limit", "-1")
    assert out.code == 2
    assert out.error["code"] == "INVALID_ARGUMENT"
    assert "details" not in out.error


@pytest.mark.parametrize(
    ("value", "parsed"), [("050", 50), ("0500", 500), ("1", 1), ("500", 500), ("007", 7)]
)
@pytest.mark.parametrize("command", LIST_COMMANDS, ids=" ".join)
def test_limit_leading_zeros(db_path: Path, command: list[str], value: str, parsed: int) -> None:
    out = lcm("--db", str(db_path), *command, "--limit", value)
    assert out.code == 0, out.stderr
    assert out.json["pagination"]["limit"] == parsed


def test_repeated_limit_last_wins(db_path: Path) -> None:
    out = lcm("--db", str(db_path), "conversations", "list", "--limit", "0", "--limit", "2")
    assert out.code == 0
    assert out.json["pagination"]["limit"] == 2


def test_limit_rejects_non_ascii_digits(db_path: Path) -> None:
    out = lcm("--db", str(db_path), "conversations", "list", "--limit", "５")
    assert out.code == 2
    assert out.error["details"] == {"value": "５"}


def test_limit_rejects_trailing_newline(db_path: Path) -> None:
    out = lcm("--db", str(db_path), "conversations", "list", "--limit", "5\n")
    assert out.code == 2
    assert out.error["details"] == {"value": "5\n"}


# --------------------------------------------------------------------------------------
# the pagination object and where it appears


def test_pagination_object_key_order_in_raw_json(db_path: Path) -> None:
    out = lcm("--db", str(db_path), "messages", "list", "--conversation-id", "1", "--limit", "2")
    assert '"pagination":{"limit":2,"returned":2,"hasMore":true,"nextCursor":"' in out.stdout
    out = lcm("--db", str(db_path), "summaries", "list", "--limit", "50")
    assert '"pagination":{"limit":50,"returned":3,"hasMore":false,"nextCursor":null},"meta":' in out.stdout


def test_pagination_in_tsv_format(db_path: Path) -> None:
    """The contract's tab-separated rendering (§15) lists the pagination keys after the rows."""
    out = lcm("--db", str(db_path), "--format", "tsv", "conversations", "list", "--limit", "3")
    lines = out.stdout.splitlines()
    assert "pagination.limit\t3" in lines
    assert "pagination.returned\t3" in lines
    assert "pagination.hasMore\tfalse" in lines
    assert "pagination.nextCursor\tnull" in lines


NON_LIST = [
    ["status"],
    ["conversations", "show", "--conversation-id", "1"],
    ["messages", "tail", "--conversation-id", "1"],
    ["summaries", "show", "sum_aaaaaaaaaaaaaaaa"],
    ["config", "show"],
    ["config", "get", "freshTailCount"],
    ["--version"],
]  # `lcm doctor` continues its checks' affected ids: it has a pagination (tests/doctor)


@pytest.mark.parametrize("command", NON_LIST, ids=" ".join)
def test_pagination_absent_for_non_list_commands(state_dir: Path, command: list[str]) -> None:
    out = lcm("--openclaw-dir", str(state_dir), *command)
    assert out.code == 0, out.stderr
    envelope = out.json
    assert "pagination" not in envelope
    assert list(envelope) == ["ok", "command", "data", "meta"]
    table = lcm("--openclaw-dir", str(state_dir), "--format", "tsv", *command)
    assert table.code == 0
    assert not any(line.startswith("pagination.") for line in table.stdout.splitlines())


def test_summaries_list_walk_of_the_sample(db_path: Path) -> None:
    got = walk(["--db", str(db_path), "summaries", "list"], 1, "summaries")
    # condensed covers 09:00..09:15 (latest_at 09:15), leaf B 09:08..09:15, leaf A ..09:07
    assert got == ["sum_cccccccccccccccc", "sum_bbbbbbbbbbbbbbbb", "sum_aaaaaaaaaaaaaaaa"]


# --------------------------------------------------------------------------------------
# a stored timestamp SQLite and JS Date both read, at a page boundary


def test_cursor_from_own_output_is_always_accepted(tmp_path: Path) -> None:
    db = tmp_path / "lcm.db"
    with Store.open(db) as store:
        cid = store.create_conversation("odd")
        store.add_messages(
            cid,
            [
                {"role": "user", "content": c, "created_at": c}
                for c in ("2026-02-27 09:00:00", "2026-02-30 09:00:00", "2026-03-05 09:00:00")
            ],
        )
    got = walk(list_args(db, "messages", "--conversation-id", str(cid)), 2, "messages")
    assert got == [3, 2, 1]


# --------------------------------------------------------------------------------------
# property: any row set, any page size -> the walk is the full sorted list

INSTANT = st.integers(min_value=0, max_value=5)
STYLE = st.sampled_from(["sql", "iso", "iso_ms"])
ROWS = st.lists(st.tuples(INSTANT, STYLE), max_size=18)
PROPERTY = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _moment(k: int, style: str) -> tuple[datetime, str]:
    # iso_ms rows sit 250 ms after a whole second: a distinct instant close to the ties.
    if style == "iso_ms":
        return at(k + 0.25), "iso"
    return at(k), style


@PROPERTY
@given(rows=ROWS, limit=st.integers(min_value=1, max_value=8))
def test_property_messages_walk(rows: list[tuple[int, str]], limit: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "lcm.db"
        with Store.open(db) as store:
            cid = store.create_conversation("p")
        built: list[Row] = []
        if rows:
            _, built = add_messages(db, [_moment(k, s) for k, s in rows], conversation_id=cid)
        got = walk(list_args(db, "messages", "--conversation-id", str(cid)), limit, "messages")
        assert got == expected_order(built)


@PROPERTY
@given(rows=ROWS, limit=st.integers(min_value=1, max_value=8))
def test_property_conversations_walk(rows: list[tuple[int, str]], limit: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "lcm.db"
        built = add_conversations(db, [_moment(k, s) for k, s in rows])
        assert walk(list_args(db, "conversations"), limit, "conversations") == expected_order(built)


SUMMARY_ROWS = st.lists(
    st.tuples(
        st.text(alphabet="aZ09_-x", min_size=1, max_size=4),
        INSTANT,
        STYLE,
        st.booleans(),
        st.integers(min_value=0, max_value=1),
    ),
    max_size=16,
    unique_by=lambda t: t[0],
)


@PROPERTY
@given(rows=SUMMARY_ROWS, limit=st.integers(min_value=1, max_value=8), scoped=st.booleans())
def test_property_summaries_walk(
    rows: list[tuple[str, int, str, bool, int]], limit: int, scoped: bool
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "lcm.db"
        specs = []
        for sid, k, style, via_latest, conv in rows:
            moment, shape = _moment(k, style)
            specs.append(SummarySpec(sid, moment, shape, via_latest=via_latest, conversation=conv))
        cids, built = add_summaries(db, specs, conversations=2)
        if scoped:
            mine = [r for r, s in zip(built, specs) if s.conversation == 1]
            got = walk(list_args(db, "summaries", "--conversation-id", str(cids[1])), limit, "summaries")
            assert got == expected_order(mine)
        else:
            assert walk(list_args(db, "summaries"), limit, "summaries") == expected_order(built)


def test_cursor_points_at_last_row_shown(tmp_path: Path) -> None:
    """nextCursor encodes the last item's raw stored timestamp and id."""
    import base64

    db = tmp_path / "lcm.db"
    cid, rows = add_messages(db, [(at(0), "offset"), (at(1), "iso"), (at(2), "sql")])
    out = lcm(*list_args(db, "messages", "--conversation-id", str(cid), "--limit", "2"))
    cursor = out.json["pagination"]["nextCursor"]
    payload = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    last = out.json["data"]["items"][-1]
    assert payload == {
        "v": 1,
        "resource": "messages",
        "timestamp": last["createdAt"],
        "id": last["messageId"],
    }
    assert last["createdAt"] == shaped(at(1), "iso")
