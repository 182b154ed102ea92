"""VDN: value decomposition, the team's Q the sum of the agents' Q-values (TorchRL's ``VDNMixer``),
learned from one team TD target on the summed reward (plugin name ``vdn``).

The mixer's gradient couples every agent's update (each agent's TD error is the team's), so an
update is not a function of the updated agent's rows alone: coded training is refused in one line
rather than run inexactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from torchrl.envs import EnvBase
from torchrl.modules.models.multiagent import VDNMixer

from marlplug.algorithms.q.iql import IQL, discrete_agents
from marlplug.algorithms.q.program import QProgram
from marlplug.algorithms.spaces import AgentSpace
from marlplug.errors import UserError

if TYPE_CHECKING:
    from marlplug.config import MarlplugConfig

__all__ = ["VDN"]

#: Why a coded VDN run is refused.
CODING_REFUSAL = "coding: vdn's mixer couples every agent's update; run it centralized"


class VDN(IQL):
    """Value decomposition networks (plugin name ``vdn``): the team's Q is the agents' summed.

    IQL's per-agent Q-networks, options and exploration, trained on the team's TD error through
    TorchRL's ``VDNMixer``.

    Examples:
        >>> algo = VDN(hidden_sizes=[8])
        >>> agents = [AgentSpace(f"agent_{i}", "agent", obs_dim=6, action_dim=5, discrete=True)
        ...           for i in range(3)]
        >>> type(algo.program(agents).mixer).__name__
        'VDNMixer'
    """

    def program(self, agents: Sequence[AgentSpace]) -> QProgram:
        """The update program for these agents (in this order), summing their Q-values."""
        return QProgram(self.options, agents, mixer=VDNMixer(n_agents=len(agents), device="cpu"))

    def bind(self, env: EnvBase, config: MarlplugConfig | None = None) -> QProgram:
        """The update program for ``env``'s agents; a one-line error for continuous actions or a
        ``coding:`` section."""
        if config is not None and config.coding is not None:
            raise UserError(CODING_REFUSAL)
        return self.attached(self.program(discrete_agents(env, "vdn")), env)
