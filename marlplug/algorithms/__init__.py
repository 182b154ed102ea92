"""Learner algorithms: each one's update rule ``U`` as a pure program over per-agent state rows.

- :mod:`~marlplug.algorithms.protocol`: the contract (``LearnerAlgorithm.bind`` -> ``LearnerProgram``
  with ``update(theta_all, opt_state, batch, agents, seed)``; ``rollouts`` -> ``RolloutSource``).
- ``ppo`` (:mod:`~marlplug.algorithms.ppo`): joint PPO; :mod:`~marlplug.algorithms.ppo_program` its
  update (one forward and one backward of the joint loss for any set of agents),
  :mod:`~marlplug.algorithms.ppo_rollouts` its on-policy rollouts with per-agent GAE,
  :mod:`~marlplug.algorithms.ppo_params` which parameters belong to which agent,
  :mod:`~marlplug.algorithms.ppo_rows` which columns of an agent's row hold them.
- ``maddpg`` (:mod:`~marlplug.algorithms.maddpg`): the plugin; :mod:`~marlplug.algorithms.maddpg_options`
  its options, :mod:`~marlplug.algorithms.maddpg_program` its update,
  :mod:`~marlplug.algorithms.maddpg_actions` the update's action sampling (Gumbel noise, target and
  policy actions).
- ``iddpg`` (:mod:`~marlplug.algorithms.iddpg`): MADDPG with local critics by default.
- :mod:`~marlplug.algorithms.q`: the value-based family (``iql``), per-agent Q-networks with
  replay, target networks and epsilon-greedy exploration.
- :mod:`~marlplug.algorithms.sac`: soft actor-critic (``isac``, ``masac``), per-agent TanhNormal or
  categorical actors, twin critics and temperatures, on MADDPG's replay and critic code.
- :mod:`~marlplug.algorithms.maddpg_data`: the off-policy replay buffer and
  :class:`~marlplug.algorithms.maddpg_data.ReplayRollouts`, the rollout source of every program
  that can act (MADDPG, plugins).
- :mod:`~marlplug.algorithms.state_codec` (named tensors <-> one float row per agent) and
  :mod:`~marlplug.algorithms.spaces` (the agent sizes plugins import; read by
  :func:`marlplug.envs.read_layout`).
"""
