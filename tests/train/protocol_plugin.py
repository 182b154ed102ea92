"""A third-party learner algorithm written only against :mod:`marlplug.algorithms.protocol`.

Each agent learns a linear predictor of its own reward from its observation (SGD with momentum) on
transitions of uniformly random actions. Nothing in marlplug knows its name or class: registered
through the ``marlplug_algorithms`` hook, it trains centralized and coded through the one
orchestrator.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar

import torch
from pydantic import Field
from tensordict import TensorDict, TensorDictBase
from torchrl.envs import EnvBase

import marlplug
from marlplug.algorithms.protocol import AgentUpdate
from marlplug.config import MarlplugConfig, Options
from marlplug.envs.flat import MultiAgentEnvAdapter
from marlplug.seeding import derive_seed


class RewardRegressionOptions(Options):
    """Hyperparameters of :class:`RewardRegression`."""

    uses_losses: ClassVar[bool] = False

    lr: float = Field(0.05, gt=0, description="SGD step size.")
    momentum: float = Field(0.9, ge=0, lt=1, description="Momentum of the SGD steps.")
    steps_per_iteration: int = Field(16, ge=1, description="Env steps collected per iteration.")
    minibatches: int = Field(2, ge=1, description="Update rounds per iteration.")


class RegressionProgram:
    """The update: ``theta`` row = weights and bias, ``opt_state`` row = momentum and step count."""

    def __init__(self, options: RewardRegressionOptions, adapter: MultiAgentEnvAdapter) -> None:
        self.options = options
        self.agents = adapter.agents
        self.num_agents = len(self.agents)
        self.obs_dim = adapter.obs_dim
        self.theta_size = self.obs_dim + 1
        self.opt_state_size = self.obs_dim + 2

    def init_state(self, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        generator = torch.Generator().manual_seed(seed)
        theta = 0.01 * torch.randn(self.num_agents, self.theta_size, generator=generator)
        return theta, torch.zeros(self.num_agents, self.opt_state_size)

    def _errors(self, theta: torch.Tensor, batch: TensorDictBase, index: torch.Tensor) -> Any:
        """``(inputs [B, S, O + 1], prediction errors [B, S])``; elementwise, so an agent's values
        do not depend on the other agents of the call."""
        obs = batch["obs"][:, index]
        inputs = torch.cat([obs, torch.ones_like(obs[..., :1])], dim=-1)
        return inputs, (inputs * theta.unsqueeze(0)).sum(-1) - batch["reward"][:, index]

    def update(
        self,
        theta_all: torch.Tensor,
        opt_state: torch.Tensor,
        batch: TensorDictBase,
        agents: Sequence[int],
        seed: int,
    ) -> AgentUpdate:
        index = torch.as_tensor(list(agents), dtype=torch.long)
        theta, state = theta_all[index], opt_state[index]
        inputs, errors = self._errors(theta, batch, index)
        grad = 2 * (errors.unsqueeze(-1) * inputs).mean(0)
        momentum = self.options.momentum * state[:, :-1] + grad
        new_theta = theta - self.options.lr * momentum
        new_state = torch.cat([momentum, state[:, -1:] + 1], dim=-1)
        finite = torch.isfinite(new_theta).all(-1) & torch.isfinite(momentum).all(-1)
        keep = (~finite).unsqueeze(-1)
        everyone = torch.arange(self.num_agents)
        _, all_errors = self._errors(theta_all, batch, everyone)
        return AgentUpdate(
            theta=torch.where(keep, theta, new_theta),
            opt_state=torch.where(keep, state, new_state),
            stats={
                "loss": all_errors.square().mean(),
                "grad_norm": grad.norm(dim=-1),
                "nonfinite": ~finite,
            },
        )


class RandomActionSource:
    """Per iteration: reset the env from ``(seed, iteration)``, act uniformly at random, and yield
    ``minibatches`` shuffled minibatches of the transitions."""

    def __init__(
        self, env: EnvBase, program: RegressionProgram, options: RewardRegressionOptions, seed: int
    ) -> None:
        self.env = env
        self.adapter = MultiAgentEnvAdapter(env)
        self.program = program
        self.options = options
        self.seed = seed
        self.generator = torch.Generator().manual_seed(seed)
        self.env_steps = 0
        self._stats: dict[str, Any] = {}

    def _random_actions(self) -> torch.Tensor:
        width = max(agent.action_dim for agent in self.program.agents)
        actions = torch.zeros(self.adapter.num_envs, self.program.num_agents, width)
        for i, agent in enumerate(self.program.agents):
            if agent.discrete:
                choice = torch.randint(
                    agent.action_dim, (self.adapter.num_envs,), generator=self.generator
                )
                actions[:, i, : agent.action_dim] = torch.nn.functional.one_hot(
                    choice, agent.action_dim
                ).float()
            else:
                uniform = torch.rand(
                    self.adapter.num_envs, agent.action_dim, generator=self.generator
                )
                actions[:, i, : agent.action_dim] = agent.low + uniform * (agent.high - agent.low)
        return actions

    def batches(self, theta_all: torch.Tensor, iteration: int) -> Iterator[TensorDictBase]:
        start = time.perf_counter()
        self.env.set_seed(derive_seed(self.seed, 5, iteration))
        td = self.env.reset()
        observations, rewards = [], []
        for _ in range(self.options.steps_per_iteration):
            observations.append(self.adapter.observations(td))
            td = self.adapter.write_actions(td, self._random_actions())
            stepped, td = self.env.step_and_maybe_reset(td)
            rewards.append(self.adapter.rewards(stepped["next"]))
        self.env_steps += self.options.steps_per_iteration * self.adapter.num_envs
        obs, reward = torch.cat(observations), torch.cat(rewards)
        team = float(reward.sum()) / self.adapter.num_envs
        self._stats = {
            "env_steps": self.env_steps,
            "episode_return": team if math.isfinite(team) else math.nan,
            "collect_s": time.perf_counter() - start,
        }
        order = torch.randperm(len(obs), generator=self.generator)
        for part in order.chunk(self.options.minibatches):
            yield TensorDict(obs=obs[part], reward=reward[part], batch_size=[len(part)])

    def sync(self, theta_all: torch.Tensor) -> None:
        """Random actions do not depend on ``theta``: nothing to do."""

    def iteration_stats(self) -> Mapping[str, Any]:
        return self._stats

    def state_dict(self) -> dict[str, Any]:
        return {"generator": self.generator.get_state(), "env_steps": self.env_steps}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.generator.set_state(state["generator"])
        self.env_steps = int(state["env_steps"])

    def close(self) -> None:
        self.env.close()


class RewardRegression:
    """The plugin's algorithm class: ``Options``, ``bind`` and ``rollouts``, nothing else."""

    Options = RewardRegressionOptions

    def __init__(
        self,
        *,
        lr: float = 0.05,
        momentum: float = 0.9,
        steps_per_iteration: int = 16,
        minibatches: int = 2,
    ) -> None:
        self.options = RewardRegressionOptions(
            lr=lr,
            momentum=momentum,
            steps_per_iteration=steps_per_iteration,
            minibatches=minibatches,
        )

    def bind(self, env: EnvBase, config: MarlplugConfig) -> RegressionProgram:
        return RegressionProgram(self.options, MultiAgentEnvAdapter(env))

    def rollouts(
        self, env: EnvBase, program: RegressionProgram, config: MarlplugConfig
    ) -> RandomActionSource:
        return RandomActionSource(env, program, self.options, config.seed)


@marlplug.hookimpl
def marlplug_algorithms() -> Mapping[str, Any]:
    return {"reward_regression": RewardRegression}
