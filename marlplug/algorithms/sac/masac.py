"""MASAC: soft actor-critic with centralized critics, each agent's twin critics reading every
agent's observation and action (plugin name ``masac``).

That is ISAC's ``critic: joint`` option, as MADDPG is IDDPG's; this module only names it with its
default, so a config says ``algorithm: masac`` as BenchMARL does. Each agent keeps its own critic
rows, so the update still splits by agent and trains coded exactly as centralized.
"""

from __future__ import annotations

from marlplug.algorithms.sac.isac import ISAC
from marlplug.algorithms.sac.options import MasacOptions

__all__ = ["MASAC"]


class MASAC(ISAC):
    """Multi-agent SAC (plugin name ``masac``): :class:`~marlplug.algorithms.sac.isac.ISAC` whose
    critics are joint by default.

    Examples:
        >>> from marlplug.algorithms.spaces import AgentSpace
        >>> agents = [AgentSpace(f"agent_{i}", "agent", obs_dim=6, action_dim=2, discrete=False,
        ...                      low=-1.0, high=1.0) for i in range(3)]
        >>> MASAC(hidden_sizes=[8]).program(agents).critic_sizes[0]  # every agent's obs and action
        24
    """

    Options = MasacOptions
    _name = "masac"
