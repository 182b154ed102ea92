"""MADDPG's action sampling: an update's Gumbel noise, the joint target actions and each updated
agent's own differentiable policy action.

Kept apart from :class:`~marlplug.algorithms.maddpg.program.MaddpgProgram` so that how actions are
drawn can be read (and tested) without the update's losses and optimizer. The functions are pure:
the program passes its action mask, its discrete flags and ``hard_actions``. Shapes: ``M`` agents,
``S`` updated agents (replicas), ``B`` batch rows, ``A`` padded action width.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from marlplug.nn.functional import gumbel_from_uniform_

#: The logit of a padded action: far below any real logit plus Gumbel noise, so a padded action is
#: never the argmax and its softmax weight underflows to zero.
MASKED_LOGIT = -1e9

__all__ = [
    "MASKED_LOGIT",
    "draw_noise",
    "draw_uniform",
    "joint_target_actions",
    "own_policy_action",
    "to_action_bounds",
]


def draw_noise(
    seeds: Sequence[int], num_agents: int, batch_size: int, action_dim: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per updated agent: Gumbel noise ``[S, M, B, A]`` for every agent's target action and
    ``[S, B, A]`` for its own policy action.

    Each agent's uniforms are drawn from its own seed, in the same order whatever else shares the
    call, so its noise does not depend on the other agents of the call; the Gumbel transform then
    runs once over all of them (it is elementwise).

    >>> target, policy = draw_noise([3, 4], num_agents=2, batch_size=5, action_dim=6)
    >>> target.shape, policy.shape
    (torch.Size([2, 2, 5, 6]), torch.Size([2, 5, 6]))
    >>> torch.equal(draw_noise([4], 2, 5, 6)[0][0], target[1])  # agent 4's noise, alone or not
    True
    """
    target, policy = draw_uniform(seeds, num_agents, batch_size, action_dim)
    return gumbel_from_uniform_(target), gumbel_from_uniform_(policy)


def draw_uniform(
    seeds: Sequence[int], num_agents: int, batch_size: int, action_dim: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """The uniform samples behind :func:`draw_noise` (``[S, M, B, A]`` and ``[S, B, A]``), each
    updated agent's from its own seed alone; SAC turns them into its Gaussian noise.

    >>> target, policy = draw_uniform([3], num_agents=2, batch_size=5, action_dim=6)
    >>> bool(target.ge(0).all() and target.lt(1).all()), policy.shape
    (True, torch.Size([1, 5, 6]))
    """
    count = len(seeds)
    target = torch.empty(count, num_agents, batch_size, action_dim)
    policy = torch.empty(count, batch_size, action_dim)
    for row, seed in enumerate(seeds):
        generator = torch.Generator().manual_seed(int(seed))
        torch.rand(target.shape[1:], generator=generator, out=target[row])
        torch.rand(policy.shape[1:], generator=generator, out=policy[row])
    return target, policy


def to_action_bounds(
    actions: torch.Tensor, low: torch.Tensor, high: torch.Tensor, discrete: torch.Tensor
) -> torch.Tensor:
    """Map continuous actions ``[E, M, A]`` from ``[-1, 1]`` to each agent's ``[low, high]``
    (``[M]`` each); discrete agents' one-hot actions pass unchanged.

    >>> to_action_bounds(torch.zeros(1, 1, 2), torch.tensor([0.0]), torch.tensor([1.0]),
    ...                  torch.tensor([False]))
    tensor([[[0.5000, 0.5000]]])
    """
    low, high = low.reshape(1, -1, 1), high.reshape(1, -1, 1)
    scaled = low + (actions + 1) * 0.5 * (high - low)
    return torch.where(discrete.reshape(1, -1, 1), actions, scaled)


def joint_target_actions(
    raw: torch.Tensor,
    noise: torch.Tensor,
    mask: torch.Tensor,
    discrete: torch.Tensor,
    *,
    hard_actions: bool,
) -> torch.Tensor:
    """``[S, B, M * A]`` joint target actions for the TD target: a Gumbel sample per discrete agent
    (one-hot with ``hard_actions``, else its softmax), tanh per continuous agent, padding zeroed.

    ``raw`` ``[M, B, A]`` (the target actors' outputs) is shared by the ``S`` replicas; only
    ``noise`` ``[S, M, B, A]`` differs. ``mask`` ``[M, A]`` marks each agent's real actions,
    ``discrete`` ``[M]`` its kind. The target needs no gradient.

    >>> raw, noise = torch.zeros(2, 1, 3), torch.zeros(1, 2, 1, 3)
    >>> mask = torch.tensor([[True, True, False], [True, True, True]])
    >>> joint_target_actions(raw, noise, mask, torch.tensor([True, False]), hard_actions=False)
    tensor([[[0.5000, 0.5000, 0.0000, 0.0000, 0.0000, 0.0000]]])
    """
    count, _, batch_size, _ = noise.shape
    action_dim = raw.shape[-1]
    mask = mask.reshape(mask.shape[0], 1, -1)
    logits = raw.masked_fill(~mask, MASKED_LOGIT) + noise
    if hard_actions:  # the target needs no gradient: the one-hot sample alone
        soft = torch.nn.functional.one_hot(logits.argmax(-1), action_dim).to(raw.dtype)
    else:
        # Softmax over a last dimension of a handful of actions runs row by row; laid out with
        # the batch innermost it vectorizes over the batch instead (an order of magnitude faster).
        soft = torch.softmax(logits.transpose(-1, -2).contiguous(), dim=-2).transpose(-1, -2)
    continuous = torch.tanh(raw) * mask
    actions = torch.where(discrete.reshape(-1, 1, 1), soft, continuous)
    return actions.transpose(1, 2).reshape(count, batch_size, -1)


def own_policy_action(
    raw: torch.Tensor,
    noise: torch.Tensor,
    mask: torch.Tensor,
    discrete: torch.Tensor,
    *,
    hard_actions: bool,
) -> torch.Tensor:
    """``[S, B, A]`` each updated agent's own action for the actor loss, differentiable in ``raw``:
    the Gumbel-softmax sample of a discrete agent, tanh of a continuous one.

    With ``hard_actions`` the critic sees the one-hot sample (as in the buffer) while the gradient
    is the softmax's (straight-through). ``raw`` ``[S, B, A]`` holds the updated agents' actor
    outputs; ``noise`` ``[S, B, A]``, ``mask`` ``[S, A]`` and ``discrete`` ``[S]`` are their rows.

    >>> raw = torch.tensor([[[0.0, 1.0, 0.0]]], requires_grad=True)
    >>> mask, discrete = torch.tensor([[True, True, False]]), torch.tensor([True])
    >>> action = own_policy_action(raw, torch.zeros(1, 1, 3), mask, discrete, hard_actions=True)
    >>> action.detach(), action.requires_grad
    (tensor([[[0., 1., 0.]]]), True)
    """
    action_dim = raw.shape[-1]
    mask = mask.unsqueeze(1)
    perturbed = raw.masked_fill(~mask, MASKED_LOGIT) + noise
    soft = torch.softmax(perturbed, dim=-1)
    if hard_actions:
        # Straight-through: the critic sees the one-hot sample, the gradient is the softmax's.
        hard = torch.nn.functional.one_hot(perturbed.argmax(-1), action_dim).to(soft.dtype)
        soft = soft + (hard - soft).detach()
    continuous = torch.tanh(raw) * mask
    return torch.where(discrete.reshape(-1, 1, 1), soft, continuous)
