"""lcm's one time grammar (timestamps, dates, durations) on the commands that are not the reference's."""

from __future__ import annotations

import pytest

from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.params import validate_request
from lcm_cli.engine.core.timefilter import TimeRange, parse_when, resolve_time_range, to_iso_ms

NOW = 1_780_000_000_000  # 2026-05-28T...Z


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-07-01T09:30:00Z", "2026-07-01T09:30:00.000Z"),
        ("2026-07-01T11:30:00+02:00", "2026-07-01T09:30:00.000Z"),
        ("2026-07-01T09:30:00", "2026-07-01T09:30:00.000Z"),  # no zone: UTC
        ("2026-07-01 09:30", "2026-07-01T09:30:00.000Z"),  # as lcm.db stores them
        ("2026-07-01", "2026-07-01T00:00:00.000Z"),
        ("90d", to_iso_ms(NOW - 90 * 86_400_000)),
        ("2w", to_iso_ms(NOW - 14 * 86_400_000)),
        ("36h", to_iso_ms(NOW - 36 * 3_600_000)),
        (" 30m ", to_iso_ms(NOW - 30 * 60_000)),
    ],
)
def test_one_grammar(text: str, expected: str) -> None:
    assert to_iso_ms(parse_when(text, "--since", now_ms=NOW)) == expected


@pytest.mark.parametrize("text", ["yesterday", "0d", "2026-13-01", "2026-07-01T25:00Z", "7 days", ""])
def test_bad_input_is_invalid_time_filter_naming_the_option(text: str) -> None:
    with pytest.raises(LcmError) as err:
        parse_when(text, "--before", now_ms=NOW)
    assert err.value.code == "INVALID_TIME_FILTER"
    assert "--before" in err.value.message and "90d" in err.value.message


def test_reference_commands_keep_the_strict_grammar_and_ours_take_the_whole() -> None:
    fields = ("after", "before", "between", "recency", "conversation_id", "pattern")
    for value in ("2026-07-01", "7d"):
        with pytest.raises(LcmError) as err:
            validate_request("messages.list", fields, {"after": value, "conversation_id": 1})
        assert err.value.code == "INVALID_TIME_FILTER"
        ours = validate_request("grep", fields, {"after": value}, now_ms=NOW)
        assert ours.time.after is not None
    ours = validate_request("grep", fields, {"between": "2026-07-01..2026-07-02"})
    assert ours.time == TimeRange("2026-07-01T00:00:00.000Z", "2026-07-02T00:00:00.000Z")
    assert validate_request("doctor.scan", ("recency",), {"recency": "2026-07-01"}).time.after
    assert resolve_time_range(None, None, None, "7d", now_ms=NOW).after == to_iso_ms(NOW - 7 * 86_400_000)


@pytest.mark.parametrize(
    ("option_args", "accepted"),
    [
        # The reference's strict grammar (cli-contract.md §9): the same instant, with its zone.
        ({"after": "2026-06-02"}, "2026-06-02T00:00:00Z"),
        ({"after": "2026-06-02t08:00z"}, "2026-06-02T08:00:00Z"),
        ({"before": "2026/06/02 08:00 UTC"}, "2026-06-02T08:00:00Z"),
        ({"after": "yesterday"}, "2026-05-27T00:00:00Z"),
        ({"after": "2 days ago"}, "2026-05-26T20:26:40Z"),
        ({"recency": "3days"}, "3d"),
        ({"recency": "last 90 minutes"}, "90m"),
        ({"between": "2026-06-02..2026-06-03T00:00Z"}, "2026-06-02T00:00:00Z..2026-06-03T00:00Z"),
    ],
)
def test_a_refused_reference_time_offers_the_accepted_spelling(
    option_args: dict[str, str], accepted: str
) -> None:
    values = {name: option_args.get(name) for name in ("after", "before", "between", "recency")}
    with pytest.raises(LcmError) as refused:
        resolve_time_range(**values, now_ms=NOW)
    option = next(iter(option_args))
    assert refused.value.details["accepted"] == accepted
    assert refused.value.details["suggestions"] == [f"--{option} {accepted}"]
    # The offer is accepted as it stands.
    resolve_time_range(**{**values, option: accepted}, now_ms=NOW)


@pytest.mark.parametrize("text", ["2 days ago", "last 3 weeks", "yesterday", "2026-06-02t08:00Z"])
def test_a_refused_when_offers_the_accepted_spelling(text: str) -> None:
    with pytest.raises(LcmError) as refused:
        parse_when(text, "--since", now_ms=NOW)
    accepted = refused.value.details["accepted"]
    assert refused.value.details["suggestions"] == [f"--since {accepted}"]
    parse_when(accepted, "--since", now_ms=NOW)


@pytest.mark.parametrize("text", ["soon", "2026-13-45", "3x"])
def test_nonsense_gets_no_offer(text: str) -> None:
    with pytest.raises(LcmError) as when:
        parse_when(text, "--since", now_ms=NOW)
    with pytest.raises(LcmError) as recency:
        resolve_time_range(None, None, None, text, now_ms=NOW)
    assert "suggestions" not in when.value.details and "suggestions" not in recency.value.details
