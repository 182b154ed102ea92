"""MAgent2's many-agent grid battles on the ``pettingzoo`` backend (extra ``magent2``).

``battle``: two armies of ``map_size``-dependent size (162 agents at the default 45, 2 groups,
``red`` and ``blue``); ``gather``: 495 omnivores compete for food. Observations are 13x13x5 and
15x15x5 views, flattened per agent; dead agents leave the episode (each group's ``mask`` entry).
Without the extra, building either is one line: ``pip install 'marlplug[magent2]'``.
"""

from __future__ import annotations

from marlplug.envs.pettingzoo.scenario import pettingzoo_scenario
from marlplug.envs.pettingzoo.task import PettingZooTask

BATTLE = PettingZooTask(
    name="battle",
    module="magent2.environments.battle_v4",
    suite="magent2",
    summary="two armies fight on a grid; hundreds of agents (red and blue groups)",
    extra="magent2",
    signature="magent2.environments.battle_v4:parallel_env",
    actions="discrete",
    # Passed through **reward_args (magent2.environments.battle.battle.default_reward_args).
    extra_options={
        "step_reward": -0.005,
        "dead_penalty": -0.1,
        "attack_penalty": -0.1,
        "attack_opponent_reward": 0.2,
    },
    dead_agents=True,
)
GATHER = PettingZooTask(
    name="gather",
    module="magent2.environments.gather_v5",
    suite="magent2",
    summary="495 omnivores gather food and may attack each other",
    extra="magent2",
    signature="magent2.environments.gather_v5:parallel_env",
    actions="discrete",
    extra_options={
        "step_reward": -0.01,
        "attack_penalty": -0.1,
        "dead_penalty": -1.0,
        "attack_food_reward": 0.5,
    },
    dead_agents=True,
)
MAGENT2_TASKS: tuple[PettingZooTask, ...] = (BATTLE, GATHER)

Battle = pettingzoo_scenario(BATTLE)
Gather = pettingzoo_scenario(GATHER)
