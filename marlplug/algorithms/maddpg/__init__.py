"""MADDPG and IDDPG: a deterministic actor and a critic per agent, trained from replay.

- :mod:`~marlplug.algorithms.maddpg.maddpg`: the plugin ``maddpg`` (:class:`MADDPG`, joint
  critics); :mod:`~marlplug.algorithms.maddpg.iddpg` the plugin ``iddpg`` (:class:`IDDPG`, the
  same with local critics); :mod:`~marlplug.algorithms.maddpg.options` their ``algorithm:``
  options.
- :mod:`~marlplug.algorithms.maddpg.program`: the per-agent update over agent rows;
  :mod:`~marlplug.algorithms.maddpg.actions` its action sampling (Gumbel noise, target and policy
  actions); :mod:`~marlplug.algorithms.maddpg.critic` what a critic reads (joint or local).
- The replay buffer and rollout source are shared with every off-policy algorithm:
  :mod:`marlplug.algorithms.replay`.

Example:
    >>> from marlplug.algorithms.maddpg import IDDPG, MADDPG
    >>> MADDPG.Options().critic, IDDPG.Options().critic
    ('joint', 'local')
"""

from marlplug.algorithms.maddpg.iddpg import IDDPG, IddpgOptions
from marlplug.algorithms.maddpg.maddpg import MADDPG, MaddpgProgram
from marlplug.algorithms.maddpg.options import MaddpgOptions

__all__ = ["IDDPG", "MADDPG", "IddpgOptions", "MaddpgOptions", "MaddpgProgram"]
