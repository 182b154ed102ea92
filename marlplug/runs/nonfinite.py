"""Non-finite losses never pass silently: which loss, which agents, how many steps, and a stop after
``train.max_nonfinite_steps`` steps in a row with non-finite values for the same agent.

An agent's optimization step is skipped when its gradient norm is not finite (its parameters and
optimizer state stay as they were); a loss can also be NaN with a finite gradient. This module finds
the terms that were not finite on a step, counts, and says so.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field

import torch
from tensordict import TensorDictBase

from marlplug.algorithms.ppo.loss_output import nonfinite_masks
from marlplug.errors import UserError


class NonfiniteLossError(UserError):
    """Some agent's steps were skipped ``train.max_nonfinite_steps`` times in a row."""


def nonfinite_terms(
    losses: TensorDictBase, groups: list[str], agent_names: list[str], skipped: torch.Tensor
) -> dict[str, list[str]]:
    """The loss terms of one step that were not finite, each with the agents it concerns.

    The names of :func:`~marlplug.algorithms.ppo.loss_output.nonfinite_masks`' masks: a loss can be NaN
    while its gradient is finite (the step goes ahead, and is still reported); a skipped agent with
    every term finite had a non-finite gradient alone (``"gradient"``).

    Args:
        losses: the joint loss's output of the step (per-group per-agent terms, ``loss_<aux>``).
        groups: the loss's groups, in agent order.
        agent_names: every agent, in agent order.
        skipped: bool mask of the agents whose step was skipped (non-finite gradient norm).

    Returns:
        term -> agent names, e.g. ``{"loss_nan_aux": ["agent_0", "agent_1"]}`` (an aux loss
        concerns every agent); empty when everything was finite.

    Examples:
        >>> from tensordict import TensorDict
        >>> losses = TensorDict({"agent": TensorDict({"policy_loss": torch.tensor([0.1, float("nan")]),
        ...     "value_loss": torch.zeros(2), "entropy": torch.zeros(2)}, []),
        ...     "loss_mine": torch.tensor(0.0)}, [])
        >>> nonfinite_terms(losses, ["agent"], ["a", "b"], torch.tensor([True, True]))
        {'policy_loss': ['b'], 'gradient': ['a']}
    """
    masks = nonfinite_masks(losses, groups, torch.arange(len(agent_names)))
    return with_gradient(named_terms(masks, agent_names), skipped, agent_names)


def agent_flags(values: torch.Tensor) -> torch.Tensor:
    """A per-agent flag statistic as a bool mask: true where it is set. A coded round reports NaN for
    an agent no learner answered for: not flagged.

    Examples:
        >>> agent_flags(torch.tensor([1.0, 0.0, float("nan")])).tolist()
        [True, False, False]
    """
    return values.detach().double().nan_to_num(0.0) != 0


def named_terms(masks: Mapping[str, torch.Tensor], agent_names: list[str]) -> dict[str, list[str]]:
    """term -> the names of the agents its mask (over ``agent_names``, :func:`agent_flags`) flags;
    terms flagging no agent are left out.

    Examples:
        >>> named_terms({"loss_x": torch.tensor([True, False]), "gradient": torch.zeros(2)}, ["a", "b"])
        {'loss_x': ['a']}
    """
    found = {
        term: [
            name for name, bad in zip(agent_names, agent_flags(mask).tolist(), strict=True) if bad
        ]
        for term, mask in masks.items()
    }
    return {term: agents for term, agents in found.items() if agents}


def affected_agents(terms: dict[str, list[str]], agent_names: list[str]) -> torch.Tensor:
    """Bool mask over agents: those some non-finite term concerns."""
    named = {name for agents in terms.values() for name in agents}
    return torch.tensor([name in named for name in agent_names], dtype=torch.bool)


def with_gradient(
    terms: dict[str, list[str]], skipped: torch.Tensor, agent_names: list[str]
) -> dict[str, list[str]]:
    """``terms`` and, as ``"gradient"``, the skipped agents (``skipped``: bool mask over
    ``agent_names``) no term names: a step is skipped when its gradient norm is not finite, so a
    skipped agent with every loss term finite had a non-finite gradient alone.

    Examples:
        >>> with_gradient({"loss_x": ["a"]}, torch.tensor([True, True]), ["a", "b"])
        {'loss_x': ['a'], 'gradient': ['b']}
    """
    named = {name for agents in terms.values() for name in agents}
    flags = skipped.tolist()
    alone = [
        name for name, skip in zip(agent_names, flags, strict=True) if skip and name not in named
    ]
    return {**terms, "gradient": alone} if alone else dict(terms)


