"""Agent sizes for learner algorithms: :class:`AgentSpace` is :class:`marlplug.envs.layout.AgentLayout`.

The env's layout is read once, by :func:`marlplug.envs.read_layout`; this module keeps the names
algorithms and plugins import (``AgentSpace``, ``padded_dims``).
"""

from marlplug.envs.layout import AgentLayout as AgentSpace
from marlplug.envs.layout import padded_dims

__all__ = ["AgentSpace", "padded_dims"]
