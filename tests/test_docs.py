"""Docs come from the code: the generated regions of docs/cli.md, help text and examples on
every command, every error code and config key documented, and only real commands and
options named in docs/cli.md and the agent skill."""

from __future__ import annotations

import difflib
import importlib.util
import json
import re
import shlex
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from lcm_cli.engine.core.exit_codes import EXIT_STATUS

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "cli.md"
SKILL = REPO / "skills" / "lcm" / "SKILL.md"
FIX_HINT = "run `.venv/bin/python scripts/gen_cli_docs.py` and commit docs/cli.md"


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_cli_docs", REPO / "scripts" / "gen_cli_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_cli_docs", module)
    spec.loader.exec_module(module)
    return module


GEN = _load_generator()
ROOT = GEN.command_tree()
PATHS: list[tuple[str, ...]] = GEN.command_paths(ROOT)


def _command(path: tuple[str, ...]) -> Any:
    command = ROOT
    for word in path:
        command = command.commands[word]
    return command


def _is_group(command: Any) -> bool:
    return hasattr(command, "list_commands")


def _runs(command: Any) -> bool:
    """True for a command that does something itself (a leaf, or a group like `lcm backup`)."""
    return not _is_group(command) or bool(getattr(command, "invoke_without_command", False))


LEAVES = [p for p in PATHS if _runs(_command(p))]


def _title(path: tuple[str, ...]) -> str:
    return " ".join(("lcm",) + path)


# --- (a) the generated regions ---------------------------------------------------------


def _short_diff(current: str, wanted: str) -> str:
    lines = difflib.unified_diff(
        current.splitlines(), wanted.splitlines(), "docs/cli.md", "from code", n=1, lineterm=""
    )
    return "\n".join(list(lines)[:40])


@pytest.mark.parametrize(
    ("begin", "end", "build"),
    [
        (GEN.HELP_BEGIN, GEN.HELP_END, "generated_help"),
        (GEN.CONFIG_BEGIN, GEN.CONFIG_END, "generated_config"),
        (GEN.ERRORS_BEGIN, GEN.ERRORS_END, "generated_errors"),
    ],
    ids=["help", "config", "errors"],
)
def test_generated_region_matches_code(begin: str, end: str, build: str) -> None:
    text = DOC.read_text(encoding="utf-8")
    assert begin in text and end in text, f"docs/cli.md lost the markers {begin} / {end}"
    current = GEN.extract_region(text, begin, end)
    wanted = "\n" + getattr(GEN, build)().rstrip("\n") + "\n"  # as gen_cli_docs.replace_region writes it
    if current != wanted:
        pytest.fail(f"docs/cli.md is stale: {FIX_HINT}.\n{_short_diff(current, wanted)}", pytrace=False)


def test_generated_help_has_no_machine_specific_text() -> None:
    region = GEN.extract_region(DOC.read_text(encoding="utf-8"), GEN.HELP_BEGIN, GEN.HELP_END)
    assert str(REPO) not in region
    assert str(Path.home()) not in region or str(Path.home()) == "/"
    assert all(line == line.rstrip() for line in region.splitlines())


def test_help_capture_ignores_the_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    narrow = GEN.capture_help(("messages", "list"))
    monkeypatch.setenv("COLUMNS", "300")
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("NO_COLOR", raising=False)
    wide = GEN.capture_help(("messages", "list"))
    assert narrow == wide


def test_every_command_has_a_section() -> None:
    region = GEN.extract_region(DOC.read_text(encoding="utf-8"), GEN.HELP_BEGIN, GEN.HELP_END)
    for path in PATHS:
        assert f"### `{_title(path)}`" in region, f"no section for `{_title(path)}`: {FIX_HINT}"


