"""Joint PPO as a coded learner algorithm: one coded round is one optimization step (one minibatch).

:class:`PpoCodedProgram` wraps :meth:`marlplug.algorithms.ppo.PPO.agent_update` (the pure ``U_i``) behind
the flat-vector interface of the coded runtime: agent ``i``'s state vector holds its slice of every
parameter of its group followed by its Adam moments and step count, zero-padded to the longest agent.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDict, TensorDictBase

from marlplug.algorithms.ppo import (
    PPO,
    agent_optimizer_state,
    agent_parameters,
    loss_parameter_groups,
    parameters_of,
)
from marlplug.algorithms.state_codec import StateCodec
from marlplug.losses.joint_ppo import JointPPOLoss
from marlplug.train.agent_optim import AgentAdam

Key = tuple[str, ...]


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

        ``seeds`` is accepted for the runtime's interface; PPO's loss uses ``loss_seed`` for every
        agent, as the joint step does.
        """
        del seeds
        params = self._theta_all(theta_all)
        out = torch.zeros(len(agents), self.state_size)
        for position, agent in enumerate(agents):
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
                self.loss_seed,
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
