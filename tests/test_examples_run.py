"""Every example runs (issues 16 and 28): each line of the shell blocks in README.md,
docs/*.md and skills/lcm/SKILL.md, and each `Example:` line of every `--help`, is run
against a fresh copy of the bundled example and must exit as the doc says, and do what its
comment says it does.

How a doc writes an example (the test reads the same conventions a person does):

- every line of a ```bash / ```sh / ```shell / ```console or bare ``` block is an example,
  `lcm` or not (``export``, ``cd``, ``printf > notes.txt``), except comment lines; ``$ ``
  prompts are stripped, a trailing ``\\`` joins the next line; a block that is not shell
  (a diagram, a synopsis) is fenced ```text;
- it runs with ``cwd`` a scratch copy of the repository's layout (``examples/openclaw`` is
  a fresh copy of the bundled example) and ``HOME`` a scratch home whose ``~/.openclaw`` is
  another copy, so ``--openclaw-dir ~/.openclaw`` examples run too; ``lcm`` is the venv's;
- a block runs as one bash script on one fresh copy, its lines in order, so a line may use
  what an earlier one made or named (``cursor=$(lcm ... | jq -r .pagination.nextCursor)``,
  a backup, a prune archive, an ``export``); each line's own exit status is checked;
- a --help example runs alone; the few files it names that the example lacks (a backup,
  a prune archive) are made first by lcm itself (GIVEN), and must be made;
- it must exit 0, unless its trailing comment says ``# exit N`` (or ``exits N``);
- a line whose trailing comment says ``# not run: REASON``, or every line of a block
  preceded by ``<!-- not run: REASON -->``, is listed here as skipped with that reason
  (installs into your environment, a remote model, an editor, a long-running server, the
  OpenClaw host's own commands, a command another test runs end to end);
- a trailing comment that claims an outcome is checked against the files before and after
  the line (tests/support/doc_state.py): ``dry run`` / ``read-only`` change nothing,
  ``backs up`` makes a backup, ``compact now`` adds summaries, ``imports`` adds messages, ...
  (CLAIMS below). A comment that uses an outcome word (OUTCOME_WORDS) no claim reads fails
  the test: reword it, or teach CLAIMS the claim and how to check it.

The generated help region of docs/cli.md is left out: its examples are the `Example:`
lines, run here straight from the commands.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import pytest

from tests.test_docs import GEN, LEAVES, REPO, _command, _hand_written, _lcm_segments, _title

if TYPE_CHECKING:
    from tests.support.doc_state import State

EXAMPLE = REPO / "examples" / "openclaw"
BIN = Path(sys.executable).parent
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "skills" / "lcm" / "SKILL.md"]
SHELL_LANGUAGES = {"", "bash", "sh", "shell", "console"}

_FENCE = re.compile(
    r"(?P<before>(?:<!--[^\n]*-->\s*\n)?)^```(?P<lang>[A-Za-z]*)[^\n]*\n(?P<body>.*?)^```[ \t]*$", re.S | re.M
)
_NOT_RUN_BLOCK = re.compile(r"<!--\s*not run:\s*(?P<reason>.*?)\s*-->")
_NOT_RUN_LINE = re.compile(r"#\s*not run:\s*(?P<reason>.*)$")
_EXIT = re.compile(r"#\s*exits?\s+(?P<status>\d+)\b")


class Example(NamedTuple):
    """One example: where it is, its shell line, the exit status it must have, or why not run."""

    where: str
    line: str
    status: int
    skip: str | None


class Block(NamedTuple):
    """A doc's shell block (run as one script, so its variables carry) or one --help example."""

    where: str
    setup: tuple[str, ...]  # lines that make what a --help example names (GIVEN)
    examples: tuple[Example, ...]


def _runs_lcm(line: str) -> bool:
    return bool(_lcm_segments([line])) or "$(lcm " in line


def _logical_lines(body: str) -> list[str]:
    lines: list[str] = []
    pending = ""
    for raw in body.splitlines():
        text = raw[2:] if raw.startswith("$ ") else raw
        if text.rstrip().endswith("\\"):
            pending += text.rstrip()[:-1] + " "
            continue
        lines.append(pending + text)
        pending = ""
    if pending:
        lines.append(pending)
    return lines


