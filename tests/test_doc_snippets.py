"""Every code block in README.md and docs/**/*.md runs as printed, so no snippet can drift.

The convention (also in docs/contributing.md), page by page, blocks in the order they appear, in a
fresh temporary working directory per page:

- ```python blocks run in one namespace per page, as a script would: imports included, small sizes.
- A block whose first line is a file name comment (``# my_run.yaml``, ``# plugin.py``) is also written
  to that file, so later blocks on the page can use it (``marlplug train my_run.yaml``).
- In ```bash, ```console and ```sh blocks, every line that starts with ``marlplug`` (after an
  optional ``$`` prompt, ``\\``-continued) runs in-process through the CLI's ``main``; other lines
  (``pip``, ``bash scripts/...``, ``cd``) are set-up that CI itself exercises, and are not run. In a
  console block, the lines under a command are its output: when the first one starts with
  ``error:``, the command must exit with status 2 and print that line on stderr; otherwise it must
  exit 0, and a cheap command must print every output line the page shows, in that order (a line
  ``...`` stands for lines left out), so a sample such as ``config show``'s cannot go stale.
- Cheap commands (``--help``, ``plugins``, ``config show``, ``codes analyze``, ...) run as printed.
  Training, rendering and benchmarks (:data:`EXPENSIVE`) need small sizes: an HTML comment on the
  line before the block, ``<!-- doc-test: --set train.updates=1 ... -->``, gives arguments that are
  appended to every such command in the block. Without one, the test fails and says so.
- ``<!-- doc-test: skip REASON -->`` before a block skips it (a synopsis with ``<placeholders>``,
  a command that needs a Ray cluster or a display); the reason is required.
"""

from __future__ import annotations

import re
import shlex
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from marlplug.cli.main import main

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])

#: ``marlplug <command>`` that trains or measures for minutes: needs a ``doc-test`` size comment.
EXPENSIVE = frozenset({"train", "render", "bench", "sweep"})
SHELL_LANGUAGES = frozenset({"bash", "console", "sh", "shell"})

_FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
_DIRECTIVE = re.compile(r"^\s*<!--\s*doc-test:\s*(.*?)\s*-->\s*$")
_FILE_COMMENT = re.compile(r"^#\s*([\w.\-]+\.(?:ya?ml|toml|json|py))\s*$")


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: str
    line: int
    """1-based line of the opening fence."""
    language: str
    text: str
    directive: str | None
    """The ``<!-- doc-test: ... -->`` text on the line before the fence, if any."""

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def extract_blocks(page: str, text: str) -> list[Block]:
    """The fenced blocks of a Markdown page, with the directive comment before each.

    Example:
        >>> page = "x\\n<!-- doc-test: skip demo -->\\n```bash\\nmarlplug --help\\n```\\n"
        >>> [(b.line, b.language, b.text, b.directive) for b in extract_blocks("p.md", page)]
        [(3, 'bash', 'marlplug --help', 'skip demo')]
    """
    lines = text.splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        indent, language = opening.groups()
        end = index + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        body = [line.removeprefix(indent) for line in lines[index + 1 : end]]
        previous = next((lines[i] for i in range(index - 1, -1, -1) if lines[i].strip()), "")
        directive = _DIRECTIVE.match(previous)
        blocks.append(
            Block(
                page,
                index + 1,
                language.lower(),
                "\n".join(body),
                directive.group(1) if directive else None,
            )
        )
        index = end + 1
    return blocks


@dataclass(frozen=True)
class Command:
    """One ``marlplug`` command line of a shell block and what the page says it prints."""

    args: list[str]
    output: list[str]


def shell_commands(block: Block) -> Iterator[Command]:
    """The ``marlplug`` commands of a shell block, comments stripped, continuations joined.

    Example:
        >>> block = Block("p.md", 1, "console", "$ marlplug a \\\\\\n  b  # note\\nout\\n$ pip x", None)
        >>> [(c.args, c.output) for c in shell_commands(block)]
        [(['marlplug', 'a', 'b'], ['out'])]
    """
    lines = block.text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index].strip().removeprefix("$ ").strip()
        index += 1
        while line.endswith("\\") and index < len(lines):
            line = line[:-1] + " " + lines[index].strip()
            index += 1
        if not line.startswith("marlplug"):
            continue
        output = []
        while (
            block.language == "console" and index < len(lines) and not lines[index].startswith("$")
        ):
            output.append(lines[index])
            index += 1
        yield Command(shlex.split(line, comments=True), [text for text in output if text.strip()])


