"""``algorithm.updates_per_iteration``: every replay-based algorithm makes that many updates after an
iteration's collection (each a round on its own minibatch), once the buffer is ready; the option
defaults to the one update an iteration every algorithm made before it."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from marlplug import load_config
from marlplug.algorithms.q import IQL
from marlplug.algorithms.replay import ReplayRollouts
from marlplug.envs import make_env
from marlplug.errors import UserError
from marlplug.train.orchestrator import run

REPLAY_ALGORITHMS = ["maddpg", "iddpg", "masac", "isac", "iql", "vdn", "qmix"]
# 10-step iterations on cooperative navigation (2 agents, discrete actions, mpe); learning starts
# once 16 transitions are in: from the second iteration on.
SMALL = [
    "env.agents=2",
    "algorithm.minibatch_size=16",
    "algorithm.learning_starts=16",
    "algorithm.steps_per_iteration=10",
    "algorithm.hidden_sizes=[8]",
    "train.updates=3",
    "train.eval_every=0",
    "logging.progress=false",
]


@pytest.mark.parametrize("name", REPLAY_ALGORITHMS)
def test_an_iteration_makes_updates_per_iteration_rounds(tmp_path: Path, name: str) -> None:
    overrides = [*SMALL, f"algorithm.name={name}", "algorithm.updates_per_iteration=3"]
    result = run(load_config(data={}, overrides=overrides), run_dir=tmp_path / name)
    # The first iteration only collects (10 < 16 transitions); each later one makes 3 rounds.
    assert [log.rounds for log in result.iterations] == [0, 3, 3]
    assert all(log.stats for log in result.iterations[1:])  # the rounds' statistics were logged
    assert [log.env_steps for log in result.iterations] == [10, 20, 30]  # collection unchanged


def test_the_default_is_one_update_an_iteration(tmp_path: Path) -> None:
    result = run(load_config(data={}, overrides=[*SMALL, "algorithm.name=iql"]), run_dir=tmp_path)
    assert [log.rounds for log in result.iterations] == [0, 1, 1]


def test_each_round_gets_its_own_minibatch_drawn_after_the_previous_round() -> None:
    config = load_config(data={}, overrides=[*SMALL, "algorithm.name=iql"])
    env = make_env("cooperative_navigation", agents=2, seed=0)
    algorithm = IQL(**{**config.algorithm.options.model_dump(), "updates_per_iteration": 4})
    program = algorithm.bind(env, config)
    source = algorithm.rollouts(env, program, config)
    assert isinstance(source, ReplayRollouts)
    theta, _ = program.init_state(0)
    assert list(source.batches(theta, 0)) == []
    sampler_before = source.sampler.get_state()
    batches = source.batches(theta, 1)
    first = next(batches)
    # Lazily: the second minibatch is not drawn before the loop asks for it (after round one).
    drawn_once = source.sampler.get_state()
    assert not torch.equal(drawn_once, sampler_before)
    rest = list(batches)
    assert len(rest) == 3
    assert not torch.equal(source.sampler.get_state(), drawn_once)
    observations = [first["obs"], *(batch["obs"] for batch in rest)]
    assert all(not torch.equal(observations[0], other) for other in observations[1:])


def test_a_bad_count_is_one_line_naming_the_field() -> None:
    with pytest.raises(UserError, match=r"algorithm\.updates_per_iteration"):
        load_config(data={}, overrides=["algorithm.name=iql", "algorithm.updates_per_iteration=0"])
