"""Time filters of `messages list` and `summaries list` (cli-contract.md §9, §5 step 9).

``--after`` is inclusive, ``--before`` exclusive, both compared as instants
(``julianday``) against messages.created_at or the summary coverage time
COALESCE(latest_at, created_at), whichever of the two stored shapes the row uses.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.engine.db.store import Store
from tests.conftest import lcm

BASE = datetime(2026, 7, 1, 9, 0, 0, tzinfo=timezone.utc)
DECOY_CREATED_AT = "2030-01-01 00:00:00"


def at(seconds: float) -> datetime:
    return BASE + timedelta(seconds=seconds)


# (stored text, instant): both shapes, a sub-second ISO row, equal instants in two shapes.
STAMPS = [
    ("2026-07-01 09:00:00", at(0)),
    ("2026-07-01T09:00:30.500Z", at(30.5)),
    ("2026-07-01 09:01:00", at(60)),
    ("2026-07-01T09:02:00.000Z", at(120)),
    ("2026-07-01 09:03:00", at(180)),
    ("2026-07-01T09:03:00.123Z", at(180.123)),
    ("2026-07-01T09:04:00.000Z", at(240)),
    ("2026-07-01 09:04:00", at(240)),
    ("2026-07-01 09:05:00", at(300)),
]


class Timeline:
    """The database and the instant of every listed row, per resource."""

    def __init__(
        self,
        db: Path,
        conversation_id: int,
        summary_conversation_id: int,
        instants: dict[str, dict[Any, datetime]],
    ) -> None:
        self.db = db
        self.cid = conversation_id
        self.sum_cid = summary_conversation_id
        self.instants = instants

    def args(self, resource: str, *extra: str) -> list[str]:
        if resource == "messages":
            return [
                "--db",
                str(self.db),
                "messages",
                "list",
                "--conversation-id",
                str(self.cid),
                "--limit",
                "500",
                *extra,
            ]
        return ["--db", str(self.db), "summaries", "list", "--limit", "500", *extra]

    def ids(self, resource: str, *extra: str) -> list[Any]:
        out = lcm(*self.args(resource, *extra))
        assert out.code == 0, out.stderr
        key = "messageId" if resource == "messages" else "summaryId"
        return [item[key] for item in out.json["data"]["items"]]

    def expected(self, resource: str, lower: datetime | None, upper: datetime | None) -> list[Any]:
        rows = [
            (t, k)
            for k, t in self.instants[resource].items()
            if (lower is None or t >= lower) and (upper is None or t < upper)
        ]
        return [k for t, k in sorted(rows, reverse=True)]


def build_timeline(db: Path) -> Timeline:
    with Store.open(db) as store:
        cid = store.create_conversation("sess-time", session_key="agent:time")
        other = store.create_conversation("sess-other")
        sums = store.create_conversation("sess-summaries")  # holds the summaries and their sources
        ids = store.add_messages(
            cid,
            [{"role": "user", "content": f"m{i}", "created_at": text} for i, (text, _) in enumerate(STAMPS)],
        )
        # Another conversation's message inside every window: never listed.
        store.add_messages(
            other, [{"role": "user", "content": "elsewhere", "created_at": "2026-07-01 09:02:30"}]
        )
        summaries: dict[Any, datetime] = {}
        with store.transaction():
            for i, (text, instant) in enumerate(STAMPS):
                source = store.add_message(
                    sums, "user", f"source {i}", created_at="2026-07-01 08:00:00", in_context=False
                )
                via_latest = i % 2 == 0
                sid = store.add_leaf_summary(
                    sums,
                    [source],
                    f"s{i}",
                    summary_id=f"sum_{i:02d}",
                    created_at=DECOY_CREATED_AT if via_latest else text,
                )
                latest = text if via_latest else None
                store.conn.execute(
                    "UPDATE summaries SET earliest_at = ?, latest_at = ? WHERE summary_id = ?",
                    (latest, latest, sid),
                )
                summaries[sid] = instant
            # latest_at (08:00) wins over a created_at inside the windows.
            source = store.add_message(
                sums, "user", "decoy source", created_at="2026-07-01 08:00:00", in_context=False
            )
            store.add_leaf_summary(
                sums, [source], "decoy", summary_id="sum_decoy", created_at="2026-07-01 09:02:30"
            )
            store.conn.execute(
                "UPDATE summaries SET latest_at = '2026-07-01T08:00:00.000Z' WHERE summary_id = 'sum_decoy'"
            )
            summaries["sum_decoy"] = at(-3600)
    messages = dict(zip(ids, (instant for _, instant in STAMPS)))
    return Timeline(db, cid, sums, {"messages": messages, "summaries": summaries})


@pytest.fixture(scope="module")
def timeline(tmp_path_factory: pytest.TempPathFactory) -> Timeline:
    return build_timeline(tmp_path_factory.mktemp("timeline") / "lcm.db")


RESOURCES = ["messages", "summaries"]


def test_timeline_is_what_the_tests_assume(timeline: Timeline) -> None:
    for resource in RESOURCES:
        assert timeline.ids(resource) == timeline.expected(resource, None, None)
    items = lcm(*timeline.args("summaries")).json["data"]["items"]
    decoy = next(i for i in items if i["summaryId"] == "sum_decoy")
    assert decoy["coverageAt"] == "2026-07-01T08:00:00.000Z" and decoy["createdAt"] == "2026-07-01 09:02:30"


# --------------------------------------------------------------------------------------
# accepted bounds: (options, inclusive lower instant, exclusive upper instant)

BOUNDS: list[tuple[list[str], datetime | None, datetime | None]] = [
    # --after is inclusive at an exact row timestamp, in either stored shape
    (["--after", "2026-07-01T09:00:00Z"], at(0), None),
    (["--after", "2026-07-01T09:01:00Z"], at(60), None),
    (["--after", "2026-07-01T09:01:00.000Z"], at(60), None),
    (["--after", "2026-07-01T09:01Z"], at(60), None),
    (["--after", "2026-07-01T09:02:00.000Z"], at(120), None),
    (["--after", "2026-07-01T09:00:30.500Z"], at(30.5), None),
    (["--after", "2026-07-01T09:00:30.501Z"], at(30.501), None),
    (["--after", "2026-07-01T09:03:00.123Z"], at(180.123), None),
    (["--after", "2026-07-01T09:04:00Z"], at(240), None),  # both shapes of 09:04 included
    (["--after", "2026-07-01T09:05:00.001Z"], at(300.001), None),
    # --before is exclusive
    (["--before", "2026-07-01T09:01:00Z"], None, at(60)),
    (["--before", "2026-07-01T09:00:30.500Z"], None, at(30.5)),
    (["--before", "2026-07-01T09:00:30.501Z"], None, at(30.501)),
    (["--before", "2026-07-01T09:04:00Z"], None, at(240)),  # both shapes of 09:04 excluded
    (["--before", "2026-07-01T09:03:00.124Z"], None, at(180.124)),
    (["--before", "2026-07-01T09:00:00Z"], None, at(0)),
    # offsets
    (["--after", "2026-07-01T11:01:00+02:00"], at(60), None),
    (["--after", "2026-07-01T03:31:00-05:30"], at(60), None),
    (["--before", "2026-07-01T14:34:00+05:30"], None, at(240)),
    (["--before", "2026-07-01T04:03:00.123-05:00"], None, at(180.123)),
    (["--after", "2026-07-01T09:02:00+00:00"], at(120), None),
    (["--after", "2026-07-01T09:02:00-00:00"], at(120), None),
    (["--after", "2026-07-02T09:00:00+23:59"], at(60), None),
    (["--after", "2026-07-01T09:03:00.123+00:00"], at(180.123), None),
    # sub-millisecond digits are truncated, not rounded (JavaScript Date keeps milliseconds)
    (["--after", "2026-07-01T09:00:30.5009Z"], at(30.5), None),
    (["--before", "2026-07-01T09:00:30.5009Z"], None, at(30.5)),
    (["--after", "2026-07-01T09:00:30.4999999Z"], at(30.499), None),
    (["--before", "2026-07-01T09:03:00.123999999Z"], None, at(180.123)),
    # both bounds and --between
    (["--after", "2026-07-01T09:01:00Z", "--before", "2026-07-01T09:04:00Z"], at(60), at(240)),
    (["--before", "2026-07-01T09:04:00Z", "--after", "2026-07-01T09:01:00Z"], at(60), at(240)),
    (["--between", "2026-07-01T09:01:00Z..2026-07-01T09:04:00Z"], at(60), at(240)),
    (["--between", "2026-07-01T10:00:30.5+01:00..2026-07-01T09:03:00.123Z"], at(30.5), at(180.123)),
    (["--between", "2026-07-01T09:03:00.123Z..2026-07-01T09:03:00.124Z"], at(180.123), at(180.124)),
    (["--between", "2026-07-01T09:03:00.001Z..2026-07-01T09:03:00.123Z"], at(180.001), at(180.123)),
    (["--between", "2026-06-01T00:00Z..2026-08-01T00:00Z"], at(-30 * 86400), at(31 * 86400)),
    (["--after=2026-07-01T09:01:00Z"], at(60), None),
    (["--between=2026-07-01T09:01:00Z..2026-07-01T09:04:00Z"], at(60), at(240)),
]


@pytest.mark.parametrize("resource", RESOURCES)
@pytest.mark.parametrize(
    ("options", "lower", "upper"), BOUNDS, ids=lambda v: " ".join(v) if isinstance(v, list) else ""
)
def test_bounds(
    timeline: Timeline, resource: str, options: list[str], lower: datetime | None, upper: datetime | None
) -> None:
    assert timeline.ids(resource, *options) == timeline.expected(resource, lower, upper)


@pytest.mark.parametrize("resource", RESOURCES)
@pytest.mark.parametrize("digits", range(1, 10))
def test_fraction_of_one_to_nine_digits(timeline: Timeline, resource: str, digits: int) -> None:
    fraction = "5".ljust(digits, "0")  # .5, .50, ... .500000000 all mean 500 ms
    after = f"2026-07-01T09:00:30.{fraction}Z"
    assert timeline.ids(resource, "--after", after) == timeline.expected(resource, at(30.5), None)
    before = f"2026-07-01T09:03:00.{'123456789'[:digits]}Z"  # truncated to at most .123
    upper = at(180 + int("123456789"[: min(digits, 3)].ljust(3, "0")) / 1000)
    assert timeline.ids(resource, "--before", before) == timeline.expected(resource, None, upper)


@pytest.mark.parametrize("resource", RESOURCES)
def test_filter_combines_with_selector_and_other_filters(timeline: Timeline, resource: str) -> None:
    if resource == "messages":
        got = timeline.ids(resource, "--after", "2026-07-01T09:01:00Z", "--role", "user")
        assert got == timeline.expected(resource, at(60), None)
        out = lcm(
            "--db",
            str(timeline.db),
            "messages",
            "list",
            "--session-key",
            "agent:time",
            "--before",
            "2026-07-01T09:01:00Z",
        )
        assert [i["messageId"] for i in out.json["data"]["items"]] == timeline.expected(
            resource, None, at(60)
        )
    else:
        got = timeline.ids(
            resource,
            "--conversation-id",
            str(timeline.sum_cid),
            "--kind",
            "leaf",
            "--depth",
            "0",
            "--between",
            "2026-07-01T09:01:00Z..2026-07-01T09:04:00Z",
        )
        assert got == timeline.expected(resource, at(60), at(240))
        assert (
            timeline.ids(resource, "--conversation-id", str(timeline.cid), "--after", "2026-07-01T09:00:00Z")
            == []
        )
        assert timeline.ids(resource, "--kind", "condensed", "--after", "2026-07-01T09:00:00Z") == []


# --------------------------------------------------------------------------------------
# malformed timestamps

BAD_TIMESTAMPS = [
    "2026-07-01",  # date only
    "2026-07-01T09:00:00",  # no zone
    "2026-07-01T09:00",  # no zone
    "2026-07-01t09:00:00Z",  # lowercase t
    "2026-07-01T09:00:00z",  # lowercase z
    "2026-07-01 09:00:00Z",  # space instead of T
    "2026-07-01 09:00:00",  # stored SQLite shape is not an option value
    "2026-02-30T00:00:00Z",
    "2026-02-31T00:00:00Z",
    "2025-02-29T00:00:00Z",  # not a leap year
    "2026-04-31T12:00:00Z",
    "2026-07-01T24:00:00Z",
    "2026-07-01T24:00Z",
    "2026-13-01T00:00:00Z",
    "2026-00-10T00:00:00Z",
    "2026-07-00T00:00:00Z",
    "2026-07-32T00:00:00Z",
    "2026-07-01T09:60:00Z",
    "2026-07-01T09:00:60Z",
    "2026-07-01T09:00:00.Z",
    "2026-07-01T09:00:00.1234567890Z",  # ten fraction digits
    "2026-07-01T09:00.5Z",  # fraction without seconds
    "2026-07-01T09:00:00+0200",
    "2026-07-01T09:00:00+02",
    "2026-07-01T09:00:00+24:00",
    "2026-07-01T09:00:00+02:60",
    "2026-07-01T09:00:00 Z",
    "2026-07-01T09:00:00GMT",
    "2026-07-01T09:00:00UTC",
    "2026-7-01T09:00:00Z",
    "26-07-01T09:00:00Z",
    "+02026-07-01T09:00:00Z",
    "2026-07-01T9:00:00Z",
    " 2026-07-01T09:00:00Z",
    "2026-07-01T09:00:00Z ",
    "now",
    "1719824400",
    "Wed, 01 Jul 2026 09:00:00 GMT",
    "2026/07/01T09:00:00Z",
]
MESSAGES_ARGS = ["messages", "list", "--conversation-id", "1"]
SUMMARIES_ARGS = ["summaries", "list"]


def assert_time_error(out: Any, value: Any = None, *, details: bool = True) -> None:
    assert out.code == 2, out.stdout or out.stderr
    error = out.error
    assert error["code"] == "INVALID_TIME_FILTER"
    if details:
        # cli-contract.md §13's details ({value}), plus the accepted spelling when there is one.
        assert error["details"]["value"] == value
        assert set(error["details"]) <= {"value", "accepted", "suggestions"}
    else:
        assert "details" not in error


@pytest.mark.parametrize("command", [MESSAGES_ARGS, SUMMARIES_ARGS], ids=["messages", "summaries"])
@pytest.mark.parametrize("value", BAD_TIMESTAMPS)
def test_malformed_timestamps(db_path: Path, command: list[str], value: str) -> None:
    base = ["--db", str(db_path), *command]
    assert_time_error(lcm(*base, f"--after={value}"), value)
    assert_time_error(lcm(*base, f"--before={value}"), value)
    assert_time_error(lcm(*base, "--between", f"{value}..2026-07-01T10:00:00Z"), value)
    assert_time_error(lcm(*base, "--between", f"2026-07-01T08:00:00Z..{value}"), value)


@pytest.mark.parametrize(
    "value",
    [
        "2024-02-29T00:00:00Z",
        "2026-12-31T23:59:59.999999999Z",
        "2026-07-01T00:00:00+14:00",
        "2026-07-01T23:59:59-12:00",
        "2000-02-29T12:00Z",
        "1970-01-01T00:00:00Z",
    ],
)
def test_real_calendar_instants_accepted(db_path: Path, value: str) -> None:
    for option in ("--after", "--before"):
        out = lcm("--db", str(db_path), *MESSAGES_ARGS, option, value)
        assert out.code == 0, out.stderr


def test_time_filter_validated_before_the_database(tmp_path: Path) -> None:
    missing = tmp_path / "missing.db"
    for command in (MESSAGES_ARGS, SUMMARIES_ARGS):
        assert_time_error(lcm("--db", str(missing), *command, "--after", "2026-07-01"), "2026-07-01")
        assert_time_error(lcm("--db", str(missing), *command, "--recency", "0d"), "0d")
        out = lcm("--db", str(missing), *command, "--between", "A..")
        assert out.code == 2 and out.error["code"] == "INVALID_TIME_FILTER"


def test_validation_order_around_time_filters(db_path: Path) -> None:
    db = ["--db", str(db_path)]
    # earlier steps win: selector, role, kind
    out = lcm(*db, "messages", "list", "--after", "bad")
    assert out.error["code"] == "MISSING_SELECTOR"
    out = lcm(*db, *MESSAGES_ARGS, "--role", "bogus", "--after", "bad")
    assert out.error["code"] == "INVALID_ARGUMENT"
    out = lcm(*db, *SUMMARIES_ARGS, "--kind", "bogus", "--after", "bad")
    assert out.error["code"] == "INVALID_ARGUMENT"
    # later steps lose: limit, depth
    assert_time_error(lcm(*db, *MESSAGES_ARGS, "--after", "bad", "--limit", "0"), "bad")
    assert_time_error(lcm(*db, *SUMMARIES_ARGS, "--depth", "x", "--before", "bad"), "bad")
    # conflicts are checked before any value is parsed
    assert_time_error(lcm(*db, *MESSAGES_ARGS, "--between", "bad", "--after", "bad"), details=False)
    assert_time_error(lcm(*db, *MESSAGES_ARGS, "--after", "bad", "--recency", "bad"), details=False)
    # --after is parsed before --before
    assert_time_error(lcm(*db, *MESSAGES_ARGS, "--before", "bad-before", "--after", "bad-after"), "bad-after")


@pytest.mark.parametrize(
    ("command", "kind"),
    [
        (["conversations", "list"], "conversations.list"),
        (["messages", "tail", "--conversation-id", "1"], "messages.tail"),
        (["status"], "status"),
        (["conversations", "show", "--conversation-id", "1"], "conversations.show"),
    ],
)
@pytest.mark.parametrize("option", ["--after", "--before", "--between", "--recency"])
def test_time_options_unsupported_elsewhere(
    db_path: Path, command: list[str], kind: str, option: str
) -> None:
    out = lcm("--db", str(db_path), *command, option, "garbage")
    assert out.code == 2
    assert out.error["code"] == "INVALID_ARGUMENT"
    assert out.error["details"] == {"option": option[2:], "command": kind}


# --------------------------------------------------------------------------------------
# --between splitting and conflicts

BAD_SPLITS = [
    "2026-07-01T09:00:00Z..",
    "..2026-07-01T09:00:00Z",
    "2026-07-01T09:00:00Z..2026-07-01T10:00:00Z..2026-07-01T11:00:00Z",
    "..",
    "....",
    "2026-07-01T09:00:00Z",
    "2026-07-01T09:00:00Z.2026-07-01T10:00:00Z",
    "2026-07-01T09:00:00Z....2026-07-01T10:00:00Z",
]


@pytest.mark.parametrize("command", [MESSAGES_ARGS, SUMMARIES_ARGS], ids=["messages", "summaries"])
@pytest.mark.parametrize("value", BAD_SPLITS)
def test_between_bad_split(db_path: Path, command: list[str], value: str) -> None:
    out = lcm("--db", str(db_path), *command, "--between", value)
    assert out.code == 2
    assert out.error["code"] == "INVALID_TIME_FILTER"


@pytest.mark.parametrize("value", ["2026-07-01T09:00:00Z..", "..2026-07-01T09:00:00Z", "A..B..C"])
def test_between_bad_split_has_no_details(db_path: Path, value: str) -> None:
    assert_time_error(lcm("--db", str(db_path), *MESSAGES_ARGS, "--between", value), details=False)


def test_between_with_three_dots_splits_into_a_bad_second_part(db_path: Path) -> None:
    """'A...B' splits on the first '..' into 'A' and '.B'; '.B' is then a malformed timestamp."""
    out = lcm(
        "--db", str(db_path), *MESSAGES_ARGS, "--between", "2026-07-01T09:00:00Z...2026-07-01T10:00:00Z"
    )
    assert_time_error(out, ".2026-07-01T10:00:00Z")


CONFLICTS = [
    ["--between", "2026-07-01T09:00:00Z..2026-07-01T10:00:00Z", "--after", "2026-07-01T09:00:00Z"],
    ["--between", "2026-07-01T09:00:00Z..2026-07-01T10:00:00Z", "--before", "2026-07-01T10:00:00Z"],
    ["--between", "2026-07-01T09:00:00Z..2026-07-01T10:00:00Z", "--recency", "1h"],
    ["--after", "2026-07-01T09:00:00Z", "--between", "2026-07-01T09:00:00Z..2026-07-01T10:00:00Z"],
    ["--after", "2026-07-01T09:00:00Z", "--recency", "1h"],
    ["--recency", "1h", "--after", "2026-07-01T09:00:00Z", "--before", "2099-01-01T00:00:00Z"],
    ["--between", "x", "--after", "y"],
    ["--after", "x", "--recency", "0d"],
]


@pytest.mark.parametrize("command", [MESSAGES_ARGS, SUMMARIES_ARGS], ids=["messages", "summaries"])
@pytest.mark.parametrize("options", CONFLICTS, ids=lambda o: " ".join(o))
def test_conflicts(db_path: Path, command: list[str], options: list[str]) -> None:
    assert_time_error(lcm("--db", str(db_path), *command, *options), details=False)


# --------------------------------------------------------------------------------------
# lower bound must precede the upper bound

EMPTY_RANGES = [
    ["--after", "2026-07-01T09:00:00Z", "--before", "2026-07-01T09:00:00Z"],
    ["--after", "2026-07-01T11:00:00+02:00", "--before", "2026-07-01T09:00:00Z"],  # same instant
    ["--after", "2026-07-01T09:00:00.000Z", "--before", "2026-07-01T09:00Z"],
    ["--after", "2026-07-01T10:00:00Z", "--before", "2026-07-01T09:00:00Z"],
    ["--after", "2026-07-01T09:00:00.0001Z", "--before", "2026-07-01T09:00:00.0009Z"],  # same millisecond
    ["--between", "2026-07-01T09:00:00Z..2026-07-01T09:00:00Z"],
    ["--between", "2026-07-01T10:00:00Z..2026-07-01T09:59:59.999Z"],
    ["--between", "2026-07-01T04:00:00-05:00..2026-07-01T09:00:00Z"],
    ["--recency", "1h", "--before", "2020-01-01T00:00:00Z"],
]


@pytest.mark.parametrize("command", [MESSAGES_ARGS, SUMMARIES_ARGS], ids=["messages", "summaries"])
@pytest.mark.parametrize("options", EMPTY_RANGES, ids=lambda o: " ".join(o))
def test_lower_not_before_upper(db_path: Path, command: list[str], options: list[str]) -> None:
    assert_time_error(lcm("--db", str(db_path), *command, *options), details=False)


def test_one_millisecond_range_is_fine(timeline: Timeline) -> None:
    got = timeline.ids(
        "messages", "--after", "2026-07-01T09:00:30.500Z", "--before", "2026-07-01T09:00:30.501Z"
    )
    assert got == timeline.expected("messages", at(30.5), at(30.501))
    assert len(got) == 1


# --------------------------------------------------------------------------------------
# --recency

GOOD_DURATIONS = ["1s", "2H", "3w", "10M", "1D", "999999s", "01h", "1W", "60m", "1d"]
BAD_DURATIONS = [
    "0d",
    "0s",
    "00h",
    "0w",
    "1.5h",
    "h",
    "1",
    "1x",
    "-1h",
    "+1h",
    " 1h",
    "1h ",
    "1 h",
    "1hh",
    "1ms",
    "1y",
    "one h",
    "1e2s",
    "١h",
    "0x1h",
    "PT1H",
]


@pytest.mark.parametrize("command", [MESSAGES_ARGS, SUMMARIES_ARGS], ids=["messages", "summaries"])
@pytest.mark.parametrize("value", GOOD_DURATIONS)
def test_good_durations(db_path: Path, command: list[str], value: str) -> None:
    out = lcm("--db", str(db_path), *command, "--recency", value)
    assert out.code == 0, out.stderr


@pytest.mark.parametrize("command", [MESSAGES_ARGS, SUMMARIES_ARGS], ids=["messages", "summaries"])
@pytest.mark.parametrize("value", BAD_DURATIONS)
def test_bad_durations(db_path: Path, command: list[str], value: str) -> None:
    assert_time_error(lcm("--db", str(db_path), *command, f"--recency={value}"), value)


def test_recency_before_combination_is_allowed(db_path: Path) -> None:
    out = lcm("--db", str(db_path), *MESSAGES_ARGS, "--recency", "1h", "--before", "2099-01-01T00:00:00Z")
    assert out.code == 0, out.stderr


@pytest.fixture
def recent(tmp_path: Path) -> tuple[Path, dict[str, dict[Any, str]]]:
    """Rows aged 30 s, 2 h, 2 d and 20 d (both shapes, summaries via either column).

    Built per test so the ages are fresh when `--recency` reads the clock."""
    db = tmp_path / "recent.db"
    now = datetime.now(timezone.utc).replace(microsecond=0)
    ages = {
        "30s": timedelta(seconds=30),
        "2h": timedelta(hours=2),
        "2d": timedelta(days=2),
        "20d": timedelta(days=20),
    }
    sql = lambda m: m.strftime("%Y-%m-%d %H:%M:%S")  # noqa: E731
    iso = lambda m: m.strftime("%Y-%m-%dT%H:%M:%S.000Z")  # noqa: E731
    names: dict[str, dict[Any, str]] = {"messages": {}, "summaries": {}}
    with Store.open(db) as store:
        cid = store.create_conversation("recent")
        assert cid == 1
        for i, (label, age) in enumerate(ages.items()):
            text = (sql if i % 2 else iso)(now - age)
            (mid,) = store.add_messages(cid, [{"role": "user", "content": label, "created_at": text}])
            names["messages"][mid] = label
            source = store.add_message(
                cid, "user", "src", created_at=sql(now - timedelta(days=400)), in_context=False
            )
            via_latest = i in (0, 3)
            sid = store.add_leaf_summary(
                cid,
                [source],
                label,
                summary_id=f"sum_{label}",
                created_at=sql(now - timedelta(days=500)) if via_latest else text,
            )
            store.conn.execute(
                "UPDATE summaries SET latest_at = ? WHERE summary_id = ?", (text if via_latest else None, sid)
            )
            names["summaries"][sid] = label
    return db, names


@pytest.mark.parametrize("command", [MESSAGES_ARGS, SUMMARIES_ARGS], ids=["messages", "summaries"])
@pytest.mark.parametrize(
    ("options", "labels"),
    [
        (["--recency", "1m"], {"30s"}),
        (["--recency", "60s"], {"30s"}),
        (["--recency", "3h"], {"30s", "2h"}),
        (["--recency", "180M"], {"30s", "2h"}),
        (["--recency", "3d"], {"30s", "2h", "2d"}),
        (["--recency", "72H"], {"30s", "2h", "2d"}),
        (["--recency", "3w"], {"30s", "2h", "2d", "20d"}),
        (["--recency", "2W"], {"30s", "2h", "2d"}),
        (["--recency", "10s"], set()),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else "",
)
def test_recency_selects_recent_rows(
    recent: tuple[Path, dict[str, dict[Any, str]]], command: list[str], options: list[str], labels: set[str]
) -> None:
    db, names = recent
    resource = command[0]
    key = "messageId" if resource == "messages" else "summaryId"
    out = lcm("--db", str(db), *command, *options)
    assert out.code == 0, out.stderr
    assert {names[resource][i[key]] for i in out.json["data"]["items"]} == labels


@pytest.mark.parametrize("command", [MESSAGES_ARGS, SUMMARIES_ARGS], ids=["messages", "summaries"])
def test_recency_with_before(recent: tuple[Path, dict[str, dict[Any, str]]], command: list[str]) -> None:
    db, names = recent
    hour_ago = (datetime.now(timezone.utc) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    out = lcm("--db", str(db), *command, "--recency", "3d", "--before", hour_ago)
    assert out.code == 0, out.stderr
    key = "messageId" if command[0] == "messages" else "summaryId"
    assert {names[command[0]][i[key]] for i in out.json["data"]["items"]} == {"2h", "2d"}


# --------------------------------------------------------------------------------------
# divergences from the reference (bugs)


@pytest.mark.parametrize(
    "options",
    [
        ["--after", ""],
        ["--before", ""],
        ["--between", ""],
        ["--recency", ""],
        ["--between", "", "--after", "2026-07-01T09:02:00Z"],
        ["--after", "", "--recency", "1h"],
    ],
    ids=lambda o: " ".join(repr(x) for x in o),
)
def test_empty_time_option_means_absent(timeline: Timeline, options: list[str]) -> None:
    out = lcm(*timeline.args("messages", *options))
    assert out.code == 0, out.stderr


@pytest.mark.parametrize(
    "options",
    [["--after", "2026-07-01T09:00:00Z\n"], ["--before", "2026-07-01T09:00:00Z\n"], ["--recency", "1h\n"]],
    ids=["after", "before", "recency"],
)
def test_trailing_newline_rejected(db_path: Path, options: list[str]) -> None:
    assert_time_error(lcm("--db", str(db_path), *MESSAGES_ARGS, *options), options[1])


def test_non_ascii_digits_rejected(db_path: Path) -> None:
    value = "２０２６-07-01T09:00:00Z"
    assert_time_error(lcm("--db", str(db_path), *MESSAGES_ARGS, "--after", value), value)


def test_after_year_999_keeps_every_row(timeline: Timeline) -> None:
    assert timeline.ids("messages", "--after", "0999-01-01T00:00:00Z") == timeline.expected(
        "messages", None, None
    )


def test_after_year_0_is_accepted(timeline: Timeline) -> None:
    assert timeline.ids("messages", "--after", "0000-01-01T00:00:00Z") == timeline.expected(
        "messages", None, None
    )


@pytest.mark.parametrize(
    ("options", "keeps_all"),
    [
        (["--after", "0001-01-01T00:00:00+01:00"], True),  # 0000-12-31T23:00Z: before every row
        (["--before", "9999-12-31T23:59:59-01:00"], False),  # '+010000-...' is no julianday: no row
        (["--recency", "5000000d"], False),  # ~year -11663: '-011663-...' is no julianday: no row
    ],
    ids=["after-year-0", "before-year-10000", "recency-5000000d"],
)
def test_bounds_outside_python_datetime_do_not_crash(
    timeline: Timeline, options: list[str], keeps_all: bool
) -> None:
    out = lcm(*timeline.args("messages", *options))
    assert out.code == 0, out.stderr
    expected = timeline.expected("messages", None, None) if keeps_all else []
    assert [i["messageId"] for i in out.json["data"]["items"]] == expected
