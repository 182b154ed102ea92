"""The iteration shape ``marlplug bench benchmarl`` holds equal on both sides: the frames an iteration
collects, then the optimizer steps on minibatches of one size, read off marlplug's config, passed to
BenchMARL's runner as its ``matched`` preset, and checked against what BenchMARL's run reports.
"""

from __future__ import annotations

from typing import Any

import click

from marlplug.config import MarlplugConfig
from marlplug.errors import UserError

#: BenchMARL's off-policy algorithms, each marlplug's algorithm of the same name: an iteration is
#: ``algorithm.steps_per_iteration`` steps per copy, then ``algorithm.updates_per_iteration`` updates.
REPLAY_ALGORITHMS = ("maddpg", "iddpg", "masac", "isac", "iql", "vdn", "qmix")
#: The hidden layers of BenchMARL 1.5.2's default MLP (``conf/model/layers/mlp.yaml``: 256 and 256,
#: tanh), which its runner gives every actor and critic.
BENCHMARL_HIDDEN = (256, 256)


def iteration_shape(config: MarlplugConfig) -> dict[str, int]:
    """One iteration of ``config`` as both sides run it: the frames it collects
    (``frames_per_iteration``) from ``n_envs`` copies, then ``updates_per_iteration`` optimizer
    steps on minibatches of ``minibatch_size``.

    Raises:
        UserError: a PPO config whose epochs are not whole minibatches of one size (BenchMARL's
            on-policy loop has no other shape).

    Examples:
        >>> from marlplug import load_config
        >>> config = load_config(data={"train": {"num_envs": 60}, "algorithm": {"name": "iql",
        ...     "steps_per_iteration": 100, "updates_per_iteration": 1000, "minibatch_size": 128}})
        >>> iteration_shape(config)
        {'frames_per_iteration': 6000, 'n_envs': 60, 'updates_per_iteration': 1000, 'minibatch_size': 128}
    """
    train = config.train
    options: Any = config.algorithm.options
    if config.algorithm.name in REPLAY_ALGORITHMS:
        return {
            "frames_per_iteration": options.steps_per_iteration * train.num_envs,
            "n_envs": train.num_envs,
            "updates_per_iteration": options.updates_per_iteration,
            "minibatch_size": options.minibatch_size,
        }
    frames = train.num_envs * train.rollout_steps
    capped = train.max_minibatches_per_epoch is not None
    if not train.iterate_all_minibatches or capped or frames % train.minibatch_size:
        raise UserError(
            "bench benchmarl: the config must iterate over all minibatches of equal size "
            "(train.iterate_all_minibatches: true, no train.max_minibatches_per_epoch, a minibatch "
            "size that divides the rollout)"
        )
    return {
        "frames_per_iteration": frames,
        "n_envs": train.num_envs,
        "updates_per_iteration": train.n_epochs * frames // train.minibatch_size,
        "minibatch_size": train.minibatch_size,
    }


def matched_arguments(config: MarlplugConfig) -> list[str]:
    """BenchMARL's ``matched`` preset with ``config``'s :func:`iteration_shape`: the runner sets
    BenchMARL's collected frames per batch and env copies, its minibatch size and
    ``--minibatch-iters``. BenchMARL 1.5.2 loops ``n_optimizer_steps`` times over
    ``ceil(train_batch_size / train_minibatch_size)`` minibatch steps
    (``Experiment._collection_loop``): off-policy that is ``off_policy_n_optimizer_steps`` updates
    of ``off_policy_train_batch_size`` (one minibatch each), so ``--minibatch-iters`` is the
    updates; on-policy, ``on_policy_n_minibatch_iters`` passes over the whole rollout in
    minibatches of ``on_policy_minibatch_size``, so it is PPO's epochs (``train.n_epochs``).

    Examples:
        >>> from marlplug import load_config
        >>> config = load_config(data={"train": {"num_envs": 60, "rollout_steps": 100,
        ...     "minibatch_size": 600, "n_epochs": 4, "iterate_all_minibatches": True}})
        >>> matched_arguments(config)  # 4 epochs of 10 minibatches: 40 steps on both sides
        ['--preset', 'matched', '--frames-per-batch', '6000', '--n-envs', '60', '--minibatch-size', '600', '--minibatch-iters', '4']
        >>> config = load_config(data={"train": {"num_envs": 60}, "algorithm": {"name": "iql",
        ...     "steps_per_iteration": 100, "updates_per_iteration": 1, "minibatch_size": 1024}})
        >>> matched_arguments(config)
        ['--preset', 'matched', '--frames-per-batch', '6000', '--n-envs', '60', '--minibatch-size', '1024', '--minibatch-iters', '1']
    """
    shape = iteration_shape(config)
    replay = config.algorithm.name in REPLAY_ALGORITHMS
    iters = shape["updates_per_iteration"] if replay else config.train.n_epochs
    return [
        *("--preset", "matched", "--frames-per-batch", str(shape["frames_per_iteration"])),
        *("--n-envs", str(shape["n_envs"]), "--minibatch-size", str(shape["minibatch_size"])),
        *("--minibatch-iters", str(iters)),
    ]


