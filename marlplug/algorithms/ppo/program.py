"""Joint PPO's update rule ``U`` as a :class:`~marlplug.algorithms.protocol.LearnerProgram`.

Agent ``i``'s ``theta`` row is its slice ``param[i]`` of every per-agent parameter of its group's actor
and critic (stacked weights, in the loss's parameter order), zero-padded to the widest group; its
``opt_state`` row is Adam's first moments, second moments (same layout) and its step count
(:mod:`marlplug.algorithms.ppo.rows` lays the columns out).

:meth:`PpoProgram.update` loads ``theta_all`` into the loss functionally, runs ONE forward of
``L_total`` (the joint PPO loss plus aux losses, torch's RNG seeded from ``seed``) and ONE backward,
then clips the gradient rows of the asked agents per agent and steps them with the per-agent Adam of
:mod:`marlplug.optim`. :func:`marlplug.algorithms.ppo.step.step_modules` is the same update on the
loss's own parameters and a :class:`~marlplug.optim.adam.AgentAdam` (what the joint trainer and TorchRL
users hold), with shared parameters and frozen agents.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn
from torchrl.modules import set_recurrent_mode

from marlplug.algorithms.ppo.iteration import (
    ENT_COEF,
    LR,
    entropy_coefficient,
    observation_stats,
    scheduled,
)
from marlplug.algorithms.ppo.loss_output import loss_stats, nonfinite_masks
from marlplug.algorithms.ppo.rows import GroupLayout, group_params, pack, row_layout, unpack
from marlplug.algorithms.protocol import AgentUpdate
from marlplug.errors import UserError
from marlplug.losses.joint_ppo import JointPPOLoss, sum_losses
from marlplug.optim.adam import AdamSettings, AgentAdam, adam
from marlplug.optim.clip import clip_per_agent
from marlplug.optim.sharing import group_mean_gradients

#: ``() -> (actors, critics)``: fresh networks by group, drawn from torch's global RNG.
NetworkFactory = Callable[[], tuple[Mapping[str, nn.Module], Mapping[str, nn.Module]]]


@contextmanager
def seeded(seed: int | None) -> Iterator[None]:
    """Run the block with torch's global RNG seeded to ``seed``, restoring the RNG afterwards."""
    if seed is None:
        yield
        return
    with torch.random.fork_rng(devices=[]):
        # The CPU generator alone, the one fork_rng restores: torch.manual_seed would also queue
        # a lazy seeding of every GPU backend, formatting a stack trace each time (over a
        # millisecond a minibatch in a profile), that nothing restores.
        torch.default_generator.manual_seed(seed)
        yield


def forward_backward(
    loss: JointPPOLoss, batch: TensorDictBase, seed: int | None
) -> tuple[TensorDictBase, torch.Tensor]:
    """``(losses, L_total)`` of one seeded forward pass (the caller runs the backward), with the
    entropy coefficient the minibatch carries (:mod:`marlplug.algorithms.ppo.iteration`)."""
    # Recurrent mode: a recurrent actor reads a minibatch's last batch dimension as time (its
    # sequences); feed-forward networks ignore it.
    with seeded(seed), entropy_coefficient(loss, batch), set_recurrent_mode(True):
        losses = loss(batch)
        return losses, sum_losses(losses)


