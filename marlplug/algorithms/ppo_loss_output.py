"""Reading the joint PPO loss's output agent by agent: which terms were not finite, and the
per-agent and joint diagnostics as stats (:class:`~marlplug.algorithms.ppo_program.PpoProgram`
reports both for the agents it steps).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase

#: Per-agent terms of the joint PPO loss (under each group's key), checked for non-finite values.
PER_AGENT_TERMS = ("policy_loss", "value_loss", "entropy")
#: The joint loss's sums over agents of the per-agent terms (checked per agent instead).
_PPO_SUMS = frozenset({"loss_objective", "loss_critic", "loss_entropy"})


def nonfinite_masks(
    losses: TensorDictBase, groups: Sequence[str], index: torch.Tensor
) -> dict[str, torch.Tensor]:
    """The loss terms of one step that were not finite, each with a bool mask over the agents
    ``index`` (rows of the loss's per-agent terms) it concerns.

    A loss can be NaN while its gradient is finite (a NaN constant added to it): the step then goes
    ahead, and is still reported. An aux loss (``loss_<name>``) concerns every agent.

    Args:
        losses: the joint loss's output (per-group per-agent terms, ``loss_<aux>``).
        groups: the loss's groups, in agent order.
        index: the agents asked about.

    Returns:
        term -> ``[len(index)]`` bool, only the terms not finite for some agent of ``index``.

    Examples:
        >>> from tensordict import TensorDict
        >>> losses = TensorDict({"agent": TensorDict({"policy_loss": torch.tensor([0.1, float("nan")]),
        ...     "value_loss": torch.zeros(2), "entropy": torch.zeros(2)}, []),
        ...     "loss_mine": torch.tensor(float("nan"))}, [])
        >>> masks = nonfinite_masks(losses, ["agent"], torch.tensor([0, 1]))
        >>> {term: mask.tolist() for term, mask in masks.items()}
        {'policy_loss': [False, True], 'loss_mine': [True, True]}
        >>> {term: mask.tolist() for term, mask in nonfinite_masks(losses, ["agent"], torch.tensor([0])).items()}
        {'loss_mine': [True]}
    """
    found: dict[str, torch.Tensor] = {}
    for term in PER_AGENT_TERMS:
        values = [losses.get((group, term), None) for group in groups]
        if any(value is None for value in values):
            continue
        finite = torch.isfinite(torch.cat([value.detach().reshape(-1) for value in values]))
        bad = ~finite.index_select(0, index)
        if bool(bad.any()):
            found[term] = bad
    for key in losses.keys():  # noqa: SIM118 - a TensorDict's top-level keys
        aux = isinstance(key, str) and key.startswith("loss_") and key not in _PPO_SUMS
        if aux and not bool(torch.isfinite(losses.get(key)).all()):
            found[key] = torch.ones(index.numel(), dtype=torch.bool)
    return found


def loss_stats(
    losses: TensorDictBase, groups: Sequence[str], index: torch.Tensor
) -> dict[str, torch.Tensor]:
    """The loss output as stats: each per-agent diagnostic of the groups under its own name for the
    agents ``index`` (logged as ``<agent>/<name>``, e.g. ``agent_0/entropy``), and every joint
    one-element entry as a 0-d tensor (``a/b`` for nested keys; ``mean_<name>`` where a per-agent
    diagnostic has the name)."""
    out = {}
    per_group = [losses.get(group) for group in groups]
    for name in per_group[0].keys():  # noqa: SIM118 (a TensorDict iterates over its batch)
        if all(name in td.keys() for td in per_group):  # noqa: SIM118
            joined = torch.cat([td.get(name).detach().reshape(-1) for td in per_group])
            out[name] = joined.index_select(0, index)
    for key, value in losses.items(include_nested=True, leaves_only=True):
        parts = (key,) if isinstance(key, str) else tuple(key)
        if parts[0] not in groups and value.numel() == 1:
            name = "/".join(parts)
            out[f"mean_{name}" if name in out else name] = value.detach().reshape(())
    return out
