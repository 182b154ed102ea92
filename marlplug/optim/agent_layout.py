"""How many agents a group's networks hold, and which parameters are per agent and which shared.

Per-agent parameters carry the agent as their leading dimension (marlplug's stacked layers,
``MultiAgentMLP(share_params=False)``); shared ones (``MultiAgentMLP(share_params=True)``, any
plain layer every agent runs) belong to the whole group.
"""

from __future__ import annotations

from collections.abc import Iterable

from torch import nn

from marlplug.errors import UserError


def agent_count(modules: Iterable[nn.Module]) -> int | None:
    """The ``n_agents`` declared by the first submodule that has one (``MultiAgentMLP``, stacked
    layers), or ``None`` when no submodule declares it.

    Examples:
        >>> from torchrl.modules import MultiAgentMLP
        >>> agent_count([MultiAgentMLP(n_agent_inputs=4, n_agent_outputs=1, n_agents=3,
        ...                            centralized=True, share_params=True, num_cells=[8])])
        3
    """
    for module in modules:
        for submodule in module.modules():
            n_agents = getattr(submodule, "n_agents", None)
            if isinstance(n_agents, int) and n_agents > 0:
                return n_agents
    return None


def _shared_parameter_ids(modules: Iterable[nn.Module]) -> tuple[set[int], set[int]]:
    """Ids of parameters declared shared / per agent by their ``share_params`` module."""
    shared: set[int] = set()
    per_agent: set[int] = set()
    for module in modules:
        for submodule in module.modules():
            share = getattr(submodule, "share_params", None)
            if isinstance(share, bool):
                target = shared if share else per_agent
                target.update(id(param) for param in submodule.parameters())
    return shared, per_agent


def split_parameters(
    modules: Iterable[nn.Module], group: str
) -> tuple[int, list[nn.Parameter], list[nn.Parameter]]:
    """``(n_agents, per_agent, shared)`` parameters of one group's networks (deduplicated).

    A parameter is shared when its module says ``share_params=True``, per agent when its module
    says ``share_params=False``, and otherwise per agent exactly when its leading dimension is
    ``n_agents``. Without any declared ``n_agents`` the first parameter's leading dimension is used.

    Examples:
        >>> from torchrl.modules import MultiAgentMLP
        >>> mlp = MultiAgentMLP(n_agent_inputs=4, n_agent_outputs=1, n_agents=3,
        ...                     centralized=True, share_params=True, num_cells=[8])
        >>> n, per_agent, shared = split_parameters([mlp], "agents")
        >>> n, len(per_agent), len(shared)
        (3, 0, 4)
    """
    modules = list(modules)
    unique: dict[int, nn.Parameter] = {}
    for module in modules:
        for param in module.parameters():
            unique.setdefault(id(param), param)
    if not unique:
        raise UserError(f"group '{group}' has no parameters")
    n_agents = agent_count(modules)
    if n_agents is None:
        first = next(iter(unique.values()))
        if first.ndim == 0:
            raise UserError(
                f"group '{group}': cannot tell the number of agents (no module declares n_agents)"
            )
        n_agents = int(first.shape[0])
    declared_shared, declared_per_agent = _shared_parameter_ids(modules)
    per_agent: list[nn.Parameter] = []
    shared: list[nn.Parameter] = []
    for key, param in unique.items():
        if key in declared_shared:
            shared.append(param)
        elif key in declared_per_agent or (param.ndim > 0 and param.shape[0] == n_agents):
            per_agent.append(param)
        else:
            shared.append(param)
    return n_agents, per_agent, shared
