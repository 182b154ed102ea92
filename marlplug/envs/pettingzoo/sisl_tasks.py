"""SISL's cooperative tasks on the ``pettingzoo`` backend (extra ``sisl``: pymunk and Box2D).

PettingZoo 1.27 ships pursuit and multiwalker; waterworld was removed from ``pettingzoo.sisl``.
Without the extra, building either is one line: ``pip install 'marlplug[sisl]'``.
"""

from __future__ import annotations

from marlplug.envs.pettingzoo.scenario import pettingzoo_scenario
from marlplug.envs.pettingzoo.task import PettingZooTask

PURSUIT = PettingZooTask(
    name="pursuit",
    module="pettingzoo.sisl.pursuit_v5",
    suite="sisl",
    summary="pursuers on a grid surround and catch random evaders (7x7x3 views, flattened)",
    extra="sisl",
    signature="pettingzoo.sisl.pursuit.pursuit_base:Pursuit",
    actions="discrete",
)
MULTIWALKER = PettingZooTask(
    name="multiwalker",
    module="pettingzoo.sisl.multiwalker_v9",
    suite="sisl",
    summary="bipedal walkers carry a package together (continuous torques)",
    extra="sisl",
    signature="pettingzoo.sisl.multiwalker.multiwalker_base:MultiWalkerEnv",
    actions="continuous",
    dead_agents=True,  # remove_on_fall: a fallen walker leaves the episode
)
SISL_TASKS: tuple[PettingZooTask, ...] = (PURSUIT, MULTIWALKER)

Pursuit = pettingzoo_scenario(PURSUIT)
Multiwalker = pettingzoo_scenario(MULTIWALKER)
