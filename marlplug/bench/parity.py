"""Learning parity, like the paper's reward figure: coded MADDPG against centralized MADDPG, same seed.

``python -m marlplug.bench.parity --iterations 60 --plot docs/images/coding_parity.png`` trains both
on cooperative navigation (M = 8, VMAS) — the coded run with ``mds`` on N = 15 learners and k = 2
stragglers on the simulated clock — and plots the two return curves.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import click

from marlplug.algorithms.env_adapter import MultiAgentEnvAdapter
from marlplug.algorithms.maddpg import MADDPG
from marlplug.algorithms.row_bridge import MaddpgRows
from marlplug.distributed.controller import CodedController
from marlplug.distributed.stragglers import StragglerModel
from marlplug.plotting import saved_figure
from marlplug.plugins import get_plugin_manager
from marlplug.train.maddpg_loop import CentralizedUpdater, MaddpgRunner, Updater


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
    """Mean episode return per iteration (NaN where no episode ended) of one run."""
    from marlplug.envs import make_env

    env = make_env(
        "cooperative_navigation", backend=env_backend, agents=agents, num_envs=num_envs, seed=seed
    )
    program = MaddpgRows(MADDPG(**options).program(MultiAgentEnvAdapter(env).agents))
    updater: Updater
    if coded:
        scheme = get_plugin_manager().registry("code")["mds"]()
        updater = CodedController(
            program,
            scheme.assignment_matrix(agents, learners, seed),
            None,
            scheme=scheme,
            stragglers=StragglerModel(count=stragglers, delay_s=delay_s, seed=seed),
            clock="simulated",
            seed=seed,
        )
    else:
        updater = CentralizedUpdater(program, seed=seed)
    runner = MaddpgRunner(env, program, updater, seed=seed)
    return [log.episode_return for log in runner.run(iterations)]


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
