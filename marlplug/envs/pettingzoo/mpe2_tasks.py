"""mpe2's tasks on the ``pettingzoo`` backend, as mpe2 defines them (names, rewards, options).

The paper's four scenarios live on the ``mpe`` backend with marlplug's own team-size options;
these are mpe2's other tasks (and simple_tag/simple_adversary as mpe2 ships them), core
dependencies only.
"""

from __future__ import annotations

from marlplug.envs.pettingzoo.scenario import pettingzoo_scenario
from marlplug.envs.pettingzoo.task import PettingZooTask

MPE2_TASKS: tuple[PettingZooTask, ...] = (
    PettingZooTask(
        name="simple_reference",
        module="mpe2.simple_reference_v3",
        suite="mpe2",
        summary="2 agents each guide the other to a landmark only it knows, by talking",
    ),
    PettingZooTask(
        name="simple_speaker_listener",
        module="mpe2.simple_speaker_listener_v4",
        suite="mpe2",
        summary="a mute listener moves to the landmark a static speaker names (2 groups)",
    ),
    PettingZooTask(
        name="simple_tag",
        module="mpe2.simple_tag_v3",
        suite="mpe2",
        summary="slower adversaries chase faster good agents around obstacles",
    ),
    PettingZooTask(
        name="simple_world_comm",
        module="mpe2.simple_world_comm_v3",
        suite="mpe2",
        summary="simple_tag with forests, food and a leader adversary who sees all (3 groups)",
    ),
    PettingZooTask(
        name="simple_crypto",
        module="mpe2.simple_crypto_v3",
        suite="mpe2",
        summary="alice sends bob a message encrypted with their key; eve listens (3 groups)",
    ),
    PettingZooTask(
        name="simple_push",
        module="mpe2.simple_push_v3",
        suite="mpe2",
        summary="an agent reaches its landmark while an adversary pushes it away",
    ),
    PettingZooTask(
        name="simple_adversary",
        module="mpe2.simple_adversary_v3",
        suite="mpe2",
        summary="N good agents cover the target landmark, hiding it from one adversary",
    ),
)

SimpleReference = pettingzoo_scenario(MPE2_TASKS[0])
SimpleSpeakerListener = pettingzoo_scenario(MPE2_TASKS[1])
SimpleTag = pettingzoo_scenario(MPE2_TASKS[2])
SimpleWorldComm = pettingzoo_scenario(MPE2_TASKS[3])
SimpleCrypto = pettingzoo_scenario(MPE2_TASKS[4])
SimplePush = pettingzoo_scenario(MPE2_TASKS[5])
SimpleAdversary = pettingzoo_scenario(MPE2_TASKS[6])
