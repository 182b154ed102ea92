"""Built-in environments (``marlplug_envs``): the paper's four scenarios on PettingZoo/mpe2, and
PettingZoo's tasks by name (the ``pettingzoo`` backend, :mod:`marlplug.envs.pettingzoo`) and
Gymnasium's multi-agent LBF and RWARE tasks by id (``gymnasium``, :mod:`marlplug.envs.gymnasium`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from marlplug.hookspecs import hookimpl

#: (task, module, class) of the ``pettingzoo`` backend's tasks: imported on first use, so a suite
#: whose extra is not installed fails alone (with the extra to install).
_PETTINGZOO: tuple[tuple[str, str, str], ...] = (
    ("simple_reference", "marlplug.envs.pettingzoo.mpe2_tasks", "SimpleReference"),
    ("simple_speaker_listener", "marlplug.envs.pettingzoo.mpe2_tasks", "SimpleSpeakerListener"),
    ("simple_tag", "marlplug.envs.pettingzoo.mpe2_tasks", "SimpleTag"),
    ("simple_world_comm", "marlplug.envs.pettingzoo.mpe2_tasks", "SimpleWorldComm"),
    ("simple_crypto", "marlplug.envs.pettingzoo.mpe2_tasks", "SimpleCrypto"),
    ("simple_push", "marlplug.envs.pettingzoo.mpe2_tasks", "SimplePush"),
    ("simple_adversary", "marlplug.envs.pettingzoo.mpe2_tasks", "SimpleAdversary"),
    ("pursuit", "marlplug.envs.pettingzoo.sisl_tasks", "Pursuit"),
    ("multiwalker", "marlplug.envs.pettingzoo.sisl_tasks", "Multiwalker"),
    ("battle", "marlplug.envs.pettingzoo.magent2_tasks", "Battle"),
    ("gather", "marlplug.envs.pettingzoo.magent2_tasks", "Gather"),
)


#: (task id, module, class) of the ``gymnasium`` backend's tasks (:mod:`marlplug.envs.gymnasium`).
_GYMNASIUM: tuple[tuple[str, str, str], ...] = (
    ("Foraging-8x8-2p-2f-coop-v3", "marlplug.envs.gymnasium.lbf_tasks", "Foraging8x82p2fCoop"),
    ("Foraging-10x10-3p-3f-v3", "marlplug.envs.gymnasium.lbf_tasks", "Foraging10x103p3f"),
    ("rware-tiny-2ag-v2", "marlplug.envs.gymnasium.rware_tasks", "RwareTiny2ag"),
    ("rware-tiny-4ag-v2", "marlplug.envs.gymnasium.rware_tasks", "RwareTiny4ag"),
)


@hookimpl
def marlplug_envs() -> Mapping[str, Any]:
    """The paper's four scenarios on the ``mpe`` backend (PettingZoo/mpe2) and the known tasks of the
    ``pettingzoo`` and ``gymnasium`` backends."""
    return {
        "mpe/cooperative_navigation": "marlplug.envs.mpe:CooperativeNavigation",
        "mpe/predator_prey": "marlplug.envs.mpe:PredatorPrey",
        "mpe/physical_deception": "marlplug.envs.mpe:PhysicalDeception",
        "mpe/keep_away": "marlplug.envs.mpe:KeepAway",
        **{
            f"pettingzoo/{name}": f"{module}:{attribute}" for name, module, attribute in _PETTINGZOO
        },
        **{f"gymnasium/{name}": f"{module}:{attribute}" for name, module, attribute in _GYMNASIUM},
    }