def test_check_mode_reports_drift_and_rewrite_fixes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    doc, skill = tmp_path / "cli.md", tmp_path / "SKILL.md"
    errors = f"{GEN.ERRORS_BEGIN}\n{GEN.ERRORS_END}\n{GEN.EXITS_BEGIN}\n{GEN.EXITS_END}\n"
    doc.write_text(
        f"intro\n{GEN.HELP_BEGIN}\nold help\n{GEN.HELP_END}\n{errors}middle\n{GEN.CONFIG_BEGIN}\n{GEN.CONFIG_END}\nend\n",
        encoding="utf-8",
    )
    destructive = f"{GEN.DESTRUCTIVE_BEGIN}\n{GEN.DESTRUCTIVE_END}\n"
    skill.write_text(f"skill\n{errors}{destructive}", encoding="utf-8")
    doctor = tmp_path / "doctor.md"
    doctor.write_text(f"checks\n{GEN.CHECKS_BEGIN}\n{GEN.CHECKS_END}\n", encoding="utf-8")
    manifest, tools = tmp_path / "openclaw.plugin.json", tmp_path / "tools.json"
    manifest.write_text(GEN.MANIFEST.read_text(encoding="utf-8"), encoding="utf-8")
    tools.write_text(GEN.TOOLS.read_text(encoding="utf-8"), encoding="utf-8")
    monkeypatch.setattr(GEN, "DOC", doc)
    monkeypatch.setattr(GEN, "SKILL", skill)
    monkeypatch.setattr(GEN, "DOCTOR", doctor)
    monkeypatch.setattr(GEN, "MANIFEST", manifest)
    monkeypatch.setattr(GEN, "TOOLS", tools)
    monkeypatch.setattr(GEN, "REPO", tmp_path)
    monkeypatch.setattr(GEN, "generated_help", lambda: "new help\n")
    monkeypatch.setattr(GEN, "generated_config", lambda: "| keys |\n")
    monkeypatch.setattr(GEN, "generated_errors", lambda: "| codes |\n")
    monkeypatch.setattr(GEN, "generated_skill_errors", lambda: "| next steps |\n")
    monkeypatch.setattr(GEN, "generated_skill_destructive", lambda: "- a fix\n")
    monkeypatch.setattr(GEN, "generated_checks", lambda: "| checks |\n")
    monkeypatch.setattr(GEN, "generated_exit_statuses", lambda: "| exits |\n")

    assert GEN.main(["--check"]) == 1
    assert "gen_cli_docs.py" in capsys.readouterr().err
    assert GEN.main([]) == 0
    assert doc.read_text(encoding="utf-8") == (
        f"intro\n{GEN.HELP_BEGIN}\nnew help\n{GEN.HELP_END}\n{GEN.ERRORS_BEGIN}\n| codes |\n{GEN.ERRORS_END}\n"
        f"{GEN.EXITS_BEGIN}\n| exits |\n{GEN.EXITS_END}\nmiddle\n{GEN.CONFIG_BEGIN}\n| keys |\n{GEN.CONFIG_END}\nend\n"
    )
    assert (
        skill.read_text(encoding="utf-8") == f"skill\n{GEN.ERRORS_BEGIN}\n| next steps |\n{GEN.ERRORS_END}\n"
        f"{GEN.EXITS_BEGIN}\n| exits |\n{GEN.EXITS_END}\n{GEN.DESTRUCTIVE_BEGIN}\n- a fix\n{GEN.DESTRUCTIVE_END}\n"
    )
    assert doctor.read_text(encoding="utf-8") == f"checks\n{GEN.CHECKS_BEGIN}\n| checks |\n{GEN.CHECKS_END}\n"
    assert GEN.main(["--check"]) == 0


def test_every_exit_status_is_declared() -> None:
    from lcm_cli.engine.core.exit_codes import ERRORS, EXIT_STATUSES, FINDINGS_EXIT_STATUS

    used = {error.status for error in ERRORS.values()} | {0, 1, FINDINGS_EXIT_STATUS, 130}
    assert used <= set(EXIT_STATUSES)
    skill = (REPO / "skills" / "lcm" / "SKILL.md").read_text(encoding="utf-8")
    assert all(f"| {status} |" in skill for status in EXIT_STATUSES)


