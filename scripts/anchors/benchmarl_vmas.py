"""Train BenchMARL 1.5.2 on a VMAS task and write what marlplug's results pages compare against.

An anchor, never a dependency: run it with the Python of BenchMARL's own virtualenv
(``bash scripts/anchors/setup_benchmarl.sh`` makes one), never marlplug's. It imports nothing of
marlplug, so both sides share only the metric, computed here the way ``marlplug evaluate`` does:
the **team return** of an episode is every agent's reward summed over the agents and over the steps
up to the episode's end, averaged over deterministic evaluation episodes. (BenchMARL's own logs
report the mean over agents: for ``n`` agents, marlplug's team return is ``n`` times it.)

Two presets of BenchMARL's settings:

- ``fine_tuned``: BenchMARL's published VMAS config (``fine_tuned/vmas/conf/config.yaml``: 60,000
  frames an iteration from 600 env copies, 45 passes over them in minibatches of 4,096 (675
  optimizer steps), lr 5e-5, gamma 0.9; off-policy 6,000 frames from 60 copies, then 1,000
  updates of 128), on CPU;
- ``matched``: the iteration shape of marlplug's config it is timed against (``--frames-per-batch``,
  ``--n-envs``, ``--minibatch-size``, ``--minibatch-iters``), for frames/s at equal work per frame.
  BenchMARL 1.5.2 makes ``n_optimizer_steps x ceil(train_batch_size / minibatch)`` steps an
  iteration: on-policy ``--minibatch-iters`` is the number of passes over the rollout (PPO's
  epochs: 4 passes of 10 minibatches of 600 are 40 steps), off-policy the number of updates
  (``off_policy_n_optimizer_steps``, one minibatch of ``off_policy_train_batch_size`` each).
  Each iteration's optimizer steps are counted in the output (``iterations[].optimizer_steps``).

Example (about 10 minutes on a 2-core machine)::

    /work/anchors/benchmarl/bin/python scripts/anchors/benchmarl_vmas.py \\
        --task balance --algorithm mappo --seed 0 --frames 360000 --out bm_balance_mappo_s0.json

Stops after ``--frames`` frames or, with ``--wall-seconds``, after the first iteration that ends
past that budget (equal wall time). ``--results FILE`` also adds the run to a results file in
``marlplug sweep``'s format (its final evaluation is the last one), so that
``marlplug compare sweeps/NAME/results.json FILE --metric return`` sets the two side by side;
``--merge RUN.json`` adds a run written earlier without training again.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

# BenchMARL's names, resolved in main(): importing this file needs no BenchMARL, so marlplug's tests
# can check what it writes (tests/bench/test_benchmarl.py).
ALGORITHMS = {
    "mappo": "MappoConfig",
    "ippo": "IppoConfig",
    "maddpg": "MaddpgConfig",
    "iddpg": "IddpgConfig",
    "masac": "MasacConfig",
    "isac": "IsacConfig",
    "iql": "IqlConfig",
    "vdn": "VdnConfig",
    "qmix": "QmixConfig",
}
TASKS = ("balance", "navigation", "sampling")
DISCRETE = {"iql", "vdn", "qmix"}


class OverBudget(Exception):
    """Raised by :class:`Recorder` to end BenchMARL's loop once the wall-time budget is spent."""


def cpu_model() -> str:
    """The CPU's model name, family and model from /proc/cpuinfo (every figure states it)."""
    fields: dict[str, str] = {}
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    name = fields.get("model name", platform.processor())
    return f"{name} (family {fields.get('cpu family')}, model {fields.get('model')})"


def team_return(rollout: Any, groups: list[str]) -> float:
    """An episode's team return: rewards summed over agents and over the steps up to its end.

    ``rollout`` is one evaluation episode (BenchMARL's test env runs each to ``max_steps`` without
    stopping at done, so the steps after the first done are cut here).
    """
    total = torch.zeros(())
    for group in groups:
        reward = rollout.get(("next", group, "reward"))  # [time, agents, 1]
        done = rollout.get(("next", "done"), None)
        if done is None:
            done = rollout.get(("next", group, "done")).any(-2)
        done = done.reshape(done.shape[0], -1).any(-1)
        ended = torch.cumsum(done.int(), 0) - done.int()  # steps after the first done are > 0
        total = total + reward.sum(dim=(-2, -1))[ended == 0].sum()
    return float(total)


