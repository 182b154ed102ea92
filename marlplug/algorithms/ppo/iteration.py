"""What one PPO iteration hands every round of it: the scheduled learning rate and entropy
coefficient, and the observation statistics of its rollout.

A coded learner sees nothing but ``(theta, opt_state, batch, agents, seed)``, so whatever changes
from one iteration to the next must travel in one of them for every learner to compute the same
update. :class:`~marlplug.algorithms.ppo.rollouts.PpoRollouts` writes these values into every
minibatch under :data:`ITERATION_KEY`; :class:`~marlplug.algorithms.ppo.program.PpoProgram` and
:func:`~marlplug.algorithms.ppo.step.step_modules` read them there. A value that is not scheduled
is not written, so a run without schedules or observation normalization computes what it always did.

The schedules are functions of the 0-based iteration (update) index alone: a resumed run, whose
iteration counter comes from its checkpoint, continues them exactly.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from tensordict import TensorDictBase

from marlplug.losses.joint_ppo import JointPPOLoss

if TYPE_CHECKING:
    from marlplug.config.train import TrainSection

#: The minibatch entry holding the iteration's values (a sub-tensordict).
ITERATION_KEY = "ppo_iteration"
#: Adam's learning rate of the iteration (``[B]`` float64, every row the same).
LR = "lr"
#: The entropy-bonus coefficient of the iteration (``[B]`` float64, every row the same).
ENT_COEF = "ent_coef"
#: ``(ITERATION_KEY, OBS_NORM, group)``: the group's observation statistics after folding in the
#: iteration's rollout (``[B, n_agents, S]``, every row the same).
OBS_NORM = "obs_norm"


def linear_schedule(start: float, final: float, update: int, updates: int) -> float:
    """The value at 0-based ``update`` of a linear anneal from ``start`` to ``final`` over
    ``updates`` updates: ``start * r + final * (1 - r)`` with ``r = 1 - update / updates``
    (CleanRL's and MAPPO's learning-rate annealing), held at ``final`` past the end.

    Written so that the first update gets ``start`` exactly (it runs as a constant schedule would)
    and, with ``final`` 0, every update gets CleanRL's ``start * r`` exactly.

    Examples:
        >>> [linear_schedule(1.0, 0.0, u, 4) for u in range(5)]
        [1.0, 0.75, 0.5, 0.25, 0.0]
        >>> linear_schedule(0.01, 0.001, 0, 10), linear_schedule(0.01, 0.001, 99, 10)
        (0.01, 0.001)
    """
    remaining = max(0.0, 1.0 - update / updates)
    return start * remaining + final * (1.0 - remaining)


@dataclass(frozen=True)
class PpoSchedule:
    """PPO's linear schedules over a run of ``updates`` updates.

    Attributes:
        updates: the run's length in updates (``train.updates``).
        lr: Adam's learning rate at the first update (``train.lr``).
        lr_final: where the learning rate ends (``None``: constant ``lr``).
        ent_coef: the entropy coefficient at the first update (``algorithm.ent_coef``).
        ent_coef_final: where it ends (``None``: constant ``ent_coef``).

    Examples:
        >>> schedule = PpoSchedule(updates=4, lr=1e-3, lr_final=0.0, ent_coef=0.01)
        >>> schedule.values(2)
        {'lr': 0.0005}
        >>> PpoSchedule(updates=4, lr=1e-3).values(2)
        {}
    """

    updates: int
    lr: float
    lr_final: float | None = None
    ent_coef: float = 0.0
    ent_coef_final: float | None = None

    @classmethod
    def from_sections(
        cls, train: TrainSection, *, ent_coef: float, ent_coef_final: float | None
    ) -> PpoSchedule | None:
        """The schedule a ``train:`` section and PPO's entropy options ask for; ``None`` when
        nothing is scheduled (the run computes exactly what it did before schedules existed)."""
        lr_final = None
        if train.lr_schedule == "linear":
            lr_final = 0.0 if train.lr_final is None else train.lr_final
        if lr_final is None and ent_coef_final is None:
            return None
        return cls(
            updates=train.updates,
            lr=train.lr,
            lr_final=lr_final,
            ent_coef=ent_coef,
            ent_coef_final=ent_coef_final,
        )

    def values(self, update: int) -> dict[str, float]:
        """The scheduled values at 0-based ``update``, by name (:data:`LR`, :data:`ENT_COEF`);
        constant ones are left out."""
        out = {}
        if self.lr_final is not None:
            out[LR] = linear_schedule(self.lr, self.lr_final, update, self.updates)
        if self.ent_coef_final is not None:
            out[ENT_COEF] = linear_schedule(
                self.ent_coef, self.ent_coef_final, update, self.updates
            )
        return out


def attach(
    batch: TensorDictBase,
    scalars: Mapping[str, float],
    observation_stats: Mapping[str, torch.Tensor],
) -> TensorDictBase:
    """Write an iteration's values into a minibatch, in place (nothing when there are none).

    Every value is expanded over the minibatch's rows (a view, no copy): a tensordict entry needs
    the batch dimension, and a backend that ships the batch sends every entry it has.

    Args:
        batch: one minibatch (``[B]``).
        scalars: :data:`LR` / :data:`ENT_COEF` -> value (stored as float64: read back exactly).
        observation_stats: group -> ``[n_agents, S]`` observation statistics.
    """
    rows = batch.batch_size
    for name, value in scalars.items():
        batch.set((ITERATION_KEY, name), torch.tensor(value, dtype=torch.float64).expand(rows))
    for group, stats in observation_stats.items():
        batch.set((ITERATION_KEY, OBS_NORM, group), stats.detach().expand(*rows, *stats.shape))
    return batch


def scheduled(batch: TensorDictBase, name: str) -> float | None:
    """The iteration's :data:`LR` or :data:`ENT_COEF` carried by ``batch``, or ``None``."""
    value = batch.get((ITERATION_KEY, name), None)
    return None if value is None else float(value.reshape(-1)[0])


def observation_stats(batch: TensorDictBase, group: str) -> torch.Tensor | None:
    """The group's ``[n_agents, S]`` observation statistics carried by ``batch``, or ``None``."""
    value = batch.get((ITERATION_KEY, OBS_NORM, group), None)
    return None if value is None else value.reshape(-1, *value.shape[-2:])[0]


@contextmanager
def entropy_coefficient(loss: JointPPOLoss, batch: TensorDictBase) -> Iterator[None]:
    """Run the block with ``loss.entropy_coeff`` set to the coefficient ``batch`` carries (if
    any), restoring it afterwards."""
    value = scheduled(batch, ENT_COEF)
    if value is None:
        yield
        return
    # The loss reads the coefficient as a plain attribute; setting it for one forward keeps the
    # loss TorchRL's (no schedule inside it) and leaves it as it was for any other caller.
    previous = loss.entropy_coeff
    loss.entropy_coeff = value
    try:
        yield
    finally:
        loss.entropy_coeff = previous
