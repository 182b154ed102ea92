"""Physical deception's ``observe_velocity``: mpe2's simple_adversary observes positions only, and
its physics moves a position with the velocity of the step before, so a move shows in the next
observation only through the velocity this option appends (docs/reference/envs/physical-deception.md)."""

from __future__ import annotations

import pytest
import torch

from marlplug.envs import make_env
from marlplug.envs.flat import MultiAgentEnvAdapter
from marlplug.envs.policies import MOVES

RIGHT = 2  # the discrete move +x


@pytest.mark.parametrize("backend", ["mpe", "vmas"])
def test_a_move_shows_in_the_velocity_at_once_and_in_the_position_a_step_later(
    backend: str,
) -> None:
    env = make_env("physical_deception", backend=backend, agents=3, seed=0, observe_velocity=True)
    adapter = MultiAgentEnvAdapter(env)
    tensordict = env.reset()
    mover = [agent.name for agent in adapter.agents].index("agent_0")
    seen = [adapter.observations(tensordict)[0, mover]]
    for _ in range(2):
        actions = torch.zeros(1, len(adapter.agents), 5)
        actions[:, :, 0] = 1.0  # everyone else stays put
        actions[:, mover] = torch.nn.functional.one_hot(torch.tensor(RIGHT), 5).float()
        adapter.write_actions(tensordict, actions)
        _, tensordict = env.step_and_maybe_reset(tensordict)
        seen.append(adapter.observations(tensordict)[0, mover])
    target_offset = [obs[:2] for obs in seen]
    velocity = [obs[-2:] for obs in seen]
    # From rest, one move adds 0.5 to the velocity (force 5, mass 1, dt 0.1) ...
    torch.testing.assert_close(velocity[1], 0.5 * MOVES[RIGHT])
    # ... but the position moves with the velocity it had before the step: not yet.
    torch.testing.assert_close(target_offset[1], target_offset[0])
    # A step later the agent has moved 0.05 toward +x (its target offset shrinks by that much),
    # and its velocity is the damped one plus the second move's.
    torch.testing.assert_close(target_offset[2] - target_offset[1], torch.tensor([-0.05, 0.0]))
    torch.testing.assert_close(velocity[2], (0.75 * 0.5 + 0.5) * MOVES[RIGHT])


def test_it_appends_two_columns_to_every_group_and_is_off_by_default() -> None:
    plain = make_env("physical_deception", agents=4, seed=0)
    with_velocity = make_env("physical_deception", agents=4, seed=0, observe_velocity=True)
    for group in plain.group_map:
        width = plain.observation_spec[group, "observation"].shape[-1]
        assert with_velocity.observation_spec[group, "observation"].shape[-1] == width + 2, group
