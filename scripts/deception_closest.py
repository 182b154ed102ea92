"""How close the closest of physical deception's good agents gets to the target at random.

The good agents' reward counts only the good agent closest to the target; with more of them, that
distance is already small when they act at random, which leaves a trained team less to gain
(docs/distributed.md, "Nearest first and other settings"). Prints, for M = 3 and M = 8, the mean
over 50 mpe episodes' steps of that distance under uniform random actions.

Run from the repository root: ``python scripts/deception_closest.py [--episodes 50]``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from marlplug.envs import make_env


def closest_to_target(agents: int, *, episodes: int, seed: int = 0) -> float:
    """Mean distance from the target to the closest good agent, over ``episodes`` random episodes."""
    env = make_env("physical_deception", agents=agents, seed=seed)
    torch.manual_seed(seed)  # the random actions come from torch's global generator
    means = []
    for _ in range(episodes):
        # A good agent's first two observation columns: the target relative to it.
        target = env.rollout(25)["agent", "observation"][..., 0:2]
        means.append(target.norm(dim=-1).min(dim=-1).values.mean())
    env.close()
    return float(torch.stack(means).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=50)
    args = parser.parse_args()
    for agents in (3, 8):
        distance = closest_to_target(agents, episodes=args.episodes)
        print(f"M = {agents} ({agents - 1} good agents): closest to the target {distance:.3f}")


if __name__ == "__main__":
    main()
