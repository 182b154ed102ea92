"""Observation normalization (``algorithm.obs_norm``) in PPO: statistics folded in from each rollout
before its update, carried to every round, kept in each agent's theta row (so checkpoints, coded
learners and evaluation see them). Whole runs (off is bit-identical, resume, coded == centralized)
are in test_ppo_schedules.py."""

from __future__ import annotations

from pathlib import Path

import torch

from marlplug import load_config
from marlplug.algorithms.ppo import PPO
from marlplug.algorithms.ppo.iteration import ITERATION_KEY, OBS_NORM
from marlplug.algorithms.ppo.program import PpoProgram
from marlplug.envs import make_env
from marlplug.nn import ObservationNormalizer, observation_normalizers
from marlplug.runs.checkpoint import CHECKPOINT_NAME, load_policy
from marlplug.train.orchestrator import run
from tests.torch_threads import one_torch_thread  # noqa: F401  (autouse: one torch thread)

BASE = [
    "env.agents=2",
    "algorithm.hidden_size=8",
    "algorithm.feature_dim=4",
    "algorithm.obs_norm=true",
    "train.rollout_steps=30",
    "train.minibatch_size=15",
    "train.n_epochs=2",
    "train.updates=2",
    "train.eval_every=0",
    "logging.progress=false",
]


def stats_columns(program: PpoProgram) -> list[slice]:
    """The theta columns of every observation normalizer (the actor's, then the critic's)."""
    return [
        slice(slot.start, slot.stop)
        for group in program.groups
        for slot in group.slots
        if slot.observation_stats
    ]


def test_a_rollout_is_folded_in_before_its_rounds_and_lands_in_the_rows() -> None:
    config = load_config(data={}, overrides=BASE)
    env = make_env("cooperative_navigation", agents=2, seed=0)
    algorithm = PPO(**config.algorithm.options.model_dump())
    program = algorithm.bind(env, config)
    source = algorithm.rollouts(env, program, config)
    theta, opt_state = program.init_state(config.seed)
    actor, critic = stats_columns(program)
    assert torch.equal(theta[:, actor], theta[:, critic])
    assert theta[:, actor.stop - 1].tolist() == [0.0, 0.0]  # nothing seen yet: count 0

    batches = list(source.batches(theta, 0))
    assert source.last_rollout is not None
    observations = source.last_rollout["agent", "observation"].reshape(-1, 2, 12)
    carried = batches[0][ITERATION_KEY, OBS_NORM, "agent"][0]
    expected = torch.cat(
        [observations.mean(0), observations.var(0, correction=0), torch.full((2, 1), 30.0)], -1
    )
    torch.testing.assert_close(carried, expected, rtol=1e-5, atol=1e-6)
    # Every round of the iteration carries the same statistics; GAE already used them.
    assert all(torch.equal(b[ITERATION_KEY, OBS_NORM, "agent"][0], carried) for b in batches)
    for normalizer in observation_normalizers(program.loss):
        assert torch.equal(normalizer.stats, carried)

    # A learner updating one agent writes the carried statistics into that agent's rows (both
    # normalizers) from theta's stale ones: Adam never moves them.
    out = program.update(theta, opt_state, batches[0], [1], seed=3)
    assert torch.equal(out.theta[0, actor], carried[1])
    assert torch.equal(out.theta[0, critic], carried[1])
    assert torch.count_nonzero(out.opt_state[0, actor]) == 0
    source.close()


def test_checkpoints_and_evaluation_carry_the_statistics(tmp_path: Path) -> None:
    config = load_config(data={}, overrides=BASE)
    result = run(config, run_dir=tmp_path / "run")
    env = make_env("cooperative_navigation", agents=2, seed=0)
    program = PPO(**config.algorithm.options.model_dump()).bind(env, config)
    actor, critic = stats_columns(program)
    assert result.theta[:, actor.stop - 1].tolist() == [60.0, 60.0]  # two rollouts of 30 steps
    assert torch.equal(result.theta[:, actor], result.theta[:, critic])
    # `marlplug evaluate` and periodic evaluation act through load_policy/acting_policy.
    policy = load_policy(tmp_path / "run" / CHECKPOINT_NAME, env, config)
    (normalizer,) = observation_normalizers(policy)
    assert isinstance(normalizer, ObservationNormalizer)
    assert torch.equal(normalizer.stats, result.theta[:, actor])
    env.close()
