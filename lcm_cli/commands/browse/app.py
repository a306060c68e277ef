"""The `lcm browse` screens: agents and conversations, one conversation's messages, summary
DAG, assembled context and large files, the doctor panel, search, and summary surgery.

Each screen asks :class:`~lcm_cli.commands.browse.data.Source` for its rows when it is
shown or refreshed; nothing keeps a database handle between two key presses.

Stored text reaches a widget only through :func:`cell`, :func:`plain` or
:func:`one_line`, which show its control characters escaped
(:func:`~lcm_cli.render.visible.visible`) and never read it as markup.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from typing import Any

from rich.markup import escape
from rich.text import Text
from textual import on
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Footer, Header, Input, Static, TabbedContent, TabPane, Tree
from textual.widgets.tree import TreeNode

from lcm_cli.commands.browse.data import Source, agent_of
from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.outputs import OutputTarget
from lcm_cli.engine.core.tokens import serialized_tokens
from lcm_cli.render.visible import visible

ROLE_STYLES = {"user": "bold cyan", "assistant": "green", "tool": "yellow", "system": "magenta"}
STATUS_STYLES = {"PASS": "green", "INFO": "cyan", "WARN": "yellow", "FAIL": "bold red", "SKIP": "dim"}
_SPACES = re.compile(r"\s+")
_SUMMARY_ITEM = re.compile(
    r'<summary id="(?P<id>[^"]*)" kind="(?P<kind>[^"]*)" depth="(?P<depth>\d+)".*?<content>(?P<content>.*?)</content>',
    re.S,
)
REFRESH_SECONDS = 5.0
_TAB_FOCUS = {
    "messages": "#message-table",
    "summaries": "#dag",
    "context": "#context-table",
    "files": "#file-table",
}


def one_line(text: Any, width: int = 200) -> str:
    """``text`` on one line with runs of whitespace collapsed, cut to ``width`` characters.

    Control characters are escaped first, so a CR or a form feed shows rather than folds.
    """
    raw = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
    flat = _SPACES.sub(" ", visible(raw)).strip()
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def plain(text: Any, style: str = "") -> Text:
    """Stored text for a panel or a label: control characters escaped, never markup."""
    return Text(visible(str(text)), style=style)


def cell(value: Any) -> Any:
    """A table cell: a str as :func:`plain` shows it (DataTable reads a str as markup);
    a rich ``Text`` is the caller's own and passes as it is."""
    return escape(visible(value)) if isinstance(value, str) else value


def cells(*values: Any) -> list[Any]:
    """A table row of :func:`cell` values."""
    return [cell(value) for value in values]


def when(stamp: str | None) -> str:
    """A stored timestamp as ``YYYY-MM-DD HH:MM`` (both stored spellings), or ``-``."""
    return stamp.replace("T", " ")[:16] if stamp else "-"


def role_text(role: str) -> Text:
    """The role, coloured."""
    return plain(role, ROLE_STYLES.get(role, ""))


