"""Observations that list entities nearest first (``env.entity_order: nearest``).

mpe2 lists the landmarks and the other agents in every agent's observation in world order, so
"the landmark nearest to me" sits in a different slot in every episode and every agent. A network
reading a fixed-width vector has to learn the same rule once per slot, and at 8 agents PPO does
not manage it: cooperative navigation stopped at 0.42 oracle-normalized, below agents that simply
head for their nearest landmark (0.64). Listed nearest first, the same entities (the observation
holds the same numbers, permuted) score 0.78-0.84 (docs/results/many-agents.md; how it was found:
docs/notes/benchmarks-history.md, "Nearest first").

A scenario declares which parts of its observation are such lists
(:meth:`ScenarioOptions.entity_lists <marlplug.envs.options.ScenarioOptions.entity_lists>`: per
group, ``(first column, entries)`` of lists of 2-float positions relative to the agent).
The observations are the same on every backend, so one declaration and this one transform serve
all of them; the reward and the dynamics are untouched.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from tensordict import TensorDictBase
from torchrl.envs import EnvBase, Transform

from marlplug.envs.transformed import with_transform

#: Per group, the ``(first column, entries)`` of each list of 2-float relative positions.
EntityLists = Mapping[str, Sequence[tuple[int, int]]]


def sortable(lists: EntityLists) -> dict[str, list[tuple[int, int]]]:
    """``lists`` without the lists of fewer than two entries (nothing to sort) and without the
    groups left with none: what a scenario declares at a size where some lists are that short.

    >>> sortable({"agent": [(4, 3), (10, 1)], "adversary": [(4, 0)]})
    {'agent': [(4, 3)]}
    """
    kept = {group: [span for span in spans if span[1] > 1] for group, spans in lists.items()}
    return {group: spans for group, spans in kept.items() if spans}


def nearest_first(observation: torch.Tensor, lists: Sequence[tuple[int, int]]) -> torch.Tensor:
    """``observation`` ``[..., width]`` with each list of 2-float positions (``(first column,
    entries)``, not overlapping) sorted by length, nearest first; the other columns as they are.
    Two entries at exactly the same distance may come in either order (torch's unstable sort, which
    is deterministic: the same observation gives the same result).

    Example:
        >>> nearest_first(torch.tensor([9.0, 3.0, 0.0, 1.0, 0.0, -2.0, 0.0, 7.0]), [(1, 3)])
        tensor([ 9.,  1.,  0., -2.,  0.,  3.,  0.,  7.])
    """
    # One concatenation of sorted slices: a clone and in-place writes cost 1.3-2x as much.
    parts, end = [], 0
    for first, entries in sorted(lists):
        parts.append(observation[..., end:first])
        positions = observation[..., first : first + 2 * entries].unflatten(-1, (entries, 2))
        order = positions.square().sum(-1).sort(dim=-1).indices
        parts.append(positions.gather(-2, order.unsqueeze(-1).expand_as(positions)).flatten(-2))
        end = first + 2 * entries
    parts.append(observation[..., end:])
    return torch.cat(parts, dim=-1)


class NearestFirst(Transform):
    """Sorts each declared list of relative positions in ``(group, "observation")`` nearest first,
    on reset and on every step; the specs are unchanged.

    Args:
        lists: per group, ``(first column, entries)`` of each list (:data:`EntityLists`).

    Examples:
        >>> from marlplug.envs import make_env
        >>> env = make_env("cooperative_navigation", agents=3, seed=0, entity_order="nearest")
        >>> landmarks = env.reset()["agent", "observation"][..., 4:10].unflatten(-1, (3, 2))
        >>> distance = landmarks.norm(dim=-1)
        >>> bool((distance[:, 1:] >= distance[:, :-1]).all())
        True
    """

    def __init__(self, lists: EntityLists) -> None:
        if not lists or not all(lists.values()):
            raise ValueError("NearestFirst: give at least one (first column, entries) list")
        self.lists = {group: tuple(spans) for group, spans in lists.items()}
        keys = [(group, "observation") for group in self.lists]
        super().__init__(in_keys=keys, out_keys=keys)

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        for group, spans in self.lists.items():
            observation = next_tensordict.get((group, "observation"))
            next_tensordict.set((group, "observation"), nearest_first(observation, spans))
        return next_tensordict

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return self._call(tensordict_reset)


def with_nearest_first(env: EnvBase, lists: EntityLists) -> EnvBase:
    """``env`` whose observations list entities nearest first (a :class:`NearestFirst` added by
    :func:`~marlplug.envs.transformed.with_transform`); ``env.group_map`` is kept."""
    return with_transform(env, NearestFirst(lists))
