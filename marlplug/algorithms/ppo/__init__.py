"""Joint PPO (plugin name ``ppo``; MAPPO or IPPO through ``algorithm.critic``).

- :mod:`~marlplug.algorithms.ppo.ppo`: the plugin (:class:`PPO`), its networks and loss;
  :mod:`~marlplug.algorithms.ppo.options` its ``algorithm:`` options.
- :mod:`~marlplug.algorithms.ppo.program`: its update ``U`` over agent rows, one forward and one
  backward of the joint loss for any set of agents; :mod:`~marlplug.algorithms.ppo.step` the same
  update in place on a loss and its optimizer (the joint trainer's form).
- :mod:`~marlplug.algorithms.ppo.rollouts`: on-policy rollouts with per-agent GAE, cut into
  minibatches; :mod:`~marlplug.algorithms.ppo.iteration` what each minibatch carries for its
  iteration (scheduled learning rate and entropy, observation statistics).
- :mod:`~marlplug.algorithms.ppo.params` which parameters belong to which agent,
  :mod:`~marlplug.algorithms.ppo.rows` which columns of an agent's row hold them,
  :mod:`~marlplug.algorithms.ppo.loss_output` the loss's output as per-agent stats.

Example:
    >>> from marlplug.algorithms.ppo import PPO
    >>> PPO.Options().critic
    'joint'
"""

from marlplug.algorithms.ppo.options import PpoOptions
from marlplug.algorithms.ppo.ppo import PPO, UpdateStepResult, loss_parameter_groups, seeded
from marlplug.algorithms.ppo.program import PpoProgram

__all__ = ["PPO", "PpoOptions", "PpoProgram", "UpdateStepResult", "loss_parameter_groups", "seeded"]
