"""Hostile and broken config files: each is one line naming the file and the limit, exit status 2.

Each case here was a traceback, minutes of work or gigabytes of memory before the loader had
limits (a YAML "billion laughs" ran 192 s and grew to 6 GB).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from marlplug.config.loading import MAX_CONFIG_BYTES, MAX_DEPTH, MAX_VALUES, parse_yaml_text
from marlplug.errors import ConfigError
from tests.conftest import CliResult


def _nested_aliases(levels: int, width: int = 9) -> str:
    """The classic "billion laughs": each level lists the previous one ``width`` times."""
    lines = ["l0: &l0 [" + ", ".join(['"lol"'] * width) + "]"]
    for level in range(1, levels):
        lines.append(f"l{level}: &l{level} [" + ", ".join([f"*l{level - 1}"] * width) + "]")
    return "\n".join(lines) + "\n"


def _nested_merge_keys(levels: int) -> str:
    """The same blow-up through merge keys, which copy the aliased mapping's entries."""
    lines = ["m0: &m0 {x0: 1, x1: 2, x2: 3}"]
    for level in range(1, levels):
        merged = ", ".join([f"*m{level - 1}"] * 9)
        lines.append(f"m{level}: &m{level} {{<<: [{merged}], y{level}: 1}}")
    return "\n".join(lines) + "\n"


