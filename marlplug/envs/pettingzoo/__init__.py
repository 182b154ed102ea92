"""The ``pettingzoo`` backend: PettingZoo parallel tasks by name, through TorchRL's ``PettingZooWrapper``.

Naming: ``env: {backend: pettingzoo, name: <task>}``, the registry key ``pettingzoo/<task>``, where
``<task>`` is the task's PettingZoo module name without its version (``simple_reference`` for
``mpe2.simple_reference_v3``). A config names a task from this registry of known tasks, never a
module path; a plugin adds tasks with :func:`pettingzoo_scenario` (see its docstring).

Known tasks (``marlplug envs`` lists each with its options and defaults):

- mpe2 (core dependencies): ``simple_reference``, ``simple_speaker_listener``, ``simple_tag``,
  ``simple_world_comm``, ``simple_crypto``, ``simple_push``, ``simple_adversary``
  (:mod:`~marlplug.envs.pettingzoo.mpe2_tasks`). The paper's four scenarios are on the ``mpe``
  backend, with marlplug's team-size options.
- SISL (extra ``sisl``: ``pip install 'marlplug[sisl]'``): ``pursuit``, ``multiwalker``
  (continuous actions) (:mod:`~marlplug.envs.pettingzoo.sisl_tasks`); PettingZoo 1.27 has no
  waterworld.
- MAgent2 (extra ``magent2``): ``battle`` and ``gather``, hundreds of agents
  (:mod:`~marlplug.envs.pettingzoo.magent2_tasks`).

Without a suite's extra, ``marlplug envs`` skips its tasks with a warning and building one is one
line naming the extra to install.

Options are the task's own constructor arguments (``N``, ``num_good``, ``local_ratio``, ...), read
from its signature; ``max_steps`` sets the episode length (``max_cycles``) and ``continuous_actions``
the action kind where the task offers both. ``agents`` is the task's own count (read-only). Agents
are grouped by name (``speaker_0`` -> group ``speaker``), so agents of different sizes are in
different groups; image observations are flattened per agent.
"""

from marlplug.envs.pettingzoo.scenario import PettingZooScenario, pettingzoo_scenario
from marlplug.envs.pettingzoo.task import PettingZooTask

__all__ = ["PettingZooScenario", "PettingZooTask", "pettingzoo_scenario"]
