"""`session.commit_turn`: the durable-turn contract of OpenClaw 2026.8 and later.

A current host admits a user turn into its own SQLite transcript, runs it, and then
calls the context engine's ``commitTurn({advancementKey, admission, terminal, messages})``
with exactly the turn's messages (the admitted user message through the accepted
terminal entry). The engine must store them atomically and idempotently by
``advancementKey``: the host retries a commit it did not see acknowledged, so a retry
answers ``duplicate`` and stores nothing twice.

The turn's messages and its ledger row (``turn_advancements``, lossless-claw 1.0's table
and columns) are written in ONE transaction, so a kill at any instant leaves either both
or neither. The ledger's ``payload_hash`` is lossless-claw 1.0's (sha256 of the
canonical JSON of the payload, keys in ``localeCompare`` order), so a retry that reaches
the other engine after a switch is still recognised as the same turn.

The first commit of a session that lcm has never stored (the plugin was installed into
a running session, or ``lcm.db`` is new) first imports the session's earlier history
from the host's own store, read-only (``admission.storePath``): the same bootstrap, with
its token budget, that older hosts trigger with a JSONL file.

After the commit, the threshold policy of ``session.after_turn`` applies (compact now,
or record debt for the warm server to drain).
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from typing import Any

from lcm_cli.engine.context import Context
from lcm_cli.engine.core.errors import LcmError, invalid_argument
from lcm_cli.engine.core.jscompat import collation_key, stringify
from lcm_cli.engine.core.params import (
    ADMISSION,
    ADVANCEMENT_KEY,
    FILE,
    IS_HEARTBEAT,
    MESSAGES,
    TERMINAL,
    Param,
    Request,
)
from lcm_cli.engine.core.registry import Result, operation
from lcm_cli.engine.db.sessions import find_active, queue_key, session_lock
from lcm_cli.engine.session.ingest import IngestSettings, check_message_shape, ingest_messages, input_error
from lcm_cli.engine.transcript.host_store import store_for_session

#: Admission and terminal fields that must agree: one transcript, one generation.
_SAME_TARGET = ("agentId", "sessionId", "sessionKey", "storePath", "generation")


def _canonical(value: Any) -> Any:
    """JSON.stringify's view of ``value`` with object keys in ``localeCompare`` order."""
    if isinstance(value, list):
        return [_canonical(item) for item in value]
    if isinstance(value, dict):
        entries = sorted(value.items(), key=lambda entry: collation_key(entry[0]))
        return {key: _canonical(item) for key, item in entries}
    return value


def payload_hash(
    advancement: dict[str, Any], *, session_id: str, session_key: str | None, is_heartbeat: bool
) -> str:
    """lossless-claw 1.0's receipt hash of one committed turn (its retry identity)."""
    payload: dict[str, Any] = {
        "admission": advancement.get("admission"),
        "isHeartbeat": is_heartbeat,
        "messages": advancement["messages"],
        "sessionId": session_id,
        "sessionKey": session_key,
        "terminal": advancement.get("terminal"),
    }
    # JSON.stringify drops undefined members; an absent admission or key is undefined there.
    payload = {k: v for k, v in payload.items() if v is not None or k == "isHeartbeat"}
    return hashlib.sha256(stringify(_canonical(payload)).encode("utf-8", "surrogatepass")).hexdigest()


def _object(req: Request, param: Param[Any]) -> dict[str, Any] | None:
    field, value = param.name, req[param]
    if value is None:
        return None
    if isinstance(value, str):
        from lcm_cli.engine.core.limits import loads_bounded

        try:
            value = loads_bounded(value)
        except ValueError as exc:
            raise input_error(
                f"--{field} is not JSON ({exc}).", {"field": field, "reason": "invalid-json"}
            ) from None
    if not isinstance(value, dict):
        raise input_error(f"{field} must be a JSON object.", {"field": field, "reason": "not-an-object"})
    return value


def _check_range(key: str, admission: dict[str, Any], terminal: dict[str, Any] | None, count: int) -> None:
    """The host's own consistency rules for one advancement (fail closed, nothing written)."""
    logical = admission.get("logicalTurnId")
    if logical is not None and logical != key:
        raise invalid_argument(
            "advancementKey does not match admission.logicalTurnId: this is not the admitted turn.",
            {"advancementKey": key, "logicalTurnId": logical},
        )
    if terminal is None:
        return
    changed = [f for f in _SAME_TARGET if f in admission and f in terminal and admission[f] != terminal[f]]
    if changed:
        raise invalid_argument(
            "The turn's transcript target changed between admission and terminal entry: "
            + ", ".join(changed)
            + ".",
            {"fields": changed},
        )
    first, last = admission.get("activeMessagePosition"), terminal.get("activeMessagePosition")
    if isinstance(first, int) and isinstance(last, int):
        if first < 0 or last < first or count != last - first + 1:
            raise invalid_argument(
                f"The turn spans transcript positions {first}..{last} but carries {count} messages.",
                {"admissionPosition": first, "terminalPosition": last, "messages": count},
            )


