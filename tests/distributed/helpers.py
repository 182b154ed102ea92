"""Programs for coded-round tests, written to the learner contract (``marlplug.algorithms.protocol``).

:class:`LinearProgram` is a small but real learner program: per-agent linear regressors trained with
per-agent gradient clipping and Adam, each agent's prediction reading every other agent's weights, and
a per-agent random subsample of the minibatch drawn from the round's seed — what a coded runtime must
get exactly right (optimizer state of every magnitude, cross-agent reads, seeded randomness).
:func:`maddpg_program` gives the real MADDPG update through the same contract.
:class:`DiesWhileStarting` is a learner program whose learners are killed while they load it, on the
starts a test names. Learners import this module to load these programs: keep its imports light.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase

from marlplug.algorithms.protocol import AgentUpdate, LearnerProgram
from marlplug.seeding import derive_seed


class LinearProgram:
    """Agent ``i`` predicts ``y[:, i]`` from ``x[:, i]`` plus 0.1 × the mean prediction of all agents.

    ``theta`` row: ``[w (features) | b]``; ``opt_state`` row: ``[Adam m | Adam v | step]``.

    Examples:
        >>> program = LinearProgram(3)
        >>> theta, opt_state = program.init_state(0)
        >>> update = program.update(theta, opt_state, linear_batch(program), [2, 0], seed=1)
        >>> update.theta.shape, update.opt_state[:, -1].tolist(), sorted(update.stats)
        (torch.Size([2, 5]), [1.0, 1.0], ['grad_norm', 'joint_loss', 'loss'])
    """

    def __init__(
        self, num_agents: int, *, features: int = 4, lr: float = 0.05, subsample: int = 24
    ) -> None:
        self.num_agents = num_agents
        self.features = features
        self.lr = lr
        self.subsample = subsample
        self.max_grad_norm = 1.0
        self.betas = (0.9, 0.999)
        self.theta_size = features + 1
        self.opt_state_size = 2 * self.theta_size + 1

    def init_state(self, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        generator = torch.Generator().manual_seed(seed)
        theta = 0.5 * torch.randn(self.num_agents, self.theta_size, generator=generator)
        return theta, torch.zeros(self.num_agents, self.opt_state_size)

    def update(
        self,
        theta_all: torch.Tensor,
        opt_state: torch.Tensor,
        batch: TensorDictBase,
        agents: Sequence[int],
        seed: int,
    ) -> AgentUpdate:
        d, size = self.features, self.theta_size
        index = torch.as_tensor(list(agents), dtype=torch.long)
        x, y = batch["x"], batch["y"]
        with torch.no_grad():  # every agent's prediction: the cross-agent term
            everyone = torch.einsum("bmd,md->bm", x, theta_all[:, :d]) + theta_all[:, d]
            context = everyone.mean(dim=1)
            # A joint scalar: every agent's error before the step, the same whoever asks.
            joint_loss = ((everyone - y) ** 2).mean()
        # Agent i's subsample depends on (seed, i) only, not on who shares the call.
        rows = torch.stack(
            [
                torch.randperm(
                    x.shape[0], generator=torch.Generator().manual_seed(derive_seed(seed, i))
                )[: self.subsample]
                for i in agents
            ]
        )
        params = theta_all[index].detach().clone().requires_grad_(True)
        xs, ys = x[rows, index[:, None]], y[rows, index[:, None]]
        prediction = (
            torch.einsum("ksd,kd->ks", xs, params[:, :d]) + params[:, d:] + 0.1 * context[rows]
        )
        loss = ((prediction - ys) ** 2).mean(dim=1)
        (grad,) = torch.autograd.grad(loss.sum(), params)
        norm = grad.norm(dim=1, keepdim=True)
        grad = grad * torch.clamp(self.max_grad_norm / (norm + 1e-6), max=1.0)
        state = opt_state[index]
        m, v, step = state[:, :size], state[:, size : 2 * size], state[:, 2 * size :] + 1
        beta1, beta2 = self.betas
        m = beta1 * m + (1 - beta1) * grad
        v = beta2 * v + (1 - beta2) * grad * grad
        m_hat, v_hat = m / (1 - beta1**step), v / (1 - beta2**step)
        theta = params.detach() - self.lr * m_hat / (v_hat.sqrt() + 1e-8)
        stats = {"loss": loss.detach(), "grad_norm": norm[:, 0], "joint_loss": joint_loss}
        return AgentUpdate(theta, torch.cat([m, v, step], dim=1), stats)


def linear_batch(program: LinearProgram, seed: int = 0, size: int = 48) -> TensorDict:
    """A regression minibatch: ``x [size, M, features]``, ``y [size, M]`` from fixed true weights."""
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(size, program.num_agents, program.features, generator=generator)
    true = torch.linspace(-1.0, 1.0, program.features)
    y = x @ true + 0.1 * torch.randn(size, program.num_agents, generator=generator)
    return TensorDict(x=x, y=y, batch_size=[size])


def everyone(program: LearnerProgram) -> list[int]:
    return list(range(program.num_agents))


def centralized(
    program: LearnerProgram,
    theta: torch.Tensor,
    opt_state: torch.Tensor,
    batch: TensorDictBase,
    seed: int,
) -> AgentUpdate:
    """The joint trainer's call: ``update`` for every agent at once, in this process."""
    return program.update(theta, opt_state, batch, everyone(program), seed)