# --- (b) help text and examples --------------------------------------------------------


@pytest.mark.parametrize("path", PATHS, ids=[_title(p) for p in PATHS])
def test_command_has_help(path: tuple[str, ...]) -> None:
    command = _command(path)
    assert (command.help or "").strip(), f"`{_title(path)}` has no help text"
    for param in command.params:
        if param.name in ("help",):
            continue
        assert (getattr(param, "help", None) or "").strip(), (
            f"`{_title(path)}`: {param.name} has no help text"
        )


@pytest.mark.parametrize("path", LEAVES, ids=[_title(p) for p in LEAVES])
def test_command_has_a_valid_example(path: tuple[str, ...]) -> None:
    help_text = _command(path).help or ""
    examples = [
        line.strip()[len("Example:") :].strip()
        for line in help_text.splitlines()
        if line.strip().startswith("Example:")
    ]
    assert examples, f"`{_title(path)}` has no `Example:` line in its docstring"
    for example in examples:
        # `echo '{...}' | lcm ...` feeds stdin: the command is the last segment
        segments = _lcm_segments([example])
        assert segments, f"example of `{_title(path)}` runs no lcm command: {example}"
        tokens = segments[-1]
        resolved, problems = parse_command_line(tokens)
        assert not problems, "\n".join(problems)
        assert resolved == path, f"example of `{_title(path)}` runs `{_title(resolved)}`: {example}"


# --- (c) error codes -------------------------------------------------------------------


def test_skill_error_table_matches_code() -> None:
    text = SKILL.read_text(encoding="utf-8")
    current = GEN.extract_region(text, GEN.ERRORS_BEGIN, GEN.ERRORS_END)
    wanted = "\n" + GEN.generated_skill_errors().rstrip("\n") + "\n"
    if current != wanted:
        pytest.fail(f"SKILL.md is stale: {FIX_HINT}.\n{_short_diff(current, wanted)}", pytrace=False)


def test_every_exit_status_is_documented() -> None:
    text = DOC.read_text(encoding="utf-8")
    for status in sorted(set(EXIT_STATUS.values()) | {0}):
        assert re.search(rf"^\|\s*{status}\s*\|", text, re.M), (
            f"exit status {status} missing from docs/cli.md"
        )


# --- (d) commands and options named in the docs ----------------------------------------


def _options_of(command: Any) -> dict[str, Any]:
    table: dict[str, Any] = {}
    for param in command.params:
        for opt in list(getattr(param, "opts", [])) + list(getattr(param, "secondary_opts", [])):
            if opt.startswith("-"):
                table[opt] = param
    return table


class _Flag:
    is_flag = True


HELP_OPTIONS: dict[str, Any] = {"--help": _Flag, "-h": _Flag}
ROOT_OPTIONS: dict[str, Any] = {**HELP_OPTIONS, **_options_of(ROOT)}
ALL_OPTIONS: dict[str, Any] = dict(ROOT_OPTIONS)
for _path in PATHS:
    ALL_OPTIONS.update(_options_of(_command(_path)))


