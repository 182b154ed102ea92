"""PPO as a learner program: a learner's update of agents S equals the joint step's slice for S, the
joint update equals ``PPO.update_step``, the update is pure and repeatable, and ``bind`` reads a
config."""

from __future__ import annotations

import pytest
import torch

from marlplug.algorithms.ppo import PPO
from marlplug.algorithms.ppo.program import PpoProgram
from marlplug.algorithms.protocol import LearnerProgram
from marlplug.config import load_config
from marlplug.envs import make_env
from marlplug.errors import UserError
from marlplug.losses import RedundancyLoss
from tests.losses.helpers import make_batch, make_loss, make_model
from tests.losses.test_torchrl_points import tutorial_loss, tutorial_networks
from tests.torch_threads import one_torch_thread  # noqa: F401  (autouse: one torch thread)

GROUPS = (("agent", 2), ("adversary", 3))


def _setup(seed: int = 3) -> tuple[PPO, PpoProgram, torch.Tensor, torch.Tensor, object, object]:
    """A program with a non-trivial Adam state (one joint step taken) and its rows."""
    model = make_model(GROUPS)
    loss = make_loss(model, aux_losses={"redundancy": RedundancyLoss(coef=0.5)})
    ppo = PPO()
    optimizer = ppo.make_optimizer(loss, lr=1e-2)
    batch = make_batch(model)
    ppo.update_step(loss, optimizer, batch, max_grad_norm=0.5, seed=seed)
    program = ppo.program(loss, lr=1e-2, max_grad_norm=0.5)
    theta, opt_state = program.rows(optimizer)
    return ppo, program, theta, opt_state, batch, optimizer


def test_the_program_implements_the_protocol() -> None:
    _, program, theta, opt_state, _, _ = _setup()
    assert isinstance(program, LearnerProgram)
    assert theta.shape == (5, program.theta_size)
    assert opt_state.shape == (5, program.opt_state_size)
    assert opt_state[:, -1].tolist() == [1.0] * 5  # every agent took one step


def test_the_joint_update_is_the_joint_step_bit_for_bit() -> None:
    ppo, program, theta, opt_state, batch, optimizer = _setup()
    out = program.update(theta, opt_state, batch, list(range(5)), seed=7)
    result = ppo.update_step(program.loss, optimizer, batch, max_grad_norm=0.5, seed=7)
    expected_theta, expected_opt = program.rows(optimizer)
    # Same tensors, same shapes, same kernels: the same bits.
    assert torch.equal(out.theta, expected_theta)
    assert torch.equal(out.opt_state, expected_opt)
    assert torch.equal(out.stats["grad_norm"], result.grad_norms)
    assert torch.equal(out.stats["stepped"], result.stepped)
    assert float(out.stats["loss_objective"]) == float(result.losses["loss_objective"])


@pytest.mark.parametrize("agents", [[3], [4, 0], [1, 2, 3], [0, 1]])
def test_a_learners_agents_equal_the_joint_slice(agents: list[int]) -> None:
    _, program, theta, opt_state, batch, _ = _setup()
    joint = program.update(theta, opt_state, batch, list(range(5)), seed=7)
    part = program.update(theta, opt_state, batch, agents, seed=7)
    for position, agent in enumerate(agents):
        for mine, theirs in ((part.theta, joint.theta), (part.opt_state, joint.opt_state)):
            error = (mine[position] - theirs[agent]).norm() / theirs[agent].norm()
            assert float(error) <= 1e-6, (agent, float(error))
    torch.testing.assert_close(part.stats["grad_norm"], joint.stats["grad_norm"][agents])
    assert part.stats["stepped"].tolist() == [True] * len(agents)
    assert part.stats["policy_loss"].shape == (len(agents),)
    assert part.stats["loss_objective"].shape == ()


def test_the_same_update_twice_is_bit_identical_and_pure() -> None:
    _, program, theta, opt_state, batch, _ = _setup()
    inputs = (theta.clone(), opt_state.clone())
    first = program.update(theta, opt_state, batch, [4, 1], seed=11)
    second = program.update(theta, opt_state, batch, [4, 1], seed=11)
    assert torch.equal(first.theta, second.theta) and torch.equal(first.opt_state, second.opt_state)
    assert torch.equal(theta, inputs[0]) and torch.equal(opt_state, inputs[1])
    assert not torch.equal(first.theta, theta[[4, 1]])


def test_a_non_finite_agent_returns_its_input_rows() -> None:
    _, program, theta, opt_state, batch, _ = _setup()
    batch["adversary", "value_target"][:, 1] = float("inf")  # agent 3 (adversary 1)
    out = program.update(theta, opt_state, batch, [3, 0], seed=7)
    assert out.stats["nonfinite"].tolist() == [True, False]
    assert torch.equal(out.theta[0], theta[3]) and torch.equal(out.opt_state[0], opt_state[3])
    assert not torch.equal(out.theta[1], theta[0])


def test_rows_written_back_are_the_same_rows() -> None:
    _, program, theta, opt_state, _, optimizer = _setup()
    program.write(theta * 2.0, opt_state, optimizer)  # padding stays zero
    again = program.rows(optimizer)
    assert torch.equal(again[0], theta * 2.0) and torch.equal(again[1], opt_state)


