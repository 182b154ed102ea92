"""MADDPG's acting policy: greedy under deterministic evaluation, loaded from a run's checkpoint."""

from __future__ import annotations

from pathlib import Path

import torch
from torchrl.envs.utils import ExplorationType, set_exploration_type

from marlplug.algorithms.acting import acting_policy
from marlplug.algorithms.maddpg import MADDPG
from marlplug.config import load_config
from marlplug.envs import make_env
from marlplug.envs.evaluate import evaluate
from marlplug.envs.flat import MultiAgentEnvAdapter
from marlplug.runs.checkpoint import load_checkpoint, load_policy
from marlplug.train.run import run_training

#: A MADDPG run of a second or two: 2 agents, tiny networks, learning after 20 steps.
TINY_MADDPG = [
    "algorithm.name=maddpg",
    "env.agents=2",
    "algorithm.hidden_sizes=[8]",
    "algorithm.minibatch_size=16",
    "algorithm.steps_per_iteration=10",
    "algorithm.learning_starts=20",
    "train.updates=4",
    "logging.progress=false",
]


def test_deterministic_actions_are_the_actors_argmax() -> None:
    env = make_env("cooperative_navigation", agents=2, seed=0)
    program = MADDPG(hidden_sizes=[8]).bind(env)
    theta, _ = program.init_state(3)
    policy = acting_policy(program, env, theta)
    assert policy is not None
    td = env.reset()
    obs = MultiAgentEnvAdapter(env).observations(td)
    greedy = program.actor_output(theta, obs).argmax(-1).T  # [E, M]
    with set_exploration_type(ExplorationType.DETERMINISTIC):
        acted = policy(td.clone())["agent", "action"]
    assert torch.equal(acted, greedy.squeeze(0))
    # Exploring samples from torch's global RNG: not always the argmax.
    torch.manual_seed(0)
    with set_exploration_type(ExplorationType.RANDOM):
        sampled = torch.stack([policy(td.clone())["agent", "action"] for _ in range(20)])
    assert bool((sampled != greedy.squeeze(0)).any())


def test_a_maddpg_run_evaluates_from_its_checkpoint(tmp_path: Path) -> None:
    config = load_config(overrides=[*TINY_MADDPG, f"logging.dir={tmp_path}"])
    result = run_training(config)
    theta = load_checkpoint(result.checkpoint)["training"]["theta"]
    env = make_env("cooperative_navigation", agents=2, seed=0)
    policy = load_policy(result.checkpoint, env, config)
    assert torch.equal(policy.theta, theta)
    first = evaluate(env, policy, episodes=2, seed=5)
    again = evaluate(env, policy, episodes=2, seed=5)
    assert first.returns == again.returns and first.episodes == 2
    # The trained rows act, not the run's initialization.
    initial, _ = MADDPG(**config.algorithm.options.model_dump()).bind(env).init_state(config.seed)
    assert not torch.equal(initial, policy.theta)