def hidden_widths(config: MarlplugConfig) -> list[int]:
    """The hidden layers of ``config``'s actor, as BenchMARL's MLP counts them: the replay-based
    algorithms' ``hidden_sizes``; PPO's encoder (``hidden_size``, then ``feature_dim``; its critic
    has two layers of ``hidden_size``).

    Examples:
        >>> from marlplug import load_config
        >>> hidden_widths(load_config(data={"algorithm": {"name": "iql", "hidden_sizes": [32]}}))
        [32]
        >>> hidden_widths(load_config(data={"algorithm": {"hidden_size": 256, "feature_dim": 256}}))
        [256, 256]
    """
    options: Any = config.algorithm.options
    if config.algorithm.name in REPLAY_ALGORITHMS:
        return list(options.hidden_sizes)
    return [options.hidden_size, options.feature_dim]


def frames_per_iteration(config: MarlplugConfig) -> int:
    """Frames (joint env steps) one iteration collects."""
    return iteration_shape(config)["frames_per_iteration"]


def benchmarl_shape(settings: dict[str, Any], *, on_policy: bool) -> dict[str, int]:
    """The iteration shape a BenchMARL run's ``settings`` give (as :func:`iteration_shape` counts:
    frames, optimizer steps, minibatch), with BenchMARL 1.5.2's loop (see
    :func:`matched_arguments`).

    Examples:
        >>> benchmarl_shape({"on_policy_collected_frames_per_batch": 6000,
        ...     "on_policy_minibatch_size": 600, "on_policy_n_minibatch_iters": 4}, on_policy=True)
        {'frames_per_iteration': 6000, 'updates_per_iteration': 40, 'minibatch_size': 600}
    """
    if on_policy:
        frames = settings["on_policy_collected_frames_per_batch"]
        minibatch = settings["on_policy_minibatch_size"]
        steps = settings["on_policy_n_minibatch_iters"] * -(-frames // minibatch)
    else:
        frames = settings["off_policy_collected_frames_per_batch"]
        minibatch = settings["off_policy_train_batch_size"]
        steps = settings["off_policy_n_optimizer_steps"]
    return {
        "frames_per_iteration": frames,
        "updates_per_iteration": steps,
        "minibatch_size": minibatch,
    }


def check_benchmarl_shape(result: dict[str, Any], config: MarlplugConfig) -> None:
    """Check that BenchMARL's run had ``config``'s iteration shape: its ``settings``, the
    optimizer steps the runner counted in each iteration, and its networks' hidden layers
    (``model``, where the runner recorded them).

    Raises:
        click.ClickException: a count differs (the runner did not pass the shape on).

    Examples:
        >>> from marlplug import load_config
        >>> config = load_config(data={"train": {"num_envs": 60}, "algorithm": {"name": "iql",
        ...     "steps_per_iteration": 100, "updates_per_iteration": 1, "minibatch_size": 1024}})
        >>> settings = {"off_policy_collected_frames_per_batch": 6000,
        ...     "off_policy_n_optimizer_steps": 1, "off_policy_train_batch_size": 1024}
        >>> check_benchmarl_shape({"settings": settings, "iterations": []}, config)
        >>> check_benchmarl_shape({"settings": settings, "iterations": [{"optimizer_steps": 10}]},
        ...                       config)
        Traceback (most recent call last):
        ...
        click.exceptions.ClickException: BenchMARL ran 10 for updates_per_iteration, marlplug 1: not the same shape
        >>> check_benchmarl_shape({"settings": settings, "iterations": [],
        ...                        "model": {"num_cells": [256, 256]}}, config)
        Traceback (most recent call last):
        ...
        click.exceptions.ClickException: BenchMARL's networks have hidden layers [256, 256], marlplug's [64, 64]: not the same size
    """
    ours = iteration_shape(config)
    on_policy = config.algorithm.name not in REPLAY_ALGORITHMS
    ran_shape = benchmarl_shape(result["settings"], on_policy=on_policy)
    counted = {row["optimizer_steps"] for row in result["iterations"] if "optimizer_steps" in row}
    ran_steps = [("updates_per_iteration", steps) for steps in sorted(counted)]
    for name, ran in [*ran_shape.items(), *ran_steps]:
        if ran != ours[name]:
            raise click.ClickException(
                f"BenchMARL ran {ran} for {name}, marlplug {ours[name]}: not the same shape"
            )
    widths = result.get("model", {}).get("num_cells")
    if widths is not None and list(widths) != hidden_widths(config):
        raise click.ClickException(
            f"BenchMARL's networks have hidden layers {list(widths)}, marlplug's "
            f"{hidden_widths(config)}: not the same size"
        )
