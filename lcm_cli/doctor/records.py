"""The records `lcm doctor` answers with: what each check's entry in the report holds.

``TypedDict`` s, as in :mod:`lcm_cli.engine.read.records`: the scan builds plain dicts,
type checkers hold it to these records, and nothing imports this module at run time.
:data:`ITEM_RECORDS` says which operation's list items each record types.
"""

from __future__ import annotations

from typing import TypedDict

from lcm_cli import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any, NotRequired


class CheckReport(TypedDict):
    """One check's entry in `lcm doctor`'s report: its id, title and severity, the status it
    earned (PASS, INFO, WARN, FAIL or SKIP), how many ids it affects and one page of them.

    A skipped check says why (``skipped``) and has no ``fix``; a check that ran has ``fix``
    (None when nothing needs fixing, with ``destructive`` when there is one), and ``notes``
    (what is wrong with each id on the page), ``advice`` and ``details`` when it has them.
    """

    check: str
    title: str
    severity: str
    status: str
    count: int
    affected: list[int | str]
    skipped: NotRequired[str]
    notes: NotRequired[dict[str, Any]]
    fix: NotRequired[str | None]
    destructive: NotRequired[bool]
    advice: NotRequired[str | None]
    details: NotRequired[dict[str, Any]]
    elapsedMs: NotRequired[int]  # set once the check has run (every reported entry has it)


#: Operation name → the record its list items are (the list ``OpSpec.items`` names).
ITEM_RECORDS: dict[str, type] = {"doctor.scan": CheckReport}