def content_text(content: Any) -> str:
    """A message's content as readable text (structured parts as indented JSON)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) and p.get("type") == "text" for p in content):
        return "\n".join(str(p.get("text", "")) for p in content)
    return json.dumps(content, indent=2, ensure_ascii=False)


def is_tool_traffic(message: dict[str, Any]) -> bool:
    """A tool call or tool result: folded to one dim line in the message list."""
    role = str(message.get("role", ""))
    if role in ("tool", "toolResult"):
        return True
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(p, dict) and p.get("type") in ("toolCall", "tool_use", "toolUse") for p in content
    )


def readable(data: Any) -> str:
    """A result as indented JSON, with multi-line texts (diffs, new content) printed whole below it."""
    blocks: list[tuple[str, str]] = []

    def lift(value: Any, path: str) -> Any:
        if isinstance(value, str) and "\n" in value:
            blocks.append((path, value))
            return f"<{path}, below>"
        if isinstance(value, dict):
            return {k: lift(v, f"{path}.{k}" if path else str(k)) for k, v in value.items()}
        if isinstance(value, list):
            return [lift(v, f"{path}[{i}]") for i, v in enumerate(value)]
        return value

    text = json.dumps(lift(data, ""), indent=2, ensure_ascii=False)
    return text + "".join(f"\n\n── {path} ──\n{block}" for path, block in blocks)


def _after(stamp: str) -> str:
    """An exclusive ``--before`` bound that still includes messages stamped ``stamp``."""
    moment = datetime.strptime(stamp.replace("T", " ")[:19], "%Y-%m-%d %H:%M:%S").replace(tzinfo=timezone.utc)
    return (moment + timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")


def _error_text(err: LcmError) -> str:
    return visible(f"{err.code}: {err.message}")


# -- modal screens --------------------------------------------------------------------------


class DetailScreen(ModalScreen[str | None]):
    """A scrollable text panel (a message, a summary with its sources, a file, a check).

    ``actions`` maps a key to (action name, label); pressing it closes the panel with
    that name, so the screen that opened it runs the action.
    """

    BINDINGS = [Binding("escape,q", "close", "Close")]

    def __init__(self, title: str, body: str, actions: dict[str, tuple[str, str]] | None = None) -> None:
        super().__init__()
        self.title_text = title
        self.body = body
        self.actions = actions or {}

    def compose(self) -> ComposeResult:
        hints = "  ".join(f"[{key}] {label}" for key, (_, label) in self.actions.items())
        with Vertical(id="detail"):
            yield Static(plain(self.title_text, "bold"), id="detail-title")
            with VerticalScroll():
                yield Static(plain(self.body), id="detail-body")
            yield Static(Text(f"{hints}  [esc] close".strip(), style="dim"), id="detail-keys")

    def on_key(self, event: Any) -> None:
        # By the character typed: Shift+x arrives as key "X" or "shift+x" depending on the terminal.
        action = self.actions.get(event.character or "") or self.actions.get(event.key)
        if action is not None:
            event.stop()
            self.dismiss(action[0])

    def action_close(self) -> None:
        self.dismiss(None)


class ConfirmScreen(ModalScreen[bool]):
    """Shows a dry run's result and asks before applying it."""

    BINDINGS = [Binding("y", "answer(True)", "Apply"), Binding("n,escape", "answer(False)", "Cancel")]

    def __init__(self, title: str, dry_run: str) -> None:
        super().__init__()
        self.title_text = title
        self.dry_run = dry_run

    def compose(self) -> ComposeResult:
        with Vertical(id="detail"):
            yield Static(plain(self.title_text, "bold"), id="detail-title")
            with VerticalScroll():
                yield Static(plain(self.dry_run), id="detail-body")
            yield Static(
                Text(
                    "Dry run above; nothing written yet.  [y] apply (backup first)  [n] cancel", style="bold"
                ),
                id="detail-keys",
            )

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class SearchScreen(ModalScreen[dict[str, Any] | None]):
    """`/`: a regex through `grep`; Enter on a hit closes with it, and the app jumps there."""

    BINDINGS = [Binding("escape", "close", "Close")]

    def __init__(self, source: Source, conversation_id: int | None) -> None:
        super().__init__()
        self.source = source
        self.conversation_id = conversation_id
        self.hits: list[dict[str, Any]] = []

    def compose(self) -> ComposeResult:
        scope = f"conversation {self.conversation_id}" if self.conversation_id else "every conversation"
        with Vertical(id="detail"):
            yield Static(Text(f"Search {scope} (regex through `lcm grep`)", style="bold"), id="detail-title")
            yield Input(placeholder="pattern, then Enter", id="pattern")
            yield DataTable(id="hits", cursor_type="row", zebra_stripes=True)
            yield Static(Text("", style="dim"), id="search-status")

    def on_mount(self) -> None:
        table = self.query_one("#hits", DataTable)
        table.add_columns("type", "id", "conv", "time", "snippet")
        input_ = self.query_one("#pattern", Input)
        input_.cursor_blink = False
        input_.focus()

    @on(Input.Submitted, "#pattern")
    def run_search(self, event: Input.Submitted) -> None:
        self.search(event.value)

    def search(self, pattern: str) -> None:
        """Run ``pattern`` through grep and list the hits."""
        table = self.query_one("#hits", DataTable)
        status = self.query_one("#search-status", Static)
        table.clear()
        self.hits = []
        if not pattern.strip():
            return
        try:
            self.hits = self.source.grep(pattern, self.conversation_id)
        except LcmError as err:
            status.update(Text(_error_text(err), style="red"))
            return
        for index, hit in enumerate(self.hits):
            kind = hit["type"]
            label = f"{hit.get('kind', '')} d{hit.get('depth')}" if kind == "summary" else hit.get("role", "")
            table.add_row(
                *cells(
                    f"{kind} {label}",
                    str(hit["id"]),
                    str(hit.get("conversationId", "")),
                    when(hit.get("timestamp")),
                    one_line(hit.get("snippet", "")),
                ),
                key=str(index),
            )
        status.update(Text(f"{len(self.hits)} hit(s); Enter jumps to one", style="dim"))
        if self.hits:
            table.focus()

    @on(DataTable.RowSelected, "#hits")
    def jump(self, event: DataTable.RowSelected) -> None:
        self.dismiss(self.hits[int(str(event.row_key.value))])

    def action_close(self) -> None:
        self.dismiss(None)


