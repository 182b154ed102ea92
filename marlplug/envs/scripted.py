"""Scripted situations: place agents by hand, take one no-op step, read every agent's reward.

The same situation gives the same rewards on every backend; tests use it to check reward semantics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import torch

from marlplug.envs.scenario import EnvScenario


def scripted_rewards(
    scenario: EnvScenario,
    *,
    agents: Mapping[str, Sequence[float]],
    landmarks: Sequence[Sequence[float]] = (),
    target: int | None = None,
    seed: int = 0,
) -> dict[str, torch.Tensor]:
    """Rewards of one no-op step from a hand-placed situation, one ``[n_agents]`` tensor per group.

    Args:
        scenario: a scenario instance (any backend).
        agents: agent name -> ``(x, y)``, at rest.
        landmarks: positions of the first landmarks (obstacles in predator-prey).
        target: index of the target landmark, in scenarios that have one.
        seed: seeds the positions of everything not placed.

    Example:
        >>> from marlplug.envs import get_scenario
        >>> spread = get_scenario("cooperative_navigation")(agents=2)
        >>> on = scripted_rewards(spread, agents={"agent_0": (0, 0), "agent_1": (1, 1)},
        ...                       landmarks=[(0, 0), (1, 1)])
        >>> float(on["agent"][0])
        0.0
    """
    env = scenario.make(num_envs=1, seed=seed)
    tensordict = env.reset()
    scenario.place(env, agents=agents, landmarks=landmarks, target=target)
    tensordict.update(env.full_action_spec.zero())
    stepped = env.step(tensordict)
    return {group: stepped["next", group, "reward"].reshape(-1) for group in env.group_map}
