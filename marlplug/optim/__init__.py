"""Per-agent optimization over stacked weights (agent first): one Adam and one gradient clip.

- :mod:`marlplug.optim.adam`: :func:`~marlplug.optim.adam.adam_` (torch's fused Adam kernel with a
  step count and an on/off switch per agent), its out-of-place :func:`~marlplug.optim.adam.adam`
  and :class:`~marlplug.optim.adam.AgentAdam`, the same as a ``torch.optim.Optimizer``.
- :mod:`marlplug.optim.clip`: per-agent global-norm clipping, functional and in place on ``.grad``.
- :mod:`marlplug.optim.groups`: :class:`~marlplug.optim.groups.AgentGroupParameters`, a group's
  per-agent and shared parameters.
- :mod:`marlplug.optim.sharing`: parameter sharing held as equal per-agent rows (the group's mean
  gradient for every agent).
"""

from marlplug.optim.adam import AdamSettings, AgentAdam, adam, adam_
from marlplug.optim.clip import clip_grad_norm_per_agent_, clip_per_agent, per_agent_norms
from marlplug.optim.groups import AgentGroupParameters
from marlplug.optim.sharing import group_mean_gradients

__all__ = [
    "AdamSettings",
    "AgentAdam",
    "AgentGroupParameters",
    "adam",
    "adam_",
    "clip_grad_norm_per_agent_",
    "clip_per_agent",
    "group_mean_gradients",
    "per_agent_norms",
]