def _is_json_number(token: str) -> bool:
    try:
        value = json.loads(token)
    except ValueError:
        return False
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def parse_command_line(tokens: list[str], *, naming: bool = False) -> tuple[tuple[str, ...], list[str]]:
    """The command path one `lcm ...` line resolves to, and the problems with the line:
    unknown words or options, options the command does not take, wrong argument counts
    (not checked when ``naming``: prose may name `config set` without its arguments)."""
    line = " ".join(tokens)
    problems: list[str] = []
    words: list[str] = []
    options: list[str] = []
    index = 1
    while index < len(tokens):
        token = tokens[index]
        index += 1
        if token == "--":
            words += tokens[index:]
            break
        if token.startswith("-") and len(token) > 1 and not _is_json_number(token):
            name, eq, _ = token.partition("=")
            options.append(name)
            param = ALL_OPTIONS.get(name)
            if param is None:
                problems.append(f"`{line}`: no option {name}")
            elif not getattr(param, "is_flag", False) and not eq:
                index += 1  # its value
            continue
        words.append(token)

    asked_help = words[:1] == ["help"]  # `lcm help summaries list` is that command's --help
    if asked_help:
        words = words[1:]
    command = ROOT
    path: tuple[str, ...] = ()
    for word in words:
        if _is_group(command) and word in command.commands:
            command = command.commands[word]
            path += (word,)
        else:
            break
    rest = words[len(path) :]
    wants_help = asked_help or any(name in HELP_OPTIONS for name in options)
    if _is_group(command) and not _runs(command):
        if rest:
            problems.append(f"`{line}`: `{_title(path)}` has no command {rest[0]!r}")
        elif path and not wants_help:
            problems.append(f"`{line}`: `{_title(path)}` needs a subcommand")
    elif _is_group(command) and rest:
        problems.append(f"`{line}`: `{_title(path)}` has no command {rest[0]!r}")
    else:
        arguments = [p for p in command.params if not getattr(p, "opts", ["-"])[0].startswith("-")]
        required = [p for p in arguments if getattr(p, "required", True)]
        if not len(required) <= len(rest) <= len(arguments) and not (wants_help or naming):
            problems.append(f"`{line}`: `{_title(path)}` takes {len(arguments)} argument(s), got {rest}")
    allowed = {**ROOT_OPTIONS, **_options_of(command)}
    problems += [
        f"`{line}`: `{_title(path)}` does not take {name}"
        for name in options
        if name in ALL_OPTIONS and name not in allowed
    ]
    return path, problems


def check_command_line(tokens: list[str], *, naming: bool = False) -> list[str]:
    """Problems with one `lcm ...` command line (empty when it would parse)."""
    return parse_command_line(tokens, naming=naming)[1]


GROUPS = {p[0] for p in PATHS if len(p) == 1 and _is_group(_command(p))}
_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
_SPAN = re.compile(r"`([^`\n]+)`")
_ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def _hand_written(path: Path) -> str:
    """The file's text without the generated regions (those are checked against the code)."""
    text = path.read_text(encoding="utf-8")
    for begin, end in ((GEN.HELP_BEGIN, GEN.HELP_END), (GEN.CONFIG_BEGIN, GEN.CONFIG_END)):
        if begin in text and end in text:
            text = text[: text.index(begin)] + text[text.index(end) + len(end) :]
    return text


def command_lines(markdown: str) -> list[list[str]]:
    """Every `lcm ...` invocation in fenced blocks and inline code, as shell tokens."""
    snippets: list[str] = []
    for block in _FENCE.findall(markdown):
        snippets += block.splitlines()
    snippets += _SPAN.findall(_FENCE.sub("", markdown))
    return _lcm_segments(snippets)


def command_names(markdown: str) -> list[list[str]]:
    """Commands named in inline code without `lcm`, such as `messages list` or `config set PATH`."""
    spans = [s for s in _SPAN.findall(_FENCE.sub("", markdown)) if s.split(" ", 1)[0] in GROUPS and " " in s]
    return _lcm_segments([f"lcm {span}" for span in spans])


def _lcm_segments(snippets: list[str]) -> list[list[str]]:
    """The shell tokens of every `lcm` command in the snippets (pipes and `&&` split them)."""
    found: list[list[str]] = []
    for snippet in snippets:
        try:
            tokens = shlex.split(snippet, comments=True)
        except ValueError:
            continue
        segment: list[str] = []
        for token in tokens + ["|"]:
            if token in ("|", "||", "&&", ";"):
                while segment and _ENV_ASSIGNMENT.match(segment[0]):
                    segment.pop(0)
                if segment and segment[0] == "lcm":
                    found.append(segment)
                segment = []
            else:
                segment.append(token)
    return found