# -- the doctor panel -----------------------------------------------------------------------


class DoctorScreen(Screen[None]):
    """`lcm doctor` (read-only) as a table of checks; Enter shows one check's details."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back"), Binding("ctrl+r", "reload", "Refresh")]

    def __init__(self, source: Source, conversation_id: int | None = None) -> None:
        super().__init__()
        self.source = source
        self.conversation_id = conversation_id
        self.checks: list[dict[str, Any]] = []

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="doctor-summary")
        yield DataTable(id="checks", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"doctor · conversation {self.conversation_id}" if self.conversation_id else "doctor"
        self.query_one("#checks", DataTable).add_columns("status", "check", "count", "fix")
        self.action_reload()

    def action_reload(self) -> None:
        """Run the scan again."""
        table = self.query_one("#checks", DataTable)
        summary = self.query_one("#doctor-summary", Static)
        table.clear()
        try:
            report = self.source.doctor(self.conversation_id)
        except LcmError as err:
            summary.update(Text(_error_text(err), style="red"))
            return
        counts = report.get("counts", {})
        summary.update(
            plain(
                f"{report.get('status')}: "
                + ", ".join(
                    f"{counts[k]} {k}" for k in ("FAIL", "WARN", "INFO", "PASS", "SKIP") if counts.get(k)
                )
                + ("  · healthy" if report.get("healthy") else "")
            )
        )
        # Findings first, then the passing checks, each group in the scan's order.
        self.checks = sorted(report.get("checks", []), key=lambda c: c.get("status") in ("PASS", "SKIP"))
        for index, check in enumerate(self.checks):
            status = str(check.get("status"))
            table.add_row(
                plain(status, STATUS_STYLES.get(status, "")),
                *cells(
                    str(check.get("check", "")),
                    str(check.get("count", "")),
                    one_line(check.get("fix") or "", 60),
                ),
                key=str(index),
            )

    @on(DataTable.RowSelected, "#checks")
    def show_check(self, event: DataTable.RowSelected) -> None:
        check = self.checks[int(str(event.row_key.value))]
        body = json.dumps({k: v for k, v in check.items() if k != "elapsedMs"}, indent=2, ensure_ascii=False)
        self.app.push_screen(DetailScreen(f"{check.get('check')}: {check.get('title', '')}", body))


# -- one conversation -----------------------------------------------------------------------


class ConversationScreen(Screen[None]):
    """One conversation: messages (keyset pages), the summary DAG, the context, large files."""

    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("m", "tab('messages')", "Messages"),
        Binding("s", "tab('summaries')", "Summaries"),
        Binding("c", "tab('context')", "Context"),
        Binding("f", "tab('files')", "Files"),
        Binding("n", "older", "Older", show=False),
        Binding("t", "newest", "Newest", show=False),
        Binding("ctrl+r", "reload", "Refresh"),
    ]

    def __init__(
        self, source: Source, selector: dict[str, Any], figures: dict[str, Any] | None = None
    ) -> None:
        super().__init__()
        self.source = source
        self.selector = selector
        # The list's row carries the same figures as `conversations.show`: opening from the
        # list skips that read (the aggregates cost ~0.1 s on a 20,000-message conversation).
        self.known = figures
        self.conversation: dict[str, Any] = {}
        self.conversation_id = 0
        self.messages: dict[str, dict[str, Any]] = {}
        self.next_cursor: str | None = None
        self.paged = False  # older pages or a jump loaded: refreshes leave the list alone
        self.files: list[dict[str, Any]] = []
        self.context_rows: list[dict[str, Any]] = []
        self.loaded: set[str] = set()  # tree nodes whose children were read
        self.fresh: set[str] = set()  # tabs read since the last reload

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(id="conversation-figures")
        with TabbedContent(initial="messages"):
            with TabPane("Messages", id="messages"):
                yield DataTable(id="message-table", cursor_type="row")
            with TabPane("Summaries", id="summaries"):
                yield Tree("summaries", id="dag")
            with TabPane("Context", id="context"):
                yield Static(id="context-totals")
                yield DataTable(id="context-table", cursor_type="row")
            with TabPane("Files", id="files"):
                yield DataTable(id="file-table", cursor_type="row")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#message-table", DataTable).add_columns("seq", "time", "role", "tok", "message")
        self.query_one("#context-table", DataTable).add_columns("#", "item", "tok", "text")
        self.query_one("#file-table", DataTable).add_columns(
            "file", "name", "type", "bytes", "lines", "created"
        )
        tree = self.query_one("#dag", Tree)
        tree.auto_expand = False
        tree.show_root = True
        self.load()
        self.query_one("#message-table", DataTable).focus()

    # -- loading --------------------------------------------------------------------------

    def load(self) -> None:
        """Read the conversation's figures and the tab in front; other tabs are read when shown."""
        if self.known is not None:
            self.conversation, self.known = self.known, None
        else:
            try:
                self.conversation = self.source.conversation(self.selector)["conversation"]
            except LcmError as err:
                self.query_one("#conversation-figures", Static).update(Text(_error_text(err), style="red"))
                return
        self.conversation_id = int(self.conversation["conversationId"])
        self.show_figures()
        self.fresh = set()
        self.load_tab(self.query_one(TabbedContent).active or "messages")

    def load_tab(self, tab: str) -> None:
        """Read one tab unless it was read since the last reload (each read one short engine call)."""
        if tab in self.fresh or not self.conversation_id:
            return
        self.fresh.add(tab)
        loaders = {
            "messages": self.load_messages,
            "summaries": self.load_tree,
            "context": self.load_context,
            "files": self.load_files,
        }
        loaders[tab]()

    def show_figures(self) -> None:
        c = self.conversation
        state = "active" if c.get("active") else f"archived {when(c.get('archivedAt'))}"
        self.sub_title = visible(f"conversation {c['conversationId']} · {c.get('sessionKey') or '(no key)'}")
        self.query_one("#conversation-figures", Static).update(
            plain(
                f"{c.get('title') or '(untitled)'} · {state} · {c.get('messageCount', 0)} messages "
                f"({c.get('messageTokens', 0)} tok) · {c.get('summaryCount', 0)} summaries · context "
                f"{c.get('contextTokens', 0)} tok · last {when(c.get('latestMessageAt') or c.get('updatedAt'))}"
            )
        )

    def _message_row(self, message: dict[str, Any]) -> tuple[Any, ...]:
        role = str(message.get("role", ""))
        text = content_text(message.get("content", message.get("preview", "")))
        if is_tool_traffic(message):
            shown: Text | str = plain(f"▸ {role}: {one_line(text, 120)}", "dim")
        else:
            shown = one_line(text)
        return tuple(
            cells(
                str(message.get("seq", "")),
                when(message.get("createdAt")),
                role_text(role),
                str(message.get("tokenCount", "")),
                shown,
            )
        )

    def load_messages(self, *, before: str | None = None, focus_id: int | None = None) -> None:
        """The newest page (or the page ending at ``before``); older pages load as the cursor nears the end."""
        table = self.query_one("#message-table", DataTable)
        row = table.cursor_row
        table.clear()
        self.messages = {}
        items, self.next_cursor = self.source.messages(self.conversation_id, before=before)
        self.paged = before is not None
        self._add_messages(items)
        if focus_id is not None and str(focus_id) in self.messages:
            table.move_cursor(row=table.get_row_index(str(focus_id)))
        elif row and row < table.row_count:
            table.move_cursor(row=row)

    def _add_messages(self, items: list[dict[str, Any]]) -> None:
        table = self.query_one("#message-table", DataTable)
        for message in items:
            key = str(message["messageId"])
            if key in self.messages:
                continue
            self.messages[key] = message
            table.add_row(*self._message_row(message), key=key)

    def action_older(self) -> None:
        """Load the next (older) keyset page."""
        if self.next_cursor is None:
            self.notify("No older messages.", timeout=2)
            return
        items, self.next_cursor = self.source.messages(self.conversation_id, self.next_cursor)
        self.paged = True
        self._add_messages(items)

    def action_newest(self) -> None:
        """Back to the newest page."""
        self.load_messages()
        self.query_one("#message-table", DataTable).move_cursor(row=0)

    @on(DataTable.RowHighlighted, "#message-table")
    def near_the_end(self, event: DataTable.RowHighlighted) -> None:
        if self.next_cursor is not None and event.cursor_row >= event.data_table.row_count - 3:
            self.action_older()

    @on(DataTable.RowSelected, "#message-table")
    def show_message(self, event: DataTable.RowSelected) -> None:
        message = self.messages[str(event.row_key.value)]
        title = (
            f"#{message['messageId']} seq {message.get('seq')} · {message.get('role')} · "
            f"{message.get('tokenCount')} tok · {when(message.get('createdAt'))}"
        )
        body = content_text(message.get("content", ""))
        if message.get("largeContent"):
            body += "\n\nlarge content: " + json.dumps(message["largeContent"], ensure_ascii=False)
        self.app.push_screen(DetailScreen(title, body))

    # -- the summary DAG --------------------------------------------------------------------

    @staticmethod
    def _summary_label(summary: dict[str, Any]) -> Text:
        label = Text()
        label.append(
            visible(f"d{summary.get('depth')} {summary.get('kind')}"),
            style="bold" if summary.get("kind") == "condensed" else "",
        )
        label.append(
            visible(
                f" · {summary.get('tokenCount')} tok · {when(summary.get('earliestAt'))} → {when(summary.get('latestAt'))[11:]}"
            )
        )
        label.append(visible(f" · {summary['summaryId']}"), style="dim")
        return label

    def _add_summary(self, parent: TreeNode[dict[str, Any]], summary: dict[str, Any]) -> None:
        parent.add(self._summary_label(summary), data=summary, allow_expand=bool(summary.get("childCount")))

    def load_tree(self) -> None:
        """The DAG's roots (summaries nothing consumes); children load when a node opens."""
        tree: Tree[dict[str, Any]] = self.query_one("#dag", Tree)
        tree.clear()
        self.loaded = set()
        summaries = self.source.summaries(self.conversation_id)
        tree.root.set_label(Text(f"conversation {self.conversation_id} · {len(summaries)} summaries"))
        roots = [s for s in summaries if not s.get("parentCount")]
        for summary in sorted(roots, key=lambda s: (s.get("earliestAt") or "", s["summaryId"])):
            self._add_summary(tree.root, summary)
        tree.root.expand()

    @on(Tree.NodeExpanded, "#dag")
    def open_node(self, event: Tree.NodeExpanded[dict[str, Any]]) -> None:
        node = event.node
        summary = node.data
        if summary is None or summary["summaryId"] in self.loaded or node.children:
            return
        self.loaded.add(summary["summaryId"])
        try:
            shown = self.source.summary(summary["summaryId"])
        except LcmError as err:
            self.notify(_error_text(err), severity="error", markup=False)
            return
        for child in shown.get("children", []):
            self._add_summary(node, child)

    @on(Tree.NodeSelected, "#dag")
    def show_summary_node(self, event: Tree.NodeSelected[dict[str, Any]]) -> None:
        if event.node.data is not None:
            self.show_summary(event.node.data["summaryId"])

    def show_summary(self, summary_id: str) -> None:
        """The summary's content and its sources, with the surgery this lcm offers."""
        try:
            shown = self.source.summary(summary_id)
        except LcmError as err:
            self.notify(_error_text(err), severity="error", markup=False)
            return
        s = shown["summary"]
        lines = [str(s.get("content", "")), ""]
        if shown.get("parents"):
            lines.append("Consumed by: " + ", ".join(p["summaryId"] for p in shown["parents"]))
        for child in shown.get("children", []):
            lines.append(
                f"source summary {child['summaryId']} d{child.get('depth')} {child.get('kind')}: {one_line(child.get('preview', ''), 100)}"
            )
        for m in shown.get("sourceMessages", []):
            lines.append(
                f"source message #{m.get('messageId')} seq {m.get('seq')} {m.get('role')}: {one_line(m.get('content', m.get('preview', '')), 100)}"
            )
        title = (
            f"{s['summaryId']} · {s.get('kind')} d{s.get('depth')} · {s.get('tokenCount')} tok · "
            f"{when(s.get('earliestAt'))} → {when(s.get('latestAt'))}"
        )
        actions: dict[str, tuple[str, str]] = {}
        available = self.source.surgery_available()
        if "summaries.rewrite" in available:
            actions["w"] = ("summaries.rewrite", "rewrite")
            actions["W"] = ("summaries.rewrite cascade", "rewrite, then its parents")
        if "summaries.dissolve" in available and s.get("kind") == "condensed":
            actions["x"] = ("summaries.dissolve", "dissolve")
            actions["X"] = ("summaries.dissolve purge", "dissolve and remove it")

        def chosen(action: str | None) -> None:
            if action:
                self.start_surgery(action, summary_id)

        self.app.push_screen(DetailScreen(title, "\n".join(lines), actions), chosen)

    # -- surgery ----------------------------------------------------------------------------

    def start_surgery(self, action: str, summary_id: str) -> None:
        """Dry-run ``action`` (an operation name, then its flags) on the summary, show the
        result, and apply only when confirmed."""
        name, *flags = action.split()
        options = dict.fromkeys(flags, True)
        try:
            dry = self.source.surgery(name, summary_id, apply=False, **options)
        except LcmError as err:
            self.app.push_screen(DetailScreen(f"{action} {summary_id}: refused", _error_text(err)))
            return
        body = readable(dry.get("data"))

        def confirmed(yes: bool | None) -> None:
            if not yes:
                self.notify("Nothing written.", timeout=2)
                return
            try:
                done = self.source.surgery(name, summary_id, apply=True, **options)
            except LcmError as err:
                self.app.push_screen(DetailScreen(f"{action} {summary_id}: failed", _error_text(err)))
                return
            self.load()
            self.app.push_screen(DetailScreen(f"{action} {summary_id}: applied", readable(done.get("data"))))

        self.app.push_screen(ConfirmScreen(f"{action} {summary_id}", body), confirmed)

    # -- context and files ------------------------------------------------------------------

    def load_context(self) -> None:
        """The context as the model would see it, with the token total against the budget."""
        table = self.query_one("#context-table", DataTable)
        totals = self.query_one("#context-totals", Static)
        table.clear()
        try:
            assembled = self.source.context(self.conversation_id)
        except LcmError as err:
            totals.update(Text(_error_text(err), style="red"))
            return
        details = assembled.get("details") or {}
        budget = details.get("tokenBudget")
        used = assembled.get("estimatedTokens") or 0
        share = f" ({100 * used / budget:.1f}% of {budget})" if budget else ""
        totals.update(
            Text(
                f"{used} tok{share} · {len(assembled.get('messages', []))} items · "
                f"{details.get('summaryItems', 0)} summaries · fresh tail {details.get('freshTailItems', 0)} items "
                f"({details.get('freshTailTokens', 0)} tok) · dropped {details.get('droppedItems', 0)}"
            )
        )
        self.context_rows = list(assembled.get("messages", []))
        for index, message in enumerate(self.context_rows):
            text = content_text(message.get("content", ""))
            folded = _SUMMARY_ITEM.search(text) if message.get("role") == "user" else None
            if folded:
                item: Text = plain(f"summary d{folded['depth']}", "bold blue")
                shown = f"{folded['id']}: {one_line(folded['content'])}"
            else:
                item = role_text(str(message.get("role", "")))
                shown = one_line(text)
            # The engine's own estimate of the message as sent, the one estimatedTokens adds up.
            table.add_row(
                *cells(str(index + 1), item, str(serialized_tokens(message)), shown), key=str(index)
            )

    @on(DataTable.RowSelected, "#context-table")
    def show_context_item(self, event: DataTable.RowSelected) -> None:
        message = self.context_rows[int(str(event.row_key.value))]
        self.app.push_screen(
            DetailScreen(
                f"context item {int(str(event.row_key.value)) + 1} · {message.get('role')}",
                content_text(message.get("content", "")),
            )
        )

    def load_files(self) -> None:
        """The conversation's large files."""
        table = self.query_one("#file-table", DataTable)
        table.clear()
        self.files = self.source.large_files(self.conversation_id)
        for f in self.files:
            table.add_row(
                *cells(
                    str(f["fileId"]),
                    str(f.get("fileName") or ""),
                    str(f.get("mimeType") or ""),
                    str(f.get("byteSize") or ""),
                    str(f.get("lineCount") or ""),
                    when(f.get("createdAt")),
                ),
                key=f["fileId"],
            )

    @on(DataTable.RowSelected, "#file-table")
    def show_file(self, event: DataTable.RowSelected) -> None:
        file_id = str(event.row_key.value)
        try:
            described = self.source.describe(file_id, self.conversation_id)
        except LcmError as err:
            self.notify(_error_text(err), severity="error", markup=False)
            return
        self.app.push_screen(DetailScreen(file_id, json.dumps(described, indent=2, ensure_ascii=False)))

    # -- keys -------------------------------------------------------------------------------

    def action_tab(self, tab: str) -> None:
        """Show one tab, its list focused."""
        self.query_one(TabbedContent).active = tab
        self.load_tab(tab)
        self.query_one(_TAB_FOCUS[tab]).focus()

    @on(TabbedContent.TabActivated)
    def focus_tab(self, event: TabbedContent.TabActivated) -> None:
        pane = event.pane.id or ""
        if pane in _TAB_FOCUS:
            self.load_tab(pane)
            self.query_one(_TAB_FOCUS[pane]).focus()

    def action_reload(self) -> None:
        """Read the figures and the tab in front again; the other tabs when next shown."""
        self.load()

    def refresh_live(self) -> None:
        """The periodic refresh: figures, and the newest page unless the reader paged away."""
        if not self.conversation_id:
            return  # not read yet
        try:
            self.conversation = self.source.conversation({"conversation_id": self.conversation_id})[
                "conversation"
            ]
        except LcmError:
            return
        self.show_figures()
        if self.paged:
            return
        if self.query_one(TabbedContent).active == "messages":
            self.load_messages()
        else:
            self.fresh.discard("messages")  # read again when shown

    def jump_to(self, hit: dict[str, Any]) -> None:
        """Show a search hit: its message in the list, or its summary's panel."""
        if hit["type"] == "message":
            self.action_tab("messages")
            self.load_messages(before=_after(str(hit["timestamp"])), focus_id=int(hit["id"]))
            self.query_one("#message-table", DataTable).focus()
        elif hit["type"] == "summary":
            self.action_tab("summaries")
            self.show_summary(str(hit["id"]))


