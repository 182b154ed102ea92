"""Per-agent GAE for every agent group: one TorchRL ``GAE`` per group, run over nested keys.

Each agent gets its own advantages and value targets (rewards, values and done flags keep the agent
dimension); a group without per-agent done flags inherits the env-level ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModule
from torchrl.objectives.value import GAE


def expand_done_to_groups(tensordict: TensorDictBase, groups: list[str], keys: Any) -> None:
    """Copy env-level ``("next", done/terminated)`` into each group that lacks per-agent flags."""
    for group in groups:
        for name in (keys.done, keys.terminated):
            key = ("next", group, name)
            if key in tensordict.keys(include_nested=True):
                continue
            reward = tensordict.get(("next", group, keys.reward))
            flag = tensordict.get(("next", name))
            tensordict.set(key, flag.unsqueeze(-2).expand(reward.shape))


class JointGAE:
    """Generalized advantage estimation per agent, for every group of a :class:`JointPPOLoss`.

    Called like TorchRL's value estimators: ``estimator(rollout)`` writes
    ``(group, advantage)`` and ``(group, value_target)`` for every group. The rollout's last batch
    dimension must be time. Truncated steps bootstrap from the next value but cut the trace;
    terminated steps do not bootstrap.

    Args:
        critics: group name -> that group's critic (writes ``(group, value)``).
        keys: the loss's ``tensor_keys`` (names inside each group).
        gamma: discount factor.
        lmbda: GAE λ.

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
        self.estimators: dict[str, GAE] = {}
        for group, critic in critics.items():
            estimator = GAE(gamma=gamma, lmbda=lmbda, value_network=critic, **gae_kwargs)
            estimator.set_keys(
                advantage=(group, keys.advantage),
                value_target=(group, keys.value_target),
                value=(group, keys.value),
                reward=(group, keys.reward),
                done=(group, keys.done),
                terminated=(group, keys.terminated),
            )
            self.estimators[group] = estimator

    def __call__(
        self, tensordict: TensorDictBase, params: Any = None, target_params: Any = None
    ) -> TensorDictBase:
        """Write advantages and value targets into ``tensordict`` (in place) and return it.

        ``params``/``target_params`` are accepted for drop-in compatibility with TorchRL loops and
        ignored: the critics are evaluated with their current weights, without gradients.
        """
        del params, target_params
        expand_done_to_groups(tensordict, self.groups, self.keys)
        with torch.no_grad():
            for estimator in self.estimators.values():
                estimator(tensordict)
        return tensordict
