"""The two inputs of the Q-learners' TD target that options change: the next state's value
(:func:`next_value`: the target network's maximum, or double Q-learning's) and the reward
(:func:`standardized_rewards`: as it is, or standardized by running statistics).

Both are EPyMARL's defaults for its value-based algorithms (``double_q``, ``standardise_rewards``)
and its defenses against a Q-network that bootstraps from its own noise: the maximum over noisy
estimates is biased upward (van Hasselt et al. 2016) and feeds that bias back through the target,
and a sparse reward (LBF's, 0 on nearly every step) is small against the initial network's values.
"""

from __future__ import annotations

import torch

from marlplug.nn.obs_norm import EPSILON, merged_moments

__all__ = ["REWARD_MOMENTS", "fresh_reward_moments", "next_value", "standardized_rewards"]

#: The ``opt_state`` entry holding the running reward statistics (``standardize_rewards``):
#: mean, variance and count of every reward standardized so far.
REWARD_MOMENTS = "reward_moments"


def next_value(
    target_q: torch.Tensor, valid: torch.Tensor, online_q: torch.Tensor | None = None
) -> torch.Tensor:
    """The value ``[F, B]`` the TD target bootstraps from, of the target network's Q-values
    ``target_q`` ``[F, B, A]`` of the next observations, over the actions ``valid`` allows
    (broadcast to ``target_q``): their maximum, or, given the online network's Q-values
    ``online_q`` of the same observations, the target's value of the online network's greedy action
    (double Q-learning; TorchRL's ``DQNLoss(double_dqn=True)`` computes the same). Where no action
    is valid the value is 0 (no bootstrap), rather than ``-inf``.

    Examples:
        >>> target = torch.tensor([[[1.0, 5.0, 3.0]]])
        >>> online = torch.tensor([[[0.0, 1.0, 2.0]]])  # the online network prefers action 2
        >>> valid = torch.ones(1, 1, 3, dtype=torch.bool)
        >>> next_value(target, valid).tolist(), next_value(target, valid, online).tolist()
        ([[5.0]], [[3.0]])
        >>> next_value(target, valid & torch.tensor([True, True, False]), online).tolist()
        [[5.0]]
    """
    valid = valid.expand_as(target_q)
    if online_q is None:
        value = target_q.masked_fill(~valid, -torch.inf).amax(-1)
    else:
        greedy = online_q.masked_fill(~valid, -torch.inf).argmax(-1, keepdim=True)
        value = target_q.gather(-1, greedy).squeeze(-1)
    # No valid action at all (never in LBF): no bootstrap, rather than 0 * -inf = NaN.
    return torch.where(valid.any(-1), value, torch.zeros_like(value))


def fresh_reward_moments(rows: int) -> torch.Tensor:
    """``[rows, 3]`` statistics of no reward yet: mean 0, variance 1, count 0 (the first
    minibatch replaces them with its own).

    Examples:
        >>> fresh_reward_moments(2).tolist()
        [[0.0, 1.0, 0.0], [0.0, 1.0, 0.0]]
    """
    return torch.tensor([0.0, 1.0, 0.0]).expand(rows, 3).clone()


def standardized_rewards(
    moments: torch.Tensor, rewards: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rewards ``[R, N]`` (``R`` reward streams: one per agent, or the team's) standardized by
    their running statistics ``moments`` ``[R, 3]`` after folding the ``N`` rewards into them, as
    EPyMARL's learners do with each minibatch: ``(r - mean) / sqrt(var + 1e-8)``. Returns the
    standardized rewards and the new statistics.

    Each stream's statistics read only its own rewards, so an agent's update still reads only its
    own rows and the minibatch (coded IQL stays exact). Every minibatch counts, replayed
    transitions again: the statistics are those of the rewards the updates see.

    Examples:
        >>> rewards = torch.tensor([[0.0, 0.0, 0.0, 1.0]])  # a sparse reward
        >>> scaled, moments = standardized_rewards(fresh_reward_moments(1), rewards)
        >>> [round(x, 3) for x in scaled[0].tolist()], moments.tolist()
        ([-0.577, -0.577, -0.577, 1.732], [[0.25, 0.1875, 4.0]])
    """
    stats = moments.double()
    # A decoded (coded) row may carry a variance of -1e-12: never the root of a negative.
    mean, var, count = stats[:, 0], stats[:, 1].clamp(min=0.0), stats[:, 2]
    mean, var, count = merged_moments(mean, var, count, rewards.double().transpose(0, 1))
    scaled = (rewards.double() - mean.unsqueeze(1)) / (var.unsqueeze(1) + EPSILON).sqrt()
    new_moments = torch.stack([mean, var, count], dim=1).to(moments.dtype)
    return scaled.to(rewards.dtype), new_moments
