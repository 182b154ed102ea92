"""Reference policies that bound a learning curve: uniform ``random`` and a ``scripted`` oracle,
and for cooperative navigation ``nearest``, each agent heading for its own nearest landmark (what
agents that do not coordinate get).

A policy maps an env's TensorDict (TorchRL keys, agent groups nested) to the same TensorDict with
every group's ``action`` written, so ``env.rollout(n, policy)`` and :func:`marlplug.envs.evaluate`
run it. A learned return R is stated as the oracle-normalized score
``(R - random) / (scripted - random)`` (:func:`marlplug.envs.evaluate.normalized_score`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from mpe2._mpe_utils.core import Agent, World
from scipy.optimize import linear_sum_assignment
from tensordict import NestedKey, TensorDictBase
from torch import nn
from torchrl.data import Composite
from torchrl.envs import Compose, EnvBase, TensorDictPrimer
from torchrl.envs.utils import RandomPolicy
from torchrl.modules.utils import get_primers_from_module

from marlplug.envs.layout import ACTION_MASK
from marlplug.errors import UserError

#: A policy: reads a TensorDict, writes each group's ``action`` into it and returns it.
Policy = Callable[[TensorDictBase], TensorDictBase]

#: Discrete move of each mpe action (``[no_action, left, right, down, up]``, mpe2's ``_set_action``).
MOVES = torch.tensor([[0.0, 0.0], [-1.0, 0.0], [1.0, 0.0], [0.0, -1.0], [0.0, 1.0]])
#: mpe2 multiplies a discrete move by this when the agent sets no ``accel`` (simple_spread does not).
SENSITIVITY = 5.0


def in_first_agents_order(relative: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
    """Every agent's landmarks ``relative`` ``[..., agent, landmark, 2]`` reordered as the first
    agent lists them, matched by absolute position (``position`` ``[..., agent, 2]``): a landmark
    index then means the same landmark for every agent, whatever order each one observes them in.
    In world order this is the identity.

    Example:
        >>> position = torch.tensor([[0.0, 0.0], [1.0, 0.0]])
        >>> relative = torch.tensor([[[2.0, 0.0], [0.0, 3.0]], [[-1.0, 3.0], [1.0, 0.0]]])
        >>> in_first_agents_order(relative, position)[1]  # agent 1 listed them the other way round
        tensor([[ 1.,  0.],
                [-1.,  3.]])
    """
    absolute = position.unsqueeze(-2) + relative  # [..., agent, entry, 2]
    first = absolute[..., :1, :, :]  # [..., 1, landmark, 2]
    # gap[..., i, j, k]: agent i's entry k against the first agent's landmark j.
    gap = (absolute.unsqueeze(-3) - first.unsqueeze(-2)).square().sum(-1)
    entry = gap.argmin(-1)  # [..., agent, landmark]
    return relative.gather(-2, entry.unsqueeze(-1).expand_as(relative))


class ScriptedSpread:
    """Cooperative navigation's oracle: optimal agent->landmark assignment, then steer to it.

    Every step, from the observations alone: the cost of agent i covering landmark j is their
    distance; :func:`scipy.optimize.linear_sum_assignment` picks the assignment of least total
    distance (the scenario's reward is minus the sum of the closest agent's distances). Each agent
    then takes the discrete action whose one-step lookahead on mpe2's dynamics lands nearest its
    landmark. mpe2 moves the position with the *old* velocity before it adds the action's force
    (``World.integrate_state``), so an action first shows two positions ahead: the lookahead
    compares ``p + v dt + (v (1 - damping) + a dt / m) dt`` over the five actions.

    The observation layout is mpe2 ``simple_spread``'s (the VMAS backend copies it): own velocity
    (2), own position (2), every landmark relative to the agent (2 N), every other agent relative to
    it (2 (N - 1)), their silent communication (2 (N - 1)). The landmarks may be listed in any order
    per agent (``env.entity_order: nearest``): the assignment matches them across agents by
    position (:func:`in_first_agents_order`).

    Args:
        agents: N, the number of agents (and landmarks).
        group: the agents' group key.
        nearest: each agent heads for its own nearest landmark instead (no assignment: agents may
            share a landmark and leave another uncovered); the ``nearest`` reference policy.

    Example:
        >>> from marlplug.envs import make_env
        >>> env = make_env("cooperative_navigation", agents=3, seed=0)
        >>> rollout = env.rollout(25, ScriptedSpread(agents=3))
        >>> bool(rollout["next", "agent", "reward"].mean() > -1.0)
        True
    """

    def __init__(self, *, agents: int, group: str = "agent", nearest: bool = False) -> None:
        self.agents, self.group, self.nearest = agents, group, nearest
        world, agent = World(), Agent()
        self.dt, self.damping = float(world.dt), float(world.damping)
        # One action's velocity change: a unit move times mpe2's sensitivity, over the mass, for dt.
        self.velocity_change = MOVES * SENSITIVITY / float(agent.mass) * self.dt

    @property
    def observation_size(self) -> int:
        """Width of one agent's observation: 4 + 2 N + 4 (N - 1)."""
        return 4 + 2 * self.agents + 4 * (self.agents - 1)

    def targets(self, observation: torch.Tensor) -> torch.Tensor:
        """``[..., N, 2]`` the absolute position of each agent's assigned landmark."""
        n = self.agents
        position = observation[..., 2:4]
        relative = observation[..., 4 : 4 + 2 * n].unflatten(
            -1, (n, 2)
        )  # [..., agent, landmark, 2]
        if not self.nearest:  # the assignment needs landmark j to be the same for every agent
            relative = in_first_agents_order(relative, position)
        distance = relative.norm(dim=-1)  # [..., agent, landmark]
        if self.nearest:
            landmark = distance.argmin(-1)
        else:
            cost = distance.reshape(-1, n, n).double().numpy()
            assigned = np.stack([linear_sum_assignment(matrix)[1] for matrix in cost])
            landmark = torch.as_tensor(assigned).reshape(observation.shape[:-1])
        chosen = relative.gather(-2, landmark[..., None, None].expand(*landmark.shape, 1, 2))
        return position + chosen.squeeze(-2)

    def actions(self, observation: torch.Tensor) -> torch.Tensor:
        """``[..., N]`` the action of each agent (int64), for observations ``[..., N, D]``."""
        if observation.shape[-2:] != (self.agents, self.observation_size):
            raise UserError(
                f"scripted policy: observations of shape {tuple(observation.shape[-2:])} are not "
                f"cooperative navigation's with {self.agents} agents "
                f"({self.agents}, {self.observation_size})"
            )
        observation = observation.float()
        velocity, position = observation[..., 0:2], observation[..., 2:4]
        target = self.targets(observation)
        # Position once the action acts (two steps ahead), for each of the five actions.
        coasted = position + velocity * self.dt
        next_velocity = velocity[..., None, :] * (1 - self.damping) + self.velocity_change
        ahead = coasted[..., None, :] + next_velocity * self.dt  # [..., N, 5, 2]
        return (ahead - target[..., None, :]).norm(dim=-1).argmin(-1)

    def __call__(self, tensordict: TensorDictBase) -> TensorDictBase:
        observation = tensordict.get((self.group, "observation"))
        tensordict.set((self.group, "action"), self.actions(observation))
        return tensordict


