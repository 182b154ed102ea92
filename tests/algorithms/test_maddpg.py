"""MADDPG: the state codec, the pure per-agent update (a learner program) and data collection."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from mpe2 import simple_spread_v3, simple_tag_v3
from tensordict import TensorDict
from torchrl.envs.libs.pettingzoo import PettingZooWrapper

from marlplug import load_config
from marlplug.algorithms.maddpg import MADDPG, MaddpgProgram
from marlplug.algorithms.maddpg.options import MaddpgOptions
from marlplug.algorithms.protocol import LearnerProgram
from marlplug.algorithms.replay import ExperienceCollector
from marlplug.algorithms.spaces import AgentSpace
from marlplug.algorithms.state_codec import StateCodec
from marlplug.envs import make_env
from marlplug.errors import UserError
from marlplug.nn.functional import stacked_mlp
from marlplug.plugins import get_plugin_manager


def make_program(
    num_agents: int = 3,
    *,
    discrete: bool = True,
    hidden_sizes: tuple[int, ...] = (16, 16),
    **options: object,
) -> MaddpgProgram:
    agents = [
        AgentSpace(
            f"agent_{i}", "agent", obs_dim=6 + i % 2, action_dim=5 - i % 2, discrete=discrete
        )
        for i in range(num_agents)
    ]
    options = MaddpgOptions(hidden_sizes=list(hidden_sizes), **options).model_dump()
    return MADDPG(**options).program(agents)


def make_batch(program: MaddpgProgram, size: int = 32, seed: int = 0) -> TensorDict:
    generator = torch.Generator().manual_seed(seed)
    m, o = program.num_agents, program.obs_dim
    obs = torch.randn(size, m, o, generator=generator)
    theta, _ = program.init_state(seed)
    return TensorDict(
        obs=obs,
        action=program.act(theta, obs, generator=generator),
        reward=torch.randn(size, m, generator=generator),
        next_obs=torch.randn(size, m, o, generator=generator),
        terminated=torch.rand(size, m, generator=generator) < 0.1,
        batch_size=[size],
    )


@settings(max_examples=25, deadline=None)
@given(
    shapes=st.lists(st.lists(st.integers(1, 4), max_size=3), min_size=1, max_size=5),
    agents=st.integers(1, 4),
)
def test_codec_round_trips_any_layout(shapes: list[list[int]], agents: int) -> None:
    codec = StateCodec([(f"t{i}", tuple(shape)) for i, shape in enumerate(shapes)])
    state = {f"t{i}": torch.randn(agents, *shape) for i, shape in enumerate(shapes)}
    flat = codec.flatten(state)
    assert flat.shape == (agents, codec.size)
    back = codec.unflatten(flat)
    assert all(torch.equal(back[name], state[name]) for name in state)
    # The documented layout: entries back to back in order, each row-major.
    assert torch.equal(flat[:, : state["t0"][0].numel()], state["t0"].reshape(agents, -1))


def test_codec_rejects_wrong_shapes() -> None:
    codec = StateCodec([("w", (2, 2))])
    with pytest.raises(ValueError, match="per-agent shape"):
        codec.flatten({"w": torch.zeros(3, 2, 3)})
    with pytest.raises(KeyError, match="missing"):
        codec.flatten({})
    with pytest.raises(ValueError, match="duplicate"):
        StateCodec([("w", (1,)), ("w", (2,))])


def test_defaults_are_the_authors_settings() -> None:
    options = MaddpgOptions()
    assert (
        options.lr,
        options.gamma,
        options.hidden_sizes,
        options.max_grad_norm,
        options.tau,
    ) == (1e-2, 0.95, [64, 64], 0.5, 0.01)
    assert (options.minibatch_size, options.buffer_size, options.episode_length) == (
        1024,
        10**6,
        25,
    )
    assert options.steps_per_iteration == 100


def test_registered_as_a_plugin() -> None:
    assert get_plugin_manager().registry("algorithm")["maddpg"] is MADDPG


def _relative(mine: torch.Tensor, theirs: torch.Tensor) -> float:
    return float((mine - theirs).norm() / theirs.norm().clamp_min(1e-12))


@pytest.mark.parametrize(
    ("discrete", "hidden_sizes", "critic"),
    [
        (True, (16, 16), "joint"),
        (False, (16, 16), "joint"),
        (True, (), "joint"),
        (True, (16, 16), "local"),
        (False, (16, 16), "local"),
    ],
)
def test_a_learners_agents_equal_the_joint_slice(
    discrete: bool, hidden_sizes: tuple[int, ...], critic: str
) -> None:
    # A learner's call and the joint call run different tensor shapes, for which BLAS may pick
    # different kernels (and does, per CPU): they agree to float32 rounding, not bit for bit.
    program = make_program(4, discrete=discrete, hidden_sizes=hidden_sizes, critic=critic)
    assert isinstance(program, LearnerProgram)
    (theta, opt_state), batch = program.init_state(0), make_batch(program)
    joint = program.update(theta, opt_state, batch, [0, 1, 2, 3], seed=5)
    for agents in ([2], [3, 1], [0, 2, 3]):
        part = program.update(theta, opt_state, batch, agents, seed=5)
        for position, agent in enumerate(agents):
            assert _relative(part.theta[position], joint.theta[agent]) <= 1e-6
            assert _relative(part.opt_state[position], joint.opt_state[agent]) <= 1e-6
        torch.testing.assert_close(
            part.stats["critic_loss"], joint.stats["critic_loss"][agents], rtol=1e-6, atol=0
        )
    # A learner holding every agent makes the joint call itself: the same bits.
    everyone = program.update(theta, opt_state, batch, [0, 1, 2, 3], seed=5)
    assert torch.equal(everyone.theta, joint.theta)
    assert torch.equal(everyone.opt_state, joint.opt_state)


def test_the_same_update_twice_is_bit_identical_and_pure() -> None:
    program = make_program(4)
    (theta, opt_state), batch = program.init_state(0), make_batch(program)
    before = (theta.clone(), opt_state.clone())
    for agents in ([0, 1, 2, 3], [3, 1]):
        first = program.update(theta, opt_state, batch, agents, seed=3)
        second = program.update(theta, opt_state, batch, agents, seed=3)
        assert torch.equal(first.theta, second.theta)
        assert torch.equal(first.opt_state, second.opt_state)
    assert torch.equal(theta, before[0]) and torch.equal(opt_state, before[1])


def test_a_non_finite_agent_keeps_its_rows() -> None:
    program = make_program(3)
    (theta, opt_state), batch = program.init_state(0), make_batch(program)
    batch["reward"][:, 1] = float("nan")
    out = program.update(theta, opt_state, batch, [0, 1, 2], seed=3)
    assert out.stats["nonfinite"].tolist() == [False, True, False]
    assert torch.equal(out.theta[1], theta[1]) and torch.equal(out.opt_state[1], opt_state[1])
    assert torch.isfinite(out.theta).all()


@pytest.mark.parametrize("critic", ["joint", "local"])
def test_shared_params_keep_a_group_identical(critic: str) -> None:
    program = make_program(4, discrete=False, critic=critic, share_params=True)
    (theta, opt_state), batch = program.init_state(0), make_batch(program)
    assert all(torch.equal(theta[0], row) for row in theta)  # one group: agent 0's networks
    joint = program.update(theta, opt_state, batch, [0, 1, 2, 3], seed=5)
    assert not torch.equal(joint.theta, theta)
    assert all(torch.equal(joint.theta[0], row) for row in joint.theta)
    assert all(torch.equal(joint.opt_state[0], row) for row in joint.opt_state)
    # A learner asked for one agent still runs its whole group: the same row as the joint call's.
    part = program.update(theta, opt_state, batch, [2], seed=5)
    assert part.theta.shape[0] == 1 and torch.equal(part.theta[0], joint.theta[2])
    unshared = make_program(4, discrete=False, critic=critic)
    assert not torch.equal(unshared.init_state(0)[0][0], unshared.init_state(0)[0][1])


def test_shared_params_refuse_a_seeded_call_on_part_of_a_group() -> None:
    program = make_program(3, share_params=True)
    (theta, opt_state), batch = program.init_state(0), make_batch(program)
    with pytest.raises(ValueError, match="not whole groups"):
        program.update_seeded(theta, opt_state, batch, [0, 2], [1, 2])


def test_split_critic_matches_the_critic_on_the_concatenated_input() -> None:
    program = make_program(3)
    state = program.theta_codec.unflatten(program.init_state(0)[0][[2, 0]])  # two replicas
    params = [state[n].requires_grad_(True) for n in program._critic_names]
    generator = torch.Generator().manual_seed(0)
    obs = torch.randn(16, 3 * program.obs_dim, generator=generator)
    actions = torch.randn(2, 16, 3 * program.action_dim, generator=generator, requires_grad=True)

    values = program._critic_values(obs, actions, params, torch.tensor([2, 0]))
    joint = torch.cat([obs.expand(2, -1, -1), actions], dim=-1)
    reference = stacked_mlp(joint, params).squeeze(-1)
    torch.testing.assert_close(values, reference, rtol=1e-5, atol=1e-6)
    grads = torch.autograd.grad(values.square().sum(), [actions, *params])
    reference_grads = torch.autograd.grad(reference.square().sum(), [actions, *params])
    for grad, reference_grad in zip(grads, reference_grads, strict=True):
        torch.testing.assert_close(grad, reference_grad, rtol=1e-5, atol=1e-6)


def test_a_local_critic_reads_its_own_agent_only() -> None:
    joint, local = make_program(3), make_program(3, critic="local")
    assert joint.critic_sizes[0] == 3 * local.critic_sizes[0]
    theta, _ = local.init_state(0)
    generator = torch.Generator().manual_seed(0)
    obs = torch.randn(8, 3, local.obs_dim, generator=generator)
    actions = torch.randn(2, 8, 3 * local.action_dim, generator=generator)
    values = local.critic_output(theta, obs, actions, agent=1)
    others = obs.clone()
    others[:, [0, 2]] = torch.randn(8, 2, local.obs_dim, generator=generator)
    other_actions = actions.clone()
    other_actions[..., : local.action_dim] += 1.0  # agent 0's action columns
    assert torch.equal(local.critic_output(theta, others, other_actions, agent=1), values)
    own = obs.clone()
    own[:, 1] += 1.0
    assert not torch.allclose(local.critic_output(theta, own, actions, agent=1), values)
    # Its weights are agent 1's: the plain MLP on agent 1's observation and action.
    state = local.theta_codec.unflatten(theta[1:2])
    params = [state[name] for name in local._critic_names]
    own_input = torch.cat(
        [obs[:, 1].expand(2, -1, -1), actions[..., local.action_dim : 2 * local.action_dim]], -1
    )
    reference = stacked_mlp(own_input, [p.expand(2, *p.shape[1:]) for p in params]).squeeze(-1)
    torch.testing.assert_close(values, reference, rtol=1e-5, atol=1e-6)


def test_policy_actions_are_gumbel_softmax_samples_in_joint_layout() -> None:
    program = make_program(3, hard_actions=False)  # agent 1 has 4 of the padded 5 actions
    generator = torch.Generator().manual_seed(0)
    raw = torch.randn(3, 16, program.action_dim, generator=generator)
    noise = torch.randn(2, 3, 16, program.action_dim, generator=generator)
    actions = program._policy_actions(raw, noise).reshape(2, 16, 3, program.action_dim)
    mask = program.action_mask.reshape(1, 3, 1, -1)
    expected = torch.softmax(raw.masked_fill(~mask, -1e9) + noise, dim=-1).transpose(1, 2)
    torch.testing.assert_close(actions, expected, rtol=1e-5, atol=1e-7)
    assert torch.equal(actions[..., 1, 4], torch.zeros(2, 16))


def test_hard_actions_are_one_hot_samples_with_the_softmax_gradient() -> None:
    program = make_program(3)  # hard_actions by default; agent 1 has 4 of the padded 5 actions
    generator = torch.Generator().manual_seed(0)
    raw = torch.randn(3, 16, program.action_dim, generator=generator)
    noise = torch.randn(2, 3, 16, program.action_dim, generator=generator)
    mask = program.action_mask.reshape(1, 3, 1, -1)
    perturbed = raw.masked_fill(~mask, -1e9) + noise
    # The target: the one-hot Gumbel-max sample, as the buffer stores the acted sample.
    actions = program._policy_actions(raw, noise).reshape(2, 16, 3, program.action_dim)
    expected = torch.nn.functional.one_hot(perturbed.argmax(-1), program.action_dim).float()
    assert torch.equal(actions, expected.transpose(1, 2))
    # The actor's own action: one-hot forward, softmax backward (straight-through).
    index = torch.tensor([0, 1])
    own_raw = raw[:2].clone().requires_grad_(True)
    own = program._own_policy_action(own_raw, index, noise[0, :2])
    assert torch.equal(own.detach(), expected[0, :2])
    weights = torch.randn(own.shape, generator=generator)
    (grad,) = torch.autograd.grad((own * weights).sum(), own_raw)
    soft_raw = raw[:2].clone().requires_grad_(True)
    soft = torch.softmax(soft_raw.masked_fill(~mask[0, :2], -1e9) + noise[0, :2], dim=-1)
    (expected_grad,) = torch.autograd.grad((soft * weights).sum(), soft_raw)
    torch.testing.assert_close(grad, expected_grad)


def test_update_moves_params_targets_and_optimizer_and_is_seeded() -> None:
    program = make_program(3)
    (theta, opt_state), batch = program.init_state(0), make_batch(program)
    out = program.update(theta, opt_state, batch, [0, 1, 2], seed=1)
    before, after = program.theta_codec.unflatten(theta), program.theta_codec.unflatten(out.theta)
    assert not torch.equal(before["actor.w0"], after["actor.w0"])
    assert not torch.equal(before["critic.w0"], after["critic.w0"])
    tau = program.options.tau
    torch.testing.assert_close(
        after["target_critic.w0"], before["target_critic.w0"].lerp(after["critic.w0"], tau)
    )
    assert program.opt_codec.unflatten(out.opt_state)["adam_step"].tolist() == [1.0, 1.0, 1.0]
    assert not torch.equal(out.theta, program.update(theta, opt_state, batch, [0, 1, 2], 2).theta)


def test_padded_actions_are_never_chosen() -> None:
    program = make_program(2)  # agent 1 has 4 of the padded 5 actions
    obs = torch.randn(200, 2, program.obs_dim)
    theta, _ = program.init_state(0)
    actions = program.act(theta, obs, generator=torch.Generator().manual_seed(0))
    assert actions[:, 1, 4].sum() == 0
    assert torch.equal(actions.sum(-1), torch.ones(200, 2))


def test_critic_learns_a_constant_reward() -> None:
    program = make_program(2, lr=1e-2)
    program.options.gamma = 0.0
    batch = make_batch(program, size=64)
    batch["reward"] = torch.ones(64, 2)
    theta, opt_state = program.init_state(0)
    for round_index in range(150):
        out = program.update(theta, opt_state, batch, [0, 1], seed=round_index)
        theta, opt_state = out.theta, out.opt_state
    state = program.theta_codec.unflatten(theta)
    joint = torch.cat([batch["obs"].reshape(64, -1), batch["action"].reshape(64, -1)], -1)
    q = stacked_mlp(joint.expand(2, -1, -1), [state[n] for n in program._critic_names])
    torch.testing.assert_close(q.mean(), torch.tensor(1.0), atol=0.1, rtol=0)


def test_collector_fills_the_buffer_from_an_mpe_env() -> None:
    env = PettingZooWrapper(
        simple_tag_v3.parallel_env(num_good=1, num_adversaries=2, num_obstacles=1, max_cycles=25),
        categorical_actions=True,
    )
    collector = ExperienceCollector(env, make_program_for(env), seed=0)
    collector.collect(make_program_for(env).init_state(0)[0], steps=30)
    assert len(collector.buffer) == 30
    assert len(collector.episode_returns) == 1  # 25-step episodes
    batch = collector.sample(torch.Generator().manual_seed(0))
    assert batch["obs"].shape == (8, 3, make_program_for(env).obs_dim)
    again = collector.sample(torch.Generator().manual_seed(0))
    assert torch.equal(batch["obs"], again["obs"])


def make_program_for(env: PettingZooWrapper) -> MaddpgProgram:
    from marlplug.envs.flat import MultiAgentEnvAdapter

    return MADDPG(minibatch_size=8, hidden_sizes=[8]).program(MultiAgentEnvAdapter(env).agents)


def test_continuous_actions_reach_the_env_in_range() -> None:
    env = PettingZooWrapper(simple_spread_v3.parallel_env(N=2, continuous_actions=True))
    program = make_program_for(env)
    assert not program.discrete.any()
    collector = ExperienceCollector(env, program, seed=0)
    collector.collect(program.init_state(0)[0], steps=5)
    actions = collector.buffer.storage[torch.arange(5)]["action"]
    assert actions.abs().max() <= 1.0


def test_rollouts_refuse_more_env_copies_than_the_env_runs() -> None:
    config = load_config(data={"algorithm": {"name": "maddpg"}, "train": {"num_envs": 2}})
    env = make_env("cooperative_navigation", agents=2, seed=0)
    algorithm = MADDPG()
    with pytest.raises(UserError, match=r"train\.num_envs"):
        algorithm.rollouts(env, algorithm.bind(env, config), config)


def test_the_constructor_takes_the_options_and_nothing_else() -> None:
    assert MADDPG(tau=0.5).options == MaddpgOptions(tau=0.5)
    with pytest.raises(ValueError, match="no_such"):
        MADDPG(no_such=1)
