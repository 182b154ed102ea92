"""The ``gymnasium`` backend: Gymnasium multi-agent tasks (tuples of per-agent spaces) by their
registered ids, each as one TorchRL agent group ``"agent"``.

Naming: ``env: {backend: gymnasium, name: <Gymnasium id>}``, the registry key ``gymnasium/<id>``; a
config names a task from this registry of known tasks, never a module path (a plugin adds tasks
with :func:`gymnasium_scenario`).

Known tasks (``marlplug envs`` lists each with its options and defaults):

- Level-Based Foraging (extra ``lbf``: ``pip install 'marlplug[lbf]'``):
  ``Foraging-8x8-2p-2f-coop-v3``, ``Foraging-10x10-3p-3f-v3``; each player's valid actions are
  the group's ``action_mask`` (TorchRL's key), which PPO's policy and loss respect.
- RWARE (extra ``rware``): ``rware-tiny-2ag-v2``, ``rware-tiny-4ag-v2``.

Options are the env class's constructor arguments with the id's registered values as defaults
(LBF: ``players``, ``field_size``, ``max_num_food``, ``sight``, ``force_coop``, ...; RWARE:
``n_agents``, ``shelf_columns``, ``request_queue_size``, ...); ``max_steps`` sets the episode
length. Enum options (RWARE's ``reward_type``, ``observation_type``) keep their registered values.
"""

from marlplug.envs.gymnasium.adapter import TupleAgentsEnv, lbf_action_mask
from marlplug.envs.gymnasium.task import GymnasiumScenario, GymnasiumTask, gymnasium_scenario

__all__ = [
    "GymnasiumScenario",
    "GymnasiumTask",
    "TupleAgentsEnv",
    "gymnasium_scenario",
    "lbf_action_mask",
]