def _group_rows_equal(program: PpoProgram, theta: torch.Tensor) -> bool:
    return all(
        torch.equal(row, theta[group.first])
        for group in program.groups
        for row in theta[group.first : group.first + group.n_agents]
    )


def test_shared_params_keep_every_agents_rows_equal_and_step_as_update_step() -> None:
    model = make_model(GROUPS, share_params=True)
    loss = make_loss(model, aux_losses={"redundancy": RedundancyLoss(coef=0.5)})
    ppo = PPO(share_params=True)
    optimizer = ppo.make_optimizer(loss, lr=1e-2)
    program = ppo.program(loss, lr=1e-2, max_grad_norm=0.5)
    theta, opt_state = program.rows(optimizer)
    assert _group_rows_equal(program, theta)
    batch = make_batch(model)
    out = program.update(theta, opt_state, batch, list(range(5)), seed=7)
    result = ppo.update_step(loss, optimizer, batch, max_grad_norm=0.5, seed=7)
    assert _group_rows_equal(program, out.theta) and _group_rows_equal(program, out.opt_state)
    assert not torch.equal(out.theta, theta)
    # The agents' own gradients differ (each reads its own observations); the step used their mean.
    assert len(set(out.stats["grad_norm"][:2].tolist())) == 1
    assert torch.equal(out.theta, program.rows(optimizer)[0])
    assert torch.equal(out.stats["grad_norm"], result.grad_norms)
    unshared = PPO().program(loss, lr=1e-2, max_grad_norm=0.5)
    assert not _group_rows_equal(
        unshared, unshared.update(theta, opt_state, batch, list(range(5)), seed=7).theta
    )


def test_shared_params_refuse_frozen_agents_in_one_line() -> None:
    model = make_model(GROUPS, share_params=True)
    loss = make_loss(model)
    ppo = PPO(share_params=True)
    optimizer = ppo.make_optimizer(loss, lr=1e-2)
    with pytest.raises(UserError, match=r"frozen: agents \[1\] cannot stay still .*share_params"):
        ppo.update_step(loss, optimizer, make_batch(model), max_grad_norm=0.5, frozen=[1])


def test_shared_parameters_are_refused_in_one_line() -> None:
    policy, _ = tutorial_networks(share_params=False)
    _, critic = tutorial_networks(share_params=True)
    loss = tutorial_loss(policy, critic, defaults="marlplug")
    with pytest.raises(UserError, match="share_params=True"):
        PPO().program(loss, lr=1e-3, max_grad_norm=0.5)


def test_bind_builds_the_configs_networks_from_its_seed() -> None:
    config = load_config(
        data={
            "seed": 4,
            "env": {"name": "cooperative_navigation", "agents": 2},
            "algorithm": {"name": "ppo", "hidden_size": 8, "feature_dim": 4},
            "losses": [{"name": "clip_ppo"}],
        }
    )
    env = make_env("cooperative_navigation", agents=2, seed=4)
    program = PPO(hidden_size=8, feature_dim=4).bind(env, config)
    theta, opt_state = program.init_state(config.seed)
    assert torch.equal(theta, program.rows()[0])  # the bound loss holds init_state(seed)
    assert torch.count_nonzero(opt_state) == 0
    assert not torch.equal(program.init_state(config.seed + 1)[0], theta)


def test_rollouts_are_a_function_of_theta_and_the_iteration() -> None:
    """A resumed run re-collects an iteration bit for bit: the env, the policy's sampling and the
    minibatch order are reseeded from ``(seed, iteration)``; ``sync`` sets the acting weights."""
    config = load_config(
        data={
            "env": {"name": "cooperative_navigation", "agents": 2},
            "algorithm": {"name": "ppo", "hidden_size": 8, "feature_dim": 4},
            "losses": [{"name": "clip_ppo"}],
            "train": {
                "rollout_steps": 10,
                "minibatch_size": 5,
                "n_epochs": 2,
                "iterate_all_minibatches": False,
            },
        }
    )
    env = make_env("cooperative_navigation", agents=2, seed=0)
    algorithm = PPO(hidden_size=8, feature_dim=4)
    program = algorithm.bind(env, config)
    source = algorithm.rollouts(env, program, config)
    try:
        theta, _ = program.init_state(config.seed)
        first = [batch.clone() for batch in source.batches(theta, 3)]
        assert torch.equal(program.rows()[0], theta)
        # sync is lazy: it keeps the rows (no copy per round); the networks load them when the
        # next rollout starts.
        source.sync(theta * 0.5)
        assert torch.equal(program.rows()[0], theta)
        other = source.batches(theta * 0.5, 4)  # other weights act in between
        next(other)
        assert torch.equal(program.rows()[0], theta * 0.5)
        list(other)
        again = [batch.clone() for batch in source.batches(theta, 3)]
        assert torch.equal(program.rows()[0], theta)
        assert len(first) == 2  # n_epochs minibatches of the first 5 shuffled rows
        for one, two in zip(first, again, strict=True):
            # The collector numbers trajectories over its lifetime; nothing learns from that.
            assert (one.exclude("collector") == two.exclude("collector")).all()
        assert source.iteration_stats()["env_steps"] == 30
    finally:
        source.close()
