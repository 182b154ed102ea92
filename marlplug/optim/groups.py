"""Which parameters belong to which agent: a group's stacked per-agent parameters and its shared ones.

A per-agent parameter has the agent as its leading dimension (``param[i]`` is agent ``i``'s);
shared parameters (``MultiAgentMLP(share_params=True)``) belong to every agent of the group.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from torch import nn

from marlplug.errors import UserError


@dataclass
class AgentGroupParameters:
    """The parameters of one agent group; ``param[i]`` belongs to agent ``i`` of the group.

    ``shared`` parameters have no agent dimension: every agent of the group uses all of them.

    Examples:
        >>> import torch
        >>> w = nn.Parameter(torch.zeros(3, 4))
        >>> AgentGroupParameters(group="agent", n_agents=3, params=[w]).n_agents
        3
    """

    group: str
    n_agents: int
    params: list[nn.Parameter]
    shared: list[nn.Parameter] = field(default_factory=list)

    def __post_init__(self) -> None:
        for param in self.params:
            if param.ndim == 0 or param.shape[0] != self.n_agents:
                raise UserError(
                    f"group '{self.group}': parameter of shape {tuple(param.shape)} has no leading "
                    f"agent dimension of size {self.n_agents}"
                )
