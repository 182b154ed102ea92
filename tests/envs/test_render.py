"""Episode frames say what they show: the scenario, the step, the running return (per agent and for
the team, summed over every agent as training reports it), labelled bodies, and one view that holds
the whole episode."""

from __future__ import annotations

import numpy as np
import torch
from tensordict import TensorDictBase
from torchrl.envs import EnvBase

from marlplug.envs import make_env
from marlplug.envs.render import rollout_frames, rollout_moments, view_around

#: mpe2's discrete actions: 0 stay, 1 left, 2 right, 3 down, 4 up.
MOVE_RIGHT = 2


def _constant_actions(env: EnvBase, action: int) -> object:
    def act(tensordict: TensorDictBase) -> TensorDictBase:
        actions = env.full_action_spec.zero()
        for key in actions.keys(True, True):
            actions.set(key, torch.full_like(actions.get(key), action))
        return tensordict.update(actions)

    return act


def test_the_running_return_is_the_episode_s_reward_summed_over_agents() -> None:
    env = make_env("predator_prey", agents=3, adversaries=1, seed=3)
    moments = rollout_moments(env, policy=_constant_actions(env, MOVE_RIGHT), max_steps=10)  # type: ignore[arg-type]

    reference = make_env("predator_prey", agents=3, adversaries=1, seed=3)
    rollout = reference.rollout(10, policy=_constant_actions(reference, MOVE_RIGHT))  # type: ignore[arg-type]
    step_rewards = sum(
        rollout.get(("next", group, "reward")).sum(dim=(1, 2)) for group in reference.group_map
    )
    assert isinstance(step_rewards, torch.Tensor)
    expected = torch.cumsum(step_rewards.double(), 0).tolist()
    assert [m.step for m in moments] == list(range(11))
    assert np.allclose([m.team_return for m in moments[1:]], expected, atol=1e-5)
    agents = sum(len(names) for names in reference.group_map.values())
    assert agents == 3 and {m.agents for m in moments[1:]} == {agents}
    assert moments[-1].status.startswith("step 10   return per agent ")
    assert f"team {expected[-1]:.2f} (3 agents)" in moments[-1].status


def test_one_view_holds_every_body_of_the_episode_even_one_that_leaves_the_spawn_area() -> None:
    env = make_env("cooperative_navigation", agents=2, seed=0)
    moments = rollout_moments(env, policy=_constant_actions(env, MOVE_RIGHT))  # type: ignore[arg-type]
    bodies = [body for moment in moments for body in moment.bodies or []]
    assert max(body.x for body in bodies) > 1.0  # outside the [-1, 1] spawn square
    center_x, center_y, half = view_around([moment.bodies or [] for moment in moments])
    for body in bodies:
        assert abs(body.x - center_x) + body.radius <= half
        assert abs(body.y - center_y) + body.radius <= half


def test_a_frame_is_titled_and_shows_its_agents_and_landmarks() -> None:
    env = make_env("cooperative_navigation", agents=3, seed=0)
    frames = rollout_frames(env, max_steps=3)
    assert len(frames) == 4 and all(frame.shape == (500, 500, 3) for frame in frames)
    first = frames[0].astype(int)
    title_band = first[:60]
    assert (title_band.sum(-1) < 200).sum() > 100  # dark text above the world
    # The agents' blue (mpe2's colour 0.35, 0.35, 0.85) and the landmarks' dark grey are drawn.
    blue = np.abs(first - np.array([89, 89, 217])).max(-1) <= 2
    grey = np.abs(first - np.array([64, 64, 64])).max(-1) <= 2
    assert blue.sum() > 1000 and grey.sum() > 100
    assert not np.array_equal(frames[0], frames[-1])