#: Scenarios with a scripted oracle (:func:`scripted_policy`), hence an oracle-normalized score.
SCRIPTED_SCENARIOS = frozenset({"cooperative_navigation"})


class MaskedRandomPolicy:
    """Uniform random actions, among the valid ones for the groups ``masked`` whose ``action_mask``
    the env writes (LBF's): the random reference of an env with masks is what an agent that may
    only take valid actions gets by chance.

    Example:
        >>> from marlplug.envs import make_env
        >>> env = make_env("Foraging-8x8-2p-2f-coop-v3", backend="gymnasium", seed=0)
        >>> rollout = env.rollout(50, random_policy(env))
        >>> valid = rollout["agent", "action_mask"].gather(-1, rollout["agent", "action"][..., None])
        >>> bool(valid.all())
        True
    """

    def __init__(self, spec: Composite, masked: list[str]) -> None:
        self.randomize = RandomPolicy(spec)
        self.masked = masked

    def __call__(self, tensordict: TensorDictBase) -> TensorDictBase:
        tensordict = self.randomize(tensordict)
        for group in self.masked:
            valid = tensordict.get((group, ACTION_MASK))
            weights = valid.reshape(-1, valid.shape[-1]).to(torch.float32)
            action = torch.multinomial(weights, 1).reshape(valid.shape[:-1])
            tensordict.set((group, "action"), action)
        return tensordict


def random_policy(env: EnvBase, *, scenario: str = "") -> Policy:
    """Uniform random actions from ``env``'s action spec (any scenario), drawn from torch's RNG;
    among the valid actions only where a group has an ``action_mask`` (:class:`MaskedRandomPolicy`).

    Example:
        >>> from marlplug.envs import make_env
        >>> env = make_env("keep_away", seed=0)
        >>> env.rollout(2, random_policy(env))["adversary", "action"].shape  # 2 steps, 1 adversary
        torch.Size([2, 1])
    """
    del scenario  # any scenario
    observations = env.observation_spec.keys(include_nested=True)
    masked = [
        group for group in getattr(env, "group_map", {}) if (group, ACTION_MASK) in observations
    ]
    if masked:
        return MaskedRandomPolicy(env.full_action_spec, masked)
    return RandomPolicy(env.full_action_spec)


