"""Stacked per-agent networks: agents are independent, features have the documented shape, and the
lean rollout policy draws from the same distribution the loss scores."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from torchrl.envs.utils import ExplorationType, set_exploration_type

from marlplug.envs import make_env, read_layout
from marlplug.errors import UserError
from marlplug.nn import GroupSpec, JointActorCritic, StackedLinear, StackedMLP


def test_stacked_mlp_agents_are_independent() -> None:
    torch.manual_seed(0)
    mlp = StackedMLP(n_agents=3, in_features=4, out_features=2, num_cells=[8, 8])
    inputs = torch.randn(6, 3, 4)
    before = mlp(inputs).detach()
    with torch.no_grad():
        for param in mlp.parameters():
            param[1].add_(1.0)  # move agent 1's weights only
    after = mlp(inputs).detach()
    assert torch.equal(before[:, 0], after[:, 0]) and torch.equal(before[:, 2], after[:, 2])
    assert not torch.allclose(before[:, 1], after[:, 1])
    # Changing agent 2's input leaves the other agents' outputs alone.
    moved = inputs.clone()
    moved[:, 2] += 1.0
    out = mlp(moved).detach()
    assert torch.equal(out[:, :2], after[:, :2]) and not torch.allclose(out[:, 2], after[:, 2])


def test_stacked_mlp_gradient_of_one_agent_stays_in_its_slice() -> None:
    torch.manual_seed(1)
    mlp = StackedMLP(n_agents=4, in_features=3, out_features=1, num_cells=[5])
    mlp(torch.randn(7, 4, 3))[:, 2].sum().backward()
    for param in mlp.parameters():
        assert param.grad is not None
        others = torch.cat([param.grad[i].flatten() for i in (0, 1, 3)])
        assert torch.count_nonzero(others) == 0 and torch.count_nonzero(param.grad[2]) > 0


def test_stacked_linear_equals_one_linear_per_agent() -> None:
    torch.manual_seed(2)
    layer = StackedLinear(n_agents=3, in_features=4, out_features=5)
    inputs = torch.randn(8, 3, 4)
    expected = torch.stack(
        [inputs[:, i] @ layer.weight[i] + layer.bias[i] for i in range(3)], dim=1
    )
    torch.testing.assert_close(layer(inputs), expected)


def test_centralized_critic_reads_every_agent() -> None:
    torch.manual_seed(3)
    critic = StackedMLP(n_agents=2, in_features=3, out_features=1, centralized=True)
    inputs = torch.randn(5, 2, 3)
    moved = inputs.clone()
    moved[:, 1] += 1.0
    changed = critic(moved) != critic(inputs)
    assert bool(changed[:, 0].all()) and bool(changed[:, 1].all())


@pytest.mark.parametrize(
    ("layout", "inputs"),
    [({"shared_input": True}, (9, 6)), ({"centralized": True}, (9, 3, 2))],
    ids=["state", "joint"],
)
def test_a_shared_critic_on_one_input_runs_once_with_the_same_values_and_mean_gradient(
    layout: dict[str, bool], inputs: tuple[int, ...]
) -> None:
    """With equal rows (parameter sharing) and one input for every agent, computing agent 0's
    MLP once gives every agent the value each would compute, and the same mean gradient over the
    agents, which is what a shared step applies."""
    torch.manual_seed(4)
    each = StackedMLP(
        n_agents=3, in_features=inputs[-1], out_features=1, num_cells=[8, 8], **layout
    )
    once = StackedMLP(
        n_agents=3, in_features=inputs[-1], out_features=1, num_cells=[8, 8], shared_weights=True,
        **layout,
    )  # fmt: skip
    with torch.no_grad():
        for mine, theirs in zip(each.parameters(), once.parameters(), strict=True):
            mine.copy_(mine[:1].expand_as(mine))
            theirs.copy_(mine)
    x = torch.randn(*inputs)
    targets = torch.randn(9, 3, 1)
    values = {}
    for name, mlp in (("each", each), ("once", once)):
        values[name] = mlp(x)
        ((values[name] - targets) ** 2).sum().backward()
    torch.testing.assert_close(values["once"], values["each"])
    for mine, theirs in zip(each.parameters(), once.parameters(), strict=True):
        assert mine.grad is not None and theirs.grad is not None
        assert torch.count_nonzero(theirs.grad[1:]) == 0  # agent 0's rows took it all
        torch.testing.assert_close(theirs.grad.mean(0), mine.grad.mean(0))
    # Per-agent inputs (the encoder, a local critic) cannot share one computation.
    local = StackedMLP(n_agents=3, in_features=2, out_features=1, shared_weights=True)
    assert not local.runs_once


def test_encoder_features_shape_and_order() -> None:
    specs = [
        GroupSpec(group="adversary", agent_names=("x0", "x1"), observation_dim=6, n_actions=5),
        GroupSpec(group="agent", agent_names=("a0", "a1", "a2"), observation_dim=4, n_actions=3),
    ]
    model = JointActorCritic(specs, hidden_size=16, feature_dim=8)
    observations = {"adversary": torch.randn(10, 2, 6), "agent": torch.randn(10, 3, 4)}
    features = model.encoder_features(observations)
    assert [tuple(f.shape) for f in features] == [(10, 8)] * 5
    assert model.agent_names == [
        ("adversary", "x0"),
        ("adversary", "x1"),
        ("agent", "a0"),
        ("agent", "a1"),
        ("agent", "a2"),
    ]
    td = TensorDict({("agent", "observation"): observations["agent"]}, batch_size=[10])
    model.actors["agent"](td)
    assert td["agent", "features"].shape == (10, 3, 8)
    torch.testing.assert_close(td["agent", "features"][:, 1], features[3])


def test_rollout_policy_samples_the_actor_distribution_and_acts_greedily() -> None:
    torch.manual_seed(4)
    spec = GroupSpec(group="agent", agent_names=("a", "b"), observation_dim=4, n_actions=3)
    model = JointActorCritic([spec], hidden_size=8, feature_dim=8)
    td = TensorDict({("agent", "observation"): torch.randn(2000, 2, 4)}, batch_size=[2000])
    with torch.no_grad():
        model.policy(td)
        distribution = model.actors["agent"].get_dist(td.select(("agent", "observation")))
        torch.testing.assert_close(
            td["agent", "action_log_prob"], distribution.log_prob(td["agent", "action"])
        )
        with set_exploration_type(ExplorationType.DETERMINISTIC):
            greedy = model.policy(td.select(("agent", "observation")).clone())
    assert torch.equal(greedy["agent", "action"], distribution.logits.argmax(-1))
    assert td["agent", "action"].unique().numel() == 3  # sampling, not argmax


def test_continuous_actions_get_a_bounded_tanh_normal() -> None:
    env = make_env("cooperative_navigation", agents=2, seed=0, continuous_actions=True)
    (spec,) = read_layout(env).groups
    assert spec.continuous and spec.n_actions == 5
    assert spec.action_low == (0.0,) * 5 and spec.action_high == (1.0,) * 5
    model = JointActorCritic.from_env(env, hidden_size=8, feature_dim=8)
    td = model.policy(env.reset())
    action = td["agent", "action"]
    assert action.shape == (2, 5) and bool(((action >= 0) & (action <= 1)).all())
    assert td["agent", "action_log_prob"].shape == (2,)
    env.step(td)


def test_continuous_spec_needs_bounds() -> None:
    with pytest.raises(UserError, match="action_low"):
        GroupSpec(
            group="agent", agent_names=("a",), observation_dim=4, n_actions=2, continuous=True
        )


@pytest.mark.parametrize("value_norm", [False, True])
def test_orthogonal_init_starts_near_uniform_with_orthogonal_agent_rows(value_norm: bool) -> None:
    spec = GroupSpec(group="agent", agent_names=("a", "b"), observation_dim=6, n_actions=5)
    torch.manual_seed(0)
    model = JointActorCritic([spec], hidden_size=16, feature_dim=8, init="orthogonal",
                             value_norm=value_norm)  # fmt: skip
    nets = model.groups["agent"]
    head = nets.policy_head.module
    assert isinstance(head, StackedLinear)
    # Every agent's head is orthogonal with gain 0.01 and no bias: logits near 0, a near-uniform
    # policy whatever the observation (MAPPO's initialization).
    for weight in head.weight:
        assert torch.allclose(weight.T @ weight, 1e-4 * torch.eye(5), atol=1e-8)
    assert torch.equal(head.bias, torch.zeros_like(head.bias))
    td = TensorDict({("agent", "observation"): 3 * torch.randn(32, 2, 6)}, batch_size=[32])
    nets.actor(td)
    assert td["agent", "logits"].abs().max() < 0.05
    # The same seed draws the same networks; the torch init draws others.
    torch.manual_seed(0)
    again = JointActorCritic([spec], hidden_size=16, feature_dim=8, init="orthogonal",
                             value_norm=value_norm)  # fmt: skip
    torch.manual_seed(0)
    default = JointActorCritic([spec], hidden_size=16, feature_dim=8, value_norm=value_norm)
    for mine, same, other in zip(
        model.parameters(), again.parameters(), default.parameters(), strict=True
    ):
        assert torch.equal(mine, same)
        if mine.requires_grad:  # the value-norm statistics are no weights: equal under both inits
            assert not torch.equal(mine, other)


def test_relu_activation_reaches_every_hidden_layer_and_its_orthogonal_gain() -> None:
    spec = GroupSpec(group="agent", agent_names=("a", "b"), observation_dim=6, n_actions=5)
    torch.manual_seed(0)
    model = JointActorCritic([spec], hidden_size=16, feature_dim=8, activation="relu",
                             init="orthogonal")  # fmt: skip
    nets = model.groups["agent"]
    kinds = {type(m) for m in nets.modules() if isinstance(m, (torch.nn.Tanh, torch.nn.ReLU))}
    assert kinds == {torch.nn.ReLU}
    encoder = next(m for m in nets.encoder.module.modules() if isinstance(m, StackedMLP))
    first = encoder.layers[0].weight[0]  # [6, 16]: orthogonal rows of norm sqrt(2)
    assert torch.allclose(first @ first.T, 2.0 * torch.eye(6), atol=1e-5)
    td = TensorDict({("agent", "observation"): torch.randn(4, 2, 6)}, batch_size=[4])
    nets.actor(td)
    assert bool((td["agent", "features"] >= 0).all())  # ReLU features, as aux losses see them
    # tanh stays the default, with MAPPO's 5/3 gain.
    torch.manual_seed(0)
    default = JointActorCritic([spec], hidden_size=16, feature_dim=8, init="orthogonal")
    kinds = {type(m) for m in default.modules() if isinstance(m, (torch.nn.Tanh, torch.nn.ReLU))}
    assert kinds == {torch.nn.Tanh}
    encoder = next(
        m for m in default.groups["agent"].encoder.module.modules() if isinstance(m, StackedMLP)
    )
    first = encoder.layers[0].weight[0]
    assert torch.allclose(first @ first.T, (5 / 3) ** 2 * torch.eye(6), atol=1e-5)