DOCUMENTS = [DOC, SKILL]


@pytest.mark.parametrize("doc", DOCUMENTS, ids=["docs/cli.md", "SKILL.md"])
def test_documented_command_lines_exist(doc: Path) -> None:
    lines = command_lines(_hand_written(doc))
    assert lines, f"no `lcm ...` command lines found in {doc.relative_to(REPO)}"
    problems = [p for tokens in lines for p in check_command_line(tokens)]
    problems += [
        p for tokens in command_names(_hand_written(doc)) for p in check_command_line(tokens, naming=True)
    ]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("doc", DOCUMENTS, ids=["docs/cli.md", "SKILL.md"])
def test_documented_options_exist(doc: Path) -> None:
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", _hand_written(doc)))
    unknown = sorted(named - set(ALL_OPTIONS))
    assert not unknown, f"{doc.relative_to(REPO)} names options no command has: {unknown}"


def test_skill_names_every_command() -> None:
    text = SKILL.read_text(encoding="utf-8")
    used = {parse_command_line(tokens)[0] for tokens in command_lines(text)}
    missing = [_title(p) for p in LEAVES if p not in used and p != ("doctor",)]
    assert not missing, f"skills/lcm/SKILL.md never shows {missing}"


def test_skill_front_matter() -> None:
    text = SKILL.read_text(encoding="utf-8")
    match = re.match(r"^---\n(.*?)\n---\n", text, re.S)
    assert match, "SKILL.md must start with YAML front matter between --- lines"
    fields = dict(line.split(":", 1) for line in match.group(1).splitlines() if ":" in line)
    assert fields.get("name", "").strip() == "lcm"
    assert fields.get("description", "").strip(), "SKILL.md needs a one-line description"


def test_inventory_lists_every_command() -> None:
    from lcm_cli.commands.catalog import build_inventory

    inventory = build_inventory()
    assert [c["command"] for c in inventory["commands"]] == [" ".join(p) for p in LEAVES]
    for entry in inventory["commands"]:
        assert entry["example"], f"`lcm commands` has no example for `lcm {entry['command']}`"


def test_inventory_says_which_commands_write_and_which_preview() -> None:
    from lcm_cli.commands.catalog import build_inventory

    by_command = {c["command"]: c for c in build_inventory()["commands"]}
    nothing = {"database": False, "config": False, "files": []}
    assert by_command["status"]["writes"] == nothing and by_command["status"]["dryRunByDefault"] is False
    assert by_command["commands"]["writes"] == nothing
    assert by_command["config set"]["writes"] == {"database": False, "config": True, "files": []}
    assert by_command["config set"]["dryRunByDefault"] is False
    for previewing in ("migrate-sessions", "rotate", "prune", "doctor apply", "compact"):
        assert by_command[previewing]["writes"]["database"] is True, previewing
        assert by_command[previewing]["dryRunByDefault"] is True, previewing
    # Commands that write files name the options that say where, database or not.
    assert by_command["export"]["writes"] == {"database": False, "config": False, "files": ["--out"]}
    assert by_command["browse"]["writes"]["files"] == ["--screenshot"]
    assert by_command["prune"]["writes"] == {"database": True, "config": False, "files": ["--out"]}
    assert by_command["hook"]["writes"]["byOperation"] is True
    assert all("writes" in entry and entry["section"] for entry in by_command.values())


# --- (e) config keys -------------------------------------------------------------------


def test_every_config_key_is_documented() -> None:
    from lcm_cli.engine.config.keys import CONFIG_KEYS

    docs = "\n".join(p.read_text(encoding="utf-8") for p in sorted((REPO / "docs").rglob("*.md")))
    missing = [key.path for key in CONFIG_KEYS if f"`{key.path}`" not in docs]
    assert not missing, f"config keys missing from docs/: {missing}; {FIX_HINT}"
