"""An env's compact global state: every entity once, gathered from the agents' observations.

MAPPO's critics read the environment-provided state where a scenario has one, not every agent's
observation side by side: in cooperative navigation each of M observations is ~6M wide and
repeats what the others hold (every landmark and agent seen from each agent), so M critics reading
all of them cost ~6·M³·h multiply-adds per frame; reading one ~6M-wide state, ~6·M²·h.

A scenario declares its state as observation entries (:meth:`ScenarioOptions.state_columns
<marlplug.envs.options.ScenarioOptions.state_columns>`: per group, ``(agent, column)`` pairs). The
observations are the same on every backend, so one declaration serves all of them, and
:class:`GlobalState` (a TorchRL transform) writes the entries as the root key :data:`STATE` on
reset and on every step (``("next", "state")``), where any TorchRL module can read it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch
from tensordict import TensorDictBase
from torchrl.data import Composite, Unbounded
from torchrl.envs import EnvBase, Transform

from marlplug.envs.transformed import with_transform

#: The root key of the global state: ``[*env batch, state_dim]``.
STATE = "state"
#: Per group, the ``(agent index, observation column)`` entries of the state, in order.
StateColumns = Mapping[str, Sequence[tuple[int, int]]]


class GlobalState(Transform):
    """Writes :data:`STATE`: the listed entries of each group's ``(group, "observation")``
    ``[*batch, n_agents, obs_dim]``, concatenated in the order given.

    Args:
        columns: per group, ``(agent index, observation column)`` pairs (:data:`StateColumns`).

    Examples:
        >>> from marlplug.envs import make_env
        >>> env = make_env("cooperative_navigation", agents=2, seed=0, global_state=True)
        >>> env.reset()["state"].shape  # 2 agents' velocity and position, 2 landmarks
        torch.Size([12])
    """

    def __init__(self, columns: StateColumns) -> None:
        if not columns or not all(columns.values()):
            raise ValueError("GlobalState: give at least one (agent, column) entry")
        self.columns = {group: tuple(entries) for group, entries in columns.items()}
        super().__init__(
            in_keys=[(group, "observation") for group in self.columns], out_keys=[STATE]
        )
        # Flat indices into each group's [n_agents * obs_dim] observations, by observation width.
        self._flat: dict[tuple[str, int], torch.Tensor] = {}

    @property
    def state_dim(self) -> int:
        """The width of the state."""
        return sum(len(entries) for entries in self.columns.values())

    def _indices(self, group: str, observation_dim: int, device: torch.device) -> torch.Tensor:
        key = (group, observation_dim)
        if key not in self._flat:
            self._flat[key] = torch.tensor(
                [agent * observation_dim + column for agent, column in self.columns[group]],
                dtype=torch.long,
            )
        return self._flat[key].to(device)

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        parts = []
        for group in self.columns:
            observation = next_tensordict.get((group, "observation"))
            flat = observation.flatten(-2)
            parts.append(flat[..., self._indices(group, observation.shape[-1], flat.device)])
        next_tensordict.set(STATE, torch.cat(parts, dim=-1))
        return next_tensordict

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return self._call(tensordict_reset)

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        first = observation_spec[next(iter(self.columns)), "observation"]
        observation_spec[STATE] = Unbounded(
            shape=(*observation_spec.shape, self.state_dim),
            dtype=first.dtype,
            device=first.device,
        )
        return observation_spec


def with_global_state(env: EnvBase, columns: StateColumns) -> EnvBase:
    """``env`` writing :data:`STATE` (a :class:`GlobalState` added by
    :func:`~marlplug.envs.transformed.with_transform`); ``env.group_map`` is kept."""
    return with_transform(env, GlobalState(columns))
