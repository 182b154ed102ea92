"""Joint PPO's update in place on a loss's modules and an :class:`~marlplug.optim.adam.AgentAdam`.

The same forward, per-agent clip rule and Adam as :class:`~marlplug.algorithms.ppo.program.PpoProgram`
(tests check the bits agree), on the objects the joint trainer and TorchRL users hold, plus what rows
cannot represent: shared parameters and frozen agents.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import torch
from tensordict import TensorDictBase

from marlplug.algorithms.ppo.iteration import LR, observation_stats, scheduled
from marlplug.algorithms.ppo.params import loss_parameter_groups
from marlplug.algorithms.ppo.program import forward_backward
from marlplug.errors import UserError
from marlplug.losses.joint_ppo import JointPPOLoss
from marlplug.nn.obs_norm import observation_normalizers
from marlplug.optim.adam import AgentAdam
from marlplug.optim.clip import clip_grad_norm_per_agent_
from marlplug.optim.sharing import group_mean_gradients


@dataclass
class UpdateStepResult:
    """What one optimization step of :func:`step_modules` did.

    Attributes:
        losses: the loss module's output, detached.
        total_loss: L_total (the sum of the ``loss_*`` entries).
        grad_norms: every agent's gradient norm before clipping, in agent order.
        stepped: which agents' parameters moved.
        nonfinite: which agents were skipped because their gradient norm was not finite.
    """

    losses: TensorDictBase
    total_loss: float
    grad_norms: torch.Tensor
    stepped: torch.Tensor
    nonfinite: torch.Tensor


def step_modules(
    loss: JointPPOLoss,
    optimizer: AgentAdam,
    batch: TensorDictBase,
    *,
    max_grad_norm: float,
    frozen: Collection[int] = (),
    seed: int | None = None,
    share_params: bool = False,
) -> UpdateStepResult:
    """:meth:`~marlplug.algorithms.ppo.program.PpoProgram.update` for every agent on the loss's own parameters, in place.

    The same forward (:func:`forward_backward`), clip rule and Adam as the program, on modules and
    an :class:`AgentAdam` (what the joint trainer and TorchRL users hold). It also handles what rows
    cannot: shared parameters (their own clipping budget, stepped only when the whole group steps)
    and ``frozen`` agents (global indices; their parameters and Adam state do not move).
    ``share_params``: every agent of a group steps with the group's mean gradient (the program's
    rule).

    What the minibatch carries for its iteration (:mod:`marlplug.algorithms.ppo.iteration`) is
    used as the program uses it: the observation statistics are written into the loss's
    normalizers, and the learning rate replaces ``optimizer``'s for this step only.
    """
    if share_params and frozen:
        raise UserError(
            f"frozen: agents {sorted(frozen)} cannot stay still while every agent shares their "
            "weights (share_params); freeze none, or train separate weights"
        )
    groups = loss_parameter_groups(loss)
    _load_observation_stats(loss, batch)
    optimizer.zero_grad(set_to_none=True)
    losses, total = forward_backward(loss, batch, seed)
    total.backward()
    if share_params:
        for group in groups:
            grads = [param.grad for param in group.params if param.grad is not None]
            for grad, mean in zip(grads, group_mean_gradients(grads), strict=True):
                grad.copy_(mean)
    norms, finite = clip_grad_norm_per_agent_(groups, max_grad_norm)
    active = finite.clone()
    for agent in frozen:
        if not 0 <= agent < active.numel():
            raise UserError(
                f"frozen: agent index {agent} is out of range; there are {active.numel()} agents"
            )
        active[agent] = False
    masks, start = {}, 0
    for group in groups:
        masks[group.group] = active[start : start + group.n_agents]
        start += group.n_agents
    lr = scheduled(batch, LR)
    rates = [param_group["lr"] for param_group in optimizer.param_groups]
    if lr is not None:
        for param_group in optimizer.param_groups:
            param_group["lr"] = lr
    try:
        optimizer.step(active=masks)
    finally:
        for param_group, rate in zip(optimizer.param_groups, rates, strict=True):
            param_group["lr"] = rate
    optimizer.zero_grad(set_to_none=True)
    return UpdateStepResult(
        losses=losses.detach(),
        total_loss=float(total.detach()),
        grad_norms=norms,
        stepped=active,
        nonfinite=~finite,
    )


def _load_observation_stats(loss: JointPPOLoss, batch: TensorDictBase) -> None:
    """Write the observation statistics ``batch`` carries into the loss's normalizers, in place."""
    for group in loss.groups:
        stats = observation_stats(batch, group)
        if stats is None:
            continue
        with torch.no_grad():
            for network in (loss.actor_networks[group], loss.critic_networks[group]):
                for normalizer in observation_normalizers(network):
                    normalizer.stats.copy_(stats)