def relative_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    scale = expected.double().norm()
    difference = (actual.double() - expected.double()).norm()
    return float(difference / scale) if scale > 0 else float(difference)


def state_error(actual: AgentUpdate, expected: AgentUpdate) -> float:
    """The larger relative error of the ``theta`` and the ``opt_state`` rows."""
    return max(
        relative_error(actual.theta, expected.theta),
        relative_error(actual.opt_state, expected.opt_state),
    )


def maddpg_program(num_agents: int, *, critic: str = "joint") -> tuple[LearnerProgram, TensorDict]:
    """A small MADDPG program on the learner contract (its critics reading ``critic``), and a
    minibatch for it."""
    from marlplug.algorithms.maddpg import MADDPG
    from marlplug.algorithms.spaces import AgentSpace

    spaces = [
        AgentSpace(f"agent_{i}", "agent", obs_dim=6, action_dim=5, discrete=True)
        for i in range(num_agents)
    ]
    program = MADDPG(hidden_sizes=[16, 16], minibatch_size=32, critic=critic).program(spaces)
    generator = torch.Generator().manual_seed(0)
    size = 32
    obs = torch.randn(size, num_agents, 6, generator=generator)
    actions = torch.nn.functional.one_hot(
        torch.randint(0, 5, (size, num_agents), generator=generator), 5
    ).float()
    batch = TensorDict(
        obs=obs,
        action=actions,
        reward=torch.randn(size, num_agents, generator=generator),
        next_obs=torch.randn(size, num_agents, 6, generator=generator),
        terminated=torch.zeros(size, num_agents, dtype=torch.bool),
        batch_size=[size],
    )
    return program, batch


def start_count(ledger: Path, learner: int) -> int:
    """Count one more start of ``learner`` in ``ledger`` (a folder); this start's number (1, 2, ...).
    One learner has one process at a time, so its starts never race."""
    number = 1
    while (ledger / f"{learner}-{number}").exists():
        number += 1
    (ledger / f"{learner}-{number}").touch()
    return number


def load_in_learner(
    num_agents: int, deaths: Mapping[int, set[int]], ledger: str
) -> DiesWhileStarting:
    """Unpickle a :class:`DiesWhileStarting`; in a learner whose start is listed, die by SIGKILL."""
    name = multiprocessing.current_process().name  # "marlplug-learner-<j>" in a local learner
    if name.startswith("marlplug-learner-"):
        learner = int(name.rsplit("-", 1)[1])
        if start_count(Path(ledger), learner) in deaths.get(learner, set()):
            os.kill(os.getpid(), signal.SIGKILL)
    return DiesWhileStarting(num_agents, deaths, Path(ledger))


class DiesWhileStarting(LinearProgram):
    """A :class:`LinearProgram` whose learner is killed (SIGKILL) while it loads the program, on the
    starts ``deaths`` names per learner (1: its first start, 2: the next one, ...)."""

    def __init__(self, num_agents: int, deaths: Mapping[int, set[int]], ledger: Path) -> None:
        super().__init__(num_agents)
        self.deaths = dict(deaths)
        self.ledger = ledger

    def __reduce__(self) -> tuple[Any, ...]:
        return load_in_learner, (self.num_agents, self.deaths, str(self.ledger))