def _example(where: str, line: str, block_skip: str | None = None) -> Example:
    not_run = _NOT_RUN_LINE.search(line)
    exit_status = _EXIT.search(line)
    skip = block_skip or (not_run["reason"].strip() if not_run else None)
    return Example(where, line, int(exit_status["status"]) if exit_status else 0, skip)


def doc_blocks(path: Path) -> list[Block]:
    """The shell blocks of one markdown file, in order; every line not a comment is an example."""
    text = _hand_written(path)
    name = path.relative_to(REPO).as_posix()
    found: list[Block] = []
    for block in _FENCE.finditer(text):
        if block["lang"].lower() not in SHELL_LANGUAGES:
            continue
        marked = _NOT_RUN_BLOCK.search(block["before"] or "")
        first_line = text.count("\n", 0, block.start("body")) + 1
        examples = [
            _example(f"{name}:{first_line + offset}", line, marked["reason"] if marked else None)
            for offset, line in enumerate(_logical_lines(block["body"]))
            if line.strip() and not line.lstrip().startswith("#")
        ]
        if examples:
            found.append(Block(f"{name}:{first_line}", (), tuple(examples)))
    return found


# What a --help example names that the bundled example does not hold: made first, by lcm.
GIVEN = {
    "lcm.db.backup-20260710T123456789Z-k3x9q2.bak": (
        "lcm backup --out ~/.openclaw/lcm.db.backup-20260710T123456789Z-k3x9q2.bak"
    ),
    "lcm.db.prune-20260710T123456789Z.jsonl.gz": (
        "lcm prune --conversation-id 3 --include-active --out ~/.openclaw/lcm.db.prune-20260710T123456789Z.jsonl.gz --apply"
    ),
}


def help_blocks() -> list[Block]:
    """The `Example:` lines of every command's --help, each run alone."""
    found: list[Block] = []
    for path in LEAVES:
        for line in (_command(path).help or "").splitlines():
            if line.strip().startswith("Example:"):
                example = _example(f"{_title(path)} --help", line.strip()[len("Example:") :].strip())
                given = tuple(setup for name, setup in GIVEN.items() if name in example.line)
                found.append(Block(example.where, given, (example,)))
    return found


BLOCKS = [b for doc in DOCUMENTS for b in doc_blocks(doc)] + help_blocks()
EXAMPLES = [e for b in BLOCKS for e in b.examples]


# --- what a trailing comment claims, and how that is checked ------------------------------


def comment(line: str) -> str:
    """The line's trailing comment as bash reads it (from the first unquoted `#` word), lowercased."""
    quote = ""
    for i, char in enumerate(line):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[i + 1 :].strip().lower()
    return ""


def _changed(before: State, after: State) -> set[str]:
    """The files that are new or whose content changed (databases by their logical content)."""
    return {path for path, digest in after["files"].items() if before["files"].get(path) != digest}


def _rows(table: str, *, grew: bool) -> Callable[[State, State], bool]:
    """True when a database that is there before and after has more (or fewer) rows of ``table``."""

    def moved(before: State, after: State) -> bool:
        return any(
            (after["counts"][path][table] - counts[table]) * (1 if grew else -1) > 0
            for path, counts in before["counts"].items()
            if table in counts and path in after["counts"]
        )

    return moved


def _unchanged(before: State, after: State) -> bool:
    return before["files"] == after["files"]


def _database_backup(before: State, after: State) -> bool:
    return any(path.endswith(".bak") and path in after["counts"] for path in _changed(before, after))


def _backup_before_any_write(before: State, after: State) -> bool:
    wrote = any(path in after["counts"] and not path.endswith(".bak") for path in _changed(before, after))
    return _database_backup(before, after) or not wrote


def _file_backup(before: State, after: State) -> bool:
    return any(path.endswith(".bak") and path not in after["counts"] for path in _changed(before, after))


def _archived(before: State, after: State) -> bool:
    archive_file = any(path.endswith(".jsonl.gz") for path in _changed(before, after))
    return archive_file or _rows("archived", grew=True)(before, after)