class Recorder:
    """Times every iteration, computes team returns of each evaluation, enforces the budget: the
    methods of a BenchMARL ``Callback``, which :func:`main` mixes in."""

    experiment: Any

    def __init__(self, wall_seconds: float | None) -> None:
        super().__init__()
        self.wall_seconds = wall_seconds
        self.start = time.perf_counter()
        self.iteration_start = self.start
        self.iterations: list[dict[str, float]] = []
        self.evaluations: list[dict[str, float]] = []
        self.frames = 0

    def on_batch_collected(self, batch: Any) -> None:
        self.frames += batch.numel()

    def on_train_end(self, training_td: Any, group: str) -> None:
        now = time.perf_counter()
        # training_td stacks one entry per optimizer step: what the iteration really ran.
        self.iterations.append(
            {
                "frames": self.frames,
                "seconds": now - self.iteration_start,
                "optimizer_steps": int(training_td.batch_size[0]),
            }
        )
        self.iteration_start = now

    def on_evaluation_end(self, rollouts: list[Any]) -> None:
        groups = list(self.experiment.group_map)
        returns = [team_return(rollout, groups) for rollout in rollouts]
        tensor = torch.tensor(returns)
        self.evaluations.append(
            {
                "frames": self.frames,
                "wall_s": time.perf_counter() - self.start,
                "team_return_mean": float(tensor.mean()),
                "team_return_std": float(tensor.std(unbiased=False)),
                "episodes": len(returns),
            }
        )
        over = (
            self.wall_seconds is not None and time.perf_counter() - self.start > self.wall_seconds
        )
        if over and self.frames > 0:
            raise OverBudget
        # BenchMARL's next iteration starts timing after evaluation; so do we.
        self.iteration_start = time.perf_counter()


def sweep_run(run: dict[str, Any]) -> dict[str, Any]:
    """One run as ``marlplug sweep``'s results file holds it (``marlplug-sweep/1``)."""
    final = run["evaluations"][-1]
    return {
        "configuration": run.get("label") or f"benchmarl-{run['algorithm']}",
        "seed": run["seed"],
        "run_dir": "",
        "updates": len(run["iterations"]),
        "frames": run["frames"],
        "wall_seconds": run["wall_s"],
        "evaluation": {
            "backend": "vmas (BenchMARL's test env)",
            "episodes": final["episodes"],
            "seed": run["seed"],
            "mean": final["team_return_mean"],
            "std": final["team_return_std"],
        },
        "curve": [
            {"update": i + 1, "frames": point["frames"], "mean": point["team_return_mean"]}
            for i, point in enumerate(run["evaluations"])
        ],
        "cpu": run["cpu"],
    }


def merge(results: Path, run: dict[str, Any]) -> None:
    """Add ``run`` to the results file ``results`` (made if missing), replacing its seed's run."""
    name = run.get("label") or f"benchmarl-{run['algorithm']}"
    data = (
        json.loads(results.read_text())
        if results.exists()
        else {
            "format": "marlplug-sweep/1",
            "name": name,
            "config": f"{run['anchor']}, {run['preset']} settings, VMAS {run['task']}",
            "overrides": [],
            "grid": {},
            "seeds": [],
            "configurations": [name],
            "jobs": 1,
            "machine": {
                "cpu": run["cpu"],
                "cores": os.cpu_count() or 0,
                "platform": platform.platform(),
                "python": platform.python_version(),
                "torch": torch.__version__,
            },
            "runs": [],
        }
    )
    data["runs"] = [r for r in data["runs"] if r["seed"] != run["seed"]] + [sweep_run(run)]
    data["seeds"] = sorted({r["seed"] for r in data["runs"]})
    results.write_text(json.dumps(data, indent=1) + "\n")


