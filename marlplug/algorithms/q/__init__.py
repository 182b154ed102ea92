"""The value-based family: Q-networks per agent with replay, target networks and epsilon-greedy
exploration (:mod:`~marlplug.algorithms.q.options`, :mod:`~marlplug.algorithms.q.program`,
:mod:`~marlplug.algorithms.q.exploration`); ``iql`` (:mod:`~marlplug.algorithms.q.iql`),
``vdn`` (:mod:`~marlplug.algorithms.q.vdn`) and ``qmix`` (:mod:`~marlplug.algorithms.q.qmix`)."""

from marlplug.algorithms.q.iql import IQL
from marlplug.algorithms.q.options import QMixOptions, QOptions
from marlplug.algorithms.q.program import QProgram
from marlplug.algorithms.q.qmix import QMIX
from marlplug.algorithms.q.vdn import VDN

__all__ = ["IQL", "QMIX", "VDN", "QMixOptions", "QOptions", "QProgram"]