def shows_printed_output(shown: list[str], printed: str) -> bool:
    """Whether every line of ``shown`` but ``...`` is a line of ``printed``, in the same order.

    Example:
        >>> shows_printed_output(["seed: 2", "  ...", "  agents: 6"], "seed: 2\\nenv:\\n  agents: 6\\n")
        True
        >>> shows_printed_output(["  agents: 6", "seed: 2"], "seed: 2\\nenv:\\n  agents: 6\\n")
        False
    """
    printed_lines = iter(line.rstrip() for line in printed.splitlines())
    wanted = [line.rstrip() for line in shown if line.strip() != "..."]
    return all(any(line == want for line in printed_lines) for want in wanted)


def run_shell_block(block: Block, capsys: pytest.CaptureFixture[str]) -> None:
    extra = shlex.split(block.directive) if block.directive else []
    for command in shell_commands(block):
        shown = shlex.join(command.args)
        if any(re.fullmatch(r"<[^>]+>.*|\[.*", arg) for arg in command.args):
            pytest.fail(
                f"{block.where}: '{shown}' has placeholders; mark the block "
                "<!-- doc-test: skip synopsis -->"
            )
        subcommand = next((arg for arg in command.args[1:] if not arg.startswith("-")), None)
        args = command.args[1:]
        first_output = command.output[0] if command.output else ""
        expected_error = first_output if first_output.startswith("error:") else None
        # A command shown failing stops at validation: cheap, and extra arguments could mask it.
        if subcommand in EXPENSIVE and "--help" not in args and expected_error is None:
            if not extra:
                pytest.fail(
                    f"{block.where}: '{shown}' is expensive; put "
                    "<!-- doc-test: --set train.updates=1 ... --> on the line before the block"
                )
            args = [*args, *extra]
        capsys.readouterr()
        status = main(args)
        captured = capsys.readouterr()
        if expected_error is not None:
            assert status == 2, f"{block.where}: '{shown}' should fail with status 2, got {status}"
            assert expected_error in captured.err, (
                f"{block.where}: '{shown}' printed {captured.err!r}, the page says {expected_error!r}"
            )
        else:
            assert status == 0, f"{block.where}: '{shown}' exited {status}: {captured.err[-2000:]}"
            # Training output depends on the sizes the directive shrank: only cheap commands' is checked.
            if command.output and subcommand not in EXPENSIVE:
                assert shows_printed_output(command.output, captured.out), (
                    f"{block.where}: '{shown}' printed:\n{captured.out[-3000:]}\n"
                    "which lacks, in order, the output the page shows under it"
                )


def run_python_block(block: Block, module: types.ModuleType) -> None:
    code = compile(block.text, block.where, "exec")
    exec(code, module.__dict__)


def _page_id(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


RUNNABLE_PAGES = [
    pytest.param(page, id=_page_id(page))
    for page in PAGES
    if any(
        block.language == "python" or block.language in SHELL_LANGUAGES
        for block in extract_blocks(_page_id(page), page.read_text())
    )
]


def test_the_docs_have_runnable_blocks() -> None:
    ids = {param.id for param in RUNNABLE_PAGES}
    assert {"README.md", "docs/getting-started.md", "docs/concepts/coded-training.md"} <= ids


@pytest.mark.slow
@pytest.mark.parametrize("page", RUNNABLE_PAGES)
def test_page_blocks_run_as_printed(
    page: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    # Pages refer to the packaged configs by their path in a checkout.
    (tmp_path / "marlplug").mkdir()
    (tmp_path / "marlplug" / "configs").symlink_to(ROOT / "marlplug" / "configs")
    name = "doc_snippets_" + re.sub(r"\W", "_", _page_id(page))
    module = types.ModuleType(name)
    module.__file__ = str(tmp_path / f"{name}.py")
    monkeypatch.setitem(sys.modules, name, module)  # dataclasses and pickling look modules up
    for block in extract_blocks(_page_id(page), page.read_text()):
        if block.directive is not None and block.directive.startswith("skip"):
            assert block.directive.removeprefix("skip").strip(), (
                f"{block.where}: skip needs a reason"
            )
            continue
        first_line = block.text.splitlines()[0] if block.text else ""
        file_comment = _FILE_COMMENT.match(first_line)
        if file_comment is not None:
            (tmp_path / file_comment.group(1)).write_text(block.text + "\n")
        if block.language == "python":
            run_python_block(block, module)
        elif block.language in SHELL_LANGUAGES:
            run_shell_block(block, capsys)
