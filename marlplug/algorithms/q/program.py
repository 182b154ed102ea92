"""Q-learning's update rule ``U`` over per-agent rows (:class:`QProgram`): IQL without a mixer, VDN
with TorchRL's ``VDNMixer`` summing the agents' chosen Q-values into one team TD target, QMIX with
TorchRL's ``QMixer`` (whose parameters every row carries a copy of, :mod:`~marlplug.algorithms.q.mixing`).

Agent ``i``'s ``theta`` row holds its Q-network and target Q-network (one stacked MLP per agent,
:mod:`marlplug.nn.functional`, or with ``recurrent: gru`` an encoder, GRU cell and head,
:mod:`~marlplug.algorithms.q.recurrent`, trained on replayed chunks of steps,
:mod:`~marlplug.algorithms.q.sequences`); its ``opt_state`` row Adam's moments and step count. The
update draws no random numbers (the exploration is the rollouts'), so its ``seed`` is unused.

Why not TorchRL's ``DQNLoss``: it holds its online and target parameters as its own
``TensorDictParams``, reduces the TD error over every agent's elements at once (one sum whose rounding
depends on which agents share the call, which would break coded == centralized bit for bit) and
writes priorities into its input (no longer a pure function of the batch). The TD loss is three
lines here, per agent, as the contract needs; the mixer is TorchRL's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import torch
from tensordict import TensorDict, TensorDictBase

from marlplug.algorithms.protocol import AgentUpdate
from marlplug.algorithms.q.acting import QActing
from marlplug.algorithms.q.mixing import MixerRows
from marlplug.algorithms.q.recurrent import RecurrentQNetwork
from marlplug.algorithms.q.targets import (
    REWARD_MOMENTS,
    fresh_reward_moments,
    next_value,
    standardized_rewards,
)
from marlplug.algorithms.spaces import AgentSpace, padded_dims
from marlplug.algorithms.state_codec import (
    AgentRows,
    clipped_adam_step,
    fresh_target_and_adam_state,
    target_and_adam_layout,
)
from marlplug.nn.functional import init_mlp, mlp_shapes, stacked_mlp
from marlplug.optim.adam import AdamSettings
from marlplug.optim.sharing import group_numbers, mean_within_groups, seed_sources, whole_groups
from marlplug.seeding import agent_seed
from marlplug.torch_threads import one_thread

if TYPE_CHECKING:
    from marlplug.algorithms.q.options import QOptions

#: What a recurrent program's minibatch of chunks adds (:mod:`~marlplug.algorithms.q.sequences`):
#: ``is_init`` ``[B, L]`` where an episode starts, ``hidden`` ``[B, M, H]`` each chunk's first state.
SEQUENCE_KEYS = ("is_init", "hidden")


class QProgram(QActing, AgentRows):
    """Per-agent Q-learning over ``theta``/``opt_state`` rows, for a fixed list of agents.

    Observations and actions are zero-padded to the widest agent; a padded action is never chosen
    (acting) nor bootstrapped from (the target's max). Nor is an action the env's ``action_mask``
    forbids (LBF's): acting takes the mask, and the TD target's max skips the actions the
    minibatch's ``next_action_mask`` forbids.

    Args:
        options: the hyperparameters.
        agents: the agents, in the env's flat order (discrete actions).
        mixer: ``None`` for independent Q-learning (each agent's own reward and TD target), or a
            TorchRL ``Mixer`` over all ``M`` agents (``VDNMixer``): the team's Q is the mixed
            chosen Q-values, its target the mixed target maxima plus the summed reward. A mixer
            couples every agent's gradient, so every call forwards all agents. A mixer with
            parameters (``QMixer``) is trained with the Q-networks, a copy in every row.
        state_index: what a mixer that needs a state reads (:func:`~marlplug.algorithms.q.mixing.
            state_index`); default every agent's observation concatenated.

    Examples:
        >>> from marlplug.algorithms.q.options import QOptions
        >>> agents = [AgentSpace(f"agent_{i}", "agent", obs_dim=6, action_dim=5, discrete=True)
        ...           for i in range(3)]
        >>> program = QProgram(QOptions(hidden_sizes=[8]), agents)
        >>> theta, opt_state = program.init_state(seed=0)
        >>> program.act(theta, torch.zeros(2, 3, 6), explore=False).shape  # one-hot [E, M, A]
        torch.Size([2, 3, 5])
    """

    def __init__(
        self,
        options: QOptions,
        agents: Sequence[AgentSpace],
        *,
        mixer: torch.nn.Module | None = None,
        state_index: torch.Tensor | None = None,
    ) -> None:
        self.options = options
        self.agents = list(agents)
        self.num_agents = len(self.agents)
        self.mixer = mixer
        self.obs_dim, self.action_dim = padded_dims(self.agents)
        self.sizes = [self.obs_dim, *options.hidden_sizes, self.action_dim]
        self.recurrent = None
        network = mlp_shapes("q", self.sizes)
        if options.recurrent == "gru":
            self.recurrent = RecurrentQNetwork(
                obs_dim=self.obs_dim,
                hidden_sizes=options.hidden_sizes,
                hidden_size=options.recurrent_hidden_size,
                action_dim=self.action_dim,
            )
            network = self.recurrent.shapes
        self.policy = None
        theta, moments = target_and_adam_layout(network)
        #: The mixer's parameters in the rows, if it has any (``None`` for IQL and VDN).
        self.mixer_rows: MixerRows | None = None
        if mixer is not None and any(True for _ in mixer.parameters()):
            if state_index is None:
                state_index = torch.arange(self.num_agents * self.obs_dim)
            self.mixer_rows = MixerRows(mixer, state_index)
            theta += self.mixer_rows.theta_layout
            moments += self.mixer_rows.opt_layout
        if options.standardize_rewards:
            # Per agent, or the team's (the same copy in every row, as the mixer's).
            moments.append((REWARD_MOMENTS, (3,)))
        super().__init__(theta, moments)
        self.adam = AdamSettings(lr=options.lr)
        self._names = [name for name, _ in network]
        self.action_mask = torch.stack(
            [torch.arange(self.action_dim) < agent.action_dim for agent in self.agents]
        )  # [M, A]
        #: ``[M]`` each agent's group number, in ``group_map`` order.
        self.group_of = group_numbers([agent.group for agent in self.agents])

    # ------------------------------------------------------------------ state

    def init_state(self, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Fresh ``(theta [M, P], opt_state [M, O])``: agent ``i``'s Q-network is drawn from
        ``(seed, i)`` alone (with ``share_params``, from its group's first agent's), its target is
        a copy and its Adam state zero; a parametrized mixer is drawn from ``seed`` once, the same
        copy in every row."""
        mixer_state: dict[str, torch.Tensor] = {}
        if self.mixer_rows is not None:
            generator = torch.Generator().manual_seed(agent_seed(seed, 0, 0, salt=2))
            mixer_state = fresh_target_and_adam_state(self.mixer_rows.fresh(generator))
            mixer_state["mixer_adam_step"] = mixer_state.pop("adam_step")
        rows = []
        for source in seed_sources(self.group_of, self.options.share_params):
            generator = torch.Generator().manual_seed(agent_seed(seed, 0, source, salt=1))
            params = (
                init_mlp(self.sizes, generator)
                if self.recurrent is None
                else self.recurrent.init(generator)
            )
            network = dict(zip(self._names, params, strict=True))
            state = {**fresh_target_and_adam_state(network), **mixer_state}
            if self.options.standardize_rewards:
                state[REWARD_MOMENTS] = fresh_reward_moments(1)[0]
            rows.append(self.codec.flatten({k: v.unsqueeze(0) for k, v in state.items()}))
        return self.split(torch.cat(rows))

    # ------------------------------------------------------------------ the update

    def update(
        self,
        theta_all: torch.Tensor,
        opt_state: torch.Tensor,
        batch: TensorDictBase,
        agents: Sequence[int],
        seed: int,
    ) -> AgentUpdate:
        """``U`` for every agent in ``agents`` at once (any subset, any order); ``seed`` is unused.

        Each agent's Q-network steps on the squared TD error against the target networks (its own
        reward and target without a mixer; the team's with one), by per-agent clipping and Adam;
        then the targets follow (Polyak or a periodic copy). ``double_q`` and
        ``standardize_rewards`` change the TD target (:mod:`~marlplug.algorithms.q.targets`). A
        non-finite gradient norm leaves the agent's rows as they were (``stepped`` false).

        Args:
            theta_all: ``[M, P]`` every agent's ``theta``.
            opt_state: ``[M, O]`` every agent's Adam state.
            batch: ``obs``/``next_obs`` ``[B, M, O]``, one-hot ``action`` ``[B, M, A]``,
                ``reward`` and ``terminated`` ``[B, M]``; optionally the boolean
                ``next_action_mask`` ``[B, M, A]`` (the env's, after the step). A recurrent
                program's minibatch holds ``B`` chunks: each of those ``[B, L, M, ...]``, plus
                ``is_init`` ``[B, L]`` and the first state ``hidden`` ``[B, M, H]``.
            agents: which agents to update.
            seed: the round's seed (no random numbers are drawn).

        Stats: ``td_loss`` (per agent; with a mixer the team's, a scalar), ``q_taken`` (mean Q of
        the buffer's actions), ``grad_norm`` (before clipping), ``stepped`` and ``nonfinite``.
        """
        del seed
        # With several threads torch splits reductions by tensor shape, so an agent's result would
        # depend on which other agents share the call; one thread keeps every replica bit-identical.
        with one_thread():
            rows, stats = self._update(theta_all, opt_state, batch, list(agents))
        theta, opt = self.split(rows)
        return AgentUpdate(theta=theta, opt_state=opt, stats=stats)

    def _forwarded(self, agents: list[int]) -> list[int]:
        """The agents whose Q-networks the loss must run for ``agents``' gradients: themselves,
        their whole groups (``share_params``: the group's mean gradient), or all (a mixer)."""
        if self.mixer is not None:
            return list(range(self.num_agents))
        return whole_groups(agents, self.group_of) if self.options.share_params else agents

    def _update(
        self,
        theta_all: torch.Tensor,
        opt_state: torch.Tensor,
        batch: TensorDictBase,
        agents: list[int],
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        options = self.options
        sequences = None
        if self.recurrent is not None:
            # Chunks of L steps: the networks replay them; the loss reads their B * L steps.
            sequences = batch
            steps = batch["obs"].shape[0] * batch["obs"].shape[1]
            batch = TensorDict(
                {k: v.flatten(0, 1) for k, v in batch.exclude(*SEQUENCE_KEYS).items()},
                batch_size=[steps],
            )
        forwarded = self._forwarded(agents)
        index = torch.as_tensor(forwarded, dtype=torch.long)
        rows = torch.cat([theta_all.index_select(0, index), opt_state.index_select(0, index)], 1)
        state = self.codec.unflatten(rows)
        params = [state[n].detach().requires_grad_(True) for n in self._names]
        mixing = self.mixer_rows
        mixer_names = [] if mixing is None else ["mixer." + n for n in mixing.names]
        # Every row holds the same mixer copy; a mixer forwards every agent, so row 0 is agent 0.
        mixer_params = [state[n][0].detach().requires_grad_(True) for n in mixer_names]

        def per_agent(key: str) -> torch.Tensor:  # [F, B, ...] the forwarded agents' columns
            return batch[key].transpose(0, 1).index_select(0, index)

        target = [state["target_" + n] for n in self._names]
        # [F, B, A] each: online Q (with its graph), target Q of the next observations and, for
        # double Q-learning, the online network's of the same (without).
        q, next_q, online_next_q = self._q_and_next(params, target, per_agent, sequences, index)
        taken = q.gather(-1, per_agent("action").argmax(-1, keepdim=True)).squeeze(-1)  # [F, B]
        with torch.no_grad():
            valid = self.action_mask.index_select(0, index).unsqueeze(1)  # [F, 1, A]
            if batch.get("next_action_mask", None) is not None:
                valid = valid & per_agent("next_action_mask").to(torch.bool)  # [F, B, A]
            best_next = next_value(next_q, valid, online_next_q)  # [F, B]
            reward = per_agent("reward")
            alive = 1.0 - per_agent("terminated").to(q.dtype)
            reward_moments = None
            if options.standardize_rewards:
                # Each agent's own rewards, or the team's once (agent 0's copy, as the mixer's).
                stream = reward if self.mixer is None else reward.sum(0, keepdim=True)
                moments = state[REWARD_MOMENTS] if self.mixer is None else state[REWARD_MOMENTS][:1]
                reward, reward_moments = standardized_rewards(moments, stream)
        if self.mixer is None:
            td_target = reward + options.gamma * alive * best_next
            td_loss = (taken - td_target).pow(2).mean(dim=1)  # [F]: one loss per agent
            total = td_loss.sum()
        else:
            # The team's Q: the mixer over every agent's chosen value ([B, M, 1] -> [B, 1]).
            team_q = self._mix(taken.transpose(0, 1), batch["obs"], mixer_params)
            with torch.no_grad():
                target_mixer = [state["target_" + n][0] for n in mixer_names]
                team_next = self._mix(best_next.transpose(0, 1), batch["next_obs"], target_mixer)
                team_alive = alive.amin(0)  # the episode ends for the team when any agent's does
                td_target = reward.sum(0) + options.gamma * team_alive * team_next
            td_loss = (team_q - td_target).pow(2).mean()
            total = td_loss
        grads = list(torch.autograd.grad(total, params + mixer_params))
        grads, mixer_grads = grads[: len(params)], grads[len(params) :]
        team_ok: torch.Tensor | None = None
        if mixing is not None:
            # One team loss and one mixer: a non-finite gradient anywhere leaves every row (and so
            # every mixer copy) as it was, or the copies would diverge.
            team_ok = torch.stack([torch.isfinite(g).all() for g in grads + mixer_grads]).all()
        if options.share_params:
            grads = mean_within_groups(grads, self.group_of.index_select(0, index))
        # Only the asked agents step (the forwarded rest only lent their Q-values or gradients).
        position = torch.as_tensor([forwarded.index(agent) for agent in agents], dtype=torch.long)
        own_rows = rows.index_select(0, position)
        own = self.codec.unflatten(own_rows)
        grads = [g.index_select(0, position) for g in grads]
        agents_ok = None if team_ok is None else team_ok.expand(len(agents))
        new_params, avgs, sqs, steps, norms, finite = clipped_adam_step(
            own,
            self._names,
            grads,
            max_grad_norm=options.max_grad_norm,
            settings=self.adam,
            agents_ok=agents_ok,
        )
        copy = (steps.round() % options.target_update_interval == 0) & finite
        new_state: dict[str, torch.Tensor] = {"adam_step": steps}
        for name, param, avg, sq in zip(self._names, new_params, avgs, sqs, strict=True):
            new_state[name] = param
            new_state["target_" + name] = self._follow(own["target_" + name], param, copy)
            new_state["adam_m." + name] = avg
            new_state["adam_v." + name] = sq
        if reward_moments is not None:
            new_state[REWARD_MOMENTS] = (
                reward_moments.index_select(0, position)
                if self.mixer is None
                else reward_moments.expand(len(agents), 3)
            )
        extra_stats: dict[str, torch.Tensor] = {}
        if team_ok is not None:
            mixer_state, mixer_norm = self._step_mixer(state, mixer_names, mixer_grads, team_ok)
            new_state.update(
                {k: v.expand(len(agents), *v.shape[1:]) for k, v in mixer_state.items()}
            )
            extra_stats["mixer_grad_norm"] = mixer_norm[0]
        new_rows = self.codec.flatten(new_state)
        if not bool(finite.all()):
            new_rows = torch.where(finite.unsqueeze(1), new_rows, own_rows)
        stats = {
            "td_loss": td_loss.detach()
            if self.mixer is not None
            else td_loss.detach().index_select(0, position),
            "q_taken": taken.detach().mean(dim=1).index_select(0, position),
            "grad_norm": norms,
            "stepped": finite,
            "nonfinite": ~finite,
            **extra_stats,
        }
        return new_rows, stats

    def _q_and_next(
        self,
        params: list[torch.Tensor],
        target: list[torch.Tensor],
        per_agent: Callable[[str], torch.Tensor],
        sequences: TensorDictBase | None,
        index: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """The online Q-values of the minibatch's steps ``[F, N, A]`` (with their graph), the
        target network's of the next observations (without) and, with ``double_q``, the online
        network's of the next observations (without; else ``None``); a recurrent program replays
        the chunks ``sequences`` from their stored first states, every network alike (steps in the
        order of ``sequences.reshape(-1)``)."""
        online = [p.detach() for p in params]
        if self.recurrent is None or sequences is None:
            with torch.no_grad():
                next_q = stacked_mlp(per_agent("next_obs"), target)
                online_next = None
                if self.options.double_q:
                    online_next = stacked_mlp(per_agent("next_obs"), online)
            return stacked_mlp(per_agent("obs"), params), next_q, online_next

        def chunks(key: str) -> torch.Tensor:  # [F, B, L, ...] the forwarded agents' chunks
            value = sequences[key]
            return value.movedim(2, 0).index_select(0, index)

        first = sequences["hidden"].transpose(0, 1).index_select(0, index)  # [F, B, H]
        is_init = sequences["is_init"]  # [B, L]
        q, online_after = self.recurrent.replay(params, chunks("obs"), first, is_init)
        with torch.no_grad():
            _, after = self.recurrent.replay(target, chunks("obs"), first, is_init)
            next_q = self.recurrent.next_step(target, chunks("next_obs"), after)
            online_next = None
            if self.options.double_q:
                # The online network continues its own states (those of the replay above).
                online_next = self.recurrent.next_step(
                    online, chunks("next_obs"), online_after.detach()
                ).flatten(1, 2)
        return q.flatten(1, 2), next_q.flatten(1, 2), online_next

    def _mix(
        self, chosen: torch.Tensor, obs: torch.Tensor, mixer_params: list[torch.Tensor]
    ) -> torch.Tensor:
        """The team's value ``[B]`` of the agents' chosen values ``[B, M]``."""
        assert self.mixer is not None
        if self.mixer_rows is None:
            return self.mixer(chosen.unsqueeze(-1)).squeeze(-1)
        return self.mixer_rows.mix(mixer_params, chosen, obs)

    def _follow(
        self, target: torch.Tensor, param: torch.Tensor, copy: torch.Tensor
    ) -> torch.Tensor:
        """The target network after a step: Polyak, or a copy where ``copy`` ``[A]`` is set."""
        if self.options.target_update == "polyak":
            return target.lerp(param, self.options.tau)
        return torch.where(copy.reshape(-1, *[1] * (param.dim() - 1)), param, target)

    def _step_mixer(
        self,
        state: dict[str, torch.Tensor],
        names: list[str],
        grads: list[torch.Tensor],
        ok: torch.Tensor,
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """The mixer's clipped Adam step and target, as one row ``[1, ...]`` per tensor, from
        agent 0's copy in ``state``; and its gradient norm ``[1]`` before clipping."""
        params, avgs, sqs, step, norm, finite = clipped_adam_step(
            {key: value[:1] for key, value in state.items()},  # agent 0's copy
            names,
            [g.unsqueeze(0) for g in grads],
            max_grad_norm=self.options.max_grad_norm,
            settings=self.adam,
            agents_ok=ok.reshape(1),
            step_key="mixer_adam_step",
        )
        copy = (step.round() % self.options.target_update_interval == 0) & finite
        new: dict[str, torch.Tensor] = {"mixer_adam_step": step}
        for name, param, avg, sq in zip(names, params, avgs, sqs, strict=True):
            new[name] = param
            new["target_" + name] = self._follow(state["target_" + name][:1], param, copy)
            new["adam_m." + name] = avg
            new["adam_v." + name] = sq
        return new, norm
