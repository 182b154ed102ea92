"""Which of a joint PPO loss's parameters belong to which agent (per-agent and shared parameters)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from torch import nn

from marlplug.losses.joint_ppo import JointPPOLoss
from marlplug.optim.agent_layout import split_parameters
from marlplug.optim.groups import AgentGroupParameters


def group_parameters(
    modules_by_group: Mapping[str, Sequence[nn.Module]],
) -> list[AgentGroupParameters]:
    """Collect each group's per-agent and shared parameters from its modules (actor, critic, ...).

    See :func:`marlplug.optim.agent_layout.split_parameters` for how they are told apart.

    Examples:
        >>> from marlplug.nn import StackedMLP
        >>> (group,) = group_parameters({"agent": [StackedMLP(n_agents=3, in_features=2,
        ...                                                    out_features=1, num_cells=[4])]})
        >>> group.n_agents, len(group.params), len(group.shared)
        (3, 4, 0)
    """
    groups = []
    for group, modules in modules_by_group.items():
        n_agents, per_agent, shared = split_parameters(modules, group)
        groups.append(
            AgentGroupParameters(group=group, n_agents=n_agents, params=per_agent, shared=shared)
        )
    return groups


def loss_parameter_groups(loss: JointPPOLoss) -> list[AgentGroupParameters]:
    """Each group's stacked parameters (its actor's and critic's) in ``loss.groups`` order."""
    return group_parameters(
        {group: [loss.actor_networks[group], loss.critic_networks[group]] for group in loss.groups}
    )