# -- the first screen -----------------------------------------------------------------------


class HomeScreen(Screen[None]):
    """Agents, then the conversations of the highlighted agent (active and archived)."""

    BINDINGS = [Binding("ctrl+r", "reload", "Refresh"), Binding("a", "focus_agents", "Agents", show=False)]

    def __init__(self, source: Source) -> None:
        super().__init__()
        self.source = source
        self.rows: list[dict[str, Any]] = []
        self.agent = "*"

    def compose(self) -> ComposeResult:
        yield Header()
        yield DataTable(id="agents", cursor_type="row")
        yield DataTable(id="conversations", cursor_type="row", zebra_stripes=True)
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "agents and conversations"
        self.query_one("#agents", DataTable).add_columns(
            "agent", "active", "archived", "messages", "tokens", "last activity"
        )
        self.query_one("#conversations", DataTable).add_columns(
            "id", "state", "session key", "title", "msgs", "sums", "ctx tok", "last activity"
        )
        self.action_reload()
        self.query_one("#conversations", DataTable).focus()

    def action_reload(self) -> None:
        """Read the conversations again; the cursors stay where they were."""
        try:
            self.rows = self.source.conversations()
        except LcmError as err:
            self.notify(_error_text(err), severity="error", timeout=10, markup=False)
            return

        def zero() -> dict[str, Any]:
            return {"active": 0, "archived": 0, "messages": 0, "tokens": 0, "last": ""}

        agents: dict[str, dict[str, Any]] = {}
        total = zero()
        for c in self.rows:
            for figures in (agents.setdefault(agent_of(c.get("sessionKey")), zero()), total):
                figures["active" if c.get("active") else "archived"] += 1
                figures["messages"] += c.get("messageCount") or 0
                figures["tokens"] += c.get("contextTokens") or 0
                figures["last"] = max(figures["last"], when(c.get("latestMessageAt") or c.get("updatedAt")))
        table = self.query_one("#agents", DataTable)
        row = table.cursor_row
        table.clear()
        for name, f in [("*", total), *sorted(agents.items())]:
            table.add_row(
                *cells(
                    "(all)" if name == "*" else name,
                    str(f["active"]),
                    str(f["archived"]),
                    str(f["messages"]),
                    str(f["tokens"]),
                    f["last"],
                ),
                key=name,
            )
        table.styles.height = min(len(agents) + 3, 8)  # header, the (all) row, one per agent, border
        if row and row < table.row_count:
            table.move_cursor(row=row)
        self.show_conversations()

    def show_conversations(self) -> None:
        """The conversations of the chosen agent, most recently updated first."""
        table = self.query_one("#conversations", DataTable)
        row = table.cursor_row
        table.clear()
        for c in self.rows:
            if self.agent != "*" and agent_of(c.get("sessionKey")) != self.agent:
                continue
            table.add_row(
                *cells(
                    str(c["conversationId"]),
                    Text("active", style="green") if c.get("active") else Text("archived", style="dim"),
                    str(c.get("sessionKey") or "-"),
                    one_line(c.get("title") or "", 40),
                    str(c.get("messageCount", 0)),
                    str(c.get("summaryCount", 0)),
                    str(c.get("contextTokens", 0)),
                    when(c.get("latestMessageAt") or c.get("updatedAt")),
                ),
                key=str(c["conversationId"]),
            )
        if row and row < table.row_count:
            table.move_cursor(row=row)

    @on(DataTable.RowHighlighted, "#agents")
    def choose_agent(self, event: DataTable.RowHighlighted) -> None:
        agent = str(event.row_key.value)
        if agent != self.agent:
            self.agent = agent
            self.show_conversations()

    @on(DataTable.RowSelected, "#agents")
    def to_conversations(self, event: DataTable.RowSelected) -> None:
        self.query_one("#conversations", DataTable).focus()

    @on(DataTable.RowSelected, "#conversations")
    def open_conversation(self, event: DataTable.RowSelected) -> None:
        conversation_id = int(str(event.row_key.value))
        row = next((c for c in self.rows if c["conversationId"] == conversation_id), None)
        self.app.push_screen(ConversationScreen(self.source, {"conversation_id": conversation_id}, row))

    def action_focus_agents(self) -> None:
        self.query_one("#agents", DataTable).focus()

    def refresh_live(self) -> None:
        """The periodic refresh."""
        self.action_reload()


