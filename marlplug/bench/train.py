"""``marlplug bench train``: ``marlplug train`` vs a plain TorchRL MAPPO pipeline, side by side.

The plain pipeline is :mod:`marlplug.bench.torchrl_mappo` (TorchRL's multi-agent PPO tutorial), run
with marlplug's settings: the same env, PPO settings, per-agent network sizes, epochs, minibatches,
torch threads and frame budget. Trials alternate which side runs first; medians are reported with
every trial's numbers. On a terminal, a progress bar on stderr counts the runs (trials x sides).
"""

from __future__ import annotations

import json
import statistics
import tempfile
from dataclasses import dataclass

import click
import torch

from marlplug.bench.torchrl_mappo import GROUP, MappoSettings, train_torchrl_mappo
from marlplug.config import load_config
from marlplug.runs.reporting import stderr_progress
from marlplug.train.run import run_training
from marlplug.train.trainer import episode_returns


@dataclass(frozen=True)
class BenchSettings:
    """What both pipelines share: env size, frame budget, optimization and network settings."""

    agents: int = 3
    updates: int = 5
    frames_per_batch: int = 1000
    minibatch: int = 250
    epochs: int = 4
    hidden: int = 64
    lr: float = 1e-3
    clip_epsilon: float = 0.2
    clip_value: float = 0.2
    entropy_coeff: float = 0.01
    critic_coeff: float = 0.5
    max_grad_norm: float = 0.5
    gamma: float = 0.99
    lmbda: float = 0.95


def plain_torchrl_mappo(settings: BenchSettings, *, seed: int) -> tuple[float, float | None]:
    """Train like TorchRL's MAPPO tutorial; returns (frames per second, final mean return)."""
    mappo = MappoSettings(
        frames_per_batch=settings.frames_per_batch,
        epochs=settings.epochs,
        minibatch_size=settings.minibatch,
        lr=settings.lr,
        max_grad_norm=settings.max_grad_norm,
        clip_epsilon=settings.clip_epsilon,
        clip_value=settings.clip_value,
        critic_coeff=settings.critic_coeff,
        loss_critic_type="l2",
        entropy_coeff=settings.entropy_coeff,
        gamma=settings.gamma,
        lmbda=settings.lmbda,
        normalize_advantage=True,
        hidden=settings.hidden,
        share_params=False,  # marlplug's per-agent networks
        agents=settings.agents,
    )
    trained = train_torchrl_mappo(mappo, settings.frames_per_batch * settings.updates, seed)
    returns = (
        torch.zeros(0)
        if trained.last_batch is None
        else episode_returns(trained.last_batch, [GROUP])
    )
    return trained.fps, float(returns.mean()) if returns.numel() else None


def marlplug_train(
    settings: BenchSettings, *, seed: int, threads: int
) -> tuple[float, float | None]:
    """``marlplug train`` (checkpoints, CSV metrics included) with the same settings."""
    with tempfile.TemporaryDirectory() as folder:
        config = load_config(
            data={
                "seed": seed,
                # The TorchRL pipeline's observations and networks: world order (mpe2's), tanh
                # layers, no value normalization (a config's defaults are nearest first, ReLU and
                # value normalization).
                "env": {
                    "name": "cooperative_navigation",
                    "agents": settings.agents,
                    "entity_order": "world",
                },
                "algorithm": {
                    "name": "ppo",
                    "activation": "tanh",
                    "value_norm": False,
                    "clip_range": settings.clip_epsilon,
                    "clip_range_vf": settings.clip_value,
                    "ent_coef": settings.entropy_coeff,
                    "vf_coef": settings.critic_coeff,
                },
            },
            overrides=[
                f"train.updates={settings.updates}",
                f"train.rollout_steps={settings.frames_per_batch}",
                f"train.minibatch_size={settings.minibatch}",
                f"train.n_epochs={settings.epochs}",
                "train.iterate_all_minibatches=true",
                f"train.lr={settings.lr}",
                f"train.max_grad_norm={settings.max_grad_norm}",
                f"train.gamma={settings.gamma}",
                f"train.gae_lambda={settings.lmbda}",
                f"train.torch_threads={threads}",
                f"logging.dir={folder}",
                "logging.progress=false",
                f"algorithm.hidden_size={settings.hidden}",
                f"algorithm.feature_dim={settings.hidden}",
            ],
        )
        result = run_training(config)
    return result.fps, result.final_return


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


@click.command()
@click.option("--agents", type=click.IntRange(min=1), default=3, show_default=True)
@click.option(
    "--updates",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="Updates (rollouts) per trial and side.",
)
@click.option("--frames-per-batch", type=click.IntRange(min=1), default=1000, show_default=True)
@click.option("--minibatch", type=click.IntRange(min=1), default=250, show_default=True)
@click.option("--epochs", type=click.IntRange(min=1), default=4, show_default=True)
@click.option(
    "--trials",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Interleaved trials; medians are reported.",
)
@click.option(
    "--threads",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="torch threads, the same for both sides.",
)
@click.option("--seed", default=0, show_default=True, help="Trial t uses seed + t on both sides.")
@click.option(
    "--json", "as_json", is_flag=True, help="Print marlplug_fps, torchrl_fps, ratio, returns."
)
def train(
    agents: int,
    updates: int,
    frames_per_batch: int,
    minibatch: int,
    epochs: int,
    trials: int,
    threads: int,
    seed: int,
    as_json: bool,
) -> None:
    """`marlplug train` vs a plain TorchRL MAPPO pipeline: frames/s and final mean return."""
    torch.set_num_threads(threads)
    settings = BenchSettings(
        agents=agents,
        updates=updates,
        frames_per_batch=frames_per_batch,
        minibatch=minibatch,
        epochs=epochs,
    )
    runs: dict[str, list[tuple[float, float | None]]] = {"marlplug": [], "torchrl": []}
    with stderr_progress(trials * len(runs), label="bench train") as progress:
        for trial in range(trials):
            order = ["marlplug", "torchrl"] if trial % 2 == 0 else ["torchrl", "marlplug"]
            for side in order:
                progress.advance(f"trial {trial + 1}/{trials}: {side}", steps=0)
                if side == "marlplug":
                    runs[side].append(marlplug_train(settings, seed=seed + trial, threads=threads))
                else:
                    runs[side].append(plain_torchrl_mappo(settings, seed=seed + trial))
                progress.advance()
    marlplug_fps = statistics.median(fps for fps, _ in runs["marlplug"])
    torchrl_fps = statistics.median(fps for fps, _ in runs["torchrl"])
    out = {
        "marlplug_fps": round(marlplug_fps, 1),
        "torchrl_fps": round(torchrl_fps, 1),
        "ratio": round(marlplug_fps / torchrl_fps, 3),
        "marlplug_final_return": _median([r for _, r in runs["marlplug"]]),
        "torchrl_final_return": _median([r for _, r in runs["torchrl"]]),
        "marlplug_trials_fps": [round(fps, 1) for fps, _ in runs["marlplug"]],
        "torchrl_trials_fps": [round(fps, 1) for fps, _ in runs["torchrl"]],
        "marlplug_trials_return": [r for _, r in runs["marlplug"]],
        "torchrl_trials_return": [r for _, r in runs["torchrl"]],
        "frames_per_trial": frames_per_batch * updates,
        "trials": trials,
        "torch_threads": threads,
    }
    if as_json:
        click.echo(json.dumps(out, indent=2))
    else:
        for key, value in out.items():
            click.echo(f"{key:>24}: {value}")
