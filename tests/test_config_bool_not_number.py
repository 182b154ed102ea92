"""A boolean is not a number: ``max_minutes: true`` or ``updates: yes`` is a one-line error naming the
field, for every numeric field of every config section and of every installed plugin's options;
fields that take booleans still take them.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field, ValidationError, create_model

from marlplug.cli.main import main
from marlplug.config import Options
from marlplug.config.schema import (
    CodingSection,
    LoggingSection,
    MarlplugConfig,
    MLflowSection,
    StragglerSection,
    WandbSection,
)
from marlplug.config.train import TrainSection
from marlplug.plugins import get_plugin_manager

SECTIONS: list[type[Options]] = [
    MarlplugConfig,
    TrainSection,
    CodingSection,
    StragglerSection,
    LoggingSection,
    WandbSection,
    MLflowSection,
]


def component_options() -> dict[str, type[BaseModel]]:
    """Every installed component's options model, by ``kind/name`` (one id per model)."""
    models: dict[type[BaseModel], str] = {}
    for kind, registry in get_plugin_manager().registries.items():
        for name in registry:
            model = getattr(registry.get_component(name), "Options", Options)
            models.setdefault(model, f"{kind}/{name}")
    return {key: model for model, key in models.items()}


MODELS = {model.__name__: model for model in SECTIONS} | component_options()


def as_lists(value: Any) -> Any:
    """``value`` with tuples as lists: a field may store ``[true]`` as ``(True,)``."""
    return [as_lists(item) for item in value] if isinstance(value, (list, tuple)) else value


def field_alone(model: type[Options], field: str) -> type[Options]:
    """A model of ``field`` alone, as ``model`` declares it (type, bounds, its type's validators):
    the field's own reading, without the model's checks across fields (which build envs)."""
    info = model.model_fields[field]
    probe: type[Options] = create_model(
        f"{model.__name__}_{field}", __base__=Options, **{field: (info.annotation, info)}
    )
    return probe


@pytest.mark.parametrize("model", list(MODELS.values()), ids=list(MODELS))
def test_no_field_reads_a_boolean_as_a_number(model: type[BaseModel]) -> None:
    # Independent of how the check is written: whatever a field accepts, a boolean stays one.
    assert issubclass(model, Options)  # so the base class's check is the model's
    for field, info in model.model_fields.items():
        alone = field_alone(model, field)
        for given in (True, False, [True], [64, False]):
            try:
                kept = getattr(alone.model_validate({field: given}), field)
            except ValidationError:
                continue
            assert repr(as_lists(kept)) == repr(given), (field, info.annotation, given, kept)
        if isinstance(info.default, bool):  # a flag still takes both values
            for flag in (True, False):
                assert getattr(alone.model_validate({field: flag}), field) is flag


def test_the_check_covers_every_numeric_field() -> None:
    # Guards the test above against passing vacuously: numeric fields exist and are all probed.
    numeric = [
        (name, field)
        for name, model in MODELS.items()
        for field, info in model.model_fields.items()
        if info.annotation in (int, float, int | None, float | None)
    ]
    assert len(numeric) > 100
    assert {("TrainSection", "max_minutes"), ("CodingSection", "start_timeout_s")} <= set(numeric)


class MixedOptions(Options):
    threads: Literal["auto"] | int | bool = "auto"
    widths: list[int | bool] = Field(default_factory=list)
    scale: float | bool = 1.0
    choice: Literal[1, 2] = 1
    table: dict[str, float] = Field(default_factory=dict)


@pytest.mark.parametrize(
    ("field", "given"),
    [("threads", True), ("widths", [64, True]), ("scale", False)],
)
def test_unions_with_bool_still_take_booleans(field: str, given: Any) -> None:
    assert getattr(MixedOptions.model_validate({field: given}), field) == given


@pytest.mark.parametrize(
    ("field", "given", "message"),
    [
        ("choice", True, "expected an integer, got a boolean (true)"),
        ("table", {"a": 1.5, "b": False}, "expected a number at ['b'], got a boolean (false)"),
    ],
)
def test_literals_of_numbers_and_mappings_refuse_booleans(
    field: str, given: Any, message: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        MixedOptions.model_validate({field: given})
    assert caught.value.errors()[0]["msg"] == message


def run_cli(*args: str) -> tuple[int, str]:
    """``marlplug ARGS`` in this process: exit status and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, err.getvalue()


@pytest.mark.parametrize(
    ("text", "overrides", "message"),
    [
        ("", ["train.max_minutes=true"], "train.max_minutes: expected a number, got a boolean (true)"),
        ("train: {updates: yes}\n", [], "train.updates: expected an integer, got a boolean (true)"),
        ("", ["train.torch_threads=true"], "train.torch_threads: must be auto, a whole number"),
        ("coding: {scheme: mds, learners: 5}\n", ["coding.start_timeout_s=true"],
         "coding.start_timeout_s: expected a number, got a boolean (true)"),
        ("coding: {scheme: mds, learners: 5, stragglers: {count: false}}\n", [],
         "coding.stragglers.count: expected an integer, got a boolean (false)"),
        ("", ["algorithm.hidden_size=true"],
         "algorithm.hidden_size: expected an integer, got a boolean (true)"),
        ("algorithm: {name: maddpg, hidden_sizes: [64, on]}\n", [],
         "algorithm.hidden_sizes: expected an integer at [1], got a boolean (true)"),
        ("losses: [{name: redundancy, coef: true}]\n", [],
         "losses[0].coef: expected a number, got a boolean (true)"),
        ("env: {agents: no}\n", [], "env.agents: expected an integer, got a boolean (false)"),
        ("seed: true\n", [], "seed: expected an integer, got a boolean (true)"),
    ],
)  # fmt: skip
def test_a_boolean_for_a_number_is_one_line_naming_the_field(
    tmp_path: Path, text: str, overrides: list[str], message: str
) -> None:
    path = tmp_path / "run.yaml"
    path.write_text(text)
    sets = [arg for assignment in overrides for arg in ("--set", assignment)]
    code, err = run_cli("config", "check", str(path), *sets)
    assert code == 2
    assert err.startswith(f"error: {message}") and err.count("\n") == 1, err


@pytest.mark.parametrize(
    "assignment",
    ["logging.progress=false", "train.iterate_all_minibatches=false", "algorithm.value_norm=true"],
)
def test_boolean_fields_still_take_booleans(tmp_path: Path, assignment: str) -> None:
    path = tmp_path / "run.yaml"
    path.write_text("")
    assert run_cli("config", "check", str(path), "--set", assignment) == (0, "")
