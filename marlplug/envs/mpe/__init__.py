"""The four paper scenarios on PettingZoo's mpe2, wrapped by TorchRL's ``PettingZooWrapper``."""

from marlplug.envs.mpe.base import MpeScenario
from marlplug.envs.mpe.cooperative_navigation import CooperativeNavigation
from marlplug.envs.mpe.keep_away import KeepAway, KeepAwayWorld
from marlplug.envs.mpe.physical_deception import PhysicalDeception
from marlplug.envs.mpe.predator_prey import PredatorPrey

__all__ = [
    "CooperativeNavigation",
    "KeepAway",
    "KeepAwayWorld",
    "MpeScenario",
    "PhysicalDeception",
    "PredatorPrey",
]
