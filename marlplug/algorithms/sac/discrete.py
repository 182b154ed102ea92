"""Discrete SAC over per-agent rows (:class:`DiscreteSacProgram`): each agent's actor gives a
categorical policy, its twin critics a Q-value per action, and the losses take the expectation over
the actions instead of a sample (as TorchRL's ``DiscreteSACLoss``), so the update draws no random
numbers. Critics read the own observation (``local``) or every agent's (``joint``); the actions
are their outputs, not their inputs."""

from __future__ import annotations

import math

import torch
from tensordict import TensorDictBase

from marlplug.algorithms.maddpg.actions import MASKED_LOGIT
from marlplug.algorithms.sac.program import SacProgram
from marlplug.nn.functional import gumbel_noise, stacked_mlp

__all__ = ["DiscreteSacProgram"]

#: DiscreteSACLoss's default target entropy: this share of the uniform policy's, ``log(actions)``.
TARGET_ENTROPY_SHARE = 0.98


class DiscreteSacProgram(SacProgram):
    """:class:`~marlplug.algorithms.sac.program.SacProgram` for agents with discrete actions: a
    categorical actor (padded actions masked) and critics with one output per action.

    Examples:
        >>> from marlplug.algorithms.sac.options import SacOptions
        >>> from marlplug.algorithms.spaces import AgentSpace
        >>> agents = [AgentSpace(f"agent_{i}", "agent", obs_dim=6, action_dim=5, discrete=True)
        ...           for i in range(3)]
        >>> program = DiscreteSacProgram(SacOptions(hidden_sizes=[8]), agents)
        >>> program.critic_sizes  # the own observation in, a Q-value per action out
        [6, 8, 5]
        >>> theta, _ = program.init_state(seed=0)
        >>> program.act(theta, torch.zeros(2, 3, 6), explore=False).sum(-1).tolist()  # one-hot
        [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    """

    def _network_sizes(self) -> tuple[list[int], list[int]]:
        hidden = list(self.options.hidden_sizes)
        critic_inputs = self.num_agents if self.options.critic == "joint" else 1
        actor = [self.obs_dim, *hidden, self.action_dim]
        return actor, [critic_inputs * self.obs_dim, *hidden, self.action_dim]

    def _target_entropy(self) -> torch.Tensor:
        return torch.tensor(
            [TARGET_ENTROPY_SHARE * math.log(agent.action_dim) for agent in self.agents]
        )

    def act(
        self,
        theta_all: torch.Tensor,
        obs: torch.Tensor,
        *,
        generator: torch.Generator | None = None,
        explore: bool = True,
    ) -> torch.Tensor:
        """One-hot actions ``[E, M, A]``: a sample of each agent's categorical policy when
        ``explore`` (Gumbel-max), else its most likely action."""
        with torch.no_grad():
            raw = self.actor_output(theta_all, obs).transpose(0, 1)  # [E, M, A]
            logits = raw.masked_fill(~self.action_mask.unsqueeze(0), MASKED_LOGIT)
            if explore:
                logits = logits + gumbel_noise(logits.shape, generator)
            return torch.nn.functional.one_hot(logits.argmax(-1), self.action_dim).to(raw.dtype)

    def _critics(
        self, obs: torch.Tensor, params: list[torch.Tensor], index: torch.Tensor
    ) -> torch.Tensor:
        """``[2, F, B, A]`` both critics of the agents ``index`` on observations ``[B, M, O]``."""
        count, batch_size = len(index), obs.shape[0]
        if self.options.critic == "joint":
            inputs = obs.reshape(1, batch_size, -1).expand(2 * count, -1, -1)
        else:
            inputs = obs.transpose(0, 1).index_select(0, index).repeat(2, 1, 1)
        return stacked_mlp(inputs, params).reshape(2, count, batch_size, -1)

    def _policy(
        self, obs: torch.Tensor, params: list[torch.Tensor], index: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Probabilities and log-probabilities ``[F, B, A]`` of the agents ``index``'s policies
        (a padded action has probability zero)."""
        own_obs = obs.transpose(0, 1).index_select(0, index)
        valid = self.action_mask.index_select(0, index).unsqueeze(1)
        logits = stacked_mlp(own_obs, params).masked_fill(~valid, MASKED_LOGIT)
        return torch.softmax(logits, dim=-1), torch.log_softmax(logits, dim=-1)

    def _update(
        self,
        theta_all: torch.Tensor,
        opt_state: torch.Tensor,
        batch: TensorDictBase,
        agents: list[int],
        seed: int,
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        del seed  # expectations over the actions: nothing is sampled
        options = self.options
        forwarded = self._forwarded(agents)
        index = torch.as_tensor(forwarded, dtype=torch.long)
        own_rows = torch.cat(
            [theta_all.index_select(0, index), opt_state.index_select(0, index)], dim=1
        )
        own = self.codec.unflatten(own_rows)
        group = self.group_of.index_select(0, index)
        obs, next_obs = batch["obs"], batch["next_obs"]
        alpha = own["log_alpha"].exp().unsqueeze(-1)  # [F, 1, 1]
        actor_params = [own[n] for n in self._actor_names]

        # --- critics: the soft value of the next observations, an expectation over the actions
        with torch.no_grad():
            next_probs, next_log_probs = self._policy(next_obs, actor_params, index)
            next_q = self._critics(next_obs, self._twin_params(own, "target_"), index).amin(0)
            soft_next = (next_probs * (next_q - alpha * next_log_probs)).sum(-1)  # [F, B]
            reward = batch["reward"].transpose(0, 1).index_select(0, index)
            alive = 1.0 - batch["terminated"].to(obs.dtype).transpose(0, 1).index_select(0, index)
            td_target = reward + options.gamma * alive * soft_next
            taken = batch["action"].transpose(0, 1).index_select(0, index).argmax(-1)  # [F, B]
        critic_leaves = [
            [own[n].detach().requires_grad_(True) for n in names] for names in self._critic_names
        ]
        critic_params = [torch.cat(pair) for pair in zip(*critic_leaves, strict=True)]
        q_values = self._critics(obs, critic_params, index)  # [2, F, B, A]
        q_taken = q_values.gather(-1, taken.unsqueeze(-1).expand(2, -1, -1, -1)).squeeze(-1)
        critic_loss = (q_taken - td_target).pow(2).mean(dim=2).sum(dim=0)  # [F]
        stepped_critics = self.steps.critics(
            own, torch.autograd.grad(critic_loss.sum(), critic_leaves[0] + critic_leaves[1]), group
        )
        updated = {
            name: param.detach()
            for names, stepped in zip(self._critic_names, stepped_critics, strict=True)
            for name, param in zip(names, stepped[0], strict=True)
        }

        # --- actor: the expected soft value under its policy, at the updated critics
        actor = [param.detach().requires_grad_(True) for param in actor_params]
        probs, log_probs = self._policy(obs, actor, index)
        policy_q = self._critics(obs, self._twin_params(updated), index).amin(0)  # [F, B, A]
        actor_loss = (probs * (alpha * log_probs - policy_q)).sum(-1).mean(dim=1)
        actor_step = self.steps.actor(own, torch.autograd.grad(actor_loss.sum(), actor), group)
        losses = {"critic_loss": critic_loss.detach(), "actor_loss": actor_loss.detach()}
        entropy = -(probs * log_probs).sum(-1).detach()  # [F, B]: exact, not sampled
        return self.steps.finish(
            own, own_rows, (forwarded, agents), group, stepped_critics, actor_step, entropy, losses
        )
