"""`lcm browse` driven by Textual's headless pilot on the bundled example: every screen."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lcm_cli.commands.browse.app import (
    BrowseApp,
    ConfirmScreen,
    ConversationScreen,
    DetailScreen,
    DoctorScreen,
    HomeScreen,
    SearchScreen,
)
from lcm_cli.engine.core import params, registry
from lcm_cli.engine.core.params import APPLY, Param
from lcm_cli.engine.core.registry import Operation, OpSpec, Result
from tests.commands.browse.screens import make_app, screen_text

pytestmark = pytest.mark.slow  # the terminal app, driven headlessly: seconds per test

Drive = Callable[[BrowseApp, Any], Awaitable[None]]


def drive(app: BrowseApp, script: Drive, size: tuple[int, int] = (120, 36)) -> None:
    """Run ``app`` headlessly and hand its pilot to ``script``."""

    async def run() -> None:
        async with app.run_test(size=size) as pilot:
            await pilot.pause()
            await script(app, pilot)

    asyncio.run(run())


async def settle(pilot: Any) -> None:
    await pilot.pause()
    await pilot.pause()


def test_home_lists_agents_and_conversations(example_dir: Path) -> None:
    async def script(app: BrowseApp, pilot: Any) -> None:
        assert isinstance(app.screen, HomeScreen)
        text = screen_text(app)
        assert "(all)" in text and "main" in text
        for title in ("Nightly report", "Flaky CI investigation", "Earlier main session"):
            assert title in text
        assert "archived" in text and "active" in text
        conversations = app.screen.query_one("#conversations")
        assert conversations.row_count == 3

    drive(make_app(example_dir), script)


def test_conversation_messages_page_and_detail(example_dir: Path) -> None:
    async def script(app: BrowseApp, pilot: Any) -> None:
        await pilot.press("down", "enter")  # conversation 2, the second most recent
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ConversationScreen) and screen.conversation_id == 2
        text = screen_text(app)
        assert "Flaky CI investigation" in text and "22 messages" in text
        assert "▸ tool:" in text  # tool traffic folded to one line
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        assert "Watch the nightly failure rate" in screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen

    drive(make_app(example_dir), script)


def test_messages_are_keyset_paged(tmp_path: Path) -> None:
    """A conversation longer than a page loads its older pages as the cursor nears the end."""
    from lcm_cli.commands.browse.data import MESSAGE_PAGE
    from lcm_cli.engine.db.store import Store

    db = tmp_path / "lcm.db"
    with Store.open(db) as store:
        conversation = store.create_conversation("s-long", session_key="agent:main:long")
        store.add_messages(
            conversation,
            [
                {
                    "role": "user",
                    "content": f"m{i}",
                    "created_at": f"2026-07-01 09:{i // 60:02d}:{i % 60:02d}",
                }
                for i in range(MESSAGE_PAGE * 2 + 10)
            ],
        )

    async def script(app: BrowseApp, pilot: Any) -> None:
        screen = app.screen
        assert isinstance(screen, ConversationScreen)
        table = screen.query_one("#message-table")
        assert table.row_count == MESSAGE_PAGE and screen.next_cursor
        await pilot.press("ctrl+end")
        await settle(pilot)
        assert table.row_count == MESSAGE_PAGE * 2
        await pilot.press("n")
        await settle(pilot)
        assert table.row_count == MESSAGE_PAGE * 2 + 10 and screen.next_cursor is None
        assert [screen.messages[k]["seq"] for k in list(screen.messages)[:2]] == [210, 209]

    from lcm_cli.commands.browse.app import BrowseApp as App
    from lcm_cli.commands.browse.data import Source

    drive(App(Source(db=str(db)), start={"conversation_id": 1}, refresh_seconds=0), script)


def test_summary_tree_expands_and_shows_sources(example_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # An lcm without the surgery operations: their keys are not offered.
    monkeypatch.setattr("lcm_cli.commands.browse.data.SURGERY", ())

    async def script(app: BrowseApp, pilot: Any) -> None:
        await pilot.press("s")
        await settle(pilot)
        tree = app.screen.query_one("#dag")
        assert "3 summaries" in str(tree.root.label)
        assert [n.data["summaryId"] for n in tree.root.children] == ["sum_2c3d4e5f60718293"]
        await pilot.press("down", "space")
        await settle(pilot)
        children = [n.data["summaryId"] for n in tree.root.children[0].children]
        assert children == ["sum_0a1b2c3d4e5f6071", "sum_1b2c3d4e5f607182"]
        text = screen_text(app)
        assert "d1 condensed · 35 tok · 2026-06-02 08:00 → 08:30" in text and "d0 leaf" in text
        await pilot.press("down", "enter")  # the first leaf: content and source messages
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen)
        body = screen_text(app)
        assert "sum_0a1b2c3d4e5f6071 · leaf d0" in body and "source message #" in body
        assert "dissolve" not in body and "rewrite" not in body

    drive(make_app(example_dir, conversation_id=2), script)


def test_context_as_assembled_with_budget(example_dir: Path) -> None:
    async def script(app: BrowseApp, pilot: Any) -> None:
        await pilot.press("c")
        await settle(pilot)
        text = screen_text(app)
        assert "476 tok (0.4% of 128000) · 7 items · 1 summaries" in text
        assert "summary d1" in text and "sum_2c3d4e5f60718293: Flaky CI fixed" in text
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen) and "<summary id=" in screen_text(app)

    drive(make_app(example_dir, conversation_id=2), script)


def test_large_files_tab(state_dir: Path) -> None:
    """The sample database's conversation 1 holds one large file; Enter describes it."""

    async def script(app: BrowseApp, pilot: Any) -> None:
        await pilot.press("f")
        await settle(pilot)
        assert "file_0011223344556677" in screen_text(app) and "file.txt" in screen_text(app)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen) and '"fileId": "file_0011223344556677"' in screen_text(
            app
        )

    drive(make_app(state_dir, conversation_id=1), script)