@dataclass
class NonfiniteMonitor:
    """Counts skipped agent steps and the non-finite terms behind them; stops a run that no longer
    learns.

    Args:
        agent_names: every agent, in agent order.
        max_consecutive: stop when one agent's steps are skipped this many times in a row
            (``None``: never stop, only report).

    Examples:
        >>> monitor = NonfiniteMonitor(["a", "b"], max_consecutive=2)
        >>> monitor.record(torch.tensor([True, False]), {"loss_x": ["a"]}, where="update 1, step 1")
        >>> monitor.summary()
        '1 of 2 agent steps had non-finite values: loss_x (a)'
        >>> monitor.record(torch.tensor([True, False]), {"loss_x": ["a"]}, where="update 1, step 2")
        Traceback (most recent call last):
        ...
        marlplug.runs.nonfinite.NonfiniteLossError: train.max_nonfinite_steps: agent a had non-finite values 2 steps in a row (update 1, step 2): loss_x (a); the run stopped (fix the loss, lower train.lr, or raise train.max_nonfinite_steps)
    """

    agent_names: list[str]
    max_consecutive: int | None = 10
    agent_steps: int = 0
    nonfinite_agent_steps: int = 0
    terms: dict[str, set[str]] = field(default_factory=dict)
    consecutive: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.consecutive = [0] * len(self.agent_names)

    def record(self, affected: torch.Tensor, terms: dict[str, list[str]], *, where: str) -> None:
        """Count one step (``affected``: bool mask of the agents with a non-finite value or a
        skipped step) and its non-finite ``terms``.

        Raises:
            NonfiniteLossError: an agent reached ``max_consecutive`` skipped steps in a row.
        """
        flags = affected.tolist()
        self.agent_steps += len(flags)
        self.nonfinite_agent_steps += sum(flags)
        for term, agents in terms.items():
            self.terms.setdefault(term, set()).update(agents)
        self.consecutive = [
            count + 1 if skip else 0 for count, skip in zip(self.consecutive, flags, strict=True)
        ]
        if self.max_consecutive is None:
            return
        stuck = [
            name
            for name, count in zip(self.agent_names, self.consecutive, strict=True)
            if count >= self.max_consecutive
        ]
        if stuck:
            noun = "agent" if len(stuck) == 1 else "agents"
            steps = "1 step" if self.max_consecutive == 1 else f"{self.max_consecutive} steps"
            raise NonfiniteLossError(
                f"train.max_nonfinite_steps: {noun} {', '.join(stuck)} had non-finite values "
                f"{steps} in a row ({where}): {_describe(terms)}; the run "
                f"stopped (fix the loss, lower train.lr, or raise train.max_nonfinite_steps)"
            )

    def summary(self) -> str | None:
        """One line for the run's summary; ``None`` when no step was skipped."""
        if not self.nonfinite_agent_steps:
            return None
        described = _describe({term: sorted(agents) for term, agents in self.terms.items()})
        return (
            f"{self.nonfinite_agent_steps} of {self.agent_steps} agent steps had non-finite "
            f"values: {described}"
        )


@dataclass
class NonfiniteTally:
    """One iteration's agent steps with non-finite values, for its :func:`warn_nonfinite` line.

    Examples:
        >>> import contextlib, io
        >>> tally = NonfiniteTally()
        >>> tally.add(torch.tensor([True, True]), torch.tensor([False, True]), {"gradient": ["b"]})
        >>> stream = io.StringIO()
        >>> with contextlib.redirect_stderr(stream):
        ...     tally.warn("iteration 1")
        >>> stream.getvalue()
        'warning: iteration 1: 2 of 2 agent steps had non-finite values (1 skipped): gradient (b)\\n'
    """

    agent_steps: int = 0
    affected: int = 0
    skipped: int = 0
    terms: dict[str, set[str]] = field(default_factory=dict)

    def add(
        self, affected: torch.Tensor, skipped: torch.Tensor, terms: dict[str, list[str]]
    ) -> None:
        """Count one step: ``affected`` and ``skipped`` bool masks over every agent."""
        self.agent_steps += affected.numel()
        self.affected += int(affected.sum())
        self.skipped += int(skipped.sum())
        for term, agents in terms.items():
            self.terms.setdefault(term, set()).update(agents)

    def warn(self, where: str) -> None:
        """The warning line, when some step had non-finite values."""
        if self.affected:
            terms = {term: sorted(agents) for term, agents in self.terms.items()}
            warn_nonfinite(where, self.affected, self.skipped, self.agent_steps, terms)


def _describe(terms: dict[str, list[str]]) -> str:
    return "; ".join(f"{term} ({', '.join(agents)})" for term, agents in terms.items())


def warn_nonfinite(
    where: str, affected: int, skipped: int, steps: int, terms: dict[str, list[str]]
) -> None:
    """One ``warning:`` line on stderr for an update with non-finite values.

    Examples:
        >>> import contextlib, io
        >>> stream = io.StringIO()
        >>> with contextlib.redirect_stderr(stream):
        ...     warn_nonfinite("update 3", 2, 0, 8, {"loss_x": ["a", "b"]})
        >>> stream.getvalue()
        'warning: update 3: 2 of 8 agent steps had non-finite values (0 skipped): loss_x (a, b)\\n'
    """
    sys.stderr.write(
        f"warning: {where}: {affected} of {steps} agent steps had non-finite values "
        f"({skipped} skipped): {_describe(terms)}\n"
    )
    sys.stderr.flush()


def check_finite_states(theta: torch.Tensor, agent_names: list[str], *, where: str) -> None:
    """Stop a run whose update made some agent's state (``theta``: ``[M, D]``, one row per agent:
    parameters, targets, optimizer moments) non-finite: nothing is learned from there on.

    Examples:
        >>> check_finite_states(torch.zeros(2, 3), ["a", "b"], where="iteration 4")
        >>> check_finite_states(torch.tensor([[0.0], [float("nan")]]), ["a", "b"], where="iteration 4")
        Traceback (most recent call last):
        ...
        marlplug.runs.nonfinite.NonfiniteLossError: iteration 4: the update made the state of agent b non-finite (NaN or infinity); the run stopped (lower algorithm.lr, or check the env's rewards)
    """
    finite = torch.isfinite(theta.reshape(theta.shape[0], -1)).all(-1).tolist()
    bad = [name for name, ok in zip(agent_names, finite, strict=True) if not ok]
    if bad:
        noun = "agent" if len(bad) == 1 else "agents"
        raise NonfiniteLossError(
            f"{where}: the update made the state of {noun} {', '.join(bad)} non-finite (NaN or "
            f"infinity); the run stopped (lower algorithm.lr, or check the env's rewards)"
        )
