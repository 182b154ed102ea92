"""Your own environment without TorchRL: implement :class:`JointEnv`, wrap it in :class:`JointEnvWrapper`.

A :class:`JointEnv` is the seed's minimal joint-environment surface (per-agent observations in lists,
per-agent actions out); the wrapper makes it a TorchRL env with one agent group, which every marlplug
trainer, loss and algorithm takes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol, runtime_checkable

import torch
from tensordict import TensorDict, TensorDictBase
from torchrl.data import Bounded, Categorical, Composite, Unbounded
from torchrl.envs import EnvBase

from marlplug.errors import UserError


@dataclass
class JointStepResult:
    """Per-step result of a :class:`JointEnv`: one entry per agent, in the agents' order.

    Attributes:
        rewards: each agent's reward for this step.
        done: the episode is over (the wrapper resets the env before the next step).
        observations: each agent's next observation (a vector; every agent's has the same length).
        truncated: the episode was cut by a time limit rather than ended by the task, so value
            targets still bootstrap from the last observation (only meaningful with ``done``).
    """

    rewards: list[float]
    done: bool
    observations: list[torch.Tensor]
    truncated: bool = False


class Observed(NamedTuple):
    """What a :class:`JointEnvWrapper`'s agents see: ``observations`` ``[n, obs_dim]`` and, where
    the env says which actions are valid, ``action_mask`` ``[n, n_actions]``."""

    observations: torch.Tensor
    action_mask: torch.Tensor | None = None


class Stepped(NamedTuple):
    """One step of a :class:`JointEnvWrapper`'s env: what the agents see next, their ``rewards``
    ``[n, 1]``, and whether (and how) the episode ended."""

    observed: Observed
    rewards: torch.Tensor
    done: bool
    truncated: bool


def episode_flags(done: torch.Tensor, truncated: torch.Tensor) -> dict[str, torch.Tensor]:
    """TorchRL's ``done``, ``terminated`` and ``truncated`` from a :class:`JointStepResult`'s
    ``done`` and ``truncated`` (boolean tensors of one shape): a truncation counts only when the
    episode is done, and an episode done without one is terminated.

    Example:
        >>> flags = episode_flags(torch.tensor([True, True, False]), torch.tensor([True, False, True]))
        >>> {key: value.tolist() for key, value in flags.items()}
        {'done': [True, True, False], 'terminated': [False, True, False], 'truncated': [True, False, False]}
    """
    return {"done": done, "terminated": done & ~truncated, "truncated": truncated & done}


@runtime_checkable
class JointEnv(Protocol):
    """The minimal joint-environment surface: per-agent observations in, per-agent actions out.

    ``reset(seed)`` starts an episode (reseeding the env's randomness first when ``seed`` is given,
    so the same seed and actions give the same episode) and returns each agent's observation;
    ``step(actions)`` takes one action per agent: a 0-d integer tensor for discrete actions, a float
    vector for continuous ones.
    """

    @property
    def num_agents(self) -> int: ...

    def reset(self, seed: int | None = None) -> list[torch.Tensor]: ...

    def step(self, actions: list[torch.Tensor]) -> JointStepResult: ...


@runtime_checkable
class MaskedJointEnv(JointEnv, Protocol):
    """A :class:`JointEnv` that also says which discrete actions each agent may take now."""

    def action_mask(self) -> torch.Tensor:
        """``[num_agents, n_actions]`` booleans, True where the action is allowed (after the last
        reset or step)."""
        ...


class JointEnvWrapper(EnvBase):
    """A TorchRL env over a :class:`JointEnv`: one agent group, keys as in marlplug's own scenarios.

    The group (``group``, default ``"agent"``) has ``observation`` ``[n, obs_dim]``, ``action``
    (``[n]`` integers, or ``[n, width]`` floats in the declared bounds) and, under ``"next"``,
    ``reward``, ``done``, ``terminated`` and ``truncated`` ``[n, 1]``; the env also has top-level
    ``done``/``terminated``/``truncated`` and ``group_map``. Declare the actions, either
    ``n_actions`` (discrete) or ``action_low`` and ``action_high`` (continuous, one bound per
    dimension); the observation width is read from a first ``reset()`` unless ``observation_dim``
    is given. ``set_seed(s)`` makes the next reset call ``env.reset(seed=s)``.

    Args:
        env: the joint env.
        n_actions: number of discrete actions per agent.
        action_low: lower bounds of a continuous action.
        action_high: upper bounds of a continuous action.
        observation_dim: length of each agent's observation (default: read from a reset).
        group: the agent group's name.
        agent_names: the agents' names (default ``<group>_0``, ``<group>_1``, ...).
        action_mask: write the env's :meth:`MaskedJointEnv.action_mask` as the group's
            ``action_mask`` after every reset and step (TorchRL's key; discrete actions only).

    Raises:
        UserError: ``env`` is not a :class:`JointEnv`, the actions are declared twice or not at all,
            or what it returns does not match the declared sizes (naming the env's class).

    Examples:
        >>> class Parrot:
        ...     '''Reward 1 for repeating the number you are shown (0, 1 or 2).'''
        ...     num_agents = 2
        ...     def reset(self, seed=None):
        ...         self.shown = [torch.tensor(0.0), torch.tensor(2.0)]
        ...         return [s.reshape(1) for s in self.shown]
        ...     def step(self, actions):
        ...         rewards = [float(a == s) for a, s in zip(actions, self.shown)]
        ...         return JointStepResult(rewards, done=True, observations=self.reset())
        >>> env = JointEnvWrapper(Parrot(), n_actions=3)
        >>> env.group_map
        {'agent': ['agent_0', 'agent_1']}
        >>> td = env.reset()
        >>> td["agent", "action"] = torch.tensor([0, 1])
        >>> env.step(td)["next", "agent", "reward"].flatten().tolist()
        [1.0, 0.0]
    """

    def __init__(
        self,
        env: JointEnv,
        *,
        n_actions: int | None = None,
        action_low: Sequence[float] | None = None,
        action_high: Sequence[float] | None = None,
        observation_dim: int | None = None,
        group: str = "agent",
        agent_names: Sequence[str] | None = None,
        action_mask: bool = False,
    ) -> None:
        name = type(env).__name__
        if not isinstance(env, JointEnv):
            raise UserError(
                f"{name} is not a JointEnv: it needs num_agents, reset(seed) and step(actions)"
            )
        continuous = action_low is not None or action_high is not None
        if continuous == (n_actions is not None):
            raise UserError(
                f"JointEnvWrapper({name}): declare the actions either as n_actions (discrete) or "
                "as action_low and action_high (continuous)"
            )
        if action_mask and (continuous or not isinstance(env, MaskedJointEnv)):
            raise UserError(
                f"JointEnvWrapper({name}): action_mask needs discrete actions and an "
                "action_mask() method"
            )
        super().__init__(batch_size=torch.Size([]))
        self.joint_env = env
        # Read once: a runtime Protocol check every step cost about half of LBF's own step.
        self._action_mask = env.action_mask if action_mask else None  # type: ignore[attr-defined]
        self._name = name
        self._group = group
        self._next_seed: int | None = None
        n = int(env.num_agents)
        names = list(agent_names) if agent_names is not None else [f"{group}_{i}" for i in range(n)]
        if len(names) != n:
            raise UserError(f"JointEnvWrapper({name}): {len(names)} agent_names for {n} agents")
        self.group_map = {group: names}
        self._n_agents = n
        if observation_dim is None:
            observation_dim = int(self._stack(env.reset(), "reset()", None).shape[-1])
        self._observation_dim = observation_dim
        group_observation = Composite(observation=Unbounded((n, observation_dim)), shape=(n,))
        if action_mask:
            assert n_actions is not None
            group_observation["action_mask"] = Categorical(2, (n, n_actions), dtype=torch.bool)
        self.observation_spec = Composite({group: group_observation})
        if continuous:
            action = self._continuous_spec(action_low, action_high)
        else:
            assert n_actions is not None
            action = Categorical(n_actions, shape=(n,))
        self.action_spec = Composite({group: Composite(action=action, shape=(n,))})
        self.reward_spec = Composite({group: Composite(reward=Unbounded((n, 1)), shape=(n,))})
        flags = {
            key: Categorical(2, (n, 1), dtype=torch.bool)
            for key in ("done", "terminated", "truncated")
        }
        self.done_spec = Composite(
            {
                **{key: Categorical(2, (1,), dtype=torch.bool) for key in flags},
                group: Composite(flags, shape=(n,)),
            }
        )

    def _continuous_spec(
        self, low: Sequence[float] | None, high: Sequence[float] | None
    ) -> Bounded:
        if low is None or high is None or len(low) != len(high) or len(low) == 0:
            raise UserError(
                f"JointEnvWrapper({self._name}): continuous actions need action_low and action_high "
                "with one entry per dimension each"
            )
        shape = (self._n_agents, len(low))
        low_tensor = torch.tensor(low, dtype=torch.float32).expand(shape)
        high_tensor = torch.tensor(high, dtype=torch.float32).expand(shape)
        return Bounded(low=low_tensor.clone(), high=high_tensor.clone(), shape=shape)

    def _stack(
        self, observations: Sequence[torch.Tensor], call: str, width: int | None
    ) -> torch.Tensor:
        """``[n, width]`` float32 observations, or a UserError naming the env and the call."""
        rows = [torch.as_tensor(o, dtype=torch.float32).reshape(-1) for o in observations]
        sizes = sorted({row.numel() for row in rows})
        if (
            len(rows) != self._n_agents
            or len(sizes) != 1
            or (width is not None and sizes != [width])
        ):
            expected = f"{self._n_agents} observations" + (f" of length {width}" if width else "")
            raise UserError(
                f"{self._name}.{call} returned {len(rows)} observations of length "
                f"{', '.join(map(str, sizes)) or '-'}; expected {expected} (one per agent, all the "
                "same length)"
            )
        return torch.stack(rows)

    def _flags(self, out: TensorDict, done: bool, truncated: bool) -> TensorDict:
        flags = episode_flags(torch.tensor([done]), torch.tensor([truncated]))
        for key, value in flags.items():
            out.set(key, value)
            out.set((self._group, key), value.expand(self._n_agents, 1).clone())
        return out

    def _observed(self, observations: Sequence[torch.Tensor], call: str) -> Observed:
        """What the agents see after ``call``: their stacked observations and, when the env says
        which actions are valid, its action mask."""
        stacked = self._stack(observations, call, self._observation_dim)
        if self._action_mask is None:
            return Observed(stacked)
        return Observed(stacked, torch.as_tensor(self._action_mask(), dtype=torch.bool))

    def _observation_td(self, observed: Observed) -> TensorDict:
        group = TensorDict({"observation": observed.observations}, batch_size=[self._n_agents])
        if observed.action_mask is not None:
            group.set("action_mask", observed.action_mask)
        return TensorDict({self._group: group}, batch_size=[])

    def _set_seed(self, seed: int | None) -> None:
        self._next_seed = seed

    def reset_joint(self) -> Observed:
        """Start an episode of the joint env (with the seed :meth:`set_seed` left, if any)."""
        seed, self._next_seed = self._next_seed, None
        return self._observed(self.joint_env.reset(seed=seed), "reset()")

    def step_joint(self, actions: torch.Tensor) -> Stepped:
        """One step of the joint env with the group's ``action`` (one row per agent)."""
        result = self.joint_env.step(list(actions.unbind(0)))
        rewards = torch.as_tensor(result.rewards, dtype=torch.float32).reshape(-1)
        if rewards.numel() != self._n_agents:
            raise UserError(
                f"{self._name}.step() returned {rewards.numel()} rewards; expected "
                f"{self._n_agents} (one per agent)"
            )
        return Stepped(
            self._observed(result.observations, "step()"),
            rewards.unsqueeze(-1),
            bool(result.done),
            bool(result.truncated),
        )

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: object) -> TensorDict:
        return self._flags(self._observation_td(self.reset_joint()), False, False)

    def _step(self, tensordict: TensorDictBase) -> TensorDict:
        stepped = self.step_joint(tensordict.get((self._group, "action")))
        out = self._observation_td(stepped.observed)
        out.set((self._group, "reward"), stepped.rewards)
        return self._flags(out, stepped.done, stepped.truncated)