# (case id, file name, file bytes, expected message fragment)
HOSTILE_FILES: list[tuple[str, str, bytes, str]] = [
    (
        "billion-laughs",
        "laughs.yaml",
        _nested_aliases(10).encode(),
        f"too large: more than {MAX_VALUES} values once aliases are expanded",
    ),
    (
        "billion-laughs-under-a-known-field",
        "laughs.yaml",
        ("seed: 0\n" + _nested_aliases(10).replace("l9:", "train:")).encode(),
        "too large: more than",
    ),
    (
        "merge-key-blow-up",
        "merge.yaml",
        _nested_merge_keys(10).encode(),
        "too large: more than",
    ),
    (
        "recursive-alias",
        "loop.yaml",
        b"a: &a [1, *a]\n",
        "an alias refers to a value that contains it",
    ),
    ("deep-yaml-list", "deep.yaml", b"seed: " + b"[" * 5000 + b"]" * 5000, "nested deeper than"),
    (
        "deep-yaml-mapping",
        "deep.yaml",
        b"train: " + b"{a: " * 2000 + b"1" + b"}" * 2000,
        f"nested deeper than {MAX_DEPTH} levels",
    ),
    ("deep-toml-array", "deep.toml", b"seed = " + b"[" * 5000 + b"]" * 5000, "nested deeper than"),
    (
        "deep-toml-inline-table",
        "deep.toml",
        b"train = " + b"{a = " * 2000 + b"1" + b"}" * 2000,
        "nested deeper than",
    ),
    ("huge-integer-yaml", "big.yaml", b"seed: " + b"9" * 5000, "malformed YAML: Exceeds the limit"),
    (
        "huge-integer-toml",
        "big.toml",
        b"seed = " + b"9" * 5000,
        "malformed TOML: Exceeds the limit",
    ),
    (
        "binary-yaml",
        "bin.yaml",
        b"\xff\xfe\x00\x01binary\x89PNG",
        "not a text file: byte 0 is not UTF-8",
    ),
    ("binary-toml", "bin.toml", bytes(range(256)), "not a text file"),
    ("nul-bytes", "nul.yaml", b"seed: 1\x00\x00\n", "not a text file"),
    (
        "too-big-file",
        "big.yaml",
        b"# padding\n" * (MAX_CONFIG_BYTES // 10 + 1),
        f"too large: a config file must be at most {MAX_CONFIG_BYTES // 1024} KiB",
    ),
    ("python-tag", "tag.yaml", b"seed: !!python/object/apply:os.getpid []\n", "malformed YAML"),
    ("impossible-date", "date.yaml", b"seed: 2001-02-30\n", "malformed YAML: day is out of range"),
    ("two-documents", "two.yaml", b"seed: 1\n---\nseed: 2\n", "malformed YAML"),
]


@pytest.mark.parametrize(
    ("name", "content", "expected"),
    [case[1:] for case in HOSTILE_FILES],
    ids=[case[0] for case in HOSTILE_FILES],
)
def test_hostile_file_is_one_line(
    run_cli: Callable[..., CliResult], tmp_path: Path, name: str, content: bytes, expected: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    result = run_cli("config", "check", str(path))
    assert result.exit_code == 2
    assert "Traceback" not in result.err
    lines = result.err.strip().splitlines()
    assert len(lines) == 1, result.err
    assert lines[0].startswith(f"error: {path}")
    assert expected in lines[0]


def test_billion_laughs_is_refused_in_a_real_process_with_little_memory(tmp_path: Path) -> None:
    """A separate process, so that its peak memory is measurable: far below what expanding the
    aliases takes (9**10 values), because the refusal comes before anything walks them."""
    path = tmp_path / "laughs.yaml"
    path.write_text("seed: 0\n" + _nested_aliases(10).replace("l9:", "train:"))
    # VmHWM is this process image's own peak (ru_maxrss would carry over the peak of the process
    # it was forked from: a large pytest process late in the suite).
    probe = (
        "import sys\n"
        "from marlplug.cli.main import main\n"
        f"code = main(['config', 'check', {str(path)!r}])\n"
        "status = open('/proc/self/status').read().split('VmHWM:')[1]\n"
        "print(int(status.split()[0]))\n"
        "sys.exit(code)\n"
    )
    # The timeout only bounds a hang (no timing assertion: the test machines are loaded).
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=False, timeout=300
    )
    assert done.returncode == 2, done.stderr
    assert "too large" in done.stderr and "Traceback" not in done.stderr
    peak_kib = int(done.stdout.strip().splitlines()[-1])  # VmHWM is in kB
    assert peak_kib < 1024 * 1024, f"peak memory {peak_kib} KiB"


def _flow_aliases(levels: int, width: int = 10) -> str:
    """Nested aliases in one line of flow YAML, as a ``--set`` value would carry them."""
    items = ["&l0 [" + ",".join(["1"] * width) + "]"]
    items += [f"&l{k} [" + ",".join([f"*l{k - 1}"] * width) + "]" for k in range(1, levels)]
    return "[" + ",".join(items) + "]"


def test_set_value_has_the_same_limits(run_cli: Callable[..., CliResult], tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_text("")
    cases = {
        f"train={'[' * 100}{']' * 100}": "nested deeper than",
        "seed=" + "9" * 5000: "malformed YAML: Exceeds the limit",
        "train=" + _flow_aliases(5): "too large: more than",
        "a" + ".a" * 100 + "=1": "nested deeper than",
    }
    for assignment, expected in cases.items():
        result = run_cli("config", "check", str(path), "--set", assignment)
        assert result.exit_code == 2, assignment
        assert expected in result.err, (assignment[:40], result.err)
        assert len(result.err.strip().splitlines()) == 1


def test_errors_about_huge_values_stay_short(
    run_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    path = tmp_path / "run.yaml"
    path.write_text("seed: " + "x" * 100_000 + "\n? " + "y" * 50_000 + "\n: 1\n")
    result = run_cli("config", "check", str(path))
    assert result.exit_code == 2
    lines = result.err.strip().splitlines()
    assert len(lines) <= 2 and all(len(line) < 300 for line in lines), result.err[:400]
    assert lines[0].startswith("error: seed: expected an integer, got 'xxx")


def test_aliases_and_merge_keys_within_the_limits_still_work() -> None:
    text = "base: &base {lr: 0.001, n_epochs: 2}\ntrain: {<<: *base, updates: 3}\n"
    assert parse_yaml_text(text, source="run.yaml")["train"] == {
        "lr": 0.001,
        "n_epochs": 2,
        "updates": 3,
    }
    with pytest.raises(ConfigError, match="too large"):
        parse_yaml_text(_nested_aliases(5), source="run.yaml")
    assert len(parse_yaml_text(_nested_aliases(4), source="run.yaml")["l3"]) == 9


def test_limits_are_what_the_docs_say() -> None:
    """docs/reference/security.md quotes these values."""
    assert (MAX_CONFIG_BYTES, MAX_DEPTH, MAX_VALUES) == (256 * 1024, 32, 10_000)
