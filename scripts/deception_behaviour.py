"""What physical deception's good agents do (docs/distributed.md, "What physical deception's good agents learn").

Physical deception rewards every good agent with the adversary's distance to the target minus the
distance of the good agent closest to it. A trained run's greedy policy is replayed on the same
episodes three ways: as trained, with the good agents acting at random, and with the adversary
acting at random. For each the script prints, per step and over the episodes:

- ``adv-goal``: the adversary's distance to the target;
- ``min good-goal``: the closest good agent's distance to the target, on average and at a few steps;
- ``toward``: the mean cosine between each moving good agent's move and its direction to the target
  (1: straight at it, 0: unrelated, -1: away), for all good agents and for the closest one;
- the good agents' return (their rewards summed over agents and steps).

Run from the repository root, on a run folder of ``marlplug train`` with a physical deception config:
``python scripts/deception_behaviour.py runs/RUN [--episodes 50] [--backend mpe]``.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
from torchrl.envs import EnvBase
from torchrl.envs.utils import ExplorationType, set_exploration_type

from marlplug.cli.evaluate import run_target
from marlplug.envs.policies import MOVES, Policy, random_group_policy
from marlplug.errors import UserError

STEPS = (0, 3, 6, 10, 15, 20, 24)


@dataclass
class Behaviour:
    """Means over the episodes' steps (see the module docstring)."""

    adversary_to_target: float
    closest_to_target: float
    closest_by_step: dict[int, float]
    toward_all: float
    toward_closest: float
    good_return: float

    def lines(self, name: str) -> list[str]:
        steps = ", ".join(f"{step}: {value:.2f}" for step, value in self.closest_by_step.items())
        return [
            f"{name:>22}: adv-goal {self.adversary_to_target:.3f}, min good-goal "
            f"{self.closest_to_target:.3f}, toward (all) {self.toward_all:+.3f}, toward (closest) "
            f"{self.toward_closest:+.3f}, good return {self.good_return:.1f}",
            f"{'':>22}  min good-goal by step {{{steps}}}",
        ]


def behaviour(
    env: EnvBase, policy: Policy, *, episodes: int, episode_steps: int, seed: int
) -> Behaviour:
    """Distances and moves of the good agents over ``episodes`` greedy episodes of ``policy``."""
    env.set_seed(seed)
    torch.manual_seed(seed)  # the random group's actions come from torch's global generator
    adversary, closest, toward, closest_toward, returns = [], [], [], [], []
    with set_exploration_type(ExplorationType.DETERMINISTIC), torch.no_grad():
        for _ in range(episodes):
            rollout = env.rollout(episode_steps, policy)
            observation = rollout["agent", "observation"]
            steps, n_good = rollout.batch_size[-1], observation.shape[-2]
            # A good agent's observation: the target relative to it (2), every landmark relative
            # to it (2 per landmark, one landmark per good agent), then every other agent relative
            # to it, the adversary first (mpe2 and VMAS alike).
            obs = observation.reshape(steps, n_good, -1)
            goal = obs[..., 0:2]
            adversary_rel = obs[:, 0, 2 + 2 * n_good : 4 + 2 * n_good]
            adversary.append((goal[:, 0] - adversary_rel).norm(dim=-1))
            distance = goal.norm(dim=-1)  # [steps, good agents]
            closest.append(distance.min(-1).values)
            move = MOVES[rollout["agent", "action"].reshape(steps, n_good)]
            moving = move.norm(dim=-1) > 0
            cosine = (goal * move).sum(-1) / (distance * move.norm(dim=-1)).clamp_min(1e-9)
            toward.append(cosine[moving])
            step, nearest = torch.arange(steps), distance.argmin(-1)
            closest_toward.append(cosine[step, nearest][moving[step, nearest]])
            returns.append(float(rollout["next", "agent", "reward"].sum()))
    by_step = torch.stack(closest).mean(0)
    return Behaviour(
        adversary_to_target=float(torch.cat(adversary).mean()),
        closest_to_target=float(by_step.mean()),
        closest_by_step={t: float(by_step[t]) for t in STEPS if t < len(by_step)},
        toward_all=float(torch.cat(toward).mean()),
        toward_closest=float(torch.cat(closest_toward).mean()),
        good_return=sum(returns) / len(returns),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("run", type=Path, help="a run folder or checkpoint of physical deception")
    parser.add_argument("--episodes", type=int, default=50)
    parser.add_argument("--backend", default="mpe")
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()
    try:
        target = run_target(args.run, scenario=None, backend=args.backend, agents=None)
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    if target.scenario != "physical_deception" or target.config is None:
        print(
            f"error: {args.run} trained on {target.scenario}, not physical_deception",
            file=sys.stderr,
        )
        sys.exit(2)
    episode_steps = int(getattr(target.config.env.options, "max_steps", 25))
    policies = {
        "trained": target.policy,
        "good agents at random": random_group_policy(target.policy, target.env, "agent"),
        "adversary at random": random_group_policy(target.policy, target.env, "adversary"),
    }
    print(f"{args.run}: {args.episodes} greedy {args.backend} episodes (seed {args.seed})")
    for name, policy in policies.items():
        result = behaviour(
            target.env, policy, episodes=args.episodes, episode_steps=episode_steps, seed=args.seed
        )
        print("\n".join(result.lines(name)))


if __name__ == "__main__":
    main()