class BrowseApp(App[int]):
    """`lcm browse`."""

    TITLE = "lcm browse"
    CSS = """
    #agents { height: 6; border-bottom: solid $primary-darken-2; }
    #conversations, TabbedContent, TabPane, TabPane > DataTable, #dag, #checks { height: 1fr; }
    #conversation-figures, #context-totals, #doctor-summary { height: auto; padding: 0 1; }
    #detail { width: 90%; height: 90%; border: round $accent; background: $surface; padding: 0 1; }
    #detail-title, #detail-keys { height: auto; }
    SearchScreen #hits { height: 1fr; }
    ModalScreen { align: center middle; }
    """
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("slash", "search", "Search"),
        Binding("d", "doctor", "Doctor"),
    ]

    def __init__(
        self, source: Source, *, start: dict[str, Any] | None = None, refresh_seconds: float = REFRESH_SECONDS
    ) -> None:
        super().__init__()
        self.source = source
        self.start = start or {}
        self.refresh_seconds = refresh_seconds

    def on_mount(self) -> None:
        self.push_screen(HomeScreen(self.source))
        if self.start:
            self.push_screen(ConversationScreen(self.source, self.start))
        if self.refresh_seconds > 0:
            self.set_interval(self.refresh_seconds, self.refresh_live)

    def refresh_live(self) -> None:
        """Re-read the screen in front (never while a panel is open over it)."""
        screen = self.screen
        if not isinstance(screen, (HomeScreen, ConversationScreen)) or not screen.is_attached:
            return
        try:
            screen.refresh_live()
        except NoMatches:
            pass  # the screen is being taken down (Esc pressed as the timer fired)

    def _conversation_in_front(self) -> int | None:
        screen = self.screen
        return (
            screen.conversation_id
            if isinstance(screen, ConversationScreen) and screen.conversation_id
            else None
        )

    def action_search(self) -> None:
        """Search with grep; a chosen hit opens its conversation there."""
        if isinstance(self.screen, ModalScreen):
            return

        def jump(hit: dict[str, Any] | None) -> None:
            if hit is None:
                return
            front = self.screen
            if isinstance(front, ConversationScreen) and front.conversation_id == hit.get("conversationId"):
                front.jump_to(hit)
                return
            opened = ConversationScreen(self.source, {"conversation_id": int(hit["conversationId"])})
            self.push_screen(opened)
            self.call_after_refresh(opened.jump_to, hit)

        self.push_screen(SearchScreen(self.source, self._conversation_in_front()), jump)

    def action_doctor(self) -> None:
        """The doctor panel, scoped to the conversation in front."""
        if isinstance(self.screen, (ModalScreen, DoctorScreen)):
            return
        self.push_screen(DoctorScreen(self.source, self._conversation_in_front()))

    def draw_once(self, target: OutputTarget, size: tuple[int, int]) -> int:
        """Draw the opening screen headlessly into the checked SVG file ``target``; the exit status."""
        failed: list[Exception] = []

        async def shoot(pilot: Any) -> None:
            await pilot.pause()
            await pilot.pause()
            try:
                target.write(self.export_screenshot().encode("utf-8"), mode=0o644)
            except (LcmError, OSError) as exc:  # raised below, outside Textual's loop
                failed.append(exc)
            self.exit(0)

        self.refresh_seconds = 0
        self.run(headless=True, size=size, auto_pilot=shoot)
        if failed and isinstance(failed[0], OSError):
            raise LcmError(
                "EXPORT_WRITE_FAILED",
                f"Could not write {target.path}: {failed[0].strerror or failed[0]}.",
                {"path": target.path},
            )
        if failed:
            raise failed[0]
        return 0
