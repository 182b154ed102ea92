"""TorchRL transforms that give a VMAS env the done keys a ``PettingZooWrapper`` env has.

VMAS reports one ``done``/``terminated`` per environment; marlplug's envs also carry
``truncated`` and per-group ``(group, done|terminated|truncated)`` entries.
"""

from __future__ import annotations

import torch
from tensordict import TensorDictBase
from torchrl.data import Categorical, Composite
from torchrl.envs import Transform

DONE_KEYS = ("done", "terminated", "truncated")


class GroupDones(Transform):
    """Copy the env-level ``done``, ``terminated`` and ``truncated`` into every agent group.

    Args:
        group_map: group name -> agent names (``env.group_map``).

    Examples:
        >>> from marlplug.envs import make_env
        >>> env = make_env("keep_away", backend="vmas", num_envs=2)
        >>> env.full_done_spec["agent", "truncated"].shape
        torch.Size([2, 1, 1])
    """

    def __init__(self, group_map: dict[str, list[str]]) -> None:
        super().__init__()
        self.group_map = group_map

    def _expand(self, tensordict: TensorDictBase) -> TensorDictBase:
        for group, names in self.group_map.items():
            for key in DONE_KEYS:
                if key in tensordict.keys():  # noqa: SIM118 (TensorDict has no __contains__)
                    value = tensordict.get(key)
                    shape = (*value.shape[:-1], len(names), value.shape[-1])
                    tensordict.set((group, key), value.unsqueeze(-2).expand(shape).clone())
        return tensordict

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return self._expand(next_tensordict)

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return self._expand(tensordict_reset)

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        done_spec = output_spec["full_done_spec"]
        for group, names in self.group_map.items():
            for key in DONE_KEYS:
                if key in done_spec.keys():  # noqa: SIM118
                    env_spec = done_spec[key]
                    shape = (*env_spec.shape[:-1], len(names), env_spec.shape[-1])
                    done_spec[group, key] = Categorical(
                        2, shape=torch.Size(shape), dtype=torch.bool, device=env_spec.device
                    )
        return output_spec
