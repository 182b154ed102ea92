"""Per-agent clipping and AgentAdam with shared parameters (``MultiAgentMLP(share_params=True)``).

Shared parameters have their own clipping budget, step only when every agent of the group steps,
and a non-finite shared gradient skips the whole group.
"""

from __future__ import annotations

import copy

import torch
from torch import nn
from torchrl.modules import MultiAgentMLP

from marlplug.algorithms.ppo import PPO
from marlplug.algorithms.ppo.params import group_parameters, loss_parameter_groups
from marlplug.optim import AgentAdam, clip_grad_norm_per_agent_
from tests.losses.test_torchrl_points import rollout, tutorial_loss, tutorial_networks


def _mlp(share_params: bool) -> MultiAgentMLP:
    torch.manual_seed(0)
    return MultiAgentMLP(
        n_agent_inputs=4,
        n_agent_outputs=2,
        n_agents=3,
        centralized=False,
        share_params=share_params,
        num_cells=[8],
    )


def test_group_parameters_tells_shared_from_per_agent_parameters() -> None:
    shared, per_agent = _mlp(True), _mlp(False)
    (group,) = group_parameters({"agents": [shared, per_agent]})
    assert group.n_agents == 3
    assert {id(p) for p in group.shared} == {id(p) for p in shared.parameters()}
    assert {id(p) for p in group.params} == {id(p) for p in per_agent.parameters()}


def test_shared_parameters_step_like_adam_when_every_agent_steps() -> None:
    net = _mlp(True)
    reference = copy.deepcopy(net)
    optimizer = AgentAdam(group_parameters({"agents": [net]}), lr=0.01)
    reference_optimizer = torch.optim.Adam(reference.parameters(), lr=0.01)
    inputs = torch.randn(5, 3, 4)
    for _ in range(3):
        for module, opt in ((net, optimizer), (reference, reference_optimizer)):
            opt.zero_grad()
            module(inputs).square().sum().backward()
            opt.step()
    for ours, theirs in zip(net.parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(ours, theirs, rtol=1e-6, atol=1e-7)


def test_freezing_an_agent_freezes_the_shared_parameters_only() -> None:
    shared, per_agent = _mlp(True), _mlp(False)
    groups = group_parameters({"agents": [shared, per_agent]})
    optimizer = AgentAdam(groups, lr=0.1)
    before_shared = [p.detach().clone() for p in shared.parameters()]
    before_own = [p.detach().clone() for p in per_agent.parameters()]
    inputs = torch.randn(5, 3, 4)
    (shared(inputs).square().sum() + per_agent(inputs).square().sum()).backward()
    optimizer.step(active={"agents": torch.tensor([True, False, True])})
    for before, param in zip(before_shared, shared.parameters(), strict=True):
        assert torch.equal(before, param)
    for before, param in zip(before_own, per_agent.parameters(), strict=True):
        assert torch.equal(before[1], param[1])
        assert not torch.equal(before[0], param[0])
    optimizer.step()  # everyone active: the shared parameters move now
    assert any(
        not torch.equal(b, p) for b, p in zip(before_shared, shared.parameters(), strict=True)
    )


def test_shared_gradients_have_their_own_clipping_budget() -> None:
    shared, per_agent = _mlp(True), _mlp(False)
    groups = group_parameters({"agents": [shared, per_agent]})
    inputs = torch.randn(5, 3, 4)
    (100 * shared(inputs).sum() + per_agent(inputs).sum()).backward()
    norms, finite = clip_grad_norm_per_agent_(groups, max_norm=0.5)
    assert finite.all() and norms.shape == (3,)
    shared_norm = torch.linalg.vector_norm(
        torch.stack([p.grad.norm() for p in shared.parameters()])
    )
    assert float(shared_norm) <= 0.5 + 1e-5
    nn.init.constant_(next(shared.parameters()).grad, float("nan"))
    _, finite = clip_grad_norm_per_agent_(groups, max_norm=0.5)
    assert not finite.any()  # a broken shared gradient skips the whole group
    assert all(torch.count_nonzero(p.grad) == 0 for p in shared.parameters())


def test_a_joint_ppo_step_with_a_shared_critic_and_a_frozen_agent() -> None:
    policy, _ = tutorial_networks(share_params=False)
    _, critic = tutorial_networks(share_params=True)
    loss = tutorial_loss(policy, critic, defaults="marlplug")
    data = rollout(policy)
    loss.value_estimator(data)
    optimizer = AgentAdam(loss_parameter_groups(loss), lr=0.01)
    critic_before = [p.detach().clone() for p in critic.parameters()]
    policy_before = [p.detach().clone() for p in policy.parameters()]
    result = PPO().update_step(loss, optimizer, data.reshape(-1), max_grad_norm=0.5, frozen={1})
    assert result.stepped.tolist() == [True, False, True]
    assert all(torch.equal(b, p) for b, p in zip(critic_before, critic.parameters(), strict=True))
    for before, param in zip(policy_before, policy.parameters(), strict=True):
        assert torch.equal(before[1], param[1]) and not torch.equal(before[0], param[0])
