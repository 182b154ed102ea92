"""Joint PPO's row layout: which columns of an agent's ``theta`` row hold which of its parameters.

Agent ``i``'s ``theta`` row is its slice ``param[i]`` of every per-agent parameter of its group's
actor and critic (stacked weights, in the loss's parameter order, each flattened row-major),
zero-padded to the widest group. Its ``opt_state`` row repeats that layout twice (Adam's first
moments at column 0, its second moments at column ``theta_size``) and ends with the step count.

:class:`~marlplug.algorithms.ppo.program.PpoProgram` moves weights between the loss and the rows
with these helpers; the layout is fixed by the loss's structure alone, so every learner holding the
same loss reads the same columns the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

from marlplug.algorithms.ppo.params import loss_parameter_groups
from marlplug.errors import UserError
from marlplug.losses.joint_ppo import JointPPOLoss
from marlplug.nn.obs_norm import observation_normalizers

#: A parameter's key in the loss (its dotted name, split).
Key = tuple[str, ...]


@dataclass(frozen=True)
class ParamSlot:
    """One per-agent parameter of a group: its key in the loss, its columns in a ``theta`` row and
    whether it holds observation statistics (written from the minibatch before the forward)."""

    key: Key
    shape: tuple[int, ...]
    start: int
    stop: int
    observation_stats: bool = False


@dataclass(frozen=True)
class GroupLayout:
    """One agent group: its global agent range and its parameters' slots."""

    name: str
    first: int
    n_agents: int
    slots: tuple[ParamSlot, ...]


def row_layout(loss: JointPPOLoss) -> tuple[GroupLayout, ...]:
    """Every group's slots, in ``loss.groups`` order with global agent ranges, read from the loss's
    structure (never its current weights), so any copy of the same loss gives the same layout.

    Parameters shared between agents have no per-agent row, so they are refused here, where the
    layout is built, rather than silently left out of the rows.
    """
    names = {id(param): tuple(name.split(".")) for name, param in loss.named_parameters()}
    observation_ids = {id(norm.stats) for norm in observation_normalizers(loss)}
    groups, first = [], 0
    for group in loss_parameter_groups(loss):
        if group.shared:
            raise UserError(
                f"group '{group.group}': parameters shared between agents "
                f"(share_params=True) have no per-agent row; use per-agent networks"
            )
        slots, start = [], 0
        for param in group.params:
            shape = tuple(param.shape[1:])
            width = param[0].numel()
            slots.append(
                ParamSlot(
                    names[id(param)],
                    shape,
                    start,
                    start + width,
                    observation_stats=id(param) in observation_ids,
                )
            )
            start += width
        groups.append(GroupLayout(group.group, first, group.n_agents, tuple(slots)))
        first += group.n_agents
    return tuple(groups)


def pack(group: GroupLayout, tensors: Sequence[torch.Tensor], out: torch.Tensor) -> None:
    """Write a group's stacked tensors (``[k, *shape]`` per slot) into ``out``'s columns.

    In place, into rows the caller owns (a slice of ``theta`` or ``opt_state``), so weights, both
    Adam moments and stepped values all share this one writer and land in the same columns.
    """
    for slot, tensor in zip(group.slots, tensors, strict=True):
        out[:, slot.start : slot.stop] = tensor.reshape(tensor.shape[0], -1)


def unpack(group: GroupLayout, rows: torch.Tensor) -> list[torch.Tensor]:
    """A group's stacked tensors (contiguous copies) from its ``[k, ·]`` rows.

    Always copies: a one-agent group's column slice is already contiguous, and views of one
    row would share its autograd version counter (an in-place statistics update in the forward
    then breaks the backward) and write through to the caller's rows.
    """
    return [
        rows[:, slot.start : slot.stop]
        .clone(memory_format=torch.contiguous_format)
        .reshape(rows.shape[0], *slot.shape)
        for slot in group.slots
    ]


def group_params(params: Mapping[str, torch.Tensor], group: GroupLayout) -> list[torch.Tensor]:
    """The loss's tensors behind a group's slots, in slot order (``params``: the loss's
    ``named_parameters()`` as a dict), so they zip with :func:`unpack`'s output."""
    return [params[".".join(slot.key)] for slot in group.slots]
