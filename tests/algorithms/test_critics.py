"""PPO's critic inputs (``algorithm.critic``): what each reads, how wide, that each trains, and the
config errors and the old ``centralized_critic`` spelling."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from marlplug import load_config
from marlplug.config.checks import ConfigWarning
from marlplug.configs import default_config_path
from marlplug.envs.state import STATE
from marlplug.errors import ConfigError
from marlplug.nn import StackedLinear
from marlplug.train.run import build_trainer
from tests.torch_threads import one_torch_thread  # noqa: F401  (autouse: restores the thread count)

AGENTS = 4
OBSERVATION = 6 * AGENTS  # cooperative navigation: 6 floats per entity seen
SMALL = [
    f"env.agents={AGENTS}",
    "env.backend=vmas",
    "algorithm.hidden_size=8",
    "algorithm.feature_dim=8",
    "train.num_envs=4",
    "train.rollout_steps=5",
    "train.minibatch_size=10",
    "train.n_epochs=1",
    "train.updates=1",
    "logging.progress=false",
]


@pytest.mark.parametrize(
    ("critic", "reads", "width"),
    [
        ("joint", ("agent", "observation"), AGENTS * OBSERVATION),
        ("state", STATE, 6 * AGENTS),
        ("local", ("agent", "observation"), OBSERVATION),
    ],
)
def test_each_critic_reads_its_input_and_trains(
    critic: str, reads: Any, width: int, tmp_path: Path
) -> None:
    config = load_config(
        default_config_path(), [*SMALL, f"algorithm.critic={critic}", f"logging.dir={tmp_path}"]
    )
    trainer = build_trainer(config)
    try:
        module = trainer.loss.critic_networks["agent"]
        first = next(layer for layer in module.modules() if isinstance(layer, StackedLinear))
        assert first.weight.shape == (AGENTS, width, 8)  # per-agent rows either way
        assert trainer.model.critics["agent"].in_keys == [reads]
        before = first.weight.detach().clone()
        trainer.train_update()
        assert not torch.equal(first.weight, before)
    finally:
        trainer.close()


def test_the_state_critic_needs_a_scenario_with_a_state() -> None:
    with pytest.raises(ConfigError, match=r"algorithm\.critic: 'state'.*predator_prey"):
        load_config(
            data={
                "env": {"name": "predator_prey", "agents": 3, "adversaries": 1},
                "algorithm": {"name": "ppo", "critic": "state"},
            }
        )


def test_bad_critic_options_are_one_line_errors(run_cli: Callable[..., Any]) -> None:
    for overrides, message in [
        (["algorithm.critic=central"], "algorithm.critic: input should be 'joint', 'state' or"),
        (["algorithm.critic=state", "algorithm.obs_norm=true"], "algorithm.obs_norm:"),
        (["algorithm.critic=state", "env.name=keep_away"], "algorithm.critic: 'state'"),
    ]:
        args = [f"--set={item}" for item in overrides]
        result = run_cli("config", "show", *args)
        assert result.exit_code == 2
        assert result.err.startswith(f"error: {message}"), result.err
        assert len(result.err.strip().splitlines()) == 1
        assert "Traceback" not in result.err


@pytest.mark.parametrize(("centralized", "critic"), [(True, "joint"), (False, "local")])
def test_centralized_critic_is_still_read_with_a_warning(centralized: bool, critic: str) -> None:
    with pytest.warns(
        ConfigWarning,
        match=r"now algorithm.critic: \w+ \(the old spelling is removed in marlplug 0\.3\.0\)",
    ):
        config = load_config(data={"algorithm": {"name": "ppo", "centralized_critic": centralized}})
    assert config.algorithm.options.critic == critic


def test_centralized_critic_and_critic_together_are_refused() -> None:
    with pytest.raises(ConfigError, match="critic alone"):
        load_config(
            data={"algorithm": {"name": "ppo", "centralized_critic": True, "critic": "state"}}
        )
