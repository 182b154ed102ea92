"""A tiny multi-agent TorchRL env that a policy learns in seconds: name the target you are shown.

Each step every agent sees a one-hot target and gets reward 1 for choosing it; episodes are
truncated after ``episode_length`` steps. Keys follow PettingZooWrapper's nested layout.
"""

from __future__ import annotations

import torch
from tensordict import TensorDict, TensorDictBase
from torchrl.data import Categorical, Composite, Unbounded
from torchrl.envs import EnvBase


class MatchingEnv(EnvBase):
    def __init__(self, *, n_agents: int = 2, n_targets: int = 3, episode_length: int = 8) -> None:
        super().__init__(batch_size=torch.Size([]))
        self.n_agents, self.n_targets, self.episode_length = n_agents, n_targets, episode_length
        self.group_map = {"agent": [f"agent_{i}" for i in range(n_agents)]}
        n = n_agents
        self.observation_spec = Composite(
            agent=Composite(observation=Unbounded((n, n_targets)), shape=(n,))
        )
        self.action_spec = Composite(
            agent=Composite(action=Categorical(n_targets, shape=(n,)), shape=(n,))
        )
        self.reward_spec = Composite(agent=Composite(reward=Unbounded((n, 1)), shape=(n,)))
        flag = {"dtype": torch.bool}
        self.done_spec = Composite(
            done=Categorical(2, (1,), **flag),
            terminated=Categorical(2, (1,), **flag),
            truncated=Categorical(2, (1,), **flag),
            agent=Composite(
                done=Categorical(2, (n, 1), **flag),
                terminated=Categorical(2, (n, 1), **flag),
                truncated=Categorical(2, (n, 1), **flag),
                shape=(n,),
            ),
        )
        self.generator = torch.Generator().manual_seed(0)
        self.steps = 0
        self.targets = torch.zeros(n, dtype=torch.long)

    def _set_seed(self, seed: int | None) -> None:
        self.generator.manual_seed(0 if seed is None else seed)

    def _observe(self) -> TensorDict:
        self.targets = torch.randint(self.n_targets, (self.n_agents,), generator=self.generator)
        observation = torch.nn.functional.one_hot(self.targets, self.n_targets).float()
        agent = TensorDict({"observation": observation}, batch_size=[self.n_agents])
        return TensorDict({"agent": agent}, batch_size=[])

    def _flags(self, td: TensorDict, value: bool) -> TensorDict:
        for name in ("done", "truncated"):
            td.set(name, torch.full((1,), value))
            td.set(("agent", name), torch.full((self.n_agents, 1), value))
        td.set("terminated", torch.zeros(1, dtype=torch.bool))
        td.set(("agent", "terminated"), torch.zeros(self.n_agents, 1, dtype=torch.bool))
        return td

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: object) -> TensorDict:
        self.steps = 0
        return self._flags(self._observe(), False)

    def _step(self, tensordict: TensorDictBase) -> TensorDict:
        action = tensordict.get(("agent", "action"))
        reward = (action == self.targets).float().unsqueeze(-1)
        self.steps += 1
        out = self._observe()
        out.set(("agent", "reward"), reward)
        return self._flags(out, self.steps >= self.episode_length)
