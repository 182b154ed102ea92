"""IQL: the algorithm contract, the pure per-agent Q-learning update (targets, parameter sharing,
padding) and epsilon-greedy acting on its schedule."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
import torch
from tensordict import TensorDict

from marlplug import load_config
from marlplug.algorithms.q import IQL, QOptions, QProgram
from marlplug.algorithms.spaces import AgentSpace
from marlplug.envs import make_env
from marlplug.errors import UserError
from marlplug.testing import AlgorithmContract
from marlplug.train.orchestrator import run

SMALL: dict[str, Any] = {
    "hidden_sizes": [16, 16],
    "minibatch_size": 16,
    "learning_starts": 32,
    "steps_per_iteration": 16,
}


class TestIQL(AlgorithmContract):
    algorithm_class = IQL
    options: ClassVar[dict[str, Any]] = SMALL
    registered_name = "iql"


class TestIQLSharedTwoGroups(AlgorithmContract):
    """Two groups of different sizes (padding) with one Q-network per group."""

    algorithm_class = IQL
    options: ClassVar[dict[str, Any]] = {**SMALL, "share_params": True, "hidden_sizes": [16]}
    env = "predator_prey"
    env_options: ClassVar[dict[str, Any]] = {"agents": 3, "adversaries": 1, "obstacles": 1}


def make_program(**options: Any) -> QProgram:
    agents = [
        AgentSpace(f"agent_{i}", "agent" if i < 2 else "adversary", 6 - i % 2, 5 - i % 2, True)
        for i in range(3)
    ]
    return IQL(**{"hidden_sizes": [16], **options}).program(agents)


def make_batch(program: QProgram, size: int = 32, seed: int = 0, **fixed: Any) -> TensorDict:
    generator = torch.Generator().manual_seed(seed)
    m, o = program.num_agents, program.obs_dim
    obs = torch.randn(size, m, o, generator=generator)
    theta, _ = program.init_state(seed)
    columns = {
        "obs": obs,
        "action": program.act(theta, obs, generator=generator, epsilon=1.0),
        "reward": torch.randn(size, m, generator=generator),
        "next_obs": torch.randn(size, m, o, generator=generator),
        "terminated": torch.rand(size, m, generator=generator) < 0.1,
    }
    return TensorDict({**columns, **fixed}, batch_size=[size])


def test_continuous_actions_are_refused_in_one_line() -> None:
    env = make_env("cooperative_navigation", agents=2, seed=0, continuous_actions=True)
    with pytest.raises(UserError, match=r"^algorithm.name: iql needs discrete actions, but "):
        IQL().bind(env)


def test_update_is_pure_seed_free_and_moves_q_targets_and_adam() -> None:
    program = make_program()
    theta, opt_state = program.init_state(0)
    batch = make_batch(program)
    before = theta.clone()
    first = program.update(theta, opt_state, batch, [0, 1, 2], seed=1)
    other_seed = program.update(theta, opt_state, batch, [0, 1, 2], seed=2)
    assert torch.equal(theta, before)
    assert torch.equal(first.theta, other_seed.theta)  # the update draws no random numbers
    state = program.theta_codec.unflatten(first.theta)
    start = program.theta_codec.unflatten(theta)
    assert not torch.equal(state["q.w0"], start["q.w0"])
    # Polyak: the target moved tau of the way to the new weights.
    expected = start["target_q.w0"].lerp(state["q.w0"], program.options.tau)
    assert torch.equal(state["target_q.w0"], expected)
    assert first.opt_state[:, -1].tolist() == [1.0, 1.0, 1.0]  # Adam's step count
    assert first.stats["td_loss"].shape == (3,)


def test_hard_targets_are_copied_every_interval() -> None:
    program = make_program(target_update="hard", target_update_interval=2)
    theta, opt_state = program.init_state(0)
    batch = make_batch(program)
    one = program.update(theta, opt_state, batch, [0, 1, 2], seed=0)
    two = program.update(one.theta, one.opt_state, batch, [0, 1, 2], seed=0)
    for update, copied in ((one, False), (two, True)):
        state = program.theta_codec.unflatten(update.theta)
        assert torch.equal(state["target_q.w0"], state["q.w0"]) == copied
    start = program.theta_codec.unflatten(theta)
    assert torch.equal(program.theta_codec.unflatten(one.theta)["target_q.w0"], start["q.w0"])


def test_shared_params_keep_a_groups_rows_equal() -> None:
    program = make_program(share_params=True)
    theta, opt_state = program.init_state(0)
    assert torch.equal(theta[0], theta[1]) and not torch.equal(theta[0], theta[2])
    batch = make_batch(program)
    update = program.update(theta, opt_state, batch, [0, 1, 2], seed=0)
    assert torch.equal(update.theta[0], update.theta[1])
    assert not torch.equal(update.theta[0], theta[0])
    # One agent of the group alone steps with the whole group's mean gradient.
    alone = program.update(theta, opt_state, batch, [1], seed=0)
    assert torch.allclose(alone.theta[0], update.theta[1], rtol=1e-5, atol=1e-7)


def test_padded_actions_are_never_chosen_nor_bootstrapped() -> None:
    program = make_program()
    theta, opt_state = program.init_state(0)
    obs = torch.randn(256, 3, program.obs_dim)
    for epsilon in (0.0, 1.0):
        actions = program.act(
            theta, obs, generator=torch.Generator().manual_seed(0), epsilon=epsilon
        )
        assert actions[:, 1, 4].sum() == 0  # agent 1 has four actions
        assert torch.equal(actions.sum(-1), torch.ones(256, 3))
    # A huge Q-value on agent 1's padded action changes nothing in its target.
    state = program.theta_codec.unflatten(theta.clone())
    state["target_q.b1"][1, 4] = 1e6  # the output layer's bias
    poisoned = program.theta_codec.flatten(state)
    batch = make_batch(program)
    clean = program.update(theta, opt_state, batch, [1], seed=0)
    dirty = program.update(poisoned, opt_state, batch, [1], seed=0)
    assert torch.equal(clean.stats["td_loss"], dirty.stats["td_loss"])


def test_epsilon_one_acts_uniformly_and_zero_greedily() -> None:
    program = make_program()
    theta, _ = program.init_state(0)
    obs = torch.randn(2000, 3, program.obs_dim)
    greedy = program.act(theta, obs, explore=False)
    assert torch.equal(program.act(theta, obs, epsilon=0.0), greedy)
    uniform = program.act(theta, obs, generator=torch.Generator().manual_seed(0), epsilon=1.0)
    counts = uniform[:, 0].sum(0)
    assert counts.min() > 330 and counts.max() < 470  # 400 expected for each of 5 actions


def test_q_learns_a_constant_reward() -> None:
    program = make_program(lr=1e-2)
    theta, opt_state = program.init_state(0)
    batch = make_batch(
        program,
        reward=torch.full((64, 3), 2.0),
        terminated=torch.ones(64, 3, dtype=torch.bool),
        size=64,
    )
    for _ in range(300):
        update = program.update(theta, opt_state, batch, [0, 1, 2], seed=0)
        theta, opt_state = update.theta, update.opt_state
    assert torch.allclose(update.stats["q_taken"], torch.full((3,), 2.0), atol=0.05)


def test_epsilon_decays_linearly_in_env_steps() -> None:
    options = QOptions(epsilon_start=0.5, epsilon_end=0.1, epsilon_decay_steps=40)
    assert [options.epsilon(s) for s in (0, 20, 40, 41)] == [0.5, pytest.approx(0.3), 0.1, 0.1]


@pytest.mark.parametrize("updates_per_iteration", [1, 3])
def test_iql_trains_and_resumes_bit_identically(tmp_path: Path, updates_per_iteration: int) -> None:
    overrides = [
        "algorithm.name=iql",
        f"algorithm.updates_per_iteration={updates_per_iteration}",
        "algorithm.minibatch_size=16",
        "algorithm.learning_starts=25",
        "algorithm.hidden_sizes=[16]",
        "env.agents=2",
        "train.eval_every=0",
        "train.checkpoint_every=2",
        "logging.progress=false",
    ]
    config = load_config(data={}, overrides=[*overrides, "train.updates=4"])
    whole = run(config, run_dir=tmp_path / "whole")
    run(config, iterations=2, run_dir=tmp_path / "resumed")
    resumed = run(config, run_dir=tmp_path / "resumed", resume_dir=tmp_path / "resumed")
    assert torch.equal(resumed.theta, whole.theta)
    assert torch.equal(resumed.opt_state, whole.opt_state)
    # updates_per_iteration updates every iteration (Adam's step count)
    assert whole.opt_state[:, -1].tolist() == [4.0 * updates_per_iteration] * 2


LBF = "Foraging-8x8-2p-2f-coop-v3"


def test_the_td_target_skips_the_actions_the_next_mask_forbids() -> None:
    program = make_program()
    theta, opt_state = program.init_state(0)
    next_mask = torch.ones(32, 3, program.action_dim, dtype=torch.bool)
    next_mask[:, 0, 2] = False  # agent 0 may not take action 2 after any of these steps
    state = program.theta_codec.unflatten(theta.clone())
    state["target_q.b1"][0, 2] = 1e6  # a huge target Q-value on the forbidden action
    poisoned = program.theta_codec.flatten(state)
    masked = make_batch(program, next_action_mask=next_mask)
    clean = program.update(theta, opt_state, masked, [0], seed=0)
    dirty = program.update(poisoned, opt_state, masked, [0], seed=0)
    assert torch.equal(clean.stats["td_loss"], dirty.stats["td_loss"])
    unmasked = program.update(poisoned, opt_state, make_batch(program), [0], seed=0)
    assert unmasked.stats["td_loss"][0] > 1e6  # without the mask it bootstraps from it


@pytest.mark.parametrize("name", ["iql", "qmix"])
def test_on_lbf_a_masked_action_is_never_chosen(name: str) -> None:
    pytest.importorskip("lbforaging")
    from torchrl.envs.utils import ExplorationType, set_exploration_type

    from marlplug.algorithms.acting import acting_policy
    from marlplug.plugins import get_component

    options = {"hidden_sizes": [16], "epsilon_start": 0.5, "steps_per_iteration": 300}
    options |= {"learning_starts": 300, "minibatch_size": 16}
    config = load_config(
        data={"env": {"backend": "gymnasium", "name": LBF}, "algorithm": {"name": name, **options}}
    )
    env = make_env(LBF, backend="gymnasium", seed=0)
    algorithm = get_component("algorithm", name)(**config.algorithm.options.model_dump())
    program = algorithm.bind(env, config)
    source = algorithm.rollouts(env, program, config)
    theta, _ = program.init_state(0)
    batch = next(iter(source.batches(theta, 0)))  # 300 steps, half of them greedy
    assert batch["next_action_mask"].dtype == torch.bool
    buffer = source.collector.buffer
    rows = buffer.storage[torch.arange(len(buffer))]
    # Where step t + 1 continues step t's episode, its action was allowed by step t's next mask.
    continues = (rows["obs"][1:] == rows["next_obs"][:-1]).flatten(1).all(1)
    allowed = (rows["action"][1:] * rows["next_action_mask"][:-1]).sum(-1) == 1  # [T - 1, M]
    assert int(continues.sum()) > 200 and bool(allowed[continues].all())
    assert not bool(rows["next_action_mask"].all())  # LBF does forbid actions

    policy = acting_policy(program, env, theta)
    for exploration in (ExplorationType.DETERMINISTIC, ExplorationType.RANDOM):
        with set_exploration_type(exploration), torch.no_grad():
            rollout = env.rollout(200, policy, break_when_any_done=False)
        action = rollout["agent", "action"].unsqueeze(-1)
        assert bool(rollout["agent", "action_mask"].gather(-1, action).all()), exploration
    # Greedy without the mask would take a forbidden action here: the check can fail.
    obs = rollout["agent", "observation"]
    unmasked = program.act(theta, obs, explore=False).argmax(-1, keepdim=True)
    assert not bool(rollout["agent", "action_mask"].gather(-1, unmasked).all())
    source.close()
