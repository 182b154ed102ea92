"""A temporary bridge: learner programs as today's coded runtime calls them, until it speaks the protocol.

Today's controller and in-process loops (``distributed/learner.py``'s ``UpdateProgram``,
``train/maddpg_loop.py``) hold one ``[M, D]`` row per agent and call
``update(theta_all, agents, batch, seeds) -> [len(agents), D]``. :class:`Rows` gives that view of a
:class:`~marlplug.algorithms.protocol.LearnerProgram`: a row is the agent's ``theta`` row followed by
its ``opt_state`` row, and each call is one ``program.update`` (one forward and one backward for all the
call's agents). :class:`CodedPpoStep` makes one coded round a drop-in for the joint trainer's step.

Delete this module once the orchestrator and the controller call ``LearnerProgram.update`` directly.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Protocol

import torch
from tensordict import TensorDictBase
from torchrl.envs import EnvBase

from marlplug.algorithms.env_adapter import MultiAgentEnvAdapter
from marlplug.algorithms.maddpg import MADDPG
from marlplug.algorithms.maddpg_program import MaddpgProgram
from marlplug.algorithms.ppo_params import loss_parameter_groups
from marlplug.algorithms.ppo_program import PpoProgram, forward_backward
from marlplug.algorithms.ppo_step import UpdateStepResult
from marlplug.algorithms.protocol import LearnerProgram
from marlplug.errors import UserError
from marlplug.losses.joint_ppo import JointPPOLoss
from marlplug.optim.adam import AgentAdam
from marlplug.optim.clip import per_agent_norms

#: A minibatch entry (``[B]`` int64, every row the same) carrying the round's seed to the learners
#: (today's controller passes per-agent seeds only); :meth:`Rows.update` removes it.
ROUND_SEED_KEY = "coded_round_seed"


class Rows:
    """A learner program as one ``[M, P + O]`` row per agent (``theta`` then ``opt_state``).

    The round's seed travels in the batch (:data:`ROUND_SEED_KEY`), the same on every learner.

    Args:
        program: the learner program.
    """

    def __init__(self, program: LearnerProgram) -> None:
        self.program = program
        self.num_agents = program.num_agents
        self.theta_size = program.theta_size
        self.state_size = program.theta_size + program.opt_state_size

    def init_state(self, seed: int) -> torch.Tensor:
        """``[M, P + O]`` fresh rows."""
        return torch.cat(self.program.init_state(seed), dim=1)

    def split(self, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(theta, opt_state)`` of ``[·, P + O]`` rows."""
        return rows[:, : self.theta_size], rows[:, self.theta_size :]

    def update(
        self,
        theta_all: torch.Tensor,
        agents: Sequence[int],
        batch: TensorDictBase,
        seeds: Sequence[int],
    ) -> torch.Tensor:
        """``[len(agents), P + O]``: the agents' new rows (``seeds`` is not used: the round's seed
        is the batch's :data:`ROUND_SEED_KEY` entry)."""
        del seeds
        theta, opt_state = self.split(theta_all)
        if ROUND_SEED_KEY not in batch.keys():  # noqa: SIM118
            raise UserError(f"a coded round needs the batch entry '{ROUND_SEED_KEY}'")
        seed = int(batch.get(ROUND_SEED_KEY).reshape(-1)[0])
        out = self.program.update(theta, opt_state, batch.exclude(ROUND_SEED_KEY), agents, seed)
        return torch.cat([out.theta, out.opt_state], dim=1)


class MaddpgRows(Rows):
    """:class:`Rows` of a :class:`MaddpgProgram` with today's per-agent seeds: agent ``agents[k]``
    draws from ``seeds[k]``; acting and the options are the program's.

    Examples:
        >>> from marlplug.algorithms.maddpg import MADDPG
        >>> from marlplug.algorithms.spaces import AgentSpace
        >>> agents = [AgentSpace(f"a{i}", "a", obs_dim=4, action_dim=2, discrete=True)
        ...           for i in range(2)]
        >>> rows = MaddpgRows(MADDPG(hidden_sizes=[8]).program(agents))
        >>> rows.init_state(0).shape == (2, rows.state_size)
        True
    """

    def __init__(self, program: MaddpgProgram) -> None:
        super().__init__(program)
        self.maddpg = program

    def __getattr__(self, name: str) -> Any:
        # Everything else (act, env_scale, options, agents, codec, ...) is the program's. Looked
        # up through __dict__: an instance being unpickled has no ``maddpg`` yet.
        program = self.__dict__.get("maddpg")
        if program is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(program, name)

    def update(
        self,
        theta_all: torch.Tensor,
        agents: Sequence[int],
        batch: TensorDictBase,
        seeds: Sequence[int],
    ) -> torch.Tensor:
        """``[len(agents), P + O]``: the agents' new rows.

        An agent the program reports non-finite (it kept its rows) comes back as NaN rows: today's
        runner stops on a non-finite state (``runs/nonfinite.check_finite_states``), not on stats.
        """
        theta, opt_state = self.split(theta_all)
        out = self.maddpg.update_seeded(theta, opt_state, batch, agents, seeds)
        rows = torch.cat([out.theta, out.opt_state], dim=1)
        rows[out.stats["nonfinite"]] = float("nan")
        return rows


