"""Whether a trained MADDPG run's critics know which move brings a good agent to the target
(docs/distributed.md, "What physical deception's good agents learn").

Physical deception rewards every good agent with the adversary's distance to the target minus the
distance of the good agent closest to it, so the closest one gains by moving toward the target. The
script collects transitions with the run's actors (exploring as in training, on VMAS), and asks each
good agent's critic for the value of each of its five moves, the other agents' actions as taken.
For the closest good agent and for the others it prints:

- ``Q spread``: the largest minus the smallest of the five values;
- ``critic``: the cosine between the critic's best move and the direction to the target (1: toward);
- ``actor``: the same cosine for the actor's greedy move;
- ``toward - away``: the critic's value of the move most toward the target minus that of the move
  most away from it, and the share of transitions where it is positive.

A critic that learned the easy half of the game prefers, for the closest agent, moves toward the
target; the actor then follows it. Run from the repository root on a run folder of ``marlplug train``
with a MADDPG physical deception config:
``python scripts/deception_critic.py runs/RUN [--transitions 1024]``.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from marlplug.algorithms.maddpg import MADDPG
from marlplug.algorithms.maddpg_data import ExperienceCollector
from marlplug.envs import make_env
from marlplug.envs.policies import MOVES
from marlplug.errors import UserError
from marlplug.runs.checkpoint import TRAINING_KEY, load_checkpoint
from marlplug.runs.trained_run import TrainedRun

#: The four moves (no-op left out) as unit vectors, in the action order.
DIRECTIONS = MOVES[1:] / MOVES[1:].norm(dim=1, keepdim=True)


@dataclass
class CriticView:
    """Means over transitions (see the module docstring)."""

    transitions: int
    q_spread: float
    critic_toward: float
    actor_toward: float
    toward_minus_away: float
    share_positive: float

    def line(self, name: str) -> str:
        return (
            f"{name:>18} ({self.transitions:5d} transitions): Q spread {self.q_spread:.3f}, "
            f"critic {self.critic_toward:+.3f}, actor {self.actor_toward:+.3f}, toward - away "
            f"{self.toward_minus_away:+.4f} (positive in {self.share_positive:.0%})"
        )


def critic_view(run: Path, *, transitions: int = 1024, seed: int = 1234) -> dict[str, CriticView]:
    """``{"closest good agent": ..., "other good agents": ...}`` for the run's last checkpoint."""
    trained = TrainedRun.find(run, argument="RUN")
    config = trained.config
    if config.env.name != "physical_deception" or config.algorithm.name != "maddpg":
        raise UserError(f"{run}: not a MADDPG run of physical_deception")
    theta = load_checkpoint(trained.checkpoint, required=(TRAINING_KEY,))[TRAINING_KEY]["theta"]
    options = config.env.options.model_dump()
    env = make_env("physical_deception", backend="vmas", num_envs=64, seed=seed, **options)
    algorithm = {**config.algorithm.options.model_dump(), "minibatch_size": transitions}
    program = MADDPG(**algorithm).bind(env)
    collector = ExperienceCollector(env, program, seed=seed)
    collector.collect(theta, int(options.get("max_steps", 25)) * 4)
    batch = collector.sample(torch.Generator().manual_seed(seed))
    obs, actions = batch["obs"], batch["action"]  # [B, M, O], [B, M, A] (one-hot moves)
    size, count, width = actions.shape
    good = [i for i, agent in enumerate(program.agents) if not agent.name.startswith("adversary")]
    to_target = obs[:, good, :2]  # a good agent's observation starts with the target's offset
    closest = to_target.norm(dim=-1).argmin(dim=1)
    rows: dict[bool, list[torch.Tensor]] = {True: [], False: []}
    with torch.no_grad():
        logits = program.actor_output(theta, obs)  # [M, B, A]
        for column, agent in enumerate(good):
            joint = actions.reshape(1, size, count * width).repeat(5, 1, 1)
            joint[:, :, agent * width : (agent + 1) * width] = torch.eye(5).unsqueeze(1)
            values = program.critic_output(theta, obs, joint, agent)  # [5, B]: each own move
            unit = to_target[:, column] / to_target[:, column].norm(dim=-1, keepdim=True)
            alignment = DIRECTIONS @ unit.T  # [4, B]: each move's cosine with the target
            moves = values[1:]
            gap = toward_gap(moves, alignment)
            stats = [
                values.max(0).values - values.min(0).values,
                alignment.gather(0, moves.argmax(0, keepdim=True))[0],
                alignment.gather(0, logits[agent, :, 1:5].argmax(-1, keepdim=True).T)[0],
                gap,
                (gap > 0).to(gap.dtype),
            ]
            is_closest = closest == column
            for flag in (True, False):
                rows[flag].append(torch.stack(stats, 1)[is_closest == flag])
    views = {}
    for flag, name in ((True, "closest good agent"), (False, "other good agents")):
        table = torch.cat(rows[flag])
        views[name] = CriticView(len(table), *table.mean(0).tolist())
    return views


def toward_gap(values: torch.Tensor, alignment: torch.Tensor) -> torch.Tensor:
    """The value of the move most toward the target minus that of the move most away from it.

    Examples:
        >>> values = torch.tensor([[1.0], [0.0], [3.0], [2.0]])  # left, right, down, up
        >>> alignment = torch.tensor([[0.0], [0.0], [-1.0], [1.0]])  # the target is up
        >>> toward_gap(values, alignment).tolist()
        [-1.0]
    """
    best = values.gather(0, alignment.argmax(0, keepdim=True))[0]
    worst = values.gather(0, alignment.argmin(0, keepdim=True))[0]
    return best - worst


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("run", type=Path, help="a run folder or checkpoint of MADDPG deception")
    parser.add_argument("--transitions", type=int, default=1024)
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()
    try:
        views = critic_view(args.run, transitions=args.transitions, seed=args.seed)
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
    print(f"{args.run}: {args.transitions} transitions from the trained actors, exploring")
    for name, view in views.items():
        print(view.line(name))


if __name__ == "__main__":
    main()