def matched_settings(args: argparse.Namespace) -> dict[str, int]:
    """BenchMARL's settings of the ``matched`` preset: marlplug's iteration shape, for on-policy
    (rollout, minibatch, ``--minibatch-iters`` passes over the rollout) and off-policy algorithms
    (the frames collected, then ``--minibatch-iters`` updates of ``--minibatch-size`` each)."""
    return {
        "on_policy_collected_frames_per_batch": args.frames_per_batch,
        "on_policy_n_envs_per_worker": args.n_envs,
        "on_policy_minibatch_size": args.minibatch_size,
        "on_policy_n_minibatch_iters": args.minibatch_iters,
        "off_policy_collected_frames_per_batch": args.frames_per_batch,
        "off_policy_n_envs_per_worker": args.n_envs,
        "off_policy_train_batch_size": args.minibatch_size,
        "off_policy_n_optimizer_steps": args.minibatch_iters,
    }


def experiment_config(args: argparse.Namespace) -> Any:
    """BenchMARL's experiment settings for the preset, on CPU, logging nothing but our JSON."""
    from benchmarl.experiment import ExperimentConfig

    config = ExperimentConfig.get_from_yaml()
    config.sampling_device = config.train_device = config.buffer_device = "cpu"
    # BenchMARL evaluates only when something records it: its JSON, in a scratch folder.
    config.loggers = []
    config.create_json = True
    config.save_folder = tempfile.mkdtemp(prefix="benchmarl-")
    config.render = False
    config.checkpoint_interval = 0
    config.max_n_frames = args.frames
    config.evaluation = True
    config.evaluation_episodes = args.evaluation_episodes
    config.prefer_continuous_actions = args.algorithm not in DISCRETE
    if args.preset == "fine_tuned":
        config.share_policy_params = True
        config.gamma = 0.9
        config.lr = 5e-5
        config.clip_grad_norm = True
        config.clip_grad_val = 5
        config.on_policy_collected_frames_per_batch = 60_000
        config.on_policy_n_envs_per_worker = 600
        config.on_policy_n_minibatch_iters = 45
        config.on_policy_minibatch_size = 4096
        config.off_policy_collected_frames_per_batch = 6000
        config.off_policy_n_envs_per_worker = 60
        config.off_policy_n_optimizer_steps = 1000
        config.off_policy_train_batch_size = 128
        config.exploration_eps_init = 0.8
        config.exploration_eps_end = 0.01
        config.exploration_anneal_frames = 1_000_000
    else:
        for key, value in matched_settings(args).items():
            setattr(config, key, value)
    if args.lr is not None:
        config.lr = args.lr
    if args.gamma is not None:
        config.gamma = args.gamma
    if args.clip_grad is not None:
        config.clip_grad_norm = True
        config.clip_grad_val = args.clip_grad
    config.evaluation_interval = args.evaluation_interval or config.collected_frames_per_batch(
        args.algorithm in {"mappo", "ippo"}
    )
    return config


