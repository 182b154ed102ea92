"""Joint PPO as a coded learner algorithm: one coded round is one optimization step (one minibatch).

:class:`PpoCodedProgram` wraps :meth:`marlplug.algorithms.ppo.PPO.agent_update` (the pure ``U_i``) behind
the flat-vector interface of the coded runtime: agent ``i``'s state vector holds its slice of every
parameter of its group followed by its Adam moments and step count, zero-padded to the longest agent.
:class:`CodedPpoStep` makes one such round a drop-in for the joint trainer's minibatch step.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Protocol

import torch
from tensordict import TensorDict, TensorDictBase

from marlplug.algorithms.ppo import (
    PPO,
    UpdateStepResult,
    agent_optimizer_state,
    agent_parameters,
    loss_parameter_groups,
    parameters_of,
    seeded,
)
from marlplug.algorithms.state_codec import StateCodec
from marlplug.errors import UserError
from marlplug.losses.joint_ppo import JointPPOLoss, sum_losses
from marlplug.optim.agent_optim import AgentAdam, per_agent_grad_norms

Key = tuple[str, ...]
#: A minibatch entry (``[B]`` int64, every row the same) carrying the step's loss seed to the
#: learners; :meth:`PpoCodedProgram.update` removes it before computing the loss.
LOSS_SEED_KEY = "coded_loss_seed"
#: A minibatch entry (``[B, M]`` bool, every row the same) marking the frozen agents: their update
#: returns the input state unchanged (see :meth:`PpoCodedProgram.update`).
FROZEN_KEY = "coded_frozen_agents"


def _joined(key: Key) -> str:
    return "\x1f".join(key)


class PpoCodedProgram:
    """The coded-runtime view of joint PPO for a fixed loss structure.

    Args:
        ppo: the algorithm (its Adam ε is used).
        loss: the joint loss; only its structure is used, never its current weights.
        lr: Adam learning rate.
        max_grad_norm: per-agent global L2 clip.
        loss_seed: the seed of the loss computation (stochastic aux losses); the same for every agent,
            as in the joint step.

    Examples:
        >>> program = PpoCodedProgram(PPO(), loss, lr=3e-4, max_grad_norm=0.5)  # doctest: +SKIP
        >>> theta = program.encode(loss, optimizer)  # doctest: +SKIP
    """

    def __init__(
        self,
        ppo: PPO,
        loss: JointPPOLoss,
        *,
        lr: float,
        max_grad_norm: float,
        loss_seed: int | None = None,
    ) -> None:
        self.ppo = ppo
        self.loss = loss
        self.lr = lr
        self.max_grad_norm = max_grad_norm
        self.loss_seed = loss_seed
        groups = loss_parameter_groups(loss)
        self.num_agents = sum(group.n_agents for group in groups)
        self._keys: list[list[Key]] = []
        self._codecs: list[StateCodec] = []
        for agent in range(self.num_agents):
            params = agent_parameters(loss, agent)
            keys = [
                key if isinstance(key, tuple) else (key,)
                for key in params.keys(include_nested=True, leaves_only=True)
            ]
            param_shapes = [(key, tuple(params.get(key).shape)) for key in keys]
            shapes: list[tuple[Key, tuple[int, ...]]] = [
                ((part, *key), shape)
                for part in ("param", "exp_avg", "exp_avg_sq")
                for key, shape in param_shapes
            ]
            shapes.append((("step",), ()))
            self._keys.append(keys)
            self._codecs.append(StateCodec([(_joined(k), s) for k, s in shapes]))
        self.state_size = max(codec.size for codec in self._codecs)

    # ------------------------------------------------------------------ vectors <-> modules

    def encode(self, loss: JointPPOLoss, optimizer: AgentAdam) -> torch.Tensor:
        """``[M, D]``: every agent's parameters and Adam state, as this program lays them out."""
        rows = torch.zeros(self.num_agents, self.state_size)
        for agent in range(self.num_agents):
            params = agent_parameters(loss, agent)
            state = agent_optimizer_state(loss, optimizer, agent)
            entries = {_joined(("param", *k)): params.get(k) for k in self._keys[agent]}
            for moment in ("exp_avg", "exp_avg_sq"):
                entries.update(
                    {_joined((moment, *k)): state.get((moment, *k)) for k in self._keys[agent]}
                )
            entries[_joined(("step",))] = state.get("step").reshape(())
            flat = self._codecs[agent].flatten({k: v.unsqueeze(0) for k, v in entries.items()})
            rows[agent, : flat.shape[1]] = flat[0]
        return rows

    def write(self, theta: torch.Tensor, loss: JointPPOLoss, optimizer: AgentAdam) -> None:
        """The inverse of :meth:`encode`: put every agent's row of ``theta`` (``[M, D]``) into the
        weights of ``loss`` and the Adam state of ``optimizer``, in place."""
        named = dict(loss.named_parameters())
        agent = 0
        for group in loss_parameter_groups(loss):
            for index in range(group.n_agents):
                unpacked = self._unpack(theta[agent], agent)
                step = unpacked[_joined(("step",))].round()
                for key in self._keys[agent]:
                    param = named[".".join(key)]
                    state = optimizer.state[param]
                    if not state:
                        state["step"] = torch.zeros(group.n_agents, dtype=torch.float32)
                        state["exp_avg"] = torch.zeros_like(param)
                        state["exp_avg_sq"] = torch.zeros_like(param)
                    with torch.no_grad():
                        param[index] = unpacked[_joined(("param", *key))]
                    state["exp_avg"][index] = unpacked[_joined(("exp_avg", *key))]
                    state["exp_avg_sq"][index] = unpacked[_joined(("exp_avg_sq", *key))].clamp(
                        min=0.0
                    )
                    state["step"][index] = step
                agent += 1

    def _unpack(self, row: torch.Tensor, agent: int) -> dict[str, torch.Tensor]:
        codec = self._codecs[agent]
        return {k: v[0] for k, v in codec.unflatten(row[: codec.size].unsqueeze(0)).items()}

    def _theta_all(self, theta_all: torch.Tensor) -> TensorDictBase:
        """Every parameter of the loss as a TensorDict, each agent's slice taken from its row."""
        params = parameters_of(self.loss)
        groups = loss_parameter_groups(self.loss)
        agent = 0
        for group in groups:
            for index in range(group.n_agents):
                unpacked = self._unpack(theta_all[agent], agent)
                for key in self._keys[agent]:
                    params.get(key)[index] = unpacked[_joined(("param", *key))]
                agent += 1
        return params

    # ------------------------------------------------------------------ the update

    def update(
        self,
        theta_all: torch.Tensor,
        agents: Sequence[int],
        batch: TensorDictBase,
        seeds: Sequence[int],
    ) -> torch.Tensor:
        """``U_i`` for each agent in ``agents`` (one call of :meth:`PPO.agent_update` each).

        ``seeds`` is accepted for the runtime's interface; PPO's loss uses one seed for every agent,
        as the joint step does: the batch's :data:`LOSS_SEED_KEY` entry when it has one, else
        ``loss_seed``. An agent marked in the batch's :data:`FROZEN_KEY` entry keeps its row of
        ``theta_all`` (weights and Adam state), as a frozen agent does in the joint step.
        """
        del seeds
        batch, loss_seed, frozen = self._round_entries(batch)
        params = self._theta_all(theta_all)
        out = torch.zeros(len(agents), self.state_size)
        for position, agent in enumerate(agents):
            if agent in frozen:
                out[position] = theta_all[agent]
                continue
            unpacked = self._unpack(theta_all[agent], agent)
            state = TensorDict({})
            for key in self._keys[agent]:
                state.set(("exp_avg", *key), unpacked[_joined(("exp_avg", *key))])
                # A decoded second moment can carry -1e-20 where the truth is 0.
                state.set(
                    ("exp_avg_sq", *key), unpacked[_joined(("exp_avg_sq", *key))].clamp(min=0.0)
                )
            state.set("step", unpacked[_joined(("step",))].round())
            new_params, new_state = self.ppo.agent_update(
                self.loss,
                params,
                state,
                batch,
                loss_seed,
                agent=agent,
                lr=self.lr,
                max_grad_norm=self.max_grad_norm,
            )
            entries = {_joined(("param", *k)): new_params.get(k) for k in self._keys[agent]}
            for moment in ("exp_avg", "exp_avg_sq"):
                entries.update(
                    {_joined((moment, *k)): new_state.get((moment, *k)) for k in self._keys[agent]}
                )
            entries[_joined(("step",))] = new_state.get("step").reshape(())
            flat = self._codecs[agent].flatten({k: v.unsqueeze(0) for k, v in entries.items()})
            out[position, : flat.shape[1]] = flat[0]
        return out

    def _round_entries(self, batch: TensorDictBase) -> tuple[TensorDictBase, int | None, set[int]]:
        """``(minibatch, loss seed, frozen agents)``: the step's entries taken out of ``batch``."""
        loss_seed = self.loss_seed
        frozen: set[int] = set()
        keys = set(batch.keys())
        if LOSS_SEED_KEY in keys:
            loss_seed = int(batch.get(LOSS_SEED_KEY).reshape(-1)[0])
        if FROZEN_KEY in keys:
            mask = batch.get(FROZEN_KEY).reshape(-1, self.num_agents)[0]
            frozen = {int(agent) for agent in torch.nonzero(mask).flatten()}
        return batch.exclude(LOSS_SEED_KEY, FROZEN_KEY), loss_seed, frozen


