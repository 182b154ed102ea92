"""Fuzzing the config loader through the CLI: any YAML or TOML file and any ``--set`` string is either
a valid config (exit 0) or one ``error:`` line or two (exit 2) — never a traceback.

Documents are drawn near the schema (section and field names read from the config models and every
installed component's options, so a new field is fuzzed the moment it exists; values in and out of
range; names of real components) so that most examples reach the deep checks, plus raw text that stresses
the parsers. Sizes are small so that the whole module runs in well under a minute.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
from pathlib import Path
from typing import Any, get_args

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from marlplug.cli.main import main
from marlplug.config import Options
from marlplug.config.schema import EnvSpec, MarlplugConfig
from marlplug.plugins import get_plugin_manager

FUZZ = settings(
    max_examples=120,
    deadline=None,  # no timing assertion (loaded machines); the limits bound the work instead
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def config_sections(model: type[BaseModel] = MarlplugConfig, prefix: str = "") -> dict[str, Any]:
    """Every section of the config by its path (``train``, ``coding.stragglers``): read from the
    models' fields, so a new section is found too."""
    found: dict[str, Any] = {}
    for field, info in model.model_fields.items():
        for member in (info.annotation, *get_args(info.annotation)):
            if isinstance(member, type) and issubclass(member, BaseModel):
                found[prefix + field] = member
                found |= config_sections(member, f"{prefix}{field}.")
    return found


def options_fields(kind: str) -> list[str]:
    """Every field of every installed ``kind`` component's options (plugins' included)."""
    registry = get_plugin_manager().registries[kind]
    models = {getattr(registry.get_component(name), "Options", Options) for name in registry}
    return sorted({field for model in models for field in model.model_fields})


# Field names come from the schema itself, so a field is fuzzed the moment it exists. A component's
# options sit beside its name: the section's own fields plus those of every installed component.
COMPONENT_SECTIONS = {
    "env": "env",
    "algorithm": "algorithm",
    "losses": "loss",
    "coding.scheme": "code",
}
SECTION_FIELDS = {
    path: sorted(
        {
            *model.model_fields,
            *(options_fields(COMPONENT_SECTIONS[path]) if path in COMPONENT_SECTIONS else []),
        }
    )
    for path, model in config_sections().items()
}
#: The default env's own fields, drawn half the time: the union of every scenario's is mostly
#: unknown to it.
DEFAULT_ENV_FIELDS = [
    *EnvSpec.model_fields,
    *get_plugin_manager()
    .registries["env"]
    .get_env(EnvSpec().name, EnvSpec().backend)
    .obj.Options.model_fields,
]
FIELD_NAMES = sorted(
    {*MarlplugConfig.model_fields}
    | {field for fields in SECTION_FIELDS.values() for field in fields}
)
#: Every field's path (``train.max_minutes``, ``losses[0].coef``), for ``--set``.
SCHEMA_PATHS = sorted(
    {*MarlplugConfig.model_fields}
    | {
        f"{path.replace('losses', 'losses[0]')}.{field}"
        for path, fields in SECTION_FIELDS.items()
        for field in fields
    }
)
COMPONENT_NAMES = [
    "cooperative_navigation", "predator_prey", "keep_away", "physical_deception", "mpe", "vmas",
    "ppo", "maddpg", "clip_ppo", "redundancy", "cka", "mds", "ldpc", "replication", "uncoded",
    "random_sparse", "fixed", "random", "local", "ray", "wall", "simulated", "csv",
]  # fmt: skip
LOSS_NAMES = sorted(get_plugin_manager().registries["loss"])

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
    "env": st.dictionaries(
        st.sampled_from(DEFAULT_ENV_FIELDS) | st.sampled_from(SECTION_FIELDS["env"]), SCALARS
    ),
    "algorithm": st.dictionaries(st.sampled_from(SECTION_FIELDS["algorithm"]), VALUES),
    "losses": st.lists(
        st.sampled_from(LOSS_NAMES)
        | st.dictionaries(st.sampled_from(SECTION_FIELDS["losses"]), SCALARS),
        max_size=3,
    ),
    "train": st.dictionaries(st.sampled_from(SECTION_FIELDS["train"]), SCALARS),
    "coding": st.dictionaries(
        st.sampled_from(SECTION_FIELDS["coding"]),
        VALUES
        | st.dictionaries(st.sampled_from(SECTION_FIELDS["coding.stragglers"]), SCALARS)
        | st.dictionaries(st.sampled_from(SECTION_FIELDS["coding.scheme"]), SCALARS),
    ),
    "logging": st.dictionaries(st.sampled_from(SECTION_FIELDS["logging"]), SCALARS),
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


SET_KEYS = st.sampled_from(SCHEMA_PATHS) | st.lists(
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