def argument_parser() -> argparse.ArgumentParser:
    """The runner's command line (``marlplug bench benchmarl`` passes its ``matched`` preset)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=TASKS)
    parser.add_argument("--algorithm", choices=sorted(ALGORITHMS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--frames", type=int)
    parser.add_argument("--wall-seconds", type=float, default=None)
    parser.add_argument("--preset", choices=["fine_tuned", "matched"], default="fine_tuned")
    parser.add_argument("--frames-per-batch", type=int, default=6000)
    parser.add_argument("--n-envs", type=int, default=60)
    # On-policy: passes over the rollout (epochs); off-policy: updates (off_policy_n_optimizer_steps).
    parser.add_argument("--minibatch-size", type=int, default=600)
    parser.add_argument("--minibatch-iters", type=int, default=4)
    # marlplug's hyperparameters on BenchMARL (None: the preset's).
    parser.add_argument("--lr", type=float, default=None)
    parser.add_argument("--gamma", type=float, default=None)
    parser.add_argument("--lmbda", type=float, default=None, help="GAE's lambda (MAPPO, IPPO)")
    parser.add_argument("--clip-grad", type=float, default=None, help="gradient-norm clip")
    parser.add_argument("--evaluation-interval", type=int, default=0)
    parser.add_argument("--evaluation-episodes", type=int, default=100)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--label", help="the configuration's name in --results (benchmarl-ALGORITHM)"
    )
    parser.add_argument("--out", type=Path)
    parser.add_argument("--results", type=Path)
    parser.add_argument("--merge", type=Path, nargs="*", default=[])
    return parser


def main() -> None:
    parser = argument_parser()
    args = parser.parse_args()
    if args.merge:
        if args.results is None:
            parser.error("--merge needs --results")
        for path in args.merge:
            merge(args.results, json.loads(path.read_text()))
        return
    if None in (args.task, args.algorithm, args.frames, args.out):
        parser.error("--task, --algorithm, --frames and --out are required to train")

    import benchmarl
    import benchmarl.algorithms
    import torchrl
    from benchmarl.environments import VmasTask
    from benchmarl.experiment import Experiment
    from benchmarl.experiment.callback import Callback
    from benchmarl.models.mlp import MlpConfig

    torch.set_num_threads(args.threads)
    config = experiment_config(args)
    # BenchMARL pickles its callbacks: the mixed class must be found by name in this module.
    global BenchmarlRecorder
    BenchmarlRecorder = type("BenchmarlRecorder", (Recorder, Callback), {})
    recorder = BenchmarlRecorder(args.wall_seconds)
    algorithm_config = getattr(benchmarl.algorithms, ALGORITHMS[args.algorithm]).get_from_yaml()
    if args.lmbda is not None:
        algorithm_config.lmbda = args.lmbda
    model_config = MlpConfig.get_from_yaml()
    experiment = Experiment(
        task=VmasTask[args.task.upper()].get_from_yaml(),
        algorithm_config=algorithm_config,
        model_config=model_config,
        critic_model_config=MlpConfig.get_from_yaml(),
        seed=args.seed,
        config=config,
        callbacks=[recorder],
    )
    with contextlib.suppress(OverBudget):  # the budget is spent: the run ends here
        experiment.run()
    # Median seconds of an iteration after the first (which pays for start-up), as frames/s.
    timed = recorder.iterations[1:] or recorder.iterations
    seconds = sorted(row["seconds"] for row in timed)[len(timed) // 2]
    frames_per_iteration = recorder.iterations[0]["frames"]
    result = {
        "anchor": f"BenchMARL {benchmarl.__version__} (torchrl {torchrl.__version__}, torch {torch.__version__})",
        "cpu": cpu_model(),
        "threads": args.threads,
        "label": args.label,
        "task": args.task,
        "algorithm": args.algorithm,
        "seed": args.seed,
        "preset": args.preset,
        "lmbda": getattr(algorithm_config, "lmbda", None),
        "settings": {
            key: getattr(config, key)
            for key in (
                "gamma",
                "lr",
                "clip_grad_val",
                "share_policy_params",
                "on_policy_collected_frames_per_batch",
                "on_policy_n_envs_per_worker",
                "on_policy_minibatch_size",
                "on_policy_n_minibatch_iters",
                "off_policy_collected_frames_per_batch",
                "off_policy_n_optimizer_steps",
                "off_policy_train_batch_size",
            )
        },
        # Actor and critic alike: the hidden layers a speed comparison must match.
        "model": {
            "num_cells": list(model_config.num_cells),
            "activation": getattr(
                model_config.activation_class, "__name__", str(model_config.activation_class)
            ),
        },
        "frames": recorder.frames,
        "wall_s": time.perf_counter() - recorder.start,
        "iterations": recorder.iterations,
        "frames_per_s_median": frames_per_iteration / seconds,
        "evaluations": recorder.evaluations,
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    if args.results is not None:
        merge(args.results, result)
    last = recorder.evaluations[-1] if recorder.evaluations else {}
    print(
        f"{args.algorithm} on {args.task}, seed {args.seed}: {recorder.frames} frames, "
        f"{result['frames_per_s_median']:.0f} frames/s, team return {last.get('team_return_mean')}"
    )


if __name__ == "__main__":
    main()