class PpoProgram:
    """Joint PPO bound to one loss structure: the pure update over ``[M, P]``/``[M, O]`` rows.

    Args:
        loss: the joint loss; its structure is used, never its current weights (except by
            :func:`~marlplug.algorithms.ppo.step.step_modules`).
        max_grad_norm: each agent's global L2 clip.
        adam: Adam's learning rate, betas and eps.
        networks: builds fresh actors and critics for :meth:`init_state` (``None``: refused).
        policy: the module that acts with the loss's actors (for rollouts).
        share_params: every agent of a group steps with the group's mean gradient, so rows that
            start equal (:class:`~marlplug.nn.actor_critic.GroupActorCritic`'s ``share_params``)
            stay equal (bit for bit here; a coded round adds its decoding's round-off): one
            policy and one critic per group, each agent still in its own row (coded training
            splits rows by agent; every learner has the whole group's gradient, since the
            loss's one backward covers every agent).

    Parameters shared between agents (``MultiAgentMLP(share_params=True)``) have no per-agent row:
    they are refused (train them with :func:`~marlplug.algorithms.ppo.step.step_modules`).

    Examples:
        >>> from tests.losses.helpers import make_batch, make_loss, make_model
        >>> model = make_model((("agent", 3),))
        >>> program = PpoProgram(make_loss(model), max_grad_norm=0.5, adam=AdamSettings(lr=1e-2))
        >>> theta, opt_state = program.rows()
        >>> out = program.update(theta, opt_state, make_batch(model), agents=[2, 0], seed=7)
        >>> tuple(out.theta.shape) == (2, program.theta_size), out.stats["stepped"].tolist()
        (True, [True, True])
    """

    def __init__(
        self,
        loss: JointPPOLoss,
        *,
        max_grad_norm: float,
        adam: AdamSettings,
        networks: NetworkFactory | None = None,
        policy: Any = None,
        share_params: bool = False,
    ) -> None:
        self.loss = loss
        self.share_params = share_params
        #: The module that acts with the loss's actors (what :class:`PpoRollouts` collects with).
        self.policy = policy
        self.max_grad_norm = max_grad_norm
        self.adam = adam
        self._networks = networks
        self.groups: tuple[GroupLayout, ...] = row_layout(loss)
        self.num_agents = sum(group.n_agents for group in self.groups)
        self.theta_size = max(group.slots[-1].stop for group in self.groups)
        self.opt_state_size = 2 * self.theta_size + 1

    def __getstate__(self) -> dict[str, Any]:
        """What a learner process receives: the update's structure, not the acting side (the policy
        and the network factory stay here; a learner never acts or draws fresh networks)."""
        state = self.__dict__.copy()
        state.update(policy=None, _networks=None)
        return state

    # ------------------------------------------------------------------ rows <-> tensors

    def rows(self, optimizer: AgentAdam | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """``(theta [M, P], opt_state [M, O])`` of the loss's current weights and ``optimizer``'s
        state (zeros where it has none)."""
        theta = torch.zeros(self.num_agents, self.theta_size)
        opt_state = torch.zeros(self.num_agents, self.opt_state_size)
        params = dict(self.loss.named_parameters())
        for group in self.groups:
            rows = slice(group.first, group.first + group.n_agents)
            tensors = [tensor.detach() for tensor in group_params(params, group)]
            pack(group, tensors, theta[rows])
            if optimizer is None:
                continue
            states = [optimizer.state.get(tensor, {}) for tensor in group_params(params, group)]
            for offset, moment in ((0, "exp_avg"), (self.theta_size, "exp_avg_sq")):
                moments = [
                    state.get(moment, torch.zeros_like(tensor))
                    for state, tensor in zip(states, tensors, strict=True)
                ]
                pack(group, moments, opt_state[rows, offset:])
            if states and "step" in states[0]:
                opt_state[rows, -1] = states[0]["step"]
        return theta, opt_state

    def load(self, theta: torch.Tensor) -> None:
        """Every agent's ``theta`` row into the loss's weights, in place."""
        params = dict(self.loss.named_parameters())
        with torch.no_grad():
            for group in self.groups:
                rows = theta[group.first : group.first + group.n_agents]
                for param, value in zip(
                    group_params(params, group), unpack(group, rows), strict=True
                ):
                    param.copy_(value)

    def write(self, theta: torch.Tensor, opt_state: torch.Tensor, optimizer: AgentAdam) -> None:
        """The inverse of :meth:`rows`: every agent's rows into the loss's weights and ``optimizer``'s
        state, in place (a decoded second moment is kept non-negative, a step count whole)."""
        self.load(theta)
        params = dict(self.loss.named_parameters())
        for group in self.groups:
            rows = slice(group.first, group.first + group.n_agents)
            tensors = group_params(params, group)
            avgs = unpack(group, opt_state[rows])
            sqs = unpack(group, opt_state[rows, self.theta_size :])
            for param, avg, sq in zip(tensors, avgs, sqs, strict=True):
                state = optimizer.state[param]
                state["exp_avg"] = avg
                state["exp_avg_sq"] = sq.clamp_(min=0.0)
                state["step"] = opt_state[rows, -1].round().to(torch.float32)

    def init_state(self, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Fresh rows: the networks the factory builds after ``torch.manual_seed(seed)`` (as the joint
        trainer draws them), zero Adam state."""
        if self._networks is None:
            raise UserError(
                "PpoProgram.init_state: this program was built without a network factory"
            )
        with seeded(seed):
            actors, critics = self._networks()
        parts = {"actor_networks": actors, "critic_networks": critics}
        theta = torch.zeros(self.num_agents, self.theta_size)
        for group in self.groups:
            tensors = [
                parts[slot.key[0]][slot.key[1]].get_parameter(".".join(slot.key[2:])).detach()
                for slot in group.slots
            ]
            pack(group, tensors, theta[group.first : group.first + group.n_agents])
        return theta, torch.zeros(self.num_agents, self.opt_state_size)

    # ------------------------------------------------------------------ the update

    def update(
        self,
        theta_all: torch.Tensor,
        opt_state: torch.Tensor,
        batch: TensorDictBase,
        agents: Sequence[int],
        seed: int,
    ) -> AgentUpdate:
        """``U`` for ``agents``: one forward and one backward of ``L_total`` at ``theta_all``.

        An agent whose gradient norm is not finite returns its input rows unchanged (``stepped``
        false, ``nonfinite`` true); an agent some loss term of which is not finite (a NaN aux loss
        with a finite gradient) steps, with ``nonfinite`` true. Stats: every scalar of the loss's
        output and ``total_loss`` (``L_total``) (0-d); per agent (``[len(agents)]``)
        ``grad_norm`` (before clipping), ``stepped``, ``nonfinite``, ``nonfinite/<term>`` for each
        loss term that was not finite for some agent
        (:func:`~marlplug.algorithms.ppo.loss_output.nonfinite_masks`) and the loss's per-agent
        diagnostics as ``agent/<name>`` (``agent/policy_loss``, ...).

        What the minibatch carries for its iteration (:mod:`marlplug.algorithms.ppo.iteration`)
        replaces the program's constants: the learning rate, the entropy coefficient and every
        agent's observation statistics (written into its rows before the forward, so the returned
        rows hold them).
        """
        index = torch.as_tensor(list(agents), dtype=torch.long)
        if index.numel() and not bool(((index >= 0) & (index < self.num_agents)).all()):
            raise UserError(f"agents {list(agents)}: there are {self.num_agents} agents")
        params = TensorDict.from_module(self.loss).detach()
        leaves: list[torch.Tensor] = []
        for group in self.groups:
            rows = theta_all[group.first : group.first + group.n_agents].detach()
            carried = observation_stats(batch, group.name)
            for slot, tensor in zip(group.slots, unpack(group, rows), strict=True):
                if slot.observation_stats and carried is not None:
                    tensor.copy_(carried)
                leaves.append(tensor.requires_grad_(True))
                params.set(slot.key, tensor)
        with params.to_module(self.loss):
            losses, total = forward_backward(self.loss, batch, seed)
        grads = torch.autograd.grad(total, leaves, allow_unused=True)
        lr = scheduled(batch, LR)
        adam = self.adam if lr is None else replace(self.adam, lr=lr)

        new_theta = theta_all.index_select(0, index).clone()
        new_opt = opt_state.index_select(0, index).clone()
        grad_norm = torch.zeros(len(agents), dtype=torch.float64)
        stepped = torch.zeros(len(agents), dtype=torch.bool)
        position = 0
        for group in self.groups:
            count = len(group.slots)
            group_grads = [
                torch.zeros_like(leaf) if grad is None else grad
                for leaf, grad in zip(
                    leaves[position : position + count],
                    grads[position : position + count],
                    strict=True,
                )
            ]
            if self.share_params:
                group_grads = group_mean_gradients(group_grads)
            group_leaves = leaves[position : position + count]
            position += count
            mine = ((index >= group.first) & (index < group.first + group.n_agents)).nonzero()
            if mine.numel() == 0:
                continue
            where = mine.flatten()
            local = index[where] - group.first
            norms, finite = self._step_rows(
                group, group_leaves, group_grads, local, new_theta, new_opt, where, adam
            )
            grad_norm[where] = norms
            stepped[where] = finite
        groups = [group.name for group in self.groups]
        stats = loss_stats(losses, groups, index)
        stats["total_loss"] = total.detach().reshape(())  # L_total, the sum of the loss_* entries
        # A scheduled value is logged (metrics: lr, ent_coef) so a run shows the schedule it ran.
        for name in (LR, ENT_COEF):
            value = scheduled(batch, name)
            if value is not None:
                stats[name] = torch.tensor(value, dtype=torch.float64)
        nonfinite = ~stepped
        for term, mask in nonfinite_masks(losses, groups, index).items():
            nonfinite |= mask
            # Which term was not finite, for the run's warnings (marlplug.train.loop reads
            # ``nonfinite/<term>``); only the terms that were, so a finite round adds nothing.
            stats[f"nonfinite/{term}"] = mask
        stats.update(grad_norm=grad_norm, stepped=stepped, nonfinite=nonfinite)
        return AgentUpdate(theta=new_theta, opt_state=new_opt, stats=stats)

    def _step_rows(
        self,
        group: GroupLayout,
        leaves: Sequence[torch.Tensor],
        grads: Sequence[torch.Tensor],
        local: torch.Tensor,
        new_theta: torch.Tensor,
        new_opt: torch.Tensor,
        where: torch.Tensor,
        adam_settings: AdamSettings,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Clip and Adam-step one group's agents ``local``; write the rows of those that step."""
        whole = local.numel() == group.n_agents and bool(
            (local == torch.arange(group.n_agents)).all()
        )
        # The whole group in order (the joint step): the tensors as they are, no gather.
        pick = (lambda t: t) if whole else (lambda t: t.index_select(0, local))
        clipped, norms, finite = clip_per_agent([pick(g) for g in grads], self.max_grad_norm)
        opt_rows = new_opt[where]
        moments = unpack(group, opt_rows)
        second = unpack(group, opt_rows[:, self.theta_size :])
        # A decoded state carries round-off: a step count of 2.9999999, a second moment of -1e-20.
        steps = opt_rows[:, -1].round()
        new_params, new_avgs, new_sqs, new_steps = adam(
            [pick(leaf.detach()) for leaf in leaves],
            clipped,
            moments,
            [sq.clamp_(min=0.0) for sq in second],
            steps,
            finite,
            settings=adam_settings,
        )
        rows = where[finite]
        if rows.numel():
            theta_rows = new_theta[rows]
            opt_out = new_opt[rows]
            # Every agent finite (the usual case): the tensors as they are, no masked copies.
            keep = (lambda t: t) if bool(finite.all()) else (lambda t: t[finite])
            pack(group, [keep(p) for p in new_params], theta_rows)
            pack(group, [keep(m) for m in new_avgs], opt_out)
            pack(group, [keep(v) for v in new_sqs], opt_out[:, self.theta_size :])
            opt_out[:, -1] = keep(new_steps)
            new_theta[rows] = theta_rows
            new_opt[rows] = opt_out
        return norms, finite
