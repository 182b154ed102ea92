"""Learning parity, like the paper's reward figure: coded MADDPG against centralized MADDPG, same seed,
both trained by ``marlplug train``'s orchestrator.

``python -m marlplug.bench.parity --iterations 60 --plot docs/images/coding_parity.png`` trains both
on cooperative navigation (M = 8, VMAS) — the coded run with ``mds`` on N = 15 learners and k = 2
stragglers on the simulated clock — and plots the two return curves.
"""

from __future__ import annotations

import json
import math
import tempfile
from pathlib import Path
from typing import Any

import click

from marlplug.config import load_config
from marlplug.plotting import saved_figure
from marlplug.train.coded_run import run_maddpg


def return_curve(
    coded: bool,
    *,
    iterations: int,
    agents: int,
    learners: int,
    stragglers: int,
    delay_s: float,
    env_backend: str,
    num_envs: int,
    seed: int,
    options: dict[str, Any],
) -> list[float]:
    """Mean episode return per iteration (NaN where no episode ended) of one ``marlplug train`` run:
    the same config with and without its ``coding:`` section."""
    data: dict[str, Any] = {
        "seed": seed,
        "env": {"name": "cooperative_navigation", "backend": env_backend, "agents": agents},
        "algorithm": {"name": "maddpg", **options},
        "train": {"updates": iterations, "num_envs": num_envs},
        "logging": {"progress": False},
    }
    if coded:
        data["coding"] = {
            "scheme": "mds",
            "learners": learners,
            "clock": "simulated",
            "stragglers": {"count": stragglers, "delay_s": delay_s},
        }
    with tempfile.TemporaryDirectory() as folder:
        result = run_maddpg(load_config(data=data), run_dir=Path(folder) / "run")
    return [log.episode_return for log in result.iterations]


def plot_parity(curves: dict[str, list[float]], path: Path) -> Path:
    """Both return curves on one axis."""
    with saved_figure(path, figsize=(6, 3.5)) as (_, axes):
        for (label, curve), style in zip(curves.items(), ("-", "--"), strict=False):
            points = [(i, r) for i, r in enumerate(curve) if not math.isnan(r)]
            axes.plot([p[0] for p in points], [p[1] for p in points], style, label=label)
        axes.set_xlabel("iteration (100 env steps + one update)")
        axes.set_ylabel("episode return (sum over agents)")
        axes.set_title("cooperative navigation, M = 8: coded vs centralized MADDPG")
        axes.legend()
    return path


@click.command()
@click.option("--iterations", type=int, default=60, show_default=True)
@click.option("--agents", type=int, default=8, show_default=True)
@click.option("--learners", type=int, default=15, show_default=True)
@click.option("--stragglers", type=int, default=2, show_default=True)
@click.option(
    "--env-backend", type=click.Choice(["mpe", "vmas"]), default="vmas", show_default=True
)
@click.option("--num-envs", type=int, default=8, show_default=True)
@click.option("--learning-starts", type=int, default=1024, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--plot", type=click.Path(path_type=Path), default=None)
def main(
    iterations: int,
    agents: int,
    learners: int,
    stragglers: int,
    env_backend: str,
    num_envs: int,
    learning_starts: int,
    seed: int,
    plot: Path | None,
) -> None:
    """Train centralized and coded MADDPG with the same seed and compare their return curves."""
    options = {"learning_starts": learning_starts}
    common = dict(
        iterations=iterations,
        agents=agents,
        learners=learners,
        stragglers=stragglers,
        delay_s=0.25,
        env_backend=env_backend,
        num_envs=num_envs,
        seed=seed,
        options=options,
    )
    curves = {
        "centralized": return_curve(False, **common),  # type: ignore[arg-type]
        f"coded (mds, N={learners}, k={stragglers})": return_curve(True, **common),  # type: ignore[arg-type]
    }
    if plot is not None:
        plot_parity(curves, plot)
    first, second = curves.values()
    gaps = [
        abs(a - b)
        for a, b in zip(first, second, strict=True)
        if not (math.isnan(a) or math.isnan(b))
    ]
    click.echo(json.dumps({"curves": curves, "max_abs_difference": max(gaps, default=0.0)}))


if __name__ == "__main__":
    main()
