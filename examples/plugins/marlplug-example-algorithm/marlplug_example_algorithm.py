"""Example marlplug algorithm plugin: independent Q-learning with a linear Q-function per agent.

A learner algorithm implements the protocol of ``marlplug.algorithms.protocol``: ``bind(env,
config)`` returns the program ``marlplug train`` runs (centralized or on coded learners) —
``init_state`` and the pure batched update ``update(theta_all, opt_state, batch, agents, seed)`` —
and ``rollouts(env, program, config)`` its minibatches. An off-policy program that can ``act``
reuses marlplug's replay buffer (``ReplayRollouts``) instead of writing its own.
"""

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from pydantic import Field
from tensordict import TensorDictBase
from torchrl.envs import EnvBase

import marlplug
from marlplug.algorithms.protocol import AgentUpdate
from marlplug.algorithms.replay import ReplayRollouts
from marlplug.envs.layout import AgentLayout, padded_dims, read_layout


class LinearIQLOptions(marlplug.Options):
    lr: float = Field(0.01, gt=0.0, description="Step size of the TD update.")
    gamma: float = Field(0.95, ge=0.0, le=1.0, description="Discount factor.")
    epsilon: float = Field(0.1, ge=0.0, le=1.0, description="Random-action probability.")
    # marlplug's replay source (ReplayRollouts) reads these five.
    minibatch_size: int = Field(256, ge=1, description="Transitions per update.")
    buffer_size: int = Field(100_000, ge=1, description="Replay buffer capacity.")
    episode_length: int = Field(25, ge=1, description="Steps per episode.")
    steps_per_iteration: int = Field(100, ge=1, description="Env steps between two updates.")
    learning_starts: int = Field(1000, ge=1, description="Transitions before the first update.")


class LinearIQL:
    """Each agent learns ``Q_i(o, a) = W_i[a] · [o, 1]`` from its own reward (discrete actions)."""

    Options = LinearIQLOptions

    def __init__(self, **options: Any) -> None:
        self.options = LinearIQLOptions(**options)

    def bind(self, env: EnvBase, config: Any = None) -> "LinearIQLProgram":
        agents = read_layout(env).agents
        if not all(agent.discrete for agent in agents):
            raise marlplug.UserError(
                "linear_iql needs discrete actions (continuous_actions: false)"
            )
        return LinearIQLProgram(self.options, agents)

    def rollouts(self, env: EnvBase, program: "LinearIQLProgram", config: Any) -> ReplayRollouts:
        return ReplayRollouts(env, program, config)


class LinearIQLProgram:
    """Agent i's theta row is its ``[A, O + 1]`` weight matrix, flattened (``O``, ``A`` padded);
    plain SGD keeps no optimizer state (``opt_state`` rows have width 0)."""

    def __init__(self, options: LinearIQLOptions, agents: Sequence[AgentLayout]) -> None:
        self.options, self.agents = options, list(agents)
        self.num_agents = len(self.agents)
        self.obs_dim, self.action_dim = padded_dims(self.agents)
        self.theta_size = self.action_dim * (self.obs_dim + 1)
        self.opt_state_size = 0
        actions = torch.arange(self.action_dim)
        self.valid = torch.stack([actions < agent.action_dim for agent in self.agents])  # [M, A]

    def init_state(self, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        generator = torch.Generator().manual_seed(seed)
        theta = 0.01 * torch.randn(self.num_agents, self.theta_size, generator=generator)
        return theta, torch.zeros(self.num_agents, 0)

    def _q(self, theta: torch.Tensor, obs: torch.Tensor) -> torch.Tensor:
        """``[B, S, A]`` Q-values of rows ``theta`` ``[S, D]`` for observations ``[B, S, O]``."""
        weights = theta.reshape(-1, self.action_dim, self.obs_dim + 1)
        inputs = torch.cat([obs, torch.ones_like(obs[..., :1])], dim=-1)
        return torch.einsum("sao,bso->bsa", weights, inputs)

    def act(
        self,
        theta_all: torch.Tensor,
        obs: torch.Tensor,
        *,
        generator: torch.Generator | None = None,
        explore: bool = True,
    ) -> torch.Tensor:
        """One-hot ``[E, M, A]`` actions: greedy, or uniformly random with probability epsilon."""
        scores = self._q(theta_all, obs)
        if explore:
            noise = torch.rand(scores.shape, generator=generator)
            coin = torch.rand(scores.shape[:2], generator=generator) < self.options.epsilon
            scores = torch.where(coin.unsqueeze(-1), noise, scores)
        choice = scores.masked_fill(~self.valid, -torch.inf).argmax(-1)
        return torch.nn.functional.one_hot(choice, self.action_dim).to(obs.dtype)

    def env_scale(self, actions: torch.Tensor) -> torch.Tensor:
        return actions  # discrete only: nothing to rescale

    def update(
        self,
        theta_all: torch.Tensor,
        opt_state: torch.Tensor,
        batch: TensorDictBase,
        agents: Sequence[int],
        seed: int,
    ) -> AgentUpdate:
        """One semi-gradient TD(0) step for each agent in ``agents`` (draws no random numbers)."""
        index = torch.as_tensor(list(agents), dtype=torch.long)
        theta = theta_all[index]
        obs, next_obs = batch["obs"][:, index], batch["next_obs"][:, index]
        action, reward = batch["action"][:, index], batch["reward"][:, index]
        alive = 1.0 - batch["terminated"][:, index].to(obs.dtype)
        next_q = self._q(theta, next_obs).masked_fill(~self.valid[index], -torch.inf)
        target = reward + self.options.gamma * alive * next_q.max(-1).values
        td_error = target - (self._q(theta, obs) * action).sum(-1)  # [B, S]
        inputs = torch.cat([obs, torch.ones_like(obs[..., :1])], dim=-1)
        step = torch.einsum("bs,bsa,bso->sao", td_error, action, inputs) / obs.shape[0]
        new_theta = theta + self.options.lr * step.reshape(len(index), -1)
        stats = {"td_error": td_error.abs().mean(0)}  # one value per updated agent
        return AgentUpdate(new_theta, opt_state[index], stats)


@marlplug.hookimpl
def marlplug_algorithms() -> Mapping[str, Any]:
    return {"linear_iql": LinearIQL}