def random_group_policy(policy: Policy, env: EnvBase, group: str) -> Policy:
    """``policy`` for every group but ``group``, whose agents act uniformly at random: the random
    reference of one side of a competitive scenario against the other side's trained agents.

    A group's return against a uniform random opponent says little once the opponent learns (a
    zero-sum game's two curves mirror each other); the same group acting at random against the
    same trained opponents is the reference its trained return must beat.

    Raises:
        UserError: ``env`` has no group ``group``.

    Example:
        >>> from marlplug.envs import make_env
        >>> env = make_env("keep_away", agents=4, adversaries=2, seed=0)
        >>> def stay(tensordict):  # every agent takes action 0 (no move)
        ...     return tensordict.update(env.full_action_spec.zero())
        >>> rollout = env.rollout(3, random_group_policy(stay, env, "adversary"))
        >>> bool((rollout["agent", "action"] == 0).all())
        True
    """
    groups = list(getattr(env, "group_map", {}))
    if group not in groups:
        raise UserError(
            f"--random-group: '{group}' is not a group of this env; choose one of: "
            + ", ".join(groups)
        )
    spec = env.full_action_spec
    return _WithRandomGroup(policy, RandomPolicy(Composite({group: spec[group]}, shape=spec.shape)))


class _WithRandomGroup(nn.Module):
    """``policy``, then one group's actions redrawn at random. A module holding ``policy`` as its
    submodule (when it is one), so a recurrent policy's state primers stay visible to
    :func:`~marlplug.envs.transformed.with_policy_transforms` and its state is carried."""

    def __init__(self, policy: Policy, randomize: RandomPolicy) -> None:
        super().__init__()
        self.policy = policy
        self.randomize = randomize

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self.randomize(self.policy(tensordict))


def opponent_group_policy(policy: Policy, opponent: Policy, env: EnvBase, group: str) -> Policy:
    """``policy`` for every group but ``group``, whose agents act as ``opponent`` says: a trained
    side against another policy's side, e.g. an earlier checkpoint of the same run (self-play).

    ``opponent`` acts on a copy of each step's tensordict (what it writes for the other groups is
    dropped). A recurrent opponent's hidden state is its own: carried from step to step under
    ``OPPONENT_STATE`` (apart from ``policy``'s, whose keys are the same), zero where an episode
    starts, as :func:`~marlplug.envs.evaluate.evaluate` carries ``policy``'s.

    Raises:
        UserError: ``env`` has no group ``group``.

    Example:
        >>> from marlplug.envs import make_env
        >>> env = make_env("keep_away", agents=4, adversaries=2, seed=0)
        >>> def act(action):
        ...     return lambda td: td.update(env.full_action_spec.zero().apply(lambda a: a + action))
        >>> rollout = env.rollout(3, opponent_group_policy(act(0), act(1), env, "adversary"))
        >>> bool((rollout["agent", "action"] == 0).all()), bool((rollout["adversary", "action"] == 1).all())
        (True, True)
    """
    groups = list(getattr(env, "group_map", {}))
    if group not in groups:
        raise UserError(
            f"--opponent-group: '{group}' is not a group of this env; choose one of: "
            + ", ".join(groups)
        )
    return _WithOpponentGroup(policy, opponent, group)


#: Where a recurrent opponent's state rides in the tensordict: its own keys (``(group,
#: "rnn_hidden")``) nested under this one, so the evaluated policy's state, at the same keys, is
#: not mistaken for it.
OPPONENT_STATE = "opponent_state"


class _OpponentState(nn.Module):
    """Declares a recurrent opponent's state to the env: its primers' specs nested under
    :data:`OPPONENT_STATE` (zeros at every reset, carried from step to step)."""

    def __init__(self, primers: Composite) -> None:
        super().__init__()
        self.primers = primers

    def make_tensordict_primer(self) -> TensorDictPrimer:
        return TensorDictPrimer(
            Composite({OPPONENT_STATE: self.primers}), expand_specs=True, reset_key="_reset"
        )


def _primer_specs(module: object) -> Composite | None:
    """The specs of every state ``module``'s recurrent parts keep in the tensordict; ``None``
    for a policy without any (or not a module)."""
    primer = get_primers_from_module(module, warn=False) if isinstance(module, nn.Module) else None
    if primer is None:
        return None
    primers = list(primer.transforms) if isinstance(primer, Compose) else [primer]
    specs = Composite()
    for transform in primers:
        specs.update(transform.primers)
    return specs


