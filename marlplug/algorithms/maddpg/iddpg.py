"""IDDPG: MADDPG with independent critics, each reading its own agent's observation and action.

That is MADDPG's ``critic: local`` option (:mod:`marlplug.algorithms.maddpg.critic`); this module
only names it, so a config can say ``algorithm: iddpg`` as BenchMARL does, and a comparison lists
it under its own name. Everything else (the update, replay, coded training) is MADDPG's.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from marlplug.algorithms.maddpg.critic import CriticInput
from marlplug.algorithms.maddpg.maddpg import MADDPG
from marlplug.algorithms.maddpg.options import MaddpgOptions

__all__ = ["IDDPG", "IddpgOptions"]


class IddpgOptions(MaddpgOptions):
    """MADDPG's hyperparameters with independent (``local``) critics by default."""

    critic: CriticInput = Field(
        "local",
        description=(
            "What each agent's critic reads: its own agent's observation and action (local, "
            "IDDPG's default) or every agent's (joint: then it is MADDPG)."
        ),
    )


class IDDPG(MADDPG):
    """Independent DDPG (plugin name ``iddpg``): :class:`~marlplug.algorithms.maddpg.MADDPG` whose
    critics are local by default, each agent learning from its own observation and action alone.

    Examples:
        >>> from marlplug.algorithms.spaces import AgentSpace
        >>> algo = IDDPG()
        >>> algo.options.critic
        'local'
        >>> agents = [AgentSpace(f"agent_{i}", "agent", obs_dim=6, action_dim=5, discrete=True)
        ...           for i in range(3)]
        >>> algo.program(agents).critic_sizes[0]  # one agent's observation and action
        11
    """

    Options = IddpgOptions

    def __init__(self, **options: Any) -> None:
        self.options = IddpgOptions(**options)
