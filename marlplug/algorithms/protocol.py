"""The learner-algorithm contract: one update rule ``U`` per algorithm, run wherever training runs.

A learner algorithm (hook ``marlplug_algorithms``) is built from its ``Options`` and bound to one
env's agents with :meth:`LearnerAlgorithm.bind`. The bound :class:`LearnerProgram` holds the pure,
batched update over any set of agents::

    update(theta_all, opt_state, batch, agents, seed) -> (theta'_agents, opt_state'_agents, stats)

The joint (centralized) trainer calls it once per minibatch with every agent; a coded learner calls it
with the agents its row of the assignment matrix names; both run the same code, with one forward and
one backward pass for all the agents of the call. Centralized and coded training therefore differ only
in *where* ``update`` runs, and coded == centralized is an identity up to the decoder's round-off.

State is two ``[M, ·]`` float32 tensors, one row per agent in the env's flat agent order (groups in
``group_map`` order, agents within a group in order): ``theta`` holds everything that is not optimizer
state (network weights, target networks, ...), ``opt_state`` the optimizer's (moments, step counts).
Rows are what the coded runtime encodes, so both must be plain float32 of fixed width.

What the program needs besides the update (how it acts, what data a round consumes) is the
:class:`RolloutSource`'s job: the orchestrator asks it for minibatches and hands each one to
``update`` wherever that runs.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import torch
from tensordict import TensorDictBase

if TYPE_CHECKING:
    from torchrl.envs import EnvBase

    from marlplug.config import MarlplugConfig


@dataclass
class AgentUpdate:
    """What :meth:`LearnerProgram.update` returns for the agents it was asked to update.

    Attributes:
        theta: ``[len(agents), P]`` the agents' new ``theta`` rows, in the order of ``agents``.
        opt_state: ``[len(agents), O]`` their new optimizer-state rows.
        stats: per-agent statistics as ``[len(agents)]`` tensors (e.g. ``"grad_norm"``,
            ``"stepped"``) and joint scalars as 0-d tensors (e.g. ``"loss_objective"``); every
            learner that holds an agent reports the same values for it.
    """

    theta: torch.Tensor
    opt_state: torch.Tensor
    stats: Mapping[str, torch.Tensor] = field(default_factory=dict)


@runtime_checkable
class LearnerProgram(Protocol):
    """A learner algorithm bound to one env's agents: the update rule ``U`` over flat state rows.

    ``update`` must be a pure function of its arguments: it modifies nothing in place, reads no
    global RNG (random numbers come from ``seed``, agent ``i``'s from ``(seed, i)`` where they must
    not depend on which other agents share the call) and gives the same bits when called twice with
    the same inputs on the same machine.
    """

    #: ``M``: the number of agents (rows of ``theta_all`` and ``opt_state``).
    num_agents: int
    #: ``P`` and ``O``: the widths of a ``theta`` row and of an ``opt_state`` row.
    theta_size: int
    opt_state_size: int

    def init_state(self, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Fresh ``(theta [M, P], opt_state [M, O])`` drawn from ``seed`` alone."""
        ...

    def update(
        self,
        theta_all: torch.Tensor,
        opt_state: torch.Tensor,
        batch: TensorDictBase,
        agents: Sequence[int],
        seed: int,
    ) -> AgentUpdate:
        """``U`` for every agent in ``agents`` at once (any subset, any order).

        Args:
            theta_all: ``[M, P]`` every agent's current ``theta`` (an update may read any agent's).
            opt_state: ``[M, O]`` every agent's optimizer state; only the rows of ``agents`` are read.
            batch: one minibatch, as the program's :class:`RolloutSource` yields it.
            agents: the agents to update.
            seed: the round's seed, the same on every learner.
        """
        ...


class RolloutSource(Protocol):
    """Where an algorithm's minibatches come from: on-policy rollouts, a replay buffer, ...

    The orchestrator calls :meth:`batches` once per training iteration with the current state; each
    minibatch it yields is one update round, after which the orchestrator writes the new state back
    with :meth:`sync` before asking for the next (so an on-policy source can act with fresh weights
    only when it collects).
    """

    def batches(self, theta_all: torch.Tensor, iteration: int) -> Iterator[TensorDictBase]:
        """Collect what this iteration needs with ``theta_all``'s policies and yield its minibatches."""
        ...

    def sync(self, theta_all: torch.Tensor) -> None:
        """Take the state after the latest round (e.g. to evaluate the critic for the next batch)."""
        ...

    def iteration_stats(self) -> Mapping[str, Any]:
        """Statistics of the iteration just collected (frames, episode returns, ...)."""
        ...

    def state_dict(self) -> dict[str, Any]:
        """What a checkpoint must hold to resume bit-identically (replay buffer, RNG, counters)."""
        ...

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from :meth:`state_dict`'s output."""
        ...

    def close(self) -> None:
        """Release envs and workers."""
        ...


class LearnerAlgorithm(Protocol):
    """What a ``marlplug_algorithms`` plugin provides: ``Options`` and :meth:`bind`.

    Example::

        @marlplug.hookimpl
        def marlplug_algorithms():
            return {"my_algo": MyAlgorithm}  # MyAlgorithm(**MyAlgorithm.Options().model_dump())
    """

    def bind(self, env: EnvBase, config: MarlplugConfig) -> LearnerProgram:
        """The update program for ``env``'s agents under ``config`` (its ``train`` and ``losses``)."""
        ...

    def rollouts(
        self, env: EnvBase, program: LearnerProgram, config: MarlplugConfig
    ) -> RolloutSource:
        """The source of ``program``'s minibatches on ``env`` (which it may close)."""
        ...
