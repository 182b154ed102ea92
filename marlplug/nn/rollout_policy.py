"""A lean categorical policy for rollouts: encoder, head, sample and log-probability in one module.

The collector calls the policy once per environment step on a single row, where TorchRL's
``ProbabilisticActor`` machinery (two module wrappers, a distribution object, tensordict
conversions) costs several times the networks themselves. This module runs the same networks and
draws from the same categorical distribution, with none of that overhead; the loss still uses the
group's ``ProbabilisticActor`` (same parameters).
"""

from __future__ import annotations

import torch
from tensordict import NestedKey, TensorDictBase
from tensordict.nn import InteractionType, TensorDictModuleBase
from tensordict.nn.probabilistic import interaction_type
from torch import nn


class CategoricalRolloutPolicy(TensorDictModuleBase):
    """Sample a discrete action per agent and write it with its log-probability.

    Reads ``(group, "observation")``; writes ``(group, "action")`` and ``(group, "action_log_prob")``.
    Samples under TorchRL's ``RANDOM`` interaction type (the collector's default) and takes the most
    likely action under ``DETERMINISTIC``/``MODE``/``MEAN`` (``set_exploration_type``).

    Args:
        encoder: the group's stacked encoder, ``[*, n_agents, obs] -> [*, n_agents, d]``.
        head: the group's stacked policy head, ``[*, n_agents, d] -> [*, n_agents, n_actions]``.
        group: the agent group's name.

    Examples:
        >>> from marlplug.nn.stacked import StackedLinear, StackedMLP
        >>> from tensordict import TensorDict
        >>> policy = CategoricalRolloutPolicy(
        ...     StackedMLP(n_agents=2, in_features=4, out_features=8, activate_last_layer=True),
        ...     StackedLinear(n_agents=2, in_features=8, out_features=3), group="agent")
        >>> td = policy(TensorDict({("agent", "observation"): torch.zeros(5, 2, 4)}, batch_size=[5]))
        >>> td["agent", "action"].shape, td["agent", "action_log_prob"].shape
        (torch.Size([5, 2]), torch.Size([5, 2]))
    """

    def __init__(self, encoder: nn.Module, head: nn.Module, *, group: str) -> None:
        super().__init__()
        self.encoder = encoder
        self.head = head
        self.in_keys: list[NestedKey] = [(group, "observation")]
        self.out_keys: list[NestedKey] = [(group, "action"), (group, "action_log_prob")]

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        logits = self.head(self.encoder(tensordict.get(self.in_keys[0])))
        log_probs = torch.log_softmax(logits, dim=-1)
        if interaction_type() in (None, InteractionType.RANDOM):
            # What torch.distributions.Categorical.sample does, without building the distribution.
            flat = log_probs.exp().reshape(-1, log_probs.shape[-1])
            action = torch.multinomial(flat, 1, True).reshape(log_probs.shape[:-1])
        else:
            action = log_probs.argmax(dim=-1)
        tensordict.set(self.out_keys[0], action)
        tensordict.set(self.out_keys[1], log_probs.gather(-1, action.unsqueeze(-1)).squeeze(-1))
        return tensordict