def _deleted(before: State, after: State) -> bool:
    return _rows("conversations", grew=False)(before, after) or _rows("messages", grew=False)(before, after)


def _no_debt_left(before: State, after: State) -> bool:
    return all(counts.get("debt", 0) == 0 for counts in after["counts"].values())


class Claim(NamedTuple):
    """What a trailing comment claims (``words``, over the lowercased comment), and its check."""

    says: str
    words: re.Pattern[str]
    holds: Callable[[State, State], bool]
    alone: bool = False  # the rest of the comment says what would happen, not what does


CLAIMS = [
    Claim(
        "changes nothing (no file new, gone or changed)",
        re.compile(r"^(a )?dry run\b|\bread-only\b"),
        _unchanged,
        alone=True,
    ),
    Claim(
        "backs up before any write (a database changed: a new *.bak database)",
        re.compile(r"^if anything needs repair: back(up| up)\b"),
        _backup_before_any_write,
        alone=True,
    ),
    Claim(
        "makes a database backup (a new or replaced *.bak database)",
        re.compile(r"\bbacks? up\b|\bbackup first\b|\bonline copy\b"),
        _database_backup,
    ),
    Claim(
        "makes no database backup",
        re.compile(r"\bno database backup\b|\bbackups beside\b|\bthe newest backup\b"),
        lambda before, after: not _database_backup(before, after),
    ),
    Claim("keeps the old file as *.bak", re.compile(r"\bkept as \.bak\b"), _file_backup),
    Claim("adds summaries", re.compile(r"\bcompact(s|ed)?\b"), _rows("summaries", grew=True)),
    Claim("adds messages", re.compile(r"\bimports?\b"), _rows("messages", grew=True)),
    Claim("deletes conversations or messages", re.compile(r"\bdelet(e|es|ing)\b"), _deleted),
    Claim(
        "archives (a new *.jsonl.gz, or a conversation marked archived)",
        re.compile(r"\barchive\b"),
        _archived,
    ),
    Claim("adds messages back", re.compile(r"\brestores?\b|\bput it back\b"), _rows("messages", grew=True)),
    Claim("leaves no compaction debt", re.compile(r"\bdrain deferred (compaction )?debt\b"), _no_debt_left),
]
# Words that claim an outcome: a comment using one must match a claim above.
OUTCOME_WORDS = re.compile(
    r"\bdry[ -]run\b|read[ -]?only|\bback(s|ed)?[ -]?ups?\b|\.bak\b|online copy|compact|import|delet|archiv|restor"
    r"|put it back|\bdebt\b"
)


def claims_of(line: str) -> list[Claim]:
    """The claims a line's trailing comment makes, in CLAIMS order; one marked `alone` is the only one."""
    said = comment(line)
    found = [claim for claim in CLAIMS if claim.words.search(said)]
    return next(([claim] for claim in found if claim.alone), found)


def _state_diff(before: State, after: State, scratch: Path) -> str:
    """What changed between two states, briefly, paths relative to the scratch folder."""

    def short(path: str) -> str:
        return Path(path).relative_to(scratch).as_posix()

    new = sorted(short(p) for p in after["files"].keys() - before["files"].keys())
    gone = sorted(short(p) for p in before["files"].keys() - after["files"].keys())
    changed = sorted(short(p) for p in _changed(before, after) if p in before["files"])
    counts = [
        f"{short(path)} {name} {counts[name]}->{after['counts'][path].get(name)}"
        for path, counts in before["counts"].items()
        if path in after["counts"]
        for name in counts
        if counts[name] != after["counts"][path].get(name)
    ]
    parts = [
        f"{label}: {', '.join(items)}"
        for label, items in [("new", new), ("gone", gone), ("changed", changed), ("rows", counts)]
        if items
    ]
    return "; ".join(parts) or "nothing changed"


