"""The example plugins under examples/plugins/ pass their contract suites when registered in-process,
run in real training, and are printed verbatim in their guides (docs/how-to/<kind>-plugin.md)."""

from __future__ import annotations

import importlib
import math
from pathlib import Path
from types import ModuleType

import pytest
import tomllib

from marlplug import load_config
from marlplug.envs import get_scenario
from marlplug.plugins import get_component
from marlplug.testing import (
    check_algorithm,
    check_aux_loss,
    check_coding_scheme,
    check_env_scenario,
    register_plugin,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "plugins"
KINDS = ["env", "code", "loss", "algorithm"]
DOCS = ROOT / "docs" / "how-to"


def entry_point(kind: str) -> tuple[str, str]:
    """The example's ``(entry-point name, module)`` from its pyproject.toml."""
    project = tomllib.loads((EXAMPLES / f"marlplug-example-{kind}" / "pyproject.toml").read_text())
    ((name, module),) = project["project"]["entry-points"]["marlplug"].items()
    return name, module


@pytest.fixture
def load_example(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """Import an example plugin's module from its folder, as an installed copy would be."""

    def load(kind: str) -> ModuleType:
        monkeypatch.syspath_prepend(str(EXAMPLES / f"marlplug-example-{kind}"))
        return importlib.import_module(entry_point(kind)[1])

    return load


@pytest.mark.parametrize("kind", KINDS)
def test_the_entry_point_names_the_module(kind: str) -> None:
    name, module = entry_point(kind)
    assert name == f"example-{kind}"
    assert (EXAMPLES / f"marlplug-example-{kind}" / f"{module}.py").is_file()


@pytest.mark.parametrize("kind", KINDS)
def test_docs_print_the_example_verbatim(kind: str) -> None:
    _, module = entry_point(kind)
    source = (EXAMPLES / f"marlplug-example-{kind}" / f"{module}.py").read_text()
    page = DOCS / f"{kind}-plugin.md"
    assert f"```python\n{source}```" in page.read_text(), (
        f"docs/how-to/{page.name} must show {module}.py as it is"
    )


def test_env_example(load_example, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with register_plugin(load_example("env"), name="example-env"):
        scenario = get_scenario("formation", backend="pettingzoo")
        check_env_scenario(scenario, options={"agents": 3})
        config = load_config(data={"env": {"name": "formation", "backend": "pettingzoo"}})
        assert config.env.options.model_dump()["agents"] == 4


def test_code_example(load_example) -> None:  # type: ignore[no-untyped-def]
    with register_plugin(load_example("code"), name="example-code"):
        check_coding_scheme(get_component("code", "cyclic"))


def test_loss_example_trains_with_joint_ppo(load_example, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from marlplug.train.run import run_training

    with register_plugin(load_example("loss"), name="example-loss"):
        check_aux_loss(get_component("loss", "feature_scale"), dead_agents=True)
        overrides = [
            "env.agents=2",
            "train.rollout_steps=50",
            "train.minibatch_size=25",
            "train.n_epochs=1",
            "train.updates=1",
            "algorithm.hidden_size=16",
            "algorithm.feature_dim=8",
            "logging.progress=false",
            f"logging.dir={tmp_path}",
            "losses=[clip_ppo, {name: feature_scale, coef: 0.01}]",
        ]
        result = run_training(load_config(overrides=overrides))
    assert result.run_dir.is_dir()


def test_algorithm_example_trains_on_the_example_code(load_example, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from marlplug.train.coded_run import run_maddpg

    with (
        register_plugin(load_example("algorithm"), name="example-algorithm"),
        register_plugin(load_example("code"), name="example-code"),
    ):
        check_algorithm(get_component("algorithm", "linear_iql"))
        config = load_config(
            data={
                "env": {"agents": 2},
                "algorithm": {
                    "name": "linear_iql",
                    "minibatch_size": 16,
                    "learning_starts": 20,
                    "steps_per_iteration": 10,
                },
                "coding": {"scheme": "cyclic", "learners": 3, "clock": "simulated"},
                "logging": {"progress": False},
            }
        )
        result = run_maddpg(config, iterations=4, run_dir=tmp_path / "run")
    assert len(result.iterations) == 4
    assert sum(log.round is not None for log in result.iterations) == 3  # from iteration 2 on
    assert all(math.isfinite(float(value)) for value in result.theta.flatten())