def test_doctor_panel(example_dir: Path) -> None:
    async def script(app: BrowseApp, pilot: Any) -> None:
        await pilot.press("d")
        await settle(pilot)
        assert isinstance(app.screen, DoctorScreen)
        text = screen_text(app)
        from lcm_cli.doctor.checks import CHECKS

        assert f"INFO: 1 INFO, {len(CHECKS) - 1} PASS" in text and "junk.cron-sessions" in text
        await pilot.press("enter")  # findings come first
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen) and '"affected": [' in screen_text(app)

    drive(make_app(example_dir), script)


def test_doctor_panel_of_the_conversation_in_front(example_dir: Path) -> None:
    async def script(app: BrowseApp, pilot: Any) -> None:
        await pilot.press("d")
        await settle(pilot)
        doctor = app.screen
        assert isinstance(doctor, DoctorScreen) and doctor.conversation_id == 2
        assert "doctor · conversation 2" in screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, ConversationScreen)

    drive(make_app(example_dir, conversation_id=2), script)


def test_search_jumps_to_a_message_and_a_summary(example_dir: Path) -> None:
    async def script(app: BrowseApp, pilot: Any) -> None:
        await pilot.press("slash")
        await settle(pilot)
        assert isinstance(app.screen, SearchScreen)
        await pilot.press(*"retry", "enter")
        await settle(pilot)
        search = app.screen
        assert isinstance(search, SearchScreen) and len(search.hits) == 6
        await pilot.press("enter")  # the first hit: message 22 of conversation 2
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ConversationScreen) and screen.conversation_id == 2
        table = screen.query_one("#message-table")
        assert str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value) == "22"
        # Again from inside the conversation: the summary hit opens its panel.
        await pilot.press("slash")
        await settle(pilot)
        await pilot.press(*"retry", "enter")
        await settle(pilot)
        hits = app.screen.hits  # newest first: the summary sits among the messages
        summary_row = next(i for i, hit in enumerate(hits) if hit["type"] == "summary")
        await pilot.press(*["down"] * summary_row, "enter")
        await settle(pilot)
        assert isinstance(app.screen, DetailScreen) and "sum_1b2c3d4e5f607182" in screen_text(app)

    drive(make_app(example_dir), script)


