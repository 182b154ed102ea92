"""Learner algorithms: each one's update rule ``U`` as a pure program over per-agent state rows.

- :mod:`~marlplug.algorithms.protocol`: the contract (``LearnerAlgorithm.bind`` -> ``LearnerProgram``
  with ``update(theta_all, opt_state, batch, agents, seed)``; ``rollouts`` -> ``RolloutSource``).
- ``ppo`` (:mod:`~marlplug.algorithms.ppo`): joint PPO; :mod:`~marlplug.algorithms.ppo_program` its
  update (one forward and one backward of the joint loss for any set of agents),
  :mod:`~marlplug.algorithms.ppo_rollouts` its on-policy rollouts with per-agent GAE,
  :mod:`~marlplug.algorithms.ppo_params` which parameters belong to which agent.
- ``maddpg`` (:mod:`~marlplug.algorithms.maddpg`): options and plugin;
  :mod:`~marlplug.algorithms.maddpg_program` its update, :mod:`~marlplug.algorithms.maddpg_data` its
  replay buffer.
- :mod:`~marlplug.algorithms.state_codec` (named tensors <-> one float row per agent),
  :mod:`~marlplug.algorithms.spaces` and :mod:`~marlplug.algorithms.env_adapter` (an env's agents as
  algorithms see them), :mod:`~marlplug.algorithms.row_bridge` (a temporary view of the programs for
  today's coded runtime and runners).
"""
