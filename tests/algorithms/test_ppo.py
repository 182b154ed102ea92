"""The PPO learner: freezing, non-finite skips, per-agent clipping and aux gradients of the joint step
(``PPO.update_step``); the program's pure update is tested in test_ppo_program.py."""

from __future__ import annotations

import torch
from torch import nn

from marlplug.algorithms.ppo import PPO, loss_parameter_groups
from marlplug.losses import RedundancyLoss
from marlplug.optim import AgentAdam
from tests.losses.helpers import make_batch, make_loss, make_model
from tests.torch_threads import one_torch_thread  # noqa: F401  (autouse: one torch thread)


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
