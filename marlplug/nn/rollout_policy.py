"""A lean categorical policy for rollouts: encoder, head, sample and log-probability in one module.

The collector calls the policy once per environment step on a single row, where TorchRL's
``ProbabilisticActor`` machinery (two module wrappers, a distribution object, tensordict
conversions) costs several times the networks themselves. This module runs the same networks and
draws from the same categorical distribution, with none of that overhead; the loss still uses the
group's ``ProbabilisticActor`` (same parameters).
"""

from __future__ import annotations

from typing import Any

import torch
from tensordict import NestedKey, TensorDictBase
from tensordict.nn import InteractionType, TensorDictModuleBase
from tensordict.nn.probabilistic import interaction_type
from torch import nn
from torch.distributions import Categorical
from torchrl.modules import MaskedCategorical

from marlplug.envs.layout import ACTION_MASK


def categorical_distribution(group: str, *, masked: bool) -> dict[str, Any]:
    """A group's discrete action distribution as ``ProbabilisticActor`` arguments (``in_keys``,
    ``distribution_class``, ``distribution_kwargs``): a categorical over ``(group, "logits")``, or
    with ``masked`` TorchRL's ``MaskedCategorical`` that also reads ``(group, "action_mask")`` (the
    loss's ``actor.get_dist`` then applies the mask the policy acted under).

    Examples:
        >>> categorical_distribution("agent", masked=True)["in_keys"]
        {'logits': ('agent', 'logits'), 'mask': ('agent', 'action_mask')}
        >>> categorical_distribution("agent", masked=False)["distribution_class"].__name__
        'Categorical'
    """
    if not masked:
        return {
            "in_keys": {"logits": (group, "logits")},
            "distribution_class": Categorical,
            "distribution_kwargs": {"validate_args": False},
        }
    return {
        "in_keys": {"logits": (group, "logits"), "mask": (group, ACTION_MASK)},
        "distribution_class": MaskedCategorical,
        "distribution_kwargs": {},
    }


class CategoricalRolloutPolicy(TensorDictModuleBase):
    """Sample a discrete action per agent and write it with its log-probability.

    Reads ``(group, "observation")``; writes ``(group, "action")`` and ``(group, "action_log_prob")``.
    Samples under TorchRL's ``RANDOM`` interaction type (the collector's default) and takes the most
    likely action under ``DETERMINISTIC``/``MODE``/``MEAN`` (``set_exploration_type``).
    With ``masked``, it also reads ``(group, "action_mask")`` and acts as TorchRL's
    ``MaskedCategorical`` over the same logits: an invalid action's logit is ``-inf``, so it is
    never drawn nor taken greedily, and the log-probability is over the valid actions (what the
    loss's masked distribution computes). Every row needs at least one valid action.

    Args:
        encoder: the group's stacked encoder, ``[*, n_agents, obs] -> [*, n_agents, d]``.
        head: the group's stacked policy head, ``[*, n_agents, d] -> [*, n_agents, n_actions]``.
        group: the agent group's name.
        masked: read the group's ``action_mask`` and act among the valid actions only.

    Examples:
        >>> from marlplug.nn.stacked import StackedLinear, StackedMLP
        >>> from tensordict import TensorDict
        >>> policy = CategoricalRolloutPolicy(
        ...     StackedMLP(n_agents=2, in_features=4, out_features=8, activate_last_layer=True),
        ...     StackedLinear(n_agents=2, in_features=8, out_features=3), group="agent")
        >>> td = policy(TensorDict({("agent", "observation"): torch.zeros(5, 2, 4)}, batch_size=[5]))
        >>> td["agent", "action"].shape, td["agent", "action_log_prob"].shape
        (torch.Size([5, 2]), torch.Size([5, 2]))
        >>> policy = CategoricalRolloutPolicy(policy.encoder, policy.head, group="agent", masked=True)
        >>> only_last = torch.tensor([False, False, True]).expand(5, 2, 3)
        >>> td = TensorDict({("agent", "observation"): torch.zeros(5, 2, 4),
        ...                  ("agent", "action_mask"): only_last}, batch_size=[5])
        >>> policy(td)["agent", "action"].unique().tolist(), float(td["agent", "action_log_prob"].abs().max())
        ([2], 0.0)
    """

    def __init__(
        self, encoder: nn.Module, head: nn.Module, *, group: str, masked: bool = False
    ) -> None:
        super().__init__()
        self.encoder = encoder
        self.head = head
        self.masked = masked
        self.in_keys: list[NestedKey] = [(group, "observation")]
        if masked:
            self.in_keys.append((group, ACTION_MASK))
        self.out_keys: list[NestedKey] = [(group, "action"), (group, "action_log_prob")]

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        logits = self.head(self.encoder(tensordict.get(self.in_keys[0])))
        if self.masked:
            # MaskedCategorical's masking (its default neg_inf), so both log-probabilities agree.
            logits = logits.masked_fill(~tensordict.get(self.in_keys[1]), float("-inf"))
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
