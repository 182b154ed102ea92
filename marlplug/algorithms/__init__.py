"""Learner algorithms: each one's update rule ``U`` as a pure program over per-agent state rows.

One subpackage per family, each with its plugins, options and update program:

- :mod:`~marlplug.algorithms.ppo`: joint PPO (``ppo``; MAPPO or IPPO through ``critic``).
- :mod:`~marlplug.algorithms.maddpg`: deterministic actors with joint (``maddpg``) or local
  (``iddpg``) critics.
- :mod:`~marlplug.algorithms.sac`: soft actor-critic (``isac``, ``masac``), per-agent TanhNormal or
  categorical actors, twin critics and temperatures, on MADDPG's critic code.
- :mod:`~marlplug.algorithms.q`: the value-based family (``iql``, ``vdn``, ``qmix``), per-agent
  Q-networks with target networks and epsilon-greedy exploration.

What the families share sits beside them:

- :mod:`~marlplug.algorithms.protocol`: the contract (``LearnerAlgorithm.bind`` -> ``LearnerProgram``
  with ``update(theta_all, opt_state, batch, agents, seed)``; ``rollouts`` -> ``RolloutSource``).
- :mod:`~marlplug.algorithms.replay`: the off-policy replay buffer and
  :class:`~marlplug.algorithms.replay.ReplayRollouts`, the rollout source of every program that can
  act (MADDPG, SAC, the Q-learners, plugins); :mod:`~marlplug.algorithms.replay_options` the
  options they share, :mod:`~marlplug.algorithms.recurrent_options` the GRU options.
- :mod:`~marlplug.algorithms.acting` (acting with the current actors),
  :mod:`~marlplug.algorithms.state_codec` (named tensors <-> one float row per agent) and
  :mod:`~marlplug.algorithms.spaces` (the agent sizes plugins import; read by
  :func:`marlplug.envs.read_layout`).
"""