def test_bad_search_pattern_is_shown_not_raised(example_dir: Path) -> None:
    async def script(app: BrowseApp, pilot: Any) -> None:
        await pilot.press("slash")
        await settle(pilot)
        await pilot.press(*"(unclosed", "enter")
        await settle(pilot)
        assert isinstance(app.screen, SearchScreen) and "INVALID_PATTERN" in screen_text(app)

    drive(make_app(example_dir), script)


def test_no_lock_or_read_transaction_is_held_while_open(example_dir: Path) -> None:
    """With every screen loaded, a writer gets the database at once (no busy wait)."""
    db = example_dir / "lcm.db"

    async def script(app: BrowseApp, pilot: Any) -> None:
        for key in ("s", "space", "c", "f", "m"):
            await pilot.press(key)
        await settle(pilot)
        writer = sqlite3.connect(db, timeout=0)
        try:
            writer.execute("BEGIN EXCLUSIVE")
            writer.execute("UPDATE conversations SET title = title")
            writer.commit()
            if writer.execute("PRAGMA journal_mode").fetchone()[0] == "wal":
                busy, _, _ = writer.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                assert busy == 0
        finally:
            writer.close()

    drive(make_app(example_dir, conversation_id=2), script)


def test_refresh_sees_a_new_message(example_dir: Path) -> None:
    from lcm_cli.engine.db.store import Store

    async def script(app: BrowseApp, pilot: Any) -> None:
        with Store.open(example_dir / "lcm.db") as store:
            store.add_messages(2, [{"role": "user", "content": "a message written while browsing"}])
        app.refresh_live()
        await settle(pilot)
        assert "a message written while browsing" in screen_text(app)

    drive(make_app(example_dir, conversation_id=2), script)


# -- surgery, behind a confirmation, only when the operations are declared -------------------


@pytest.fixture
def registry_order() -> Iterator[None]:
    """Put the declarations back in their order (monkeypatch re-adds a deleted key at the end,
    and the command tree, `lcm commands` and the docs follow the registry's order)."""
    saved = [(table, dict(table)) for table in (registry.OPERATIONS, registry._BOUND, params.PARAMS)]
    yield
    for table, copy in saved:
        table.clear()
        table.update(copy)


