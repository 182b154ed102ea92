"""Reference policies: the scripted oracle reads simple_spread's observation layout and steers right."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDictBase

from marlplug.envs import evaluate, get_scenario, make_env, random_policy, reference_policy
from marlplug.envs.policies import ScriptedSpread, random_group_policy, scripted_policy
from marlplug.errors import UserError
from tests.envs.helpers import BACKENDS

#: Agents and landmarks placed so that the optimal assignment is not the nearest landmark of each:
#: agent_0 and agent_2 are both nearest landmark 0; agent_2 gets it, agent_0 the far landmark 2.
AGENTS = {"agent_0": (0.0, 0.0), "agent_1": (0.5, 0.5), "agent_2": (-0.8, 0.0)}
LANDMARKS = [(-0.5, 0.0), (0.4, 0.4), (0.3, -0.6)]
#: agent i -> its landmark in the least-total-distance assignment.
ASSIGNED = [2, 1, 0]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _placed(backend: str, agents: dict[str, tuple[float, float]], landmarks: list) -> torch.Tensor:
    """Observations ``[3, 18]`` of a hand-placed situation (agents at rest)."""
    scenario = get_scenario("cooperative_navigation", backend=backend)(agents=3)
    env = scenario.make(num_envs=1, seed=0)
    tensordict = env.reset()
    scenario.place(env, agents=agents, landmarks=landmarks)
    # One no-op step publishes the placed state in the observations.
    tensordict.update(env.full_action_spec.zero())
    observation = env.step(tensordict)["next", "agent", "observation"]
    return observation.reshape(3, -1)


def test_targets_are_the_optimal_assignment_read_from_the_observations(backend: str) -> None:
    targets = ScriptedSpread(agents=3).targets(_placed(backend, AGENTS, LANDMARKS))
    expected = torch.tensor([LANDMARKS[j] for j in ASSIGNED])
    torch.testing.assert_close(targets, expected, atol=1e-5, rtol=0)
    # Not just each agent's nearest landmark (agent_0, at the origin, is nearest landmark 0).
    nearest = min(range(3), key=lambda j: float(torch.tensor(LANDMARKS[j]).norm()))
    assert nearest != ASSIGNED[0]


def test_nearest_targets_each_agents_own_nearest_landmark(backend: str) -> None:
    targets = ScriptedSpread(agents=3, nearest=True).targets(_placed(backend, AGENTS, LANDMARKS))
    # agent_0 and agent_2 both head for landmark 0; landmark 2 is left uncovered.
    expected = torch.tensor([LANDMARKS[0], LANDMARKS[1], LANDMARKS[0]])
    torch.testing.assert_close(targets, expected, atol=1e-5, rtol=0)


@pytest.mark.parametrize(
    ("landmark", "action"),
    [((0.6, 0.0), 2), ((-0.6, 0.0), 1), ((0.0, 0.6), 4), ((0.0, -0.6), 3), ((0.0, 0.0), 0)],
)
def test_an_agent_at_rest_moves_straight_to_its_landmark(
    backend: str, landmark: tuple[float, float], action: int
) -> None:
    # The other two agents sit on the other landmarks: agent_0's landmark is the one it is given.
    agents = {"agent_0": (0.0, 0.0), "agent_1": (2.0, 2.0), "agent_2": (-2.0, -2.0)}
    observation = _placed(backend, agents, [landmark, (2.0, 2.0), (-2.0, -2.0)])
    assert int(ScriptedSpread(agents=3).actions(observation)[0]) == action


def test_scripted_episodes_get_close_to_the_landmarks(backend: str) -> None:
    env = make_env("cooperative_navigation", backend=backend, agents=3, seed=3)
    rollout = env.rollout(25, scripted_policy(env, scenario="cooperative_navigation"))
    observation = rollout["next", "agent", "observation"].reshape(25, 3, 18)
    # Distance from each landmark to its closest agent, first and last step.
    distances = observation[..., 4:10].unflatten(-1, (3, 2)).norm(dim=-1).amin(-2)
    assert float(distances[-1].max()) < 0.2 < float(distances[0].max())


def test_scripted_beats_random_by_far_on_the_same_episodes() -> None:
    env = make_env("cooperative_navigation", agents=3)
    scripted = evaluate(
        env, reference_policy("scripted", env, scenario="cooperative_navigation"), episodes=5
    )
    random = evaluate(
        env, reference_policy("random", env, scenario="cooperative_navigation"), episodes=5
    )
    assert scripted.mean > random.mean + 20


def test_random_policy_acts_in_every_group_within_the_spec() -> None:
    env = make_env("keep_away", seed=0)
    rollout = env.rollout(5, random_policy(env))
    for group in env.group_map:
        action = rollout[group, "action"]
        assert all(env.full_action_spec[group, "action"].is_in(step) for step in action)
        assert action.unique().numel() > 1  # drawn, not constant


def test_random_group_policy_randomizes_one_group_and_keeps_the_others() -> None:
    env = make_env("keep_away", agents=4, adversaries=2, seed=0)

    def stay(tensordict: TensorDictBase) -> TensorDictBase:  # every agent takes action 0
        return tensordict.update(env.full_action_spec.zero())

    rollout = env.rollout(8, random_group_policy(stay, env, "adversary"))
    assert bool((rollout["agent", "action"] == 0).all())
    assert rollout["adversary", "action"].unique().numel() > 1  # drawn, not the policy's
    # The good agents' returns are now those of random moves against the same still opponents.
    still = evaluate(env, stay, episodes=4)
    moving = evaluate(env, random_group_policy(stay, env, "agent"), episodes=4)
    assert moving.group_returns["agent"] != still.group_returns["agent"]
    with pytest.raises(
        UserError,
        match="--random-group: 'prey' is not a group of this env; choose one of: agent, adversary",
    ):
        random_group_policy(stay, env, "prey")


def test_scripted_policy_refuses_other_scenarios_and_layouts() -> None:
    with pytest.raises(
        UserError, match=r"no scripted policy for 'predator_prey'.*cooperative_navigation"
    ):
        scripted_policy(make_env("predator_prey"), scenario="predator_prey")
    # keep_away's env under the wrong name: the groups do not fit.
    with pytest.raises(UserError, match="one group 'agent'"):
        scripted_policy(make_env("keep_away"), scenario="cooperative_navigation")
    with pytest.raises(UserError, match=r"observations of shape \(3, 18\).*2 agents"):
        ScriptedSpread(agents=2).actions(torch.zeros(3, 18))


def test_unknown_reference_policy_names_the_choices() -> None:
    env = make_env("cooperative_navigation", agents=2)
    with pytest.raises(
        UserError, match="unknown reference policy 'greedy'; choose one of: random, scripted"
    ):
        reference_policy("greedy", env, scenario="cooperative_navigation")
