"""Fuzzing the config loader through the CLI: any YAML or TOML file and any ``--set`` string is either
a valid config (exit 0) or one ``error:`` line or two (exit 2) — never a traceback.

Documents are drawn near the schema (real section and field names, values in and out of range,
names of real components) so that most examples reach the deep checks, plus raw text that stresses
the parsers. Sizes are small so that the whole module runs in well under a minute.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from marlplug.cli.main import main

FUZZ = settings(
    max_examples=120,
    deadline=None,  # no timing assertion (loaded machines); the limits bound the work instead
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

FIELD_NAMES = [
    "seed", "env", "algorithm", "losses", "train", "coding", "logging", "name", "backend",
    "agents", "adversaries", "landmarks", "max_steps", "continuous_actions", "hidden_size",
    "hidden_sizes", "feature_dim", "buffer_size", "minibatch_size", "updates", "rollout_steps",
    "num_envs", "lr", "gamma", "n_epochs", "coef", "scheme", "learners", "stragglers", "count",
    "delay_s", "probability", "model", "round_timeout_s", "clock", "dir", "run_name", "progress",
]  # fmt: skip
COMPONENT_NAMES = [
    "cooperative_navigation", "predator_prey", "keep_away", "physical_deception", "mpe", "vmas",
    "ppo", "maddpg", "clip_ppo", "redundancy", "cka", "mds", "ldpc", "replication", "uncoded",
    "random_sparse", "fixed", "random", "local", "ray", "wall", "simulated", "csv",
]  # fmt: skip

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**80), 2**80)
    | st.sampled_from([0, 1, 2, 3, 5, 8, 1024, 10**7, 10**12, -1, 2**32, 2**63])
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from(COMPONENT_NAMES)
    | st.text(max_size=12)
)
KEYS = st.sampled_from(FIELD_NAMES) | st.text(min_size=1, max_size=8)
VALUES = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(KEYS, children, max_size=4),
    max_leaves=24,
)
SECTIONS = {
    "seed": SCALARS,
    "env": st.dictionaries(st.sampled_from([*FIELD_NAMES[7:13], "name", "backend"]), SCALARS),
    "algorithm": st.dictionaries(st.sampled_from(["name", *FIELD_NAMES[13:19]]), VALUES),
    "losses": st.lists(
        st.sampled_from(COMPONENT_NAMES[6:11])
        | st.dictionaries(st.sampled_from(["name", "coef", "eps"]), SCALARS),
        max_size=3,
    ),
    "train": st.dictionaries(st.sampled_from(FIELD_NAMES[18:25]), SCALARS),
    "coding": st.dictionaries(st.sampled_from(FIELD_NAMES[26:36]), VALUES),
    "logging": st.dictionaries(st.sampled_from(["backend", "progress", "run_name"]), SCALARS),
}
CONFIGS = st.fixed_dictionaries({}, optional=SECTIONS) | st.dictionaries(KEYS, VALUES, max_size=5)
YAML_SYNTAX = st.text(alphabet="abcsed:{}[],&*!<>|-?#'\"%@ \n\t.0123456789eE+", max_size=120)


def run(*args: str) -> tuple[int, str, str]:
    """``marlplug ARGS`` in this process; exit code, stdout, stderr (an exception propagates)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def assert_valid_or_one_line(code: int, out: str, err: str) -> None:
    assert "Traceback" not in err
    if code == 0:
        assert out.strip()
        return
    assert code == 2, (code, err)
    lines = [line for line in err.strip().splitlines() if not line.startswith("warning:")]
    assert 1 <= len(lines) <= 2, err
    assert lines[0].startswith("error: "), err
    assert all(len(line) < 400 for line in lines), err


def to_toml_value(value: Any) -> str:
    """A TOML inline value (arrays and inline tables only; ``None`` has no TOML form)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(to_toml_value(item) for item in value if item is not None) + "]"
    assert isinstance(value, dict)
    items = (f"{json.dumps(k)} = {to_toml_value(v)}" for k, v in value.items() if v is not None)
    return "{" + ", ".join(items) + "}"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@FUZZ
@given(config=CONFIGS, command=st.sampled_from(["check", "show"]))
def test_random_yaml_config(folder: Path, config: dict[str, Any], command: str) -> None:
    path = folder / "run.yaml"
    path.write_text(yaml.safe_dump(config, allow_unicode=True))
    assert_valid_or_one_line(*run("config", command, str(path)))


@FUZZ
@given(config=st.dictionaries(st.sampled_from(list(SECTIONS)), VALUES, max_size=4) | CONFIGS)
def test_random_toml_config(folder: Path, config: dict[str, Any]) -> None:
    path = folder / "run.toml"
    lines = [f"{json.dumps(k)} = {to_toml_value(v)}" for k, v in config.items() if v is not None]
    path.write_text("\n".join(lines) + "\n")
    assert_valid_or_one_line(*run("config", "check", str(path)))


@FUZZ
@given(
    text=YAML_SYNTAX | st.text(max_size=200) | st.binary(max_size=200).map(repr),
    prefix=st.sampled_from(["", "seed: 1\n", "a: &a [1, 2]\nb: *a\n", "train:\n  "]),
    suffix=st.sampled_from(["", "\n", ".toml"]),
)
def test_random_text_files(folder: Path, text: str, prefix: str, suffix: str) -> None:
    path = folder / ("raw.toml" if suffix == ".toml" else "raw.yaml")
    path.write_text(prefix + text + (suffix if suffix != ".toml" else ""), errors="surrogatepass")
    assert_valid_or_one_line(*run("config", "check", str(path)))


@FUZZ
@given(content=st.binary(max_size=300), name=st.sampled_from(["raw.yaml", "raw.toml"]))
def test_random_bytes(folder: Path, content: bytes, name: str) -> None:
    path = folder / name
    path.write_bytes(content)
    assert_valid_or_one_line(*run("config", "check", str(path)))


SET_KEYS = st.lists(
    st.sampled_from(FIELD_NAMES) | st.sampled_from(["[0]", "[1]", "[-1]", "[99]", "..", "."]),
    min_size=1,
    max_size=5,
).map(lambda parts: ".".join(parts).replace(".[", "["))


@FUZZ
@given(
    assignments=st.lists(
        st.tuples(SET_KEYS | st.text(max_size=15), st.sampled_from(["=", "", "=="]), YAML_SYNTAX)
        | st.tuples(SET_KEYS, st.just("="), VALUES.map(lambda v: yaml.safe_dump(v).strip())),
        min_size=1,
        max_size=4,
    ),
    command=st.sampled_from(["check", "show"]),
)
def test_random_set_strings(
    folder: Path, assignments: list[tuple[str, str, str]], command: str
) -> None:
    path = folder / "base.yaml"
    path.write_text("losses: [clip_ppo, redundancy]\ncoding: {scheme: mds, learners: 5}\n")
    args = [arg for key, sep, value in assignments for arg in ("--set", f"{key}{sep}{value}")]
    assert_valid_or_one_line(*run("config", command, str(path), *args))
