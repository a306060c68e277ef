"""What `lcm browse` reads, and how: one engine call per fetch, nothing held in between.

Every fetch goes through :func:`lcm_cli.engine.api.call`, which opens a fresh
:class:`~lcm_cli.engine.context.Context` with its own read-only connection and closes it
before returning. The app therefore never keeps a connection, a lock or a read
transaction open while a person reads the screen, and a live writer only ever waits for
the few milliseconds one query takes. This module imports no Textual, so it is tested
and benchmarked without a terminal.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from lcm_cli.engine.core.registry import OPERATIONS
from lcm_cli.engine.core.session_keys import agent_id_of

MESSAGE_PAGE = 100  # rows per keyset page of the messages screen
LIST_PAGE = 500  # the largest page the list operations allow
SURGERY = ("summaries.rewrite", "summaries.dissolve")


def agent_of(session_key: str | None) -> str:
    """The agent id in an OpenClaw session key (``agent:<id>:...``), or ``-`` without one."""
    return agent_id_of(session_key) or "-"


class Source:
    """The database the app reads, named by the global options and resolved on every call."""

    def __init__(
        self,
        *,
        db: str | None = None,
        config: str | None = None,
        openclaw_dir: str | None = None,
        agent: str | None = None,
    ):
        self.db = db
        self.agent = agent  # `--agent`: the agent scope's caller (docs/agents.md)
        self.config = config
        self.openclaw_dir = openclaw_dir
        self.calls = 0  # engine calls made (the benchmark and tests read it)

    def call(
        self, name: str, params: dict[str, Any] | None = None, args: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        """The envelope of operation ``name``: one short-lived context, closed before returning."""
        from lcm_cli.engine.api import call

        self.calls += 1
        return call(
            name,
            params or {},
            args=args,
            db=self.db,
            config=self.config,
            openclaw_dir=self.openclaw_dir,
            agent=self.agent,
        )

    def _pages(self, name: str, params: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """Every item of a keyset-paged list, one engine call per page."""
        cursor = None
        while True:
            envelope = self.call(
                name, {**params, "limit": LIST_PAGE, **({"cursor": cursor} if cursor else {})}
            )
            yield from envelope["data"]["items"]
            cursor = (envelope.get("pagination") or {}).get("nextCursor")
            if not cursor:
                return

    # -- the screens' reads ----------------------------------------------------------

    def conversations(self) -> list[dict[str, Any]]:
        """Every conversation (active and archived), most recently updated first."""
        return list(self._pages("conversations.list", {}))

    def conversation(self, selector: dict[str, Any]) -> dict[str, Any]:
        """One conversation's figures (``conversations.show``)."""
        return self.call("conversations.show", selector)["data"]  # type: ignore[no-any-return]

    def messages(
        self, conversation_id: int, cursor: str | None = None, *, before: str | None = None
    ) -> tuple[list[dict[str, Any]], str | None]:
        """One keyset page of messages, newest first, with content; and the next page's cursor."""
        params: dict[str, Any] = {
            "conversation_id": conversation_id,
            "limit": MESSAGE_PAGE,
            "include_content": True,
        }
        if cursor:
            params["cursor"] = cursor
        elif before:
            params["before"] = before
        envelope = self.call("messages.list", params)
        return envelope["data"]["items"], (envelope.get("pagination") or {}).get("nextCursor")

    def summaries(self, conversation_id: int) -> list[dict[str, Any]]:
        """Every summary of a conversation, newest coverage first."""
        return list(self._pages("summaries.list", {"conversation_id": conversation_id}))

    def summary(self, summary_id: str) -> dict[str, Any]:
        """One summary with content, parents, children and source messages (``summaries.show``)."""
        return self.call("summaries.show", {}, args=(summary_id,))["data"]  # type: ignore[no-any-return]

    def context(self, conversation_id: int) -> dict[str, Any]:
        """The context as assembled for the model (``context.assemble``)."""
        return self.call("context.assemble", {"conversation_id": conversation_id})["data"]  # type: ignore[no-any-return]

    def large_files(self, conversation_id: int) -> list[dict[str, Any]]:
        """A conversation's large files, newest first, on a short-lived read-only context.

        No operation lists them yet (``describe file_…`` shows one), so this calls the
        engine's read function directly.
        """
        from lcm_cli.engine.context import Context
        from lcm_cli.engine.read.large_files import conversation_files

        ctx = Context(db=self.db, config=self.config, openclaw_dir=self.openclaw_dir, agent=self.agent)
        ctx.rescope(scoped_reads=True)
        try:
            ctx.resolve_paths()
            self.calls += 1
            return conversation_files(ctx, conversation_id)
        finally:
            ctx.close()

    def describe(self, item_id: str, conversation_id: int | None = None) -> dict[str, Any]:
        """A summary or large file as ``describe`` shows it."""
        params: dict[str, Any] = {"conversation_id": conversation_id} if conversation_id else {}
        return self.call("describe", params, args=(item_id,))["data"]  # type: ignore[no-any-return]

    def doctor(self, conversation_id: int | None = None) -> dict[str, Any]:
        """The doctor scan (read-only), of one conversation or the whole database."""
        params: dict[str, Any] = {"conversation_id": conversation_id} if conversation_id else {}
        return self.call("doctor.scan", params)["data"]  # type: ignore[no-any-return]

    def grep(self, pattern: str, conversation_id: int | None = None) -> list[dict[str, Any]]:
        """Messages and summaries matching ``pattern`` (a regex), in one conversation or all."""
        params: dict[str, Any] = (
            {"conversation_id": conversation_id} if conversation_id else {"all_conversations": True}
        )
        return self.call("grep", {**params, "mode": "regex", "limit": 200}, args=(pattern,))["data"]["hits"]  # type: ignore[no-any-return]

    # -- surgery: only the operations this lcm declares --------------------------------

    @staticmethod
    def surgery_available() -> tuple[str, ...]:
        """The summary surgery operations declared in the registry (none: the actions stay hidden)."""
        return tuple(name for name in SURGERY if name in OPERATIONS)

    def surgery(self, name: str, summary_id: str, *, apply: bool, **flags: bool) -> dict[str, Any]:
        """Run surgery ``name`` on one summary: a dry run unless ``apply``; its envelope.

        Only the fields the operation declares are passed, so a flag it lacks is dropped
        rather than refused.
        """
        spec = OPERATIONS[name]
        params: dict[str, Any] = {key: value for key, value in flags.items() if key in spec.options and value}
        if apply and "apply" in spec.options:
            params["apply"] = True
        args: tuple[str, ...] = ()
        if "summary_id" in spec.args:
            args = (summary_id,)
        else:
            params["summary_id"] = summary_id
        return self.call(name, params, args=args)