def frozen_mask(frozen: Collection[int], num_agents: int) -> torch.Tensor:
    """``[num_agents]`` bool: which agents are frozen; an index out of range is a :class:`UserError`.

    Examples:
        >>> frozen_mask({1}, 3).tolist()
        [False, True, False]
    """
    mask = torch.zeros(num_agents, dtype=torch.bool)
    for agent in frozen:
        if not 0 <= agent < num_agents:
            raise UserError(
                f"frozen: agent index {agent} is out of range; there are {num_agents} agents"
            )
        mask[agent] = True
    return mask


class RoundRunner(Protocol):
    """What :class:`CodedPpoStep` needs of a coded controller (e.g. ``CodedController``)."""

    def update(
        self, theta_all: torch.Tensor, batch: TensorDictBase, round_index: int
    ) -> tuple[torch.Tensor, Any]: ...

    def skip_rounds(self, rounds: int) -> None: ...


class CodedPpoStep:
    """One joint PPO optimization step as one coded round: a drop-in for ``PPO.update_step``.

    Encodes θ (weights and Adam state) of ``loss``/``optimizer``, sends it and the minibatch (with
    the step's loss seed, :data:`LOSS_SEED_KEY`, and frozen agents, :data:`FROZEN_KEY`) through
    ``controller``, and writes the decoded θ' back; frozen agents keep θ exactly (their rows of θ,
    not of the floating-point decode, are written back).

    The reported losses and per-agent gradient norms (before clipping) come from one forward and
    backward pass at θ on this process, as the joint step computes them: the learners compute the
    same gradients at the same θ, on the same minibatch with the same seed, but send back only θ'.
    An agent whose norm is not finite is reported as not stepped, since its learners' update
    returns its state unchanged.

    Args:
        program: the coded view of ``loss``.
        controller: runs the rounds (``update(theta_all, batch, round_index)``).
        loss: the trainer's joint loss (updated in place).
        optimizer: the trainer's optimizer (its state is updated in place).

    Examples:
        >>> step = CodedPpoStep(program, controller, trainer.loss, trainer.optimizer)  # doctest: +SKIP
        >>> trainer.step_function = step  # doctest: +SKIP
    """

    def __init__(
        self,
        program: PpoCodedProgram,
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
        frozen_agents = frozen_mask(frozen, agents)
        theta = self.program.encode(self.loss, self.optimizer)
        sent = batch.clone()
        sent.set(LOSS_SEED_KEY, torch.full(batch.batch_size, seed, dtype=torch.int64))
        sent.set(FROZEN_KEY, frozen_agents.expand(*batch.batch_size, agents).clone())
        losses, total, norms = self._losses_and_norms(batch, seed)
        decoded, log = self.controller.update(theta, sent, round_index=self.rounds)
        self.rounds += 1
        self.round_logs.append(log)
        decoded[frozen_agents] = theta[frozen_agents]
        self.program.write(decoded, self.loss, self.optimizer)
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
        """The losses, ``L_total`` and every agent's gradient norm at θ (what the joint step reports).

        Leaves no gradient behind: the parameters change only through the decoded θ'."""
        self.optimizer.zero_grad(set_to_none=True)
        with seeded(seed):
            losses = self.loss(batch)
            total = sum_losses(losses)
        total.backward()
        norms = per_agent_grad_norms(loss_parameter_groups(self.loss))
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
