"""SAC's update rule ``U`` over per-agent rows (:class:`SacProgram`): ISAC with local critics, MASAC
with critics on every agent's observation and action (MADDPG's ``critic`` option and critic code).

Agent ``i``'s ``theta`` row holds its twin critics, its TanhNormal actor, its log temperature and the
target critics; its ``opt_state`` row Adam's moments and step count (:attr:`SacProgram.theta_codec`
and :attr:`SacProgram.opt_codec`). Agent ``i``'s Gaussian noise comes from ``(seed, i)`` alone, so
every replica of its update draws the same samples whichever agents share its call.

Why not TorchRL's ``SACLoss``: like ``DQNLoss`` (see :mod:`marlplug.algorithms.q.program`) it holds
its parameters and target parameters as its own ``TensorDictParams``, samples actions from torch's
global RNG (one stream for all agents, so agent ``i``'s noise would depend on who shares the call)
and reduces its losses over every agent's elements at once (rounding that depends on the call's
agents). Both break coded == centralized bit for bit; the three SAC losses are a few lines each
here, per agent, over the stacked networks of :mod:`marlplug.nn.functional`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
from tensordict import TensorDictBase

from marlplug.algorithms.maddpg.actions import draw_uniform, to_action_bounds
from marlplug.algorithms.maddpg.critic import critic_values
from marlplug.algorithms.protocol import AgentUpdate
from marlplug.algorithms.sac import tanh_normal
from marlplug.algorithms.sac.steps import SacSteps
from marlplug.algorithms.spaces import AgentSpace, padded_dims
from marlplug.algorithms.state_codec import (
    AgentRows,
    fresh_target_and_adam_state,
    target_and_adam_layout,
)
from marlplug.nn.functional import init_mlp, mlp_shapes, stacked_mlp
from marlplug.optim.sharing import group_numbers, seed_sources, whole_groups
from marlplug.seeding import agent_seed, derive_seed
from marlplug.torch_threads import one_thread

if TYPE_CHECKING:
    from marlplug.algorithms.sac.options import SacOptions


_CRITICS = ("critic1", "critic2")


class SacProgram(AgentRows):
    """Per-agent soft actor-critic over ``theta``/``opt_state`` rows, for a fixed list of agents
    with continuous actions.

    Observations and actions are zero-padded to the widest agent; padded action columns are
    masked out of the samples and their log-probabilities.

    Args:
        options: the hyperparameters.
        agents: the agents, in the env's flat order.

    Examples:
        >>> from marlplug.algorithms.sac.options import SacOptions
        >>> agents = [AgentSpace(f"agent_{i}", "agent", obs_dim=6, action_dim=2, discrete=False,
        ...                      low=-1.0, high=1.0) for i in range(3)]
        >>> program = SacProgram(SacOptions(hidden_sizes=[8]), agents)
        >>> theta, opt_state = program.init_state(seed=0)
        >>> program.act(theta, torch.zeros(4, 3, 6), explore=False).shape  # [E, M, A] in [-1, 1]
        torch.Size([4, 3, 2])
    """

    def __init__(self, options: SacOptions, agents: Sequence[AgentSpace]) -> None:
        self.options = options
        self.agents = list(agents)
        self.num_agents = len(self.agents)
        self.obs_dim, self.action_dim = padded_dims(self.agents)
        self.actor_sizes, self.critic_sizes = self._network_sizes()
        critics = [mlp_shapes(name, self.critic_sizes) for name in _CRITICS]
        actor = mlp_shapes("actor", self.actor_sizes)
        # Only the critics have targets; the actor and the temperature are trained without one.
        theta, moments = target_and_adam_layout(
            critics[0] + critics[1], [*actor, ("log_alpha", (1,))]
        )
        super().__init__(theta, moments)
        self._actor_names = [name for name, _ in actor]
        self._critic_names = [[name for name, _ in shapes] for shapes in critics]
        self.action_mask = torch.stack(
            [torch.arange(self.action_dim) < agent.action_dim for agent in self.agents]
        )  # [M, A]
        #: ``[M]`` each agent's target entropy.
        self.target_entropy = self._target_entropy()
        #: The optimizer steps after the losses (the discrete program's too).
        self.steps = SacSteps(
            options, self.codec, self._critic_names, self._actor_names, self.target_entropy
        )
        self.discrete = torch.tensor([a.discrete for a in self.agents])
        self.action_low = torch.tensor([a.low for a in self.agents])
        self.action_high = torch.tensor([a.high for a in self.agents])
        #: ``[M]`` each agent's group number, in ``group_map`` order.
        self.group_of = group_numbers([agent.group for agent in self.agents])

    def _network_sizes(self) -> tuple[list[int], list[int]]:
        """The actor's and each critic's layer widths (input first)."""
        hidden = list(self.options.hidden_sizes)
        # The actor gives each action column's mean and (pre-squash) log standard deviation.
        actor = [self.obs_dim, *hidden, 2 * self.action_dim]
        critic_inputs = self.num_agents if self.options.critic == "joint" else 1
        return actor, [critic_inputs * (self.obs_dim + self.action_dim), *hidden, 1]

    def _target_entropy(self) -> torch.Tensor:
        """``[M]`` minus each agent's number of action dimensions (SAC's usual target)."""
        return -torch.tensor([float(agent.action_dim) for agent in self.agents])

    # ------------------------------------------------------------------ state

    def init_state(self, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Fresh ``(theta [M, P], opt_state [M, O])``: agent ``i``'s networks are drawn from
        ``(seed, i)`` alone (with ``share_params``, its group's first agent's), its target critics
        are copies, its temperature ``alpha`` (or ``alpha_init``), its Adam state zero."""
        alpha = self.options.alpha if self.options.alpha is not None else self.options.alpha_init
        rows = []
        for source in seed_sources(self.group_of, self.options.share_params):
            generator = torch.Generator().manual_seed(agent_seed(seed, 0, source, salt=1))
            networks: dict[str, torch.Tensor] = {}
            for names in self._critic_names:
                networks.update(zip(names, init_mlp(self.critic_sizes, generator), strict=True))
            actor = dict(zip(self._actor_names, init_mlp(self.actor_sizes, generator), strict=True))
            actor["log_alpha"] = torch.full((1,), math.log(alpha))
            state = fresh_target_and_adam_state(networks, actor)
            rows.append(self.codec.flatten({k: v.unsqueeze(0) for k, v in state.items()}))
        return self.split(torch.cat(rows))

    # ------------------------------------------------------------------ acting

    def actor_output(self, theta_all: torch.Tensor, obs: torch.Tensor) -> torch.Tensor:
        """Raw actor outputs ``[M, E, 2A]`` (means, then pre-squash log stds) for observations
        ``[E, M, O]``; ``theta_all`` columns after ``P`` are ignored."""
        state = self.theta_codec.unflatten(theta_all[:, : self.theta_size])
        return stacked_mlp(obs.transpose(0, 1), [state[n] for n in self._actor_names])

    def act(
        self,
        theta_all: torch.Tensor,
        obs: torch.Tensor,
        *,
        generator: torch.Generator | None = None,
        explore: bool = True,
    ) -> torch.Tensor:
        """Actions ``[E, M, A]`` in ``[-1, 1]`` for observations ``[E, M, O]``, as the critics see
        them: a TanhNormal sample when ``explore``, else its mode ``tanh(mean)``; see
        :meth:`env_scale` for the env's range."""
        with torch.no_grad():
            raw = self.actor_output(theta_all, obs).transpose(0, 1)  # [E, M, 2A]
            mask = self.action_mask.unsqueeze(0)
            if not explore:
                return tanh_normal.deterministic_action(raw, mask)
            noise = torch.randn((*raw.shape[:-1], self.action_dim), generator=generator)
            return tanh_normal.sample(raw, noise, mask)[0]

    def env_scale(self, actions: torch.Tensor) -> torch.Tensor:
        """Map actions from ``[-1, 1]`` to each agent's ``[low, high]``."""
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

        The twin critics step first on the soft TD error (the target: the smaller target critic at
        the next observations and freshly sampled next actions, minus ``alpha`` times their
        log-probability), then the actor descends ``alpha * log pi - min(Q1, Q2)`` at the updated
        critics, then the temperature (unless fixed) follows the entropy error and the target
        critics move by Polyak ``tau``. Each network is clipped per agent; an agent with a
        non-finite gradient norm keeps its rows (``stepped`` false). Agent ``i``'s noise comes from
        ``derive_seed(seed, i)`` alone.

        Args:
            theta_all: ``[M, P]`` every agent's ``theta``.
            opt_state: ``[M, O]`` every agent's Adam state (the rows of ``agents`` are read, and
                with ``share_params`` those of their groups).
            batch: ``obs``/``next_obs`` ``[B, M, O]``, ``action`` ``[B, M, A]`` in ``[-1, 1]``
                (as :meth:`act` returns), ``reward`` and ``terminated`` ``[B, M]``.
            agents: which agents to update.
            seed: the round's seed.

        Stats (``[len(agents)]``): ``critic_loss`` (the two critics' summed), ``actor_loss``,
        ``alpha`` (before the step), ``entropy`` (the policy's, estimated), ``critic_grad_norm``,
        ``actor_grad_norm`` (before clipping), ``stepped`` and ``nonfinite``.
        """
        # With several threads torch splits reductions by tensor shape, so an agent's result would
        # depend on which other agents share the call; one thread keeps every replica bit-identical.
        with one_thread():
            rows, stats = self._update(theta_all, opt_state, batch, [int(a) for a in agents], seed)
        theta, opt = self.split(rows)
        return AgentUpdate(theta=theta, opt_state=opt, stats=stats)

    def _forwarded(self, agents: list[int]) -> list[int]:
        """The agents whose losses run for ``agents``' gradients: themselves, or their whole
        groups with ``share_params`` (the group's mean gradient)."""
        return whole_groups(agents, self.group_of) if self.options.share_params else agents

    def _update(
        self,
        theta_all: torch.Tensor,
        opt_state: torch.Tensor,
        batch: TensorDictBase,
        agents: list[int],
        seed: int,
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        options = self.options
        forwarded = self._forwarded(agents)
        index = torch.as_tensor(forwarded, dtype=torch.long)
        count = len(forwarded)
        twin_index = index.repeat(2)  # both critics of every forwarded agent as 2F replicas
        full = self.theta_codec.unflatten(theta_all)
        own_rows = torch.cat(
            [theta_all.index_select(0, index), opt_state.index_select(0, index)], dim=1
        )
        own = self.codec.unflatten(own_rows)
        group = self.group_of.index_select(0, index)

        obs = batch["obs"]
        batch_size = obs.shape[0]
        seeds = [derive_seed(seed, agent) for agent in forwarded]
        target_noise, policy_noise = draw_uniform(
            seeds, self.num_agents, batch_size, self.action_dim
        )
        target_noise = tanh_normal.normal_from_uniform_(target_noise)  # [F, M, B, A]
        policy_noise = tanh_normal.normal_from_uniform_(policy_noise)  # [F, B, A]
        alpha = own["log_alpha"].exp()  # [F, 1]
        own_mask = self.action_mask.index_select(0, index).unsqueeze(1)  # [F, 1, A]

        def twins(prefix: str, params: dict[str, torch.Tensor] | None = None) -> list[torch.Tensor]:
            return self._twin_params(own if params is None else params, prefix)

        def soft_min_q(actions: torch.Tensor, params: list[torch.Tensor]) -> torch.Tensor:
            """``[2, F, B]`` both critics of every forwarded agent on joint ``actions``."""
            values = critic_values(
                obs.reshape(batch_size, -1),
                actions.repeat(2, 1, 1),
                params,
                twin_index,
                critic=options.critic,
                num_agents=self.num_agents,
            )
            return values.reshape(2, count, batch_size)

        # --- critics: soft TD target from every agent's current actor (shared outputs, own noise)
        with torch.no_grad():
            next_obs = batch["next_obs"]
            next_raw = stacked_mlp(
                next_obs.transpose(0, 1), [full[n] for n in self._actor_names]
            )  # [M, B, 2A]
            next_actions, next_log_prob = tanh_normal.sample(
                next_raw.unsqueeze(0), target_noise, self.action_mask.unsqueeze(1)
            )  # [F, M, B, A], [F, M, B]
            own_next_log_prob = next_log_prob[torch.arange(count), index]  # [F, B]
            joint_next = next_actions.transpose(1, 2).reshape(count, batch_size, -1)
            next_q = critic_values(
                next_obs.reshape(batch_size, -1),
                joint_next.repeat(2, 1, 1),
                twins("target_"),
                twin_index,
                critic=options.critic,
                num_agents=self.num_agents,
            ).reshape(2, count, batch_size)
            soft_next = next_q.amin(0) - alpha * own_next_log_prob
            reward = batch["reward"].transpose(0, 1).index_select(0, index)  # [F, B]
            alive = 1.0 - batch["terminated"].to(obs.dtype).transpose(0, 1).index_select(0, index)
            td_target = reward + options.gamma * alive * soft_next

        buffer_actions = batch["action"].reshape(1, batch_size, -1).expand(count, -1, -1)
        critic_leaves = [
            [own[n].detach().requires_grad_(True) for n in names] for names in self._critic_names
        ]
        critic_params = [torch.cat(pair) for pair in zip(*critic_leaves, strict=True)]
        q_value = soft_min_q(buffer_actions, critic_params)
        critic_loss = (q_value - td_target).pow(2).mean(dim=2).sum(dim=0)  # [F]
        stepped_critics = self.steps.critics(
            own, torch.autograd.grad(critic_loss.sum(), critic_leaves[0] + critic_leaves[1]), group
        )
        new_critics = {
            name: param
            for names, stepped in zip(self._critic_names, stepped_critics, strict=True)
            for name, param in zip(names, stepped[0], strict=True)
        }

        # --- actor: at the updated critics, its own action replaced by its reparameterized sample
        actor = [own[n].detach().requires_grad_(True) for n in self._actor_names]
        own_obs = obs.transpose(0, 1).index_select(0, index)  # [F, B, O]
        raw = stacked_mlp(own_obs, actor)  # [F, B, 2A]
        action, log_prob = tanh_normal.sample(raw, policy_noise, own_mask)
        columns = (index * self.action_dim).unsqueeze(1) + torch.arange(self.action_dim)
        slots = columns.unsqueeze(1).expand(-1, batch_size, -1)
        policy_actions = buffer_actions.scatter(2, slots, action)
        updated = {k: v.detach() for k, v in new_critics.items()}
        policy_q = soft_min_q(policy_actions, twins("", updated)).amin(0)  # [F, B]
        actor_loss = (alpha * log_prob - policy_q).mean(dim=1)
        actor_step = self.steps.actor(own, torch.autograd.grad(actor_loss.sum(), actor), group)
        losses = {"critic_loss": critic_loss.detach(), "actor_loss": actor_loss.detach()}
        entropy = -log_prob.detach()  # [F, B]: a one-sample estimate
        return self.steps.finish(
            own, own_rows, (forwarded, agents), group, stepped_critics, actor_step, entropy, losses
        )

    def _twin_params(self, state: dict[str, torch.Tensor], prefix: str = "") -> list[torch.Tensor]:
        """Both critics' stacked parameters as one stack of ``2S`` replicas (critic 1's first), so
        the twins run as one batched network."""
        first, second = self._critic_names
        return [
            torch.cat([state[prefix + a], state[prefix + b]])
            for a, b in zip(first, second, strict=True)
        ]