def _scratch(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A scratch repository layout and home, each with a fresh copy of the example."""
    repo = tmp_path / "repo"
    shutil.copytree(EXAMPLE, repo / "examples" / "openclaw")
    home = tmp_path / "home"
    shutil.copytree(EXAMPLE, home / ".openclaw")
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("LCM_", "OPENCLAW_")) and key not in ("COLUMNS", "LINES")
    }
    env.update(
        HOME=str(home),
        PATH=f"{BIN}{os.pathsep}{env.get('PATH', '')}",
        NO_COLOR="1",
        COLUMNS="100",
        LCM_SUMMARY_PROVIDER="",
    )
    env.pop("LCM_SUMMARY_PROVIDER")
    return repo, env


def test_examples_are_found() -> None:
    """The extraction finds the examples it should (a broken fence regex would find none)."""
    where = {e.where.split(":")[0] for e in EXAMPLES}
    assert {"README.md", "docs/cli.md", "skills/lcm/SKILL.md"} <= where
    assert len([e for e in EXAMPLES if e.where.endswith("--help")]) == len(LEAVES)
    assert all(e.skip is None or e.skip.strip() for e in EXAMPLES), "a `not run:` needs a reason"
    lines = {e.line.split("#")[0].strip(): e for e in EXAMPLES}
    assert lines["bash scripts/demo.sh"].skip, "a block with no `lcm` line is an example too"
    assert any(line.startswith("export ") and not e.skip for line, e in lines.items())
    misread = [f"{e.where}: {e.line}" for e in EXAMPLES if "not run:" in e.line and not e.skip]
    assert not misread, "write `# not run: REASON` (its own comment):\n" + "\n".join(misread)


def test_example_count_report(capsys: pytest.CaptureFixture[str]) -> None:
    skipped = [e for e in EXAMPLES if e.skip]
    ran = [e for e in EXAMPLES if not e.skip]
    with capsys.disabled():
        for e in skipped:
            print(f"skipped {e.where}: {e.line.split('#')[0].strip()[:70]} (not run: {e.skip})")
        print(
            f"\n{len(ran)} examples run ({len([e for e in ran if not _runs_lcm(e.line)])} not `lcm`,"
            f" {len([e for e in ran if claims_of(e.line)])} with a checked claim), {len(skipped)} marked not run"
        )


def test_every_outcome_comment_is_a_known_claim() -> None:
    """A comment that says what a line does (an outcome word) is read by CLAIMS, so it is checked."""
    unread = [
        f"{e.where}: # {comment(e.line)}"
        for e in EXAMPLES
        if not e.skip and OUTCOME_WORDS.search(comment(e.line)) and not claims_of(e.line)
    ]
    assert not unread, "add the claim to CLAIMS (with its check) or reword the comment:\n" + "\n".join(unread)


def test_claims_read_the_comments_as_meant() -> None:
    def says(line: str) -> list[str]:
        return [claim.says for claim in claims_of(line)]

    assert says("lcm prune --before 90d   # dry run; --apply deletes, --vacuum compacts") == [CLAIMS[0].says]
    assert says("lcm x --apply  # backs up lcm.db, then imports") == [CLAIMS[2].says, CLAIMS[6].says]
    assert says("lcm x --apply  # if anything needs repair: back up, then repair") == [CLAIMS[1].says]
    assert says("lcm compact --apply  # compact now") == [CLAIMS[5].says]
    assert says("lcm maintain  # drain deferred compaction debt") == [CLAIMS[-1].says]
    assert says("lcm grep '#x' 'a # b'  # the raw messages") == []
    assert comment("echo 'a # b' \"c # d\" x#y  # Dry Run") == "dry run"


_FINGERPRINT = (
    f"PYTHONPATH={shlex.quote(str(REPO))} {shlex.quote(sys.executable)} -S -m tests.support.doc_state"
)


def _checkpoints(block: Block) -> dict[int, tuple[str, str]]:
    """The labels of the fingerprints before and after each example that claims an outcome.

    A fingerprint is labelled by the example it precedes (`at-3`, or `at-end`), so the one
    after a claim is the one before the next, and consecutive claims share it.
    """
    run = [index for index, example in enumerate(block.examples) if not example.skip]
    return {
        index: (f"at-{index}", f"at-{after}")
        for index, after in zip(run, [*run[1:], "end"])
        if claims_of(block.examples[index].line)
    }


def _script(block: Block, folders: list[Path]) -> str:
    """The block as one bash script: each example, then its exit status appended to
    $LCM_EXAMPLE_STATUS; an example that claims an outcome between two fingerprints of ``folders``."""
    fingerprint = f"{_FINGERPRINT} {{}} {' '.join(shlex.quote(str(f)) for f in folders)}"
    out = [f"{line} >/dev/null || exit 97" for line in block.setup]  # no GIVEN, no example
    checkpoints, taken = _checkpoints(block), set()
    for index, example in enumerate(block.examples):
        if example.skip:
            continue
        before, after = checkpoints.get(index, ("", ""))
        if before and before not in taken:
            out.append(fingerprint.format(before))
        out += [example.line, 'echo "$?" >> "$LCM_EXAMPLE_STATUS"']
        if after:
            out.append(fingerprint.format(after))
        taken |= {before, after}
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("block", BLOCKS, ids=[b.where for b in BLOCKS])
def test_examples_run(block: Block, tmp_path: Path) -> None:
    ran = [e for e in block.examples if not e.skip]
    if not ran:
        pytest.skip("; ".join(sorted({f"not run: {e.skip}" for e in block.examples})))
    repo, env = _scratch(tmp_path)
    env["LCM_EXAMPLE_STATUS"] = str(tmp_path / "status")
    env["LCM_EXAMPLE_STATE"] = str(tmp_path / "states")
    try:
        done = subprocess.run(
            ["bash", "-c", _script(block, [repo, Path(env["HOME"])])],
            cwd=repo,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{block.where}: the examples did not finish in 120 s", pytrace=False)
    path = tmp_path / "status"
    statuses = [int(x) for x in path.read_text().split()] if path.exists() else []
    problems = [
        f"{e.where}: `{e.line}` exited {got}, the doc implies {e.status}"
        for e, got in zip(ran, statuses)
        if got != e.status
    ]
    if len(statuses) != len(ran):
        problems.append(f"{block.where}: {len(ran)} examples, {len(statuses)} ran (the script stopped)")
    problems += _false_claims(block, tmp_path, len(statuses))
    if problems:
        pytest.fail("\n".join(problems) + f"\nstderr: {done.stderr[-2000:]}", pytrace=False)


def _false_claims(block: Block, scratch: Path, ran: int) -> list[str]:
    """Each claim of a block's comments that the states before and after its line refute
    (of the first ``ran`` examples run: the script may have stopped, which is reported)."""
    path = scratch / "states"
    states = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    by_label: dict[str, State] = {state.pop("label"): state for state in states}
    problems = []
    done = [index for index, example in enumerate(block.examples) if not example.skip][:ran]
    for index, (before, after) in _checkpoints(block).items():
        example = block.examples[index]
        if index not in done:
            continue
        if before not in by_label or after not in by_label:
            problems.append(f"{example.where}: no fingerprint around it (tests/support/doc_state.py failed?)")
            continue
        problems += [
            f"{example.where}: `# {comment(example.line)}` claims it {claim.says}, but: "
            f"{_state_diff(by_label[before], by_label[after], scratch)}"
            for claim in claims_of(example.line)
            if not claim.holds(by_label[before], by_label[after])
        ]
    return problems


def test_shell_syntax_of_every_example() -> None:
    """No placeholder a shell cannot read (`--cursor <nextCursor>`), also in examples not run."""
    problems = []
    for example in EXAMPLES:
        if example.skip:
            continue  # a synopsis (`[--limit N]`) is marked not run
        done = subprocess.run(["bash", "-n", "-c", example.line], capture_output=True, text=True)
        if done.returncode != 0:
            problems.append(f"{example.where}: {example.line}: {done.stderr.strip()}")
        try:
            shlex.split(example.line, comments=True)
        except ValueError as exc:
            problems.append(f"{example.where}: {example.line}: {exc}")
    assert not problems, "\n".join(problems)


def test_generated_help_is_left_out() -> None:
    assert GEN.HELP_BEGIN in (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
