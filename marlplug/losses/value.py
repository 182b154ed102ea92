"""Per-agent GAE for every agent group: one TorchRL ``MultiAgentGAE`` per group, over nested keys.

Each agent gets its own advantages and value targets. Rewards and done flags are read inside the
group; a group without its own done/terminated flags (or reward) uses the env-level ones, which
``MultiAgentGAE`` broadcasts along the agent dimension.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModule
from torchrl.objectives.value import MultiAgentGAE

from marlplug.losses.ppo_keys import in_group, relative_key


class JointGAE:
    """Generalized advantage estimation per agent, for every group of a :class:`JointPPOLoss`.

    Called like TorchRL's value estimators: ``estimator(rollout, params=..., target_params=...)``
    writes the advantage and value target inside every group. The rollout's last batch dimension
    must be time. Truncated steps bootstrap from the next value but cut the trace; terminated steps
    do not bootstrap.

    Args:
        critics: group name -> that group's critic.
        keys: the loss's ``tensor_keys`` (absolute or relative to each group).
        gamma: discount factor.
        lmbda: GAE λ.
        **gae_kwargs: any other :class:`~torchrl.objectives.value.GAE` keyword argument.

    Examples:
        >>> # built by JointPPOLoss.make_value_estimator(ValueEstimators.GAE, gamma=0.99, lmbda=0.95)
    """

    def __init__(
        self,
        critics: Mapping[str, TensorDictModule],
        *,
        keys: Any,
        gamma: float,
        lmbda: float,
        **gae_kwargs: Any,
    ) -> None:
        self.groups = list(critics)
        self.keys = keys
        self.gamma = gamma
        self.lmbda = lmbda
        self.estimators: dict[str, MultiAgentGAE] = {
            group: MultiAgentGAE(gamma=gamma, lmbda=lmbda, value_network=critic, **gae_kwargs)
            for group, critic in critics.items()
        }

    def _signal_key(self, tensordict: TensorDictBase, group: str, name: str) -> Any:
        """The group's own ``("next", group, ...)`` signal when the rollout has it, else the
        env-level one (``MultiAgentGAE`` broadcasts it over the agents)."""
        key = getattr(self.keys, name)
        own = in_group(key, group, self.groups)
        if ("next", *own) in tensordict.keys(include_nested=True):
            return own
        return relative_key(key, self.groups)

    def __call__(
        self,
        tensordict: TensorDictBase,
        params: TensorDictBase | None = None,
        target_params: TensorDictBase | None = None,
        **kwargs: Any,
    ) -> TensorDictBase:
        """Write advantages and value targets into ``tensordict`` (in place) and return it.

        ``params``/``target_params`` are what ``loss.critic_network_params`` /
        ``loss.target_critic_network_params`` give (one entry per group); ``None`` uses the
        critics' own weights. Runs without gradients.
        """
        with torch.no_grad():
            for group, estimator in self.estimators.items():
                estimator.set_keys(
                    advantage=in_group(self.keys.advantage, group, self.groups),
                    value_target=in_group(self.keys.value_target, group, self.groups),
                    value=in_group(self.keys.value, group, self.groups),
                    reward=self._signal_key(tensordict, group, "reward"),
                    done=self._signal_key(tensordict, group, "done"),
                    terminated=self._signal_key(tensordict, group, "terminated"),
                )
                estimator(
                    tensordict,
                    params=None if params is None else params.get(group),
                    target_params=None if target_params is None else target_params.get(group),
                    **kwargs,
                )
        return tensordict

    forward = __call__
