"""Between a TorchRL multi-agent env (agent groups as nested keys) and an off-policy learner that sees
every agent in one flat, zero-padded order: ``[E, M, O]`` observations and ``[E, M, A]`` actions."""

from __future__ import annotations

import torch
from tensordict import TensorDictBase
from torchrl.envs import EnvBase

from marlplug.envs.layout import AgentLayout, read_layout


class MultiAgentEnvAdapter:
    """Reads observations, rewards and terminations of every group and writes their actions.

    Agents are ordered group by group in ``env.group_map`` order. Discrete actions are one-hot vectors
    on the learner side and whatever the env's spec wants (one-hot or index) on the env side.

    Args:
        env: a TorchRL env with ``group_map`` and ``(group, "observation"|"action"|"reward")`` keys.

    Examples:
        >>> from mpe2 import simple_spread_v3
        >>> from torchrl.envs.libs.pettingzoo import PettingZooWrapper
        >>> env = PettingZooWrapper(simple_spread_v3.parallel_env(N=2), categorical_actions=True)
        >>> adapter = MultiAgentEnvAdapter(env)
        >>> [a.name for a in adapter.agents], adapter.observations(env.reset()).shape
        (['agent_0', 'agent_1'], torch.Size([1, 2, 12]))
    """

    def __init__(self, env: EnvBase) -> None:
        self.env = env
        self.layout = read_layout(env)
        self.groups = [group.group for group in self.layout]
        self.batched = len(env.batch_size) > 0
        self.agents: list[AgentLayout] = list(self.layout.agents)
        self.obs_dim, self.action_dim = self.layout.padded_dims()

    @property
    def num_envs(self) -> int:
        """Parallel env copies (1 for an unbatched env)."""
        return int(self.env.batch_size[0]) if self.batched else 1

    def _per_group(self, td: TensorDictBase, key: str, width: int | None) -> torch.Tensor:
        parts = []
        for group in self.groups:
            value = td[group, key]
            if not self.batched:
                value = value.unsqueeze(0)
            value = value.to(torch.float32)
            if width is not None and value.shape[-1] < width:
                value = torch.nn.functional.pad(value, (0, width - value.shape[-1]))
            parts.append(value)
        return torch.cat(parts, dim=1)

    def observations(self, td: TensorDictBase) -> torch.Tensor:
        """``[E, M, O]`` zero-padded observations."""
        return self._per_group(td, "observation", self.obs_dim)

    def rewards(self, next_td: TensorDictBase) -> torch.Tensor:
        """``[E, M]`` rewards."""
        return self._per_group(next_td, "reward", None).reshape(self.num_envs, -1)

    def terminated(self, next_td: TensorDictBase) -> torch.Tensor:
        """``[E, M]`` true terminations (time limits are not terminations: the target bootstraps)."""
        key = "terminated"
        return self._per_group(next_td, key, None).reshape(self.num_envs, -1) > 0.5

    @property
    def has_action_mask(self) -> bool:
        """Whether some group's env writes an ``action_mask`` (LBF's)."""
        return any(group.action_mask for group in self.layout)

    def action_masks(self, td: TensorDictBase) -> torch.Tensor:
        """``[E, M, A]`` which actions are valid now: a group's ``action_mask`` where its env
        writes one, else all of its actions; padded actions are never valid."""
        parts = []
        for group in self.layout:
            if group.action_mask:
                value = td[group.group, "action_mask"].to(torch.bool)
                if not self.batched:
                    value = value.unsqueeze(0)
            else:
                value = torch.ones(self.num_envs, group.n_agents, group.n_actions, dtype=torch.bool)
            parts.append(torch.nn.functional.pad(value, (0, self.action_dim - group.n_actions)))
        return torch.cat(parts, dim=1)

    def write_actions(self, td: TensorDictBase, actions: torch.Tensor) -> TensorDictBase:
        """Put learner-side actions ``[E, M, A]`` into ``td`` in the env's action format."""
        start = 0
        for group in self.layout:
            part = actions[:, start : start + group.n_agents, : group.n_actions]
            start += group.n_agents
            if group.action_kind == "index":
                value = part.argmax(-1)
            elif group.action_kind == "one_hot":
                value = part.round()
            else:
                value = part
            value = value.to(self.env.full_action_spec[group.group, "action"].dtype)
            td[group.group, "action"] = value if self.batched else value.squeeze(0)
        return td
