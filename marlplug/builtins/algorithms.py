"""Built-in learner algorithms (``marlplug_algorithms``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from marlplug.hookspecs import hookimpl


@hookimpl
def marlplug_algorithms() -> Mapping[str, Any]:
    """``ppo``: joint multi-agent PPO; ``maddpg``: MADDPG as in the coded-MARL paper; ``iddpg``:
    MADDPG with independent (local) critics; ``iql``: independent Q-learning;
    ``vdn``: value decomposition (the agents' Q-values summed); ``qmix``: QMIX (mixed on the
    global state); ``isac``/``masac``: soft actor-critic with local/joint critics."""
    return {
        "ppo": "marlplug.algorithms.ppo.ppo:PPO",
        "maddpg": "marlplug.algorithms.maddpg.maddpg:MADDPG",
        "iddpg": "marlplug.algorithms.maddpg.iddpg:IDDPG",
        "iql": "marlplug.algorithms.q.iql:IQL",
        "vdn": "marlplug.algorithms.q.vdn:VDN",
        "isac": "marlplug.algorithms.sac.isac:ISAC",
        "masac": "marlplug.algorithms.sac.masac:MASAC",
        "qmix": "marlplug.algorithms.q.qmix:QMIX",
    }