def bootstrap_from_host_store(
    ctx: Context,
    store: Any,
    settings: IngestSettings,
    session_id: str,
    key: str | None,
    host_store: str,
    before_seq: int | None,
) -> dict[str, Any] | None:
    """First sight of a session: import its history from the host's SQLite store.

    The host's events (all, or ``seq < before_seq``: those before an admitted turn) are
    copied into a private JSONL snapshot, read through the transcript bootstrap (with its
    token budget), then removed. The store is only read, in short transactions.
    """
    from lcm_cli.engine.assembly.fallback import bootstrap_budget
    from lcm_cli.engine.session.bootstrap import bootstrap_session
    from lcm_cli.engine.transcript import host_store as hs

    workdir = tempfile.mkdtemp(prefix="lcm-host-snapshot-")
    try:
        taken = hs.snapshot(host_store, session_id, workdir, before_seq=before_seq)
        outcome: dict[str, Any] = bootstrap_session(
            store,
            settings,
            session_id,
            taken.path,
            session_key=key,
            max_tokens=bootstrap_budget(ctx.effective),
        )
    except LcmError as exc:
        return {"error": exc.code, "message": exc.message}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return outcome


@operation("session.commit_turn")
def commit_turn(ctx: Context, req: Request) -> Result:
    """Commit a turn: ``committed`` the first time, ``duplicate`` for a retry of the same key."""
    from lcm_cli.engine.session.after_turn import compaction_mode, post_turn_threshold, unflushed_start
    from lcm_cli.engine.session.inputs import read_input, request_session

    key_value = req[ADVANCEMENT_KEY]
    if not isinstance(key_value, str) or not key_value.strip():
        raise invalid_argument("Pass the turn's advancementKey.", {"parameter": "advancementKey"})
    advancement_key = key_value
    messages, _ = read_input(
        {"messages": req[MESSAGES], "file": req[FILE]},
        ctx.stdin,
        "`session.commit_turn` needs the turn's messages",
    )
    for index, message in enumerate(messages):
        check_message_shape(message, index, require_role=False)
    admission = _object(req, ADMISSION)
    terminal = _object(req, TERMINAL)
    session_id, key = request_session(req, required=False)
    session_id = session_id or (admission or {}).get("sessionId")
    key = key or (admission or {}).get("sessionKey")
    if not session_id:
        raise invalid_argument("Name the session: pass sessionId (or an admission that carries it).")
    if admission is not None:
        _check_range(advancement_key, admission, terminal, len(messages))
    is_heartbeat = req[IS_HEARTBEAT]
    settings = IngestSettings.from_config(ctx.effective)
    data: dict[str, Any] = {
        "status": "committed",
        "advancementKey": advancement_key,
        "sessionId": session_id,
        "sessionKey": key,
        "conversationId": None,
        "received": len(messages),
        "ingest": None,
        "bootstrap": None,
        "threshold": None,
        "compaction": None,
        "debt": None,
        "reason": None,
    }
    exclusion = settings.policy.exclusion(session_id, key)
    if exclusion is not None:
        # As the reference: an ignored or stateless session acknowledges without writing.
        data["reason"] = "session excluded" if exclusion == "excluded" else "stateless session"
        return Result(data)

    digest = payload_hash(
        {"admission": admission, "terminal": terminal, "messages": messages},
        session_id=session_id,
        session_key=key,
        is_heartbeat=is_heartbeat,
    )
    store = ctx.store()
    conn = store.conn
    host_store = (admission or {}).get("storePath")
    realign = False
    with session_lock(queue_key(session_id, key)):
        position = (admission or {}).get("activeMessagePosition")
        raw_seq = (admission or {}).get("rawSeq")
        host_store = store_for_session(
            ctx.state_dir, key, host_store if isinstance(host_store, str) else None
        )
        if (
            host_store is not None
            and position != 0  # the session's first turn has no earlier history
            and find_active(conn, session_id, key) is None
            and not _committed(conn, advancement_key)
        ):
            bound = raw_seq if isinstance(raw_seq, int) else None
            data["bootstrap"] = bootstrap_from_host_store(
                ctx, store, settings, session_id, key, host_store, bound
            )
            # Without the admitted entry's seq the snapshot may hold this turn already.
            realign = bound is None
        with store.transaction():
            row = conn.execute(
                "SELECT payload_hash FROM turn_advancements WHERE advancement_key = ?", (advancement_key,)
            ).fetchone()
            if row is not None:
                if row[0] != digest:
                    raise LcmError(
                        "TURN_ADVANCEMENT_CONFLICT",
                        f"Advancement key {advancement_key} was already committed with a different turn; "
                        "nothing was written. The host must not reuse a key for another turn.",
                        {"advancementKey": advancement_key},
                    )
                data["status"] = "duplicate"
                found = find_active(conn, session_id, key)
                data["conversationId"] = int(found[0]) if found is not None else None
                return Result(data)
            found = find_active(conn, session_id, key)
            aligned = found is not None and data["bootstrap"] is not None and realign
            already = unflushed_start(conn, int(found[0]), messages) if aligned else 0
            result = ingest_messages(
                store,
                settings,
                session_id,
                messages[already:],
                session_key=key,
                is_heartbeat=is_heartbeat,
                raw_id_filter=False,
            )
            conn.execute(
                "INSERT INTO turn_advancements (advancement_key, payload_hash, session_id, session_key,"
                " admission_entry_id, terminal_entry_id, message_count) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    advancement_key,
                    digest,
                    session_id,
                    key,
                    str((admission or {}).get("entryId") or ""),
                    str((terminal or {}).get("entryId") or ""),
                    result["ingested"],
                ),
            )
        data["ingest"] = {
            "ingested": result["ingested"],
            "skipped": result["skipped"],
            "alreadyStored": already,
            "messages": result["messages"],
        }
    found = find_active(conn, session_id, key)
    return post_turn_threshold(ctx, data, found, session_id, key, req, compaction_mode(ctx.effective))


def _committed(conn: Any, advancement_key: str) -> bool:
    return (
        conn.execute(
            "SELECT 1 FROM turn_advancements WHERE advancement_key = ?", (advancement_key,)
        ).fetchone()
        is not None
    )