class _WithOpponentGroup(nn.Module):
    """``policy``, then one group's actions taken from ``opponent`` (run on a copy of the step,
    with its own recurrent state)."""

    def __init__(self, policy: Policy, opponent: Policy, group: str) -> None:
        super().__init__()
        self.policy = policy
        # Not a submodule: its primers would declare its state at the keys ``policy`` uses.
        self._opponent = (opponent,)
        self.group = group
        specs = _primer_specs(opponent)
        self.state_keys: list[tuple[str, ...]] = (
            [] if specs is None else [_as_tuple(k) for k in specs.keys(True, True)]
        )
        self.opponent_state = None if specs is None else _OpponentState(specs)

    @property
    def opponent(self) -> Policy:
        return self._opponent[0]

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        step = tensordict.clone()
        for key in self.state_keys:  # the opponent reads its own state, not policy's
            state = tensordict.get((OPPONENT_STATE, *key), None)
            if state is None:  # an env without its primers: the opponent starts from zeros
                step = step.exclude(key)
            else:
                step.set(key, state)
        step = self.opponent(step)
        theirs = step.get((self.group, "action"))
        tensordict = self.policy(tensordict)
        tensordict.set((self.group, "action"), theirs)
        for key in self.state_keys:
            tensordict.set(("next", OPPONENT_STATE, *key), step.get(("next", *key)))
        return tensordict


def _as_tuple(key: NestedKey) -> tuple[str, ...]:
    return (key,) if isinstance(key, str) else tuple(key)


def scripted_policy(env: EnvBase, *, scenario: str, nearest: bool = False) -> Policy:
    """The scripted oracle of ``scenario`` for ``env`` (only cooperative navigation has one).

    Raises:
        UserError: the scenario has no scripted policy, or ``env`` is not laid out like it.

    Example:
        >>> from marlplug.envs import make_env
        >>> env = make_env("cooperative_navigation", agents=2, seed=0)
        >>> scripted_policy(env, scenario="cooperative_navigation").agents
        2
    """
    name = "nearest" if nearest else "scripted"
    if scenario not in SCRIPTED_SCENARIOS:
        raise UserError(
            f"--policy {name}: no scripted policy for '{scenario}'; scenarios with one: "
            + ", ".join(sorted(SCRIPTED_SCENARIOS))
        )
    group_map = getattr(env, "group_map", {})
    if list(group_map) != ["agent"]:
        raise UserError(
            f"--policy {name}: cooperative navigation has one group 'agent'; "
            f"this env has {list(group_map)}"
        )
    if env.full_action_spec["agent", "action"].domain != "discrete":
        raise UserError(
            f"--policy {name}: the scripted policy takes discrete actions; this env's are "
            "continuous (env.continuous_actions)"
        )
    policy = ScriptedSpread(agents=len(group_map["agent"]), nearest=nearest)
    width = env.observation_spec["agent", "observation"].shape[-1]
    if width != policy.observation_size:
        raise UserError(
            f"--policy {name}: observations of width {width}, expected "
            f"{policy.observation_size} (simple_spread's layout with {policy.agents} agents)"
        )
    return policy


def nearest_policy(env: EnvBase, *, scenario: str) -> Policy:
    """Cooperative navigation's agents each heading for their own nearest landmark, steered as the
    oracle steers (:class:`ScriptedSpread` with ``nearest``): a reference for agents that do not
    coordinate, between random and the oracle.

    Example:
        >>> from marlplug.envs import make_env
        >>> env = make_env("cooperative_navigation", agents=2, seed=0)
        >>> nearest_policy(env, scenario="cooperative_navigation").nearest
        True
    """
    return scripted_policy(env, scenario=scenario, nearest=True)


#: ``--policy`` name -> builder ``(env, scenario=...) -> policy``.
REFERENCE_POLICIES: dict[str, Callable[..., Policy]] = {
    "random": random_policy,
    "scripted": scripted_policy,
    "nearest": nearest_policy,
}


def reference_policy(name: str, env: EnvBase, *, scenario: str) -> Policy:
    """The reference policy ``name`` (``random`` or ``scripted``) for ``env`` of ``scenario``.

    Example:
        >>> from marlplug.envs import make_env
        >>> env = make_env("cooperative_navigation", agents=3, seed=0)
        >>> type(reference_policy("scripted", env, scenario="cooperative_navigation")).__name__
        'ScriptedSpread'
    """
    if name not in REFERENCE_POLICIES:
        raise UserError(
            f"--policy: unknown reference policy '{name}'; choose one of: "
            + ", ".join(REFERENCE_POLICIES)
        )
    return REFERENCE_POLICIES[name](env, scenario=scenario)
