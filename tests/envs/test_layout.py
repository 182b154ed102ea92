"""The one env-layout reader: groups, agents, sizes and action kinds in the documented flat order, and
every other reader (networks, learner algorithms, the flat adapter) sees exactly that layout."""

from __future__ import annotations

import pytest
from mpe2 import simple_spread_v3
from torchrl.data import Composite, Unbounded
from torchrl.envs.libs.pettingzoo import PettingZooWrapper

from marlplug.algorithms.spaces import AgentSpace, padded_dims
from marlplug.envs import (
    AgentLayout,
    GroupLayout,
    MultiAgentEnvAdapter,
    make_env,
    read_layout,
)
from marlplug.errors import UserError
from marlplug.nn import GroupSpec, JointActorCritic
from tests.envs.helpers import OBSERVATION_SIZES, SMALL


@pytest.mark.parametrize("scenario", sorted(SMALL))
def test_groups_agents_and_sizes_of_every_scenario(scenario: str) -> None:
    options, sizes = SMALL[scenario]
    env = make_env(scenario, seed=0, **options)
    layout = read_layout(env)
    # groups in env.group_map order (physical_deception lists its adversary first)
    assert [g.group for g in layout] == list(env.group_map)
    assert {g.group: g.n_agents for g in layout} == sizes
    assert {g.group: g.observation_dim for g in layout} == OBSERVATION_SIZES[scenario]
    assert all(g.action_kind == "index" and g.n_actions == 5 for g in layout)
    flat = [(a.group, a.name) for a in layout.agents]
    assert flat == [(group, name) for group, names in env.group_map.items() for name in names]
    assert layout.num_agents == len(flat) == sum(sizes.values())
    assert layout.padded_dims() == (max(OBSERVATION_SIZES[scenario].values()), 5)


def test_continuous_actions_carry_their_bounds() -> None:
    env = make_env("cooperative_navigation", agents=2, seed=0, continuous_actions=True)
    (group,) = read_layout(env)
    assert group.action_kind == "continuous" and group.n_actions == 5
    assert group.action_low == (0.0,) * 5 and group.action_high == (1.0,) * 5
    assert [(a.discrete, a.low, a.high) for a in group.agents] == [(False, 0.0, 1.0)] * 2


def test_one_hot_actions_are_read_and_refused_by_the_actor_only() -> None:
    env = PettingZooWrapper(simple_spread_v3.parallel_env(N=2), categorical_actions=False)
    (group,) = read_layout(env)
    assert group.action_kind == "one_hot" and group.n_actions == 5
    assert MultiAgentEnvAdapter(env).agents[0].action_dim == 5
    with pytest.raises(UserError, match="one-hot discrete actions are not supported"):
        JointActorCritic.from_env(env)


def test_every_reader_sees_the_same_layout() -> None:
    env = make_env("predator_prey", agents=4, adversaries=1, seed=0)
    layout = read_layout(env)
    assert GroupSpec is GroupLayout and AgentSpace is AgentLayout
    assert MultiAgentEnvAdapter(env).agents == list(layout.agents)
    model = JointActorCritic.from_env(env, hidden_size=8, feature_dim=8)
    assert tuple(nets.spec for nets in model.groups.values()) == layout.groups
    assert model.agent_names == [(a.group, a.name) for a in layout.agents]
    assert padded_dims(layout.agents) == layout.padded_dims() == (16, 5)


def test_what_cannot_be_read_is_one_line() -> None:
    env = make_env("cooperative_navigation", agents=2, seed=0)
    env.group_map = {}
    with pytest.raises(UserError, match="env has no group_map"):
        read_layout(env)
    unbounded = make_env("cooperative_navigation", agents=2, seed=0, continuous_actions=True)
    unbounded.action_spec = Composite(agent=Composite(action=Unbounded((2, 5)), shape=(2,)))
    with pytest.raises(UserError, match="group 'agent': marlplug needs one categorical"):
        read_layout(unbounded)
    with pytest.raises(UserError, match="continuous actions need action_low and action_high"):
        GroupLayout(
            group="agent", agent_names=("a",), observation_dim=4, n_actions=2, continuous=True
        )
