"""MADDPG's critics as a pure function of stacked per-agent parameters (what
:class:`~marlplug.algorithms.maddpg.program.MaddpgProgram` runs for the TD target, the critic loss and
the actor's objective)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch

from marlplug.nn.functional import stacked_linear, stacked_mlp

#: What each agent's critic reads: every agent's observation and action (``joint``, MADDPG's
#: centralized critic) or its own agent's only (``local``, independent DDPG critics).
CriticInput = Literal["joint", "local"]


def critic_values(
    obs: torch.Tensor,
    actions: torch.Tensor,
    params: Sequence[torch.Tensor],
    index: torch.Tensor,
    *,
    critic: CriticInput,
    num_agents: int,
) -> torch.Tensor:
    """``[S, B]`` the critics of agents ``index`` ``[S]`` on ``[obs | actions]`` (every agent's
    with ``critic="joint"``, the own agent's with ``"local"``).

    ``obs`` ``[B, M * O]`` is shared by the ``S`` replicas, ``actions`` is ``[S, B, M * A]``, and
    ``params`` are the ``S`` replicas' stacked critic weights and biases. The first layer is split
    into its observation and action columns, so the wide joint input is never copied per replica
    and autograd only ever forms gradients for the narrow action part.

    Examples:
        >>> params = [torch.ones(2, 3 + 2, 1), torch.zeros(2, 1)]  # local critics of 2 replicas
        >>> obs, actions = torch.ones(4, 2 * 3), torch.ones(2, 4, 2 * 2)
        >>> critic_values(obs, actions, params, torch.tensor([0, 1]), critic="local",
        ...               num_agents=2)
        tensor([[5., 5., 5., 5.],
                [5., 5., 5., 5.]])
    """
    count = actions.shape[0]
    weight, bias = params[0], params[1]
    if critic == "joint":
        critic_obs, critic_actions = obs.unsqueeze(0).expand(count, -1, -1), actions
    else:
        rows = obs.shape[0]
        critic_obs = obs.reshape(rows, num_agents, -1).transpose(0, 1).index_select(0, index)
        critic_actions = actions.reshape(count, rows, num_agents, -1)[torch.arange(count), :, index]
    obs_width = critic_obs.shape[-1]
    hidden = stacked_linear(critic_obs, weight[:, :obs_width], bias.unsqueeze(1))
    hidden = stacked_linear(critic_actions, weight[:, obs_width:], hidden)
    if len(params) > 2:
        hidden = stacked_mlp(torch.relu_(hidden), params[2:])
    return hidden.squeeze(-1)
