"""The operation registry: the types every operation is declared with, and the manifest.

Each concept declares its operations beside them, in its own ``specs.py`` (``SPECS``: name ->
:class:`OpSpec`, plain data importing only the kernel): which module implements each one,
its request fields and positional arguments, summary, help, example and render hints.
:data:`OPERATIONS` gathers them from :data:`SPEC_MODULES` without importing any
implementation, so a door can parse, validate and document a call before paying for it;
the CLI door adds its own commands and help sections (:mod:`lcm_cli.commands.specs`).
Modules bind their functions with :func:`operation`; :func:`get_operation` imports only the
module that owns the requested name.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping, MutableMapping

from lcm_cli import TYPE_CHECKING
from lcm_cli.engine.core.record import Record
from lcm_cli.engine.core.render_hints import Render

if TYPE_CHECKING:
    from typing import Any


class Fleet(Record):
    """How an operation answers for several databases at once (``--db`` repeated or a glob,
    ``--openclaw-dir`` repeated; run by :mod:`lcm_cli.engine.fleet`).

    ``merge="list"``: the list ``OpSpec.items`` of every member, each item naming its
    ``database``, merged newest first by the timestamp field ``order``; with ``ranked_by``
    naming a request field whose value is not ``"recency"`` (grep's ``--sort relevance``),
    the members' own ranks are interleaved instead, since scores of different databases do
    not compare. ``merge="summary"``: each member's data, and a total of the fields
    ``totals`` (numbers add up, flags all hold, severities take the worst).
    """

    merge: str
    order: str = ""
    ranked_by: str = ""
    totals: tuple[str, ...] = ()


class OpSpec(Record):
    """An operation's interface: everything a door needs to know before calling it.

    ``options`` name request fields declared in :mod:`lcm_cli.engine.core.params` (type,
    bounds, option spelling, help); ``args`` name positional arguments (see
    :data:`ARGUMENTS`). ``help`` is the `--help` text (its first line is the command's
    one-line help), ``example`` one runnable `lcm ...` line, ``param_help`` and
    ``metavars`` the few fields and arguments documented differently for this operation.
    ``items`` names the list a list operation's data holds (``--fields`` and NDJSON work
    on its items); ``caps_output`` says ``--max-tokens`` caps the whole printed envelope.
    ``cuts`` names the list in data that ``--max-tokens`` shortens at the door for an
    operation that does not fit its answer itself (``data.truncated`` says what was left).
    ``unscoped`` says why the agent scope does not apply (empty: it does; see
    docs/agents.md). ``outputs`` names each option that names a file (``"file"``) or a folder of files
    (``"directory"``) lcm writes: every such write goes through
    :func:`lcm_cli.engine.core.outputs.output_target`, and a test tries each against the
    database, its companions, the config, a manifest and a symlink.
    """

    module: str
    options: tuple[str, ...] = ()  # request fields (see params.PARAMS)
    args: tuple[str, ...] = ()  # positional arguments, in order
    needs_selector: bool = False
    opens_db: bool = True
    resolves_paths: bool = True
    words: tuple[str, ...] = ()  # CLI words when not the dotted name (`lcm backup` = backup.create)
    long_running: bool = False  # shows a progress bar on a terminal
    writes: bool = False  # changes the database or config: `lcm serve` serializes it per session
    meta_paths: bool = True  # the envelope's meta names the database and config paths
    stdin: bool = False  # on the CLI door, its messages may come as JSON text on stdin
    interactive: bool = False  # a full-screen terminal app: only the CLI door runs it
    summary: str = ""  # one line for `lcm hook --list`
    help: str = ""
    example: str = ""
    param_help: Mapping[str, str] | None = None
    metavars: Mapping[str, str] | None = None
    render: Render | None = None  # how `--format table` draws the result (None: the defaults)
    items: str = ""  # the list in data (if any): `--fields` keeps fields of each, ndjson prints one a line
    caps_output: bool = False  # --max-tokens caps everything printed (the door enforces it)
    outputs: Mapping[str, str] | None = None  # option -> "file" | "directory" it writes (see above)
    applies: str = ""  # what --apply does ("archive and delete these"): a dry run's answer says it
    cuts: str = ""  # the list in data that --max-tokens cuts at the door, from its end (see api)
    cuts_oldest: bool = False  # cut from the start instead: the newest items are the ones to keep
    fleet: Fleet | None = None  # answers for several databases at once, and how (see Fleet)
    # Why the agent scope (agentScope, docs/agents.md) does not apply; "" means it does:
    # the operation reads history and sees only the caller's conversations.
    unscoped: str = ""


class Argument(Record):
    """A positional argument's spelling in help: its metavar and help text.

    ``json`` marks a JSON value, which may be a negative number (``-1``) that the CLI
    must not take for an option. ``blank`` says the operation itself judges an empty value
    (a pattern, a prompt, a JSON value); any other empty argument (an id, a path, a name)
    is a missing one, ``INVALID_COMMAND``, as the reference's `summaries show ""` is.
    """

    metavar: str
    help: str
    json: bool = False
    blank: bool = False


def command_words(name: str, spec: OpSpec) -> tuple[str, ...]:
    """The CLI words that run an operation."""
    return spec.words or tuple(name.split("."))


# Positional arguments by name; an operation may word one differently (OpSpec.param_help).
ARGUMENTS: dict[str, Argument] = {
    "summary_id": Argument("SUMMARY_ID", "A summary id such as sum_1b2c3d4e5f607182."),
    "path": Argument("PATH", "Dot path, e.g. freshTailCount."),
    "pattern": Argument("PATTERN", "A regex (default) or full-text words.", blank=True),
    "item_id": Argument("ID", "A summary id (sum_…) or file id (file_…)."),
    "prompt": Argument("PROMPT", "What to answer from the history.", blank=True),
    "operation": Argument("OPERATION", "Operation name, e.g. messages.tail."),
    "archive": Argument("ARCHIVE", "A .jsonl.gz written by `lcm prune`."),
    "json_value": Argument(
        "JSON_VALUE", "The new value as JSON: 32, true, '\"text\"'.", json=True, blank=True
    ),
    "name": Argument("NAME", "Template name: system, leaf, condensed-d1, condensed-d2, condensed-d3."),
}


# The modules that declare operations, one per concept, in the order commands are listed.
# Each holds ``SPECS: dict[str, OpSpec]`` and imports only this kernel, so reading the
# manifest imports no implementation (docs/architecture.md: "Operation specs").
SPEC_MODULES = (
    "lcm_cli.engine.read.specs",
    "lcm_cli.engine.surgery.specs",
    "lcm_cli.engine.config.specs",
    "lcm_cli.doctor.specs",
    "lcm_cli.migrate.specs",
    "lcm_cli.engine.maintenance.specs",
    "lcm_cli.engine.recall.specs",
    "lcm_cli.engine.session.specs",
    "lcm_cli.engine.compaction.specs",
    "lcm_cli.engine.assembly.specs",
    "lcm_cli.engine.summarize.specs",
)


class Manifest(MutableMapping[str, OpSpec]):
    """Every operation's spec by name, gathered from :data:`SPEC_MODULES` on first use.

    Gathering is lazy so that a spec module may import this one; a name two concepts both
    declare is refused at load, since a door could not tell which one is meant. Only tests
    write to it (to declare a stand-in operation): :data:`OPERATIONS` is typed read-only.
    """

    def __init__(self, modules: tuple[str, ...]) -> None:
        self._modules = modules
        self._specs: dict[str, OpSpec] | None = None

    def _loaded(self) -> dict[str, OpSpec]:
        if self._specs is None:
            specs: dict[str, OpSpec] = {}
            for module in self._modules:
                for name, spec in importlib.import_module(module).SPECS.items():
                    if name in specs:
                        raise RuntimeError(
                            f"operation {name!r} is declared twice ({module} and {specs[name].module})"
                        )
                    specs[name] = spec
            self._specs = specs
        return self._specs

    def __getitem__(self, name: str) -> OpSpec:
        return self._loaded()[name]

    def __setitem__(self, name: str, spec: OpSpec) -> None:
        self._loaded()[name] = spec

    def __delitem__(self, name: str) -> None:
        del self._loaded()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaded())

    def __len__(self) -> int:
        return len(self._loaded())

    def __contains__(self, name: object) -> bool:
        return name in self._loaded()


OPERATIONS: Mapping[str, OpSpec] = Manifest(SPEC_MODULES)


# The reference `lcm`'s commands (cli-contract.md §3; its `doctor` is a placeholder, ours is
# not bound by it): their options, grammar and JSON keep the reference's shape exactly.
REFERENCE_COMMANDS = frozenset(
    (
        "status",
        "conversations.list",
        "conversations.show",
        "messages.list",
        "messages.tail",
        "summaries.list",
        "summaries.show",
        "config.show",
        "config.get",
        "config.set",
    )
)


class FollowUp(Record):
    """Work an operation leaves for after its answer: operation ``name`` called with ``params``.

    A warm door (`lcm serve`) runs it in the background, in the session's write queue; a
    cold door (the CLI, `lcm hook`, :func:`lcm_cli.engine.api.call`) leaves it undone, and
    the state that asked for it stays recorded (debt waits for the next ``session.maintain``).
    """

    name: str
    params: dict[str, Any]


class Result(Record):
    """What an operation returns: ``data``, for lists ``pagination``, and extra ``meta``.

    ``meta`` entries are added to the envelope's meta (e.g. which search back-end ran);
    ``streamed`` says the operation already wrote its document to the door's stream;
    ``exit_status`` is the status a successful call exits with (a report whose findings
    fail the run, as `lcm doctor --fail-on`); ``follow_ups`` is work for after the answer.
    """

    data: Any
    pagination: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None
    streamed: bool = False
    exit_status: int = 0
    follow_ups: tuple[FollowUp, ...] = ()


class Operation(Record):
    """A bound operation: its name, implementation and interface."""

    name: str
    func: Callable[..., Result]
    spec: OpSpec


_BOUND: dict[str, Operation] = {}


def operation(name: str) -> Callable[[Callable[..., Result]], Callable[..., Result]]:
    """Bind the decorated function as the implementation of operation ``name`` (declared in OPERATIONS)."""

    def bind(func: Callable[..., Result]) -> Callable[..., Result]:
        _BOUND[name] = Operation(name, func, OPERATIONS[name])
        return func

    return bind


def get_operation(name: str) -> Operation:
    """The operation called ``name`` (KeyError when there is none)."""
    if name not in _BOUND:
        importlib.import_module(OPERATIONS[name].module)
    return _BOUND[name]
