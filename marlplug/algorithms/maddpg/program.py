"""MADDPG's update rule ``U`` as a :class:`~marlplug.algorithms.protocol.LearnerProgram`.

Agent ``i``'s ``theta`` row holds its actor, critic, target actor and target critic parameters; its
``opt_state`` row Adam's first and second moments of actor and critic and the Adam step count
(:attr:`MaddpgProgram.theta_codec` and :attr:`MaddpgProgram.opt_codec` document the exact layout).
A call's agents are updated together as one stacked network (one ``bmm`` per layer), and agent
``i``'s random numbers come from ``(seed, i)`` only, so every replica of agent ``i``'s update draws
the same noise whichever other agents share its call. Calls of different shapes agree to float32
rounding (BLAS picks kernels per shape and per CPU).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
from tensordict import TensorDictBase

from marlplug.algorithms.maddpg.actions import (
    MASKED_LOGIT,
    draw_noise,
    joint_target_actions,
    own_policy_action,
    to_action_bounds,
)
from marlplug.algorithms.maddpg.critic import critic_values
from marlplug.algorithms.protocol import AgentUpdate
from marlplug.algorithms.spaces import AgentSpace, padded_dims
from marlplug.algorithms.state_codec import (
    AdamStep,
    AgentRows,
    clipped_adam_step,
    fresh_target_and_adam_state,
    target_and_adam_layout,
)
from marlplug.nn.functional import gumbel_noise, init_mlp, mlp_shapes, stacked_mlp
from marlplug.optim.adam import AdamSettings
from marlplug.optim.sharing import group_numbers, mean_within_groups, seed_sources, whole_groups
from marlplug.seeding import agent_seed, derive_seed
from marlplug.torch_threads import one_thread

if TYPE_CHECKING:
    from marlplug.algorithms.maddpg.options import MaddpgOptions


class MaddpgProgram(AgentRows):
    """MADDPG's per-agent update over ``theta``/``opt_state`` rows, for a fixed list of agents.

    ``theta`` rows: actor, critic, target actor and target critic parameters (:attr:`theta_codec`);
    ``opt_state`` rows: Adam's first and second moments of actor and critic and the Adam step count
    (:attr:`opt_codec`). Observations and actions are zero-padded to the widest agent; padded action
    logits are masked, so padding changes nothing.

    Args:
        options: the hyperparameters.
        agents: the agents, in the env's flat order.
    """

    def __init__(self, options: MaddpgOptions, agents: Sequence[AgentSpace]) -> None:
        self.options = options
        self.agents = list(agents)
        self.num_agents = len(self.agents)
        self.obs_dim, self.action_dim = padded_dims(self.agents)
        hidden = list(options.hidden_sizes)
        self.actor_sizes = [self.obs_dim, *hidden, self.action_dim]
        critic_inputs = self.num_agents if options.critic == "joint" else 1
        self.critic_sizes = [critic_inputs * (self.obs_dim + self.action_dim), *hidden, 1]
        actor = mlp_shapes("actor", self.actor_sizes)
        critic = mlp_shapes("critic", self.critic_sizes)
        networks = actor + critic
        theta, moments = target_and_adam_layout(networks)
        super().__init__(theta, moments)
        self.adam = AdamSettings(lr=options.lr)
        self._actor_names = [name for name, _ in actor]
        self._critic_names = [name for name, _ in critic]
        mask = torch.zeros(self.num_agents, self.action_dim, dtype=torch.bool)
        for index, agent in enumerate(self.agents):
            mask[index, : agent.action_dim] = True
        self.action_mask = mask
        self.discrete = torch.tensor([a.discrete for a in self.agents])
        self.action_low = torch.tensor([a.low for a in self.agents])
        self.action_high = torch.tensor([a.high for a in self.agents])
        #: ``[M]`` each agent's group number, in ``group_map`` order.
        self.group_of = group_numbers([agent.group for agent in self.agents])

    # ------------------------------------------------------------------ state

    def init_state(self, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Fresh ``(theta [M, P], opt_state [M, O])``: agent ``i``'s networks are drawn from
        ``(seed, i)`` alone (with ``share_params``, from its group's first agent's), its Adam
        state is zero."""
        rows = []
        for source in seed_sources(self.group_of, self.options.share_params):
            generator = torch.Generator().manual_seed(agent_seed(seed, 0, source, salt=1))
            actor = init_mlp(self.actor_sizes, generator)
            critic = init_mlp(self.critic_sizes, generator)
            networks = dict(
                zip(self._actor_names + self._critic_names, actor + critic, strict=True)
            )
            state = fresh_target_and_adam_state(networks)
            rows.append(self.codec.flatten({k: v.unsqueeze(0) for k, v in state.items()}))
        return self.split(torch.cat(rows))

    # ------------------------------------------------------------------ acting

    def actor_output(
        self, theta_all: torch.Tensor, obs: torch.Tensor, *, target: bool = False
    ) -> torch.Tensor:
        """Raw actor outputs ``[M, E, A]`` for observations ``[E, M, O]`` (logits or pre-tanh).

        ``theta_all`` is ``[M, P]``; columns after ``P`` (an ``opt_state``) are ignored."""
        state = self.theta_codec.unflatten(theta_all[:, : self.theta_size])
        prefix = "target_" if target else ""
        params = [state[prefix + name] for name in self._actor_names]
        return stacked_mlp(obs.transpose(0, 1), params)

    def critic_output(
        self, theta_all: torch.Tensor, obs: torch.Tensor, actions: torch.Tensor, agent: int
    ) -> torch.Tensor:
        """Agent ``agent``'s critic ``[S, B]`` on observations ``[B, M, O]`` with ``S`` joint
        actions ``[S, B, M * A]`` each (as the replay buffer holds them), as training evaluates it."""
        state = self.theta_codec.unflatten(theta_all[:, : self.theta_size])
        params = [
            state[name][agent : agent + 1].expand(actions.shape[0], *state[name].shape[1:])
            for name in self._critic_names
        ]
        index = torch.full((actions.shape[0],), agent, dtype=torch.long)
        return self._critic_values(obs.reshape(obs.shape[0], -1), actions, params, index)

    def act(
        self,
        theta_all: torch.Tensor,
        obs: torch.Tensor,
        *,
        generator: torch.Generator | None = None,
        explore: bool = True,
    ) -> torch.Tensor:
        """Actions ``[E, M, A]`` for observations ``[E, M, O]``, as the critic sees them.

        Discrete agents get a one-hot action (a Gumbel-max sample of the actor's categorical when
        ``explore``, else its argmax); continuous agents get ``tanh`` of the actor output in
        ``[-1, 1]`` (plus Gaussian noise when ``explore``); see :meth:`env_scale` for the env's range.
        """
        with torch.no_grad():
            raw = self.actor_output(theta_all, obs).transpose(0, 1)  # [E, M, A]
            mask = self.action_mask.unsqueeze(0)
            logits = raw.masked_fill(~mask, MASKED_LOGIT)
            if explore:
                logits = logits + gumbel_noise(logits.shape, generator)
            one_hot = torch.nn.functional.one_hot(logits.argmax(-1), self.action_dim).to(raw.dtype)
            continuous = torch.tanh(raw)
            if explore and self.options.exploration_std > 0:
                noise = torch.randn(raw.shape, generator=generator) * self.options.exploration_std
                continuous = (continuous + noise).clamp(-1, 1)
            continuous = continuous * mask
            return torch.where(self.discrete.reshape(1, -1, 1), one_hot, continuous)

    def env_scale(self, actions: torch.Tensor) -> torch.Tensor:
        """Map continuous actions from ``[-1, 1]`` to each agent's ``[low, high]`` (discrete unchanged)."""
        return to_action_bounds(actions, self.action_low, self.action_high, self.discrete)

    # ------------------------------------------------------------------ the update

    def update(
        self,
        theta_all: torch.Tensor,
        opt_state: torch.Tensor,
        batch: TensorDictBase,
        agents: Sequence[int],
        seed: int,
    ) -> AgentUpdate:
        """``U`` for every agent in ``agents`` at once (any subset, any order).

        Agent ``i``'s random numbers come from ``derive_seed(seed, i)`` alone (see
        :meth:`update_seeded`, which this calls). With ``share_params`` the losses of every agent
        of the asked agents' groups run, for the group's mean gradient, and the asked agents' rows
        are returned.

        Args:
            theta_all: ``[M, P]`` every agent's ``theta``.
            opt_state: ``[M, O]`` every agent's Adam state (the rows of ``agents`` are read, and
                with ``share_params`` those of their groups).
            batch: ``obs``/``next_obs`` ``[B, M, O]``, ``action`` ``[B, M, A]`` (as :meth:`act`
                returns), ``reward`` and ``terminated`` ``[B, M]``.
            agents: which agents to update.
            seed: the round's seed.
        """
        asked = [int(agent) for agent in agents]
        forwarded = whole_groups(asked, self.group_of) if self.options.share_params else asked
        seeds = [derive_seed(seed, agent) for agent in forwarded]
        result = self.update_seeded(theta_all, opt_state, batch, forwarded, seeds)
        if forwarded == asked:
            return result
        # Only the asked agents' rows: the rest of their groups only lent gradients.
        position = torch.as_tensor([forwarded.index(agent) for agent in asked], dtype=torch.long)
        return AgentUpdate(
            theta=result.theta.index_select(0, position),
            opt_state=result.opt_state.index_select(0, position),
            stats={name: value.index_select(0, position) for name, value in result.stats.items()},
        )

    def update_seeded(
        self,
        theta_all: torch.Tensor,
        opt_state: torch.Tensor,
        batch: TensorDictBase,
        agents: Sequence[int],
        seeds: Sequence[int],
    ) -> AgentUpdate:
        """:meth:`update` with agent ``agents[k]``'s random numbers drawn from ``seeds[k]``.

        The critic is stepped first on the TD error against the target networks (target actions from
        every agent's target actor, Gumbel-softmax for discrete agents), then the actor ascends the
        updated critic with its own action replaced by its Gumbel-softmax policy sample, then both
        target networks move by Polyak ``tau`` — the order of the authors' code. A network whose
        gradient norm is not finite does not step (``stepped`` false in the stats). With
        ``share_params`` each network steps with its group's mean gradient, so ``agents`` must hold
        whole groups.

        Stats (``[len(agents)]``): ``critic_loss``, ``actor_loss``, ``critic_grad_norm``,
        ``actor_grad_norm`` (before clipping), ``stepped`` and ``nonfinite``.
        """
        if len(agents) != len(seeds):
            raise ValueError(f"got {len(agents)} agents but {len(seeds)} seeds")
        if self.options.share_params and sorted(agents) != whole_groups(agents, self.group_of):
            raise ValueError(
                f"share_params steps every agent with its group's mean gradient: agents {list(agents)} "
                "are not whole groups (update() forwards them)"
            )
        # With several threads, torch splits reductions by tensor shape, so an agent's result would
        # depend on which other agents share the call; one thread keeps every replica bit-identical.
        with one_thread():
            new_rows, stats = self._update(theta_all, opt_state, agents, batch, seeds)
        theta, opt = self.split(new_rows)
        return AgentUpdate(theta=theta, opt_state=opt, stats=stats)

    def _update(
        self,
        theta_all: torch.Tensor,
        opt_state: torch.Tensor,
        agents: Sequence[int],
        batch: TensorDictBase,
        seeds: Sequence[int],
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        # Work that does not depend on the updated agent (the target actors' logits and tanh, the
        # flattened observations and buffer actions, the Gumbel transform) is done once per call and
        # broadcast; only what is truly per agent (its noise, its critic, its actor) carries the
        # leading agent dimension ``S``, and no per-replica copy of the wide critic input is made.
        options = self.options
        index = torch.as_tensor(list(agents), dtype=torch.long)
        count = len(agents)
        full = self.theta_codec.unflatten(theta_all)
        own_rows = torch.cat(
            [theta_all.index_select(0, index), opt_state.index_select(0, index)], dim=1
        )
        own = self.codec.unflatten(own_rows)

        obs = batch["obs"]
        actions = batch["action"]
        batch_size = obs.shape[0]
        target_noise, policy_noise = draw_noise(seeds, self.num_agents, batch_size, self.action_dim)

        # --- critic: TD target from every agent's target actor (shared logits, per-replica noise)
        obs_flat = obs.reshape(batch_size, -1)
        with torch.no_grad():
            next_obs = batch["next_obs"]
            target_raw = stacked_mlp(
                next_obs.transpose(0, 1), [full["target_" + n] for n in self._actor_names]
            )  # [M, B, A]
            target_actions = self._policy_actions(target_raw, target_noise)  # [S, B, M * A]
            next_q = self._critic_values(
                next_obs.reshape(batch_size, -1),
                target_actions,
                [own["target_" + n] for n in self._critic_names],
                index,
            )
            reward = batch["reward"].transpose(0, 1).index_select(0, index)  # [S, B]
            not_done = 1.0 - batch["terminated"].to(obs.dtype).transpose(0, 1).index_select(
                0, index
            )
            td_target = reward + options.gamma * not_done * next_q

        joint_actions = actions.reshape(1, batch_size, -1)
        critic = [own[n].detach().requires_grad_(True) for n in self._critic_names]
        q_value = self._critic_values(obs_flat, joint_actions.expand(count, -1, -1), critic, index)
        critic_loss = (q_value - td_target).pow(2).mean(dim=1)
        critic_grads = self._shared(torch.autograd.grad(critic_loss.sum(), critic), index)
        new_critic, critic_m, critic_v, new_step, critic_norm, critic_ok = self._step(
            own, self._critic_names, critic_grads
        )

        # --- actor: ascend the updated critic with the own action replaced by the policy sample
        actor = [own[n].detach().requires_grad_(True) for n in self._actor_names]
        own_obs = obs.transpose(0, 1).index_select(0, index)  # [S, B, O]
        raw = stacked_mlp(own_obs, actor)  # [S, B, A]
        policy_action = self._own_policy_action(raw, index, policy_noise)
        slots = self._action_columns(index).unsqueeze(1).expand(-1, batch_size, -1)
        policy_actions = joint_actions.expand(count, -1, -1).scatter(2, slots, policy_action)
        policy_q = self._critic_values(
            obs_flat, policy_actions, [p.detach() for p in new_critic], index
        )
        valid = self.action_mask.index_select(0, index).unsqueeze(1).to(raw.dtype)
        regularizer = (raw * valid).pow(2).sum(-1) / valid.sum(-1)
        actor_loss = -policy_q.mean(dim=1) + options.actor_regularization * regularizer.mean(dim=1)
        actor_grads = self._shared(torch.autograd.grad(actor_loss.sum(), actor), index)
        new_actor, actor_m, actor_v, _, actor_norm, actor_ok = self._step(
            own, self._actor_names, actor_grads
        )

        # --- Polyak targets, then pack
        new_state: dict[str, torch.Tensor] = {}
        for names, params, avgs, sqs in (
            (self._actor_names, new_actor, actor_m, actor_v),
            (self._critic_names, new_critic, critic_m, critic_v),
        ):
            for name, param, avg, sq in zip(names, params, avgs, sqs, strict=True):
                param = param.detach()
                new_state[name] = param
                new_state["target_" + name] = own["target_" + name].lerp(param, options.tau)
                new_state["adam_m." + name] = avg.detach()
                new_state["adam_v." + name] = sq.detach()
        new_state["adam_step"] = new_step
        stepped = critic_ok & actor_ok
        # An agent with a non-finite gradient norm keeps its input rows (targets included); when
        # every agent stepped, no pass over all of them (a 217 MB `where` at M = 32).
        rows = self.codec.flatten(new_state)
        if not bool(stepped.all()):
            rows = torch.where(stepped.unsqueeze(1), rows, own_rows)
        stats = {
            "critic_loss": critic_loss.detach(),
            "actor_loss": actor_loss.detach(),
            "critic_grad_norm": critic_norm,
            "actor_grad_norm": actor_norm,
            "stepped": stepped,
            "nonfinite": ~stepped,
        }
        return rows, stats

    # ------------------------------------------------------------------ helpers

    def _critic_values(
        self,
        obs: torch.Tensor,
        actions: torch.Tensor,
        params: Sequence[torch.Tensor],
        index: torch.Tensor,
    ) -> torch.Tensor:
        """:func:`~marlplug.algorithms.maddpg.critic.critic_values` with this program's critics."""
        return critic_values(
            obs, actions, params, index, critic=self.options.critic, num_agents=self.num_agents
        )

    def _shared(self, grads: Sequence[torch.Tensor], index: torch.Tensor) -> Sequence[torch.Tensor]:
        """``grads`` (rows in ``index``'s order) as they are, or with ``share_params`` every
        group's mean gradient."""
        if not self.options.share_params:
            return grads
        return mean_within_groups(grads, self.group_of.index_select(0, index))

    def _action_columns(self, index: torch.Tensor) -> torch.Tensor:
        """``[S, A]`` the joint-action columns (``[B, M * A]`` layout) of each agent in ``index``."""
        return (index * self.action_dim).unsqueeze(1) + torch.arange(self.action_dim)

    def _step(
        self, own: dict[str, torch.Tensor], names: list[str], grads: Sequence[torch.Tensor]
    ) -> AdamStep:
        """Per-agent clip and Adam on one network: new params, moments, step counts, the norms
        before clipping and which agents stepped (finite norm)."""
        return clipped_adam_step(
            own, names, grads, max_grad_norm=self.options.max_grad_norm, settings=self.adam
        )

    def _policy_actions(self, raw: torch.Tensor, noise: torch.Tensor) -> torch.Tensor:
        """``[S, B, M * A]`` joint target actions for target actor outputs ``raw`` ``[M, B, A]``
        (:func:`~marlplug.algorithms.maddpg.actions.joint_target_actions`, this program's mask)."""
        return joint_target_actions(
            raw, noise, self.action_mask, self.discrete, hard_actions=self.options.hard_actions
        )

    def _own_policy_action(
        self, raw: torch.Tensor, index: torch.Tensor, noise: torch.Tensor
    ) -> torch.Tensor:
        """``[S, B, A]`` the own differentiable policy action of each agent in ``index``
        (:func:`~marlplug.algorithms.maddpg.actions.own_policy_action`)."""
        mask = self.action_mask.index_select(0, index)
        discrete = self.discrete.index_select(0, index)
        return own_policy_action(raw, noise, mask, discrete, hard_actions=self.options.hard_actions)