def runner_program(algorithm: Any, env: EnvBase) -> Any:
    """The program today's off-policy runner (``train/coded_run.py``) trains for ``algorithm``:
    MADDPG's as :class:`MaddpgRows`; a plugin written for that runner (``bind(agents)``) as is."""
    agents = MultiAgentEnvAdapter(env).agents
    if isinstance(algorithm, MADDPG):  # temporary: the orchestrator dispatches on the protocol
        return MaddpgRows(algorithm.program(agents))
    return algorithm.bind(agents)


class RoundRunner(Protocol):
    """What :class:`CodedPpoStep` needs of a coded controller (e.g. ``CodedController``)."""

    def update(
        self, theta_all: torch.Tensor, batch: TensorDictBase, round_index: int
    ) -> tuple[torch.Tensor, Any]: ...

    def skip_rounds(self, rounds: int) -> None: ...


class CodedPpoStep:
    """One joint PPO optimization step as one coded round: a drop-in for ``PPO.update_step``.

    Sends the rows of ``loss``/``optimizer`` and the minibatch (with the step's seed) through
    ``controller`` and writes the decoded rows back; frozen agents keep their rows exactly.

    Today's controller returns rows only, so the reported losses and gradient norms come from one
    forward and backward pass here (the learners compute the same at the same rows); they will
    come with the learners' answers once the controller returns the program's stats.

    Args:
        program: the trainer's :class:`PpoProgram` (its controller runs ``Rows(program)``).
        controller: runs the rounds (``update(theta_all, batch, round_index)``).
        loss: the trainer's joint loss (updated in place).
        optimizer: the trainer's optimizer (its state is updated in place).
    """

    def __init__(
        self,
        program: PpoProgram,
        controller: RoundRunner,
        loss: JointPPOLoss,
        optimizer: AgentAdam,
    ) -> None:
        self.program = program
        self.controller = controller
        self.loss = loss
        self.optimizer = optimizer
        self.rounds = 0
        self.round_logs: list[Any] = []

    def __call__(
        self, batch: TensorDictBase, *, seed: int, frozen: Collection[int] = ()
    ) -> UpdateStepResult:
        agents = self.program.num_agents
        frozen_agents = torch.zeros(agents, dtype=torch.bool)
        for agent in frozen:
            if not 0 <= agent < agents:
                raise UserError(
                    f"frozen: agent index {agent} is out of range; there are {agents} agents"
                )
            frozen_agents[agent] = True
        theta = torch.cat(self.program.rows(self.optimizer), dim=1)
        sent = batch.clone()
        sent.set(ROUND_SEED_KEY, torch.full(batch.batch_size, seed, dtype=torch.int64))
        losses, total, norms = self._losses_and_norms(batch, seed)
        decoded, log = self.controller.update(theta, sent, round_index=self.rounds)
        self.rounds += 1
        self.round_logs.append(log)
        decoded[frozen_agents] = theta[frozen_agents]
        size = self.program.theta_size
        self.program.write(decoded[:, :size], decoded[:, size:], self.optimizer)
        finite = torch.isfinite(norms)
        return UpdateStepResult(
            losses=losses,
            total_loss=total,
            grad_norms=norms,
            stepped=finite & ~frozen_agents,
            nonfinite=~finite,
        )

    def _losses_and_norms(
        self, batch: TensorDictBase, seed: int
    ) -> tuple[TensorDictBase, float, torch.Tensor]:
        """The losses, ``L_total`` and every agent's gradient norm at the current weights."""
        self.optimizer.zero_grad(set_to_none=True)
        losses, total = forward_backward(self.loss, batch, seed)
        total.backward()
        norms = torch.cat(
            [
                per_agent_norms([p.grad for p in group.params], group.n_agents)
                for group in loss_parameter_groups(self.loss)
            ]
        )
        self.optimizer.zero_grad(set_to_none=True)
        return losses.detach(), float(total.detach()), norms

    def state_dict(self) -> dict[str, Any]:
        """The round count (a resumed run continues the round numbers and straggler draws)."""
        return {"rounds": self.rounds}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from :meth:`state_dict`'s output; call it before the first round."""
        self.rounds = int(state["rounds"])
        self.round_logs.clear()
        self.controller.skip_rounds(self.rounds)
