"""MADDPG's data side: acting in the env with the current actors, a TorchRL replay buffer of flat
transitions, and seeded minibatch sampling. The controller of a coded run owns one of these."""

from __future__ import annotations

import torch
from tensordict import TensorDict
from torchrl.data import LazyTensorStorage, ReplayBuffer
from torchrl.envs import EnvBase, StepCounter, TransformedEnv

from marlplug.algorithms.env_adapter import MultiAgentEnvAdapter
from marlplug.algorithms.maddpg import MaddpgProgram


class ExperienceCollector:
    """Steps an env with the current actors and stores ``obs, action, reward, next_obs, terminated``.

    Episodes are cut at ``program.options.episode_length`` steps (a truncation: targets still
    bootstrap). Finished episodes' returns (summed over agents and steps) are kept for logging.

    Args:
        env: the TorchRL multi-agent env (unbatched or with a batch of parallel copies).
        program: the bound MADDPG program (its agents must match the env's).
        seed: seeds the env and the exploration noise.

    Examples:
        >>> from mpe2 import simple_spread_v3
        >>> from torchrl.envs.libs.pettingzoo import PettingZooWrapper
        >>> from marlplug.algorithms.maddpg import MADDPG
        >>> env = PettingZooWrapper(simple_spread_v3.parallel_env(N=2), categorical_actions=True)
        >>> adapter = MultiAgentEnvAdapter(env)
        >>> program = MADDPG(minibatch_size=4).bind(adapter.agents)
        >>> collector = ExperienceCollector(env, program, seed=0)
        >>> collector.collect(program.init_state(0), steps=5)
        >>> len(collector.buffer)
        5
    """

    def __init__(self, env: EnvBase, program: MaddpgProgram, *, seed: int) -> None:
        self.adapter = MultiAgentEnvAdapter(env)
        if [a.name for a in self.adapter.agents] != [a.name for a in program.agents]:
            raise ValueError("the program was bound to different agents than the env has")
        self.env = TransformedEnv(env, StepCounter(max_steps=program.options.episode_length))
        self.env.set_seed(seed)
        self.program = program
        self.generator = torch.Generator().manual_seed(seed)
        self.buffer = ReplayBuffer(
            storage=LazyTensorStorage(program.options.buffer_size),
            batch_size=program.options.minibatch_size,
        )
        self.episode_returns: list[float] = []
        self._running_return = torch.zeros(self.adapter.num_envs)
        self._td = self.env.reset()

    def collect(self, theta_all: torch.Tensor, steps: int) -> None:
        """Take ``steps`` env steps (each over every parallel copy) with exploring actors."""
        adapter = self.adapter
        transitions = []
        for _ in range(steps):
            obs = adapter.observations(self._td)
            actions = self.program.act(theta_all, obs, generator=self.generator, explore=True)
            adapter.write_actions(self._td, self.program.env_scale(actions))
            stepped, self._td = self.env.step_and_maybe_reset(self._td)
            following = stepped["next"]
            reward = adapter.rewards(following)
            transitions.append(
                (obs, actions, reward, adapter.observations(following), adapter.terminated(following))
            )
            self._running_return += reward.sum(-1)
            done = following["done"].reshape(adapter.num_envs, -1).any(-1)
            for env_index in torch.nonzero(done).flatten().tolist():
                self.episode_returns.append(float(self._running_return[env_index]))
                self._running_return[env_index] = 0.0
        if transitions:
            # One write per call: the buffer's per-call overhead is larger than an MPE step.
            columns = [torch.cat(parts) for parts in zip(*transitions, strict=True)]
            self.buffer.extend(
                TensorDict(
                    dict(zip(("obs", "action", "reward", "next_obs", "terminated"), columns, strict=True)),
                    batch_size=[columns[0].shape[0]],
                )
            )

    def ready(self) -> bool:
        """Whether the buffer holds enough transitions to start learning."""
        needed = max(self.program.options.learning_starts, self.program.options.minibatch_size)
        return len(self.buffer) >= needed

    def sample(self, generator: torch.Generator) -> TensorDict:
        """A minibatch of ``minibatch_size`` transitions, drawn uniformly with ``generator``."""
        size = self.program.options.minibatch_size
        indices = torch.randint(len(self.buffer), (size,), generator=generator)
        batch = self.buffer.storage[indices]
        assert isinstance(batch, TensorDict)
        return batch
