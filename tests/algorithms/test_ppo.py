"""The PPO learner: per-agent Adam, clipping, freezing, non-finite skips, aux gradients, pure U_i."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from marlplug.algorithms.ppo import (
    PPO,
    agent_optimizer_state,
    agent_parameters,
    loss_parameter_groups,
    parameters_of,
)
from marlplug.errors import UserError
from marlplug.losses import RedundancyLoss
from marlplug.optim.agent_optim import AgentAdam, AgentGroupParameters, clip_grad_norm_per_agent_
from tests.losses.helpers import make_batch, make_loss, make_model
from tests.torch_threads import one_torch_thread  # noqa: F401  (autouse: one torch thread)


def test_one_adam_over_stacked_weights_equals_one_adam_per_agent() -> None:
    torch.manual_seed(0)
    n_agents = 4
    stacked = nn.Parameter(torch.randn(n_agents, 5, 3))
    singles = [nn.Parameter(stacked[i].detach().clone()) for i in range(n_agents)]
    joint = AgentAdam([AgentGroupParameters("agent", n_agents, [stacked])], lr=1e-2)
    separate = [torch.optim.Adam([p], lr=1e-2, foreach=False) for p in singles]
    for _ in range(10):
        grad = torch.randn(n_agents, 5, 3)
        stacked.grad = grad.clone()
        joint.step()
        for i, (param, optimizer) in enumerate(zip(singles, separate, strict=True)):
            param.grad = grad[i].clone()
            optimizer.step()
    for i in range(n_agents):
        torch.testing.assert_close(stacked[i], singles[i], atol=1e-7, rtol=1e-6)
        torch.testing.assert_close(
            joint.state[stacked]["exp_avg_sq"][i], separate[i].state[singles[i]]["exp_avg_sq"]
        )


def test_masked_agents_keep_their_own_step_count() -> None:
    """An agent that skipped steps continues exactly like a per-agent Adam that never saw them."""
    stacked = nn.Parameter(torch.zeros(2, 3))
    single = nn.Parameter(torch.zeros(3))
    joint = AgentAdam([AgentGroupParameters("agent", 2, [stacked])], lr=0.1)
    alone = torch.optim.Adam([single], lr=0.1, foreach=False)
    for step in range(6):
        grad = torch.full((2, 3), float(step + 1))
        stacked.grad = grad
        active = step % 2 == 0
        joint.step(active={"agent": torch.tensor([True, active])})
        if active:
            single.grad = grad[1].clone()
            alone.step()
    torch.testing.assert_close(stacked[1], single, atol=1e-7, rtol=1e-6)
    assert joint.state[stacked]["step"].tolist() == [6.0, 3.0]


@pytest.mark.parametrize("layout", ["transposed", "expanded"])
def test_a_gradient_laid_out_unlike_its_parameter_steps_correctly(layout: str) -> None:
    # The fused kernel pairs elements in memory order: a gradient with other strides must not
    # be paired with the wrong entries of the parameter.
    grad = torch.arange(24.0).reshape(2, 3, 4)
    if layout == "transposed":
        strided = grad.transpose(1, 2).contiguous().transpose(1, 2)
    else:
        grad = torch.arange(4.0).expand(2, 3, 4)
        strided = grad
    assert not strided.is_contiguous()
    results = []
    for given in (grad.contiguous(), strided):
        param = nn.Parameter(torch.zeros(2, 3, 4))
        optimizer = AgentAdam([AgentGroupParameters("agent", 2, [param])], lr=0.1)
        param.grad = given
        optimizer.step()
        results.append(param.detach().clone())
    torch.testing.assert_close(results[1], results[0], rtol=0.0, atol=0.0)


def test_non_contiguous_parameters_are_refused() -> None:
    param = nn.Parameter(torch.zeros(3, 2).T)  # agent dimension 2, not contiguous
    optimizer = AgentAdam([AgentGroupParameters("agent", 2, [param])], lr=0.1)
    param.grad = torch.ones(2, 3)
    with pytest.raises(UserError, match="contiguous"):
        optimizer.step()


def test_an_active_mask_of_the_wrong_length_is_refused() -> None:
    param = nn.Parameter(torch.zeros(2, 3))
    optimizer = AgentAdam([AgentGroupParameters("agent", 2, [param])], lr=0.1)
    param.grad = torch.ones(2, 3)
    with pytest.raises(UserError, match=r"active\['agent'\] has shape \(3,\)"):
        optimizer.step(active={"agent": torch.tensor([True, False, True])})


def test_agents_out_of_lockstep_each_equal_their_own_adam() -> None:
    # Runs of agents with different step counts go through the fused kernel as separate slices.
    torch.manual_seed(1)
    stacked = nn.Parameter(torch.randn(5, 4))
    singles = [nn.Parameter(stacked[i].detach().clone()) for i in range(5)]
    joint = AgentAdam([AgentGroupParameters("agent", 5, [stacked])], lr=1e-2)
    separate = [torch.optim.Adam([p], lr=1e-2, foreach=False) for p in singles]
    masks = [[1, 1, 1, 1, 1], [1, 0, 1, 1, 0], [0, 1, 1, 0, 1], [1, 1, 1, 1, 1], [1, 1, 0, 1, 1]]
    for mask in masks:
        grad = torch.randn(5, 4)
        stacked.grad = grad.clone()
        joint.step(active={"agent": torch.tensor(mask, dtype=torch.bool)})
        for i, on in enumerate(mask):
            if on:
                singles[i].grad = grad[i].clone()
                separate[i].step()
    assert joint.state[stacked]["step"].tolist() == [4.0, 4.0, 4.0, 4.0, 4.0]
    for i in range(5):
        torch.testing.assert_close(stacked[i], singles[i], atol=1e-7, rtol=1e-6)


def test_a_large_but_finite_gradient_is_clipped_not_skipped() -> None:
    param = nn.Parameter(torch.zeros(2, 1000))
    param.grad = torch.cat([torch.full((1, 1000), 1e19), torch.ones(1, 1000)])
    norms, finite = clip_grad_norm_per_agent_([AgentGroupParameters("agent", 2, [param])], 0.5)
    assert finite.tolist() == [True, True]  # float32 would overflow: ‖g_0‖ = 3.16e20
    assert float(norms[0]) == pytest.approx(1e19 * 1000**0.5, rel=1e-6)
    assert float(param.grad[0].double().norm()) == pytest.approx(0.5, rel=1e-4)


def _snapshot(
    loss: nn.Module, optimizer: AgentAdam
) -> tuple[dict[str, torch.Tensor], dict[int, dict[str, torch.Tensor]]]:
    params = {name: p.detach().clone() for name, p in loss.named_parameters()}
    state = {id(p): {k: v.clone() for k, v in s.items()} for p, s in optimizer.state.items()}
    return params, state


def test_frozen_agents_do_not_move_params_or_optimizer_state() -> None:
    model = make_model((("agent", 3),))
    loss = make_loss(model, aux_losses={"redundancy": RedundancyLoss(coef=1.0)})
    ppo = PPO()
    optimizer = ppo.make_optimizer(loss, lr=1e-2)
    batch = make_batch(model)
    ppo.update_step(loss, optimizer, batch, max_grad_norm=0.5)  # creates optimizer state
    params, state = _snapshot(loss, optimizer)
    result = ppo.update_step(loss, optimizer, batch, max_grad_norm=0.5, frozen={1})
    assert result.stepped.tolist() == [True, False, True]
    for name, param in loss.named_parameters():
        torch.testing.assert_close(param[1], params[name][1], atol=0, rtol=0)
        assert not torch.equal(param[0], params[name][0]) or not torch.equal(
            param[2], params[name][2]
        )
        for key, value in optimizer.state[param].items():
            torch.testing.assert_close(value[1], state[id(param)][key][1], atol=0, rtol=0)


def test_non_finite_gradient_norm_skips_that_agent_and_is_counted() -> None:
    model = make_model((("agent", 3),))
    loss = make_loss(model)
    ppo = PPO()
    optimizer = ppo.make_optimizer(loss, lr=1e-2)
    batch = make_batch(model)
    batch["agent", "value_target"][:, 2] = float("inf")
    before = {name: p.detach().clone() for name, p in loss.named_parameters()}
    result = ppo.update_step(loss, optimizer, batch, max_grad_norm=0.5)
    assert result.nonfinite.tolist() == [False, False, True]
    assert result.stepped.tolist() == [True, True, False]
    for name, param in loss.named_parameters():
        assert torch.isfinite(param).all()
        torch.testing.assert_close(param[2], before[name][2], atol=0, rtol=0)


def test_gradients_are_clipped_per_agent() -> None:
    model = make_model((("agent", 2),))
    loss = make_loss(model)
    ppo = PPO()
    optimizer = ppo.make_optimizer(loss, lr=1e-2)
    batch = make_batch(model)
    batch["agent", "value_target"][:, 0] *= 1000.0  # agent 0: huge gradient
    groups = loss_parameter_groups(loss)
    result = ppo.update_step(loss, optimizer, batch, max_grad_norm=1e9)
    big, small = result.grad_norms.tolist()
    assert big > 100 * small
    # Clip at a level between the two: only agent 0 is scaled; agent 1's step is unchanged.
    reference_model = make_model((("agent", 2),))
    reference_loss = make_loss(reference_model)
    reference_optimizer = ppo.make_optimizer(reference_loss, lr=1e-2)
    del groups
    clipped = ppo.update_step(reference_loss, reference_optimizer, batch, max_grad_norm=small * 2)
    torch.testing.assert_close(clipped.grad_norms, result.grad_norms)
    for (_, a), (_, b) in zip(
        loss.named_parameters(), reference_loss.named_parameters(), strict=True
    ):
        torch.testing.assert_close(a[1], b[1])  # Adam's step for agent 1 is the same


def test_aux_gradient_reaches_every_agents_encoder() -> None:
    model = make_model((("agent", 3), ("adversary", 2)))
    loss = make_loss(
        model,
        aux_losses={"redundancy": RedundancyLoss(coef=1.0)},
        critic_coeff=0.0,
        entropy_coeff=0.0,
        normalize_advantage=False,
    )
    batch = make_batch(model)
    for group in model.group_sizes:
        batch[group, "advantage"] = torch.zeros_like(batch[group, "advantage"])  # no PPO signal
    ppo = PPO()
    optimizer = ppo.make_optimizer(loss, lr=1e-2)
    encoders = {group: model.groups[group].encoder for group in model.group_sizes}
    before = {
        group: [p.detach().clone() for p in enc.parameters()] for group, enc in encoders.items()
    }
    heads_before = [
        p.detach().clone()
        for g in model.group_sizes
        for p in model.groups[g].policy_head.parameters()
    ]
    ppo.update_step(loss, optimizer, batch, max_grad_norm=10.0)
    for group, encoder in encoders.items():
        for agent in range(model.group_sizes[group]):
            moved = [
                not torch.equal(p[agent], q[agent])
                for p, q in zip(encoder.parameters(), before[group], strict=True)
            ]
            assert all(moved), (group, agent)
    heads_after = [p for g in model.group_sizes for p in model.groups[g].policy_head.parameters()]
    assert all(torch.equal(a, b) for a, b in zip(heads_after, heads_before, strict=True))


def test_joint_step_equals_every_pure_agent_update() -> None:
    model = make_model((("agent", 2), ("adversary", 2)))
    loss = make_loss(model, aux_losses={"redundancy": RedundancyLoss(coef=0.5)})
    ppo = PPO()
    optimizer = ppo.make_optimizer(loss, lr=1e-2)
    batch = make_batch(model)
    ppo.update_step(loss, optimizer, batch, max_grad_norm=0.5, seed=3)  # non-trivial Adam state
    theta_all = parameters_of(loss)
    inputs = [(agent_optimizer_state(loss, optimizer, i)) for i in range(4)]
    outputs = [
        ppo.agent_update(loss, theta_all, inputs[i], batch, 7, agent=i, lr=1e-2, max_grad_norm=0.5)
        for i in range(4)
    ]
    ppo.update_step(loss, optimizer, batch, max_grad_norm=0.5, seed=7)
    for agent, (theta_i, state_i) in enumerate(outputs):
        expected = agent_parameters(loss, agent)
        for name, value in expected.items(include_nested=True, leaves_only=True):
            torch.testing.assert_close(theta_i[name], value, atol=1e-6, rtol=1e-5)
        expected_state = agent_optimizer_state(loss, optimizer, agent)
        torch.testing.assert_close(state_i["step"], expected_state["step"])
        for name, value in expected_state["exp_avg"].items(include_nested=True, leaves_only=True):
            torch.testing.assert_close(
                state_i["exp_avg", name] if isinstance(name, str) else state_i[("exp_avg", *name)],
                value,
                atol=1e-7,
                rtol=1e-5,
            )