@pytest.fixture
def dissolve_declared(registry_order: None, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Declare and bind a `summaries.dissolve` that records its calls (the real one is another part)."""
    calls: list[dict[str, Any]] = []
    spec = OpSpec("tests.commands.browse.test_app", ("summary_id", "purge", "apply"), writes=True)

    purge = Param("purge", {"type": "boolean", "default": False}, "")  # declared by the surgery part

    def dissolve(ctx: Any, request: Any) -> Result:
        applied = bool(request[APPLY])
        calls.append({"apply": applied, **({"purge": True} if request[purge] else {})})
        return Result({"summaryId": "sum_2c3d4e5f60718293", "applied": applied, "wouldRestore": 2})

    monkeypatch.delitem(registry.OPERATIONS, "summaries.rewrite", raising=False)  # only dissolve here
    monkeypatch.setitem(params.PARAMS, "purge", purge)
    monkeypatch.setitem(registry.OPERATIONS, "summaries.dissolve", spec)
    monkeypatch.setitem(
        registry._BOUND, "summaries.dissolve", Operation("summaries.dissolve", dissolve, spec)
    )
    return calls


def test_surgery_shows_the_dry_run_then_applies_on_yes(
    example_dir: Path, dissolve_declared: list[Any]
) -> None:
    async def script(app: BrowseApp, pilot: Any) -> None:
        app.screen.show_summary("sum_2c3d4e5f60718293")  # type: ignore[attr-defined]
        await settle(pilot)
        assert "[x] dissolve" in screen_text(app) and "[w] rewrite" not in screen_text(app)
        await pilot.press("x")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert '"wouldRestore": 2' in screen_text(app) and "nothing written yet" in screen_text(app)
        assert dissolve_declared == [{"apply": False}]
        await pilot.press("n")
        await settle(pilot)
        assert dissolve_declared == [{"apply": False}]  # cancelled: never applied
        app.screen.show_summary("sum_2c3d4e5f60718293")  # type: ignore[attr-defined]
        await settle(pilot)
        await pilot.press("x")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert dissolve_declared == [{"apply": False}, {"apply": False}, {"apply": True}]
        assert "applied" in screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
        app.screen.show_summary("sum_2c3d4e5f60718293")  # type: ignore[attr-defined]
        await settle(pilot)
        assert "[X] dissolve and remove it" in screen_text(app)
        await pilot.press("X")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen), screen_text(app)
        assert "summaries.dissolve purge" in screen_text(app)
        assert dissolve_declared[-1] == {"apply": False, "purge": True}

    drive(make_app(example_dir, conversation_id=2), script)


def test_agent_rows_count_their_own_conversations(state_dir: Path) -> None:
    """The sample: agent main has an active and an archived conversation; one has no key."""

    async def script(app: BrowseApp, pilot: Any) -> None:
        agents = app.screen.query_one("#agents")
        rows = {key: agents.get_row(key)[:4] for key in ("*", "main", "-")}
        assert rows["main"] == ["main", "1", "1", "27"]
        assert rows["-"][1:4] == ["1", "0", "0"]
        assert rows["*"] == ["(all)", "2", "1", "27"]
        await pilot.press("a", "down", "down")  # highlight `main`: only its conversations
        await settle(pilot)
        assert app.screen.query_one("#conversations").row_count == 2

    drive(make_app(state_dir), script)


def test_refresh_timer_survives_screens_coming_and_going(example_dir: Path) -> None:
    """The periodic refresh may fire while a screen is being pushed or taken down."""
    from lcm_cli.commands.browse.data import Source

    async def script(app: BrowseApp, pilot: Any) -> None:
        for _ in range(3):
            await pilot.press("escape")
            await pilot.pause(0.03)
            await pilot.press("down", "enter")
            await pilot.pause(0.03)
        assert isinstance(app.screen, ConversationScreen)

    drive(
        BrowseApp(Source(openclaw_dir=str(example_dir)), start={"conversation_id": 2}, refresh_seconds=0.1),
        script,
    )


def test_real_dissolve_from_the_tree_backs_up_and_leaves_doctor_clean(example_dir: Path) -> None:
    """With the real operation: dry run, `y`, a backup beside the database, and a clean doctor."""
    from lcm_cli.commands.browse.data import Source

    async def script(app: BrowseApp, pilot: Any) -> None:
        app.screen.show_summary("sum_2c3d4e5f60718293")  # type: ignore[attr-defined]
        await settle(pilot)
        await pilot.press("x")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen) and "sum_0a1b2c3d4e5f6071" in screen_text(app)
        assert not list(example_dir.glob("lcm.db.*dissolve*"))  # the dry run wrote nothing
        await pilot.press("y")
        await settle(pilot)
        assert "applied" in screen_text(app)

    drive(make_app(example_dir, conversation_id=2), script)
    assert list(example_dir.glob("lcm.db.*dissolve*.changes.jsonl.gz"))  # its change backup
    report = Source(openclaw_dir=str(example_dir)).doctor(2)
    assert report["counts"]["FAIL"] == 0 and report["counts"]["WARN"] == 0
