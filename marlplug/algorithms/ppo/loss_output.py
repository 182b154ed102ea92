"""Reading the joint PPO loss's output agent by agent: which terms were not finite, and the
per-agent and joint diagnostics as stats (:class:`~marlplug.algorithms.ppo.program.PpoProgram`
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
#: Where the joint loss writes each aux loss's diagnostics: ``(AUX_STATS, <loss>, <stat>)``.
AUX_STATS = "aux_stats"


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
    agents ``index`` (logged as ``<agent>/<name>``, e.g. ``agent_0/entropy``), every joint
    one-element entry as a 0-d tensor (``a/b`` for nested keys; ``mean_<name>`` where a per-agent
    diagnostic has the name) and every aux loss's diagnostics (:func:`aux_diagnostic_stats`)."""
    out = {}
    per_group = [losses.get(group) for group in groups]
    for name in per_group[0].keys():  # noqa: SIM118 (a TensorDict iterates over its batch)
        if all(name in td.keys() for td in per_group):  # noqa: SIM118
            joined = torch.cat([td.get(name).detach().reshape(-1) for td in per_group])
            out[name] = joined.index_select(0, index)
    for key, value in losses.items(include_nested=True, leaves_only=True):
        parts = (key,) if isinstance(key, str) else tuple(key)
        if parts[0] not in groups and parts[0] != AUX_STATS and value.numel() == 1:
            name = "/".join(parts)
            out[f"mean_{name}" if name in out else name] = value.detach().reshape(())
    num_agents = sum(int(td.batch_size[0]) for td in per_group)
    out.update(aux_diagnostic_stats(losses, num_agents, index))
    return out


def aux_diagnostic_stats(
    losses: TensorDictBase, num_agents: int, index: torch.Tensor
) -> dict[str, torch.Tensor]:
    """Each aux loss's ``diagnostics()`` (``(AUX_STATS, <loss>, <stat>)`` in the loss output) as
    stats named under the loss: ``aux_stats/<loss>/<stat>`` (0-d: the value, or the mean of its
    values); a 1-D diagnostic with one value per agent (in the order of the features the loss
    received) also per agent, for the agents ``index`` (logged as ``<agent>/aux_stats/<loss>/<stat>``).

    Every agent's features are in one forward pass, so the values do not depend on which agents
    an update steps: any coded learner's are the round's.

    Examples:
        >>> from tensordict import TensorDict
        >>> losses = TensorDict({"aux_stats": {"scale": {"rms": torch.tensor([1.0, 3.0]),
        ...                                              "dead": torch.tensor(2)}}}, [])
        >>> stats = aux_diagnostic_stats(losses, 2, torch.tensor([1]))
        >>> {name: value.tolist() for name, value in stats.items()}
        {'aux_stats/scale/rms': [3.0], 'mean_aux_stats/scale/rms': 2.0, 'aux_stats/scale/dead': 2}
    """
    out: dict[str, torch.Tensor] = {}
    if AUX_STATS not in losses.keys():  # noqa: SIM118 - a TensorDict's top-level keys
        return out
    for key, value in losses.get(AUX_STATS).items(include_nested=True, leaves_only=True):
        name = "/".join((AUX_STATS, *((key,) if isinstance(key, str) else key)))
        value = value.detach()
        if value.numel() == 1:
            out[name] = value.reshape(())
            continue
        if value.dim() == 1 and value.shape[0] == num_agents:
            out[name] = value.index_select(0, index)
            name = f"mean_{name}"
        out[name] = value.to(torch.float64).mean()
    return out
