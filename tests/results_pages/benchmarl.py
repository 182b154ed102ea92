"""The tables of docs/results/benchmarl.md, benchmarl-wall-time.md, benchmarl-off-policy.md and
benchmarl-off-policy-sampling.md, each row made from the files under docs/data/."""

from __future__ import annotations

import functools
import statistics
from collections.abc import Callable, Iterator, Mapping

from tests.results_pages.sweeps import comparison, estimate, iqm, returns, runs
from tests.results_tables import load, number, row

#: task's config, then BenchMARL 1.5.2's runs (scripts/anchors/benchmarl_vmas.py).
BENCHMARL_TASKS = {
    task: (
        (f"marlplug PPO, `{task}_vmas_benchmarl.yaml`", f"sweep_{task}_vmas_benchmarl.json"),
        ("BenchMARL MAPPO, its fine-tuned settings", f"benchmarl_{task}_mappo.json"),
        ("BenchMARL IPPO, its fine-tuned settings", f"benchmarl_{task}_ippo.json"),
    )
    for task in ("balance", "navigation", "sampling")
}
#: The same tasks at equal wall time, 20 minutes a run (``train.max_minutes``, ``--wall-seconds``),
#: marlplug on one core and BenchMARL on the other at the same time (BenchMARL's IPPO on balance
#: and sampling a day later, beside other runs).
BENCHMARL_WALL_TIME = {
    "balance": (
        ("marlplug PPO, `balance_vmas_benchmarl.yaml`", "sweep_balance_wall20.json"),
        ("BenchMARL MAPPO, its fine-tuned settings", "benchmarl_balance_mappo_wall20.json"),
        ("BenchMARL IPPO, its fine-tuned settings", "benchmarl_balance_ippo_wall20.json"),
    ),
    "navigation": (
        ("marlplug PPO, `navigation_vmas_benchmarl.yaml`", "sweep_navigation_wall20.json"),
        ("BenchMARL MAPPO, its fine-tuned settings", "benchmarl_navigation_mappo_wall20.json"),
    ),
    "sampling": (
        ("marlplug PPO, `sampling_vmas_benchmarl.yaml`", "sweep_sampling_wall20.json"),
        ("BenchMARL MAPPO, its fine-tuned settings", "benchmarl_sampling_mappo_wall20.json"),
        ("BenchMARL IPPO, its fine-tuned settings", "benchmarl_sampling_ippo_wall20.json"),
    ),
}
#: The same against BenchMARL's IPPO (Intel Xeon; marlplug evaluating on 20 env copies).
BENCHMARL_WALL_TIME_IPPO = {
    "navigation": (
        (
            "marlplug PPO, `navigation_vmas_benchmarl.yaml`, `train.eval_envs=20`",
            "sweep_navigation_wall20_eval20.json",
        ),
        ("BenchMARL IPPO, its fine-tuned settings", "benchmarl_navigation_ippo_wall20.json"),
    ),
}
#: The replay-based algorithms on balance at equal wall time, 10 minutes a run, one run on each core
#: at a time (AMD EPYC Zen 4): each algorithm's label and the packaged config marlplug ran it from
#: (with ``algorithm.name`` set where the config trains another one).
REPLAY_ALGORITHMS = {
    "maddpg": ("MADDPG", "balance_vmas_maddpg.yaml"),
    "masac": ("MASAC", "balance_vmas_masac.yaml"),
    "iddpg": ("IDDPG", "balance_vmas_maddpg.yaml"),
    "isac": ("ISAC", "balance_vmas_masac.yaml"),
    "qmix": ("QMIX", "balance_vmas_qmix.yaml"),
    "vdn": ("VDN", "balance_vmas_qmix.yaml"),
    "iql": ("IQL", "balance_vmas_qmix.yaml"),
}


#: Those also run on navigation, from the navigation config named as their balance one (its
#: algorithm settings on navigation's task settings).
REPLAY_NAVIGATION = ("maddpg", "masac", "iddpg", "isac", "qmix", "vdn", "iql")
#: Those run on sampling so far, the same way (MADDPG, MASAC and QMIX on an AMD EPYC Zen 4, the
#: others on a Zen 3; both sides of each on the same machine at the same time).
REPLAY_SAMPLING = ("maddpg", "masac", "qmix", "iddpg", "isac", "vdn", "iql")
#: The page each task's replay-based results are on.
REPLAY_PAGES = {
    "balance": "benchmarl-off-policy.md",
    "navigation": "benchmarl-off-policy.md",
    "sampling": "benchmarl-off-policy-sampling.md",
}


def replay_sides(algorithm: str, task: str = "balance") -> tuple[tuple[str, str], ...]:
    """marlplug's sweep of ``algorithm`` on ``task``, then BenchMARL 1.5.2's runs."""
    label, config = REPLAY_ALGORITHMS[algorithm]
    config = config.replace("balance", task)
    ours = (f"marlplug {label}, `{config}`", f"sweep_{task}_{algorithm}_wall10.json")
    theirs = (
        f"BenchMARL {label}, its fine-tuned settings",
        f"benchmarl_{task}_{algorithm}_wall10.json",
    )
    return ours, theirs


BENCHMARL_WALL_TIME_REPLAY = {
    (task, algorithm): {task: replay_sides(algorithm, task)}
    for task, algorithms in (
        ("balance", REPLAY_ALGORITHMS),
        ("navigation", REPLAY_NAVIGATION),
        ("sampling", REPLAY_SAMPLING),
    )
    for algorithm in algorithms
}
#: ``marlplug evaluate RUN --random-group agents --json`` on a run with BenchMARL's task settings:
#: every agent acting uniformly at random, on each task with continuous and with discrete actions.
REPLAY_RANDOM = {
    "balance": {
        "continuous": "balance_vmas_benchmarl_random.json",
        "discrete": "balance_vmas_discrete_random.json",
    },
    "navigation": {
        "continuous": "navigation_vmas_benchmarl_random.json",
        "discrete": "navigation_vmas_discrete_random.json",
    },
    "sampling": {
        "continuous": "sampling_vmas_benchmarl_random.json",
        "discrete": "sampling_vmas_discrete_random.json",
    },
}
#: Decimals of each task's returns (navigation's team returns are about 3).
BENCHMARL_DIGITS = {"balance": 1, "navigation": 2, "sampling": 1}
#: Navigation, seed 0: marlplug's config, its network widened to BenchMARL's, marlplug with all of
#: BenchMARL's fine-tuned settings, and BenchMARL's MAPPO.
BENCHMARL_NAVIGATION_SETTINGS = (
    ("marlplug PPO, `navigation_vmas_benchmarl.yaml`", "sweep_navigation_vmas_benchmarl.json"),
    ("the same, BenchMARL's network (256 × 256, tanh)", "sweep_navigation_256_tanh.json"),
    ("marlplug PPO, all of BenchMARL's fine-tuned settings", "sweep_navigation_bm_settings.json"),
    ("BenchMARL MAPPO, its fine-tuned settings", "benchmarl_navigation_mappo.json"),
)
#: BenchMARL's MAPPO with marlplug's settings where it has them, 120k frames, seed 0.
BENCHMARL_MARLPLUG_SETTINGS = "benchmarl_balance_mappo_marlplug_settings.json"
#: MADDPG on navigation at 270k frames, per-agent networks, then one per group (share_params).
MADDPG_SHARING = {
    "navigation": (
        ("marlplug MADDPG, per-agent networks", "sweep_navigation_maddpg_own_270k.json"),
        ("the same, `share_params: true`", "sweep_navigation_maddpg_shared_270k.json"),
    )
}
#: MADDPG on navigation, the config's learning rate (its 10-minute runs) and a lower one (900k
#: frames): each seed's 20-episode periodic evaluations at these frames.
MADDPG_LEARNING_RATE = (
    ("marlplug MADDPG, `lr: 0.001` (the config)", "sweep_navigation_maddpg_wall10.json"),
    ("the same, `lr: 0.0003`", "sweep_navigation_maddpg_lr3e-4_900k.json"),
)
MADDPG_LEARNING_RATE_FRAMES = (180_000, 450_000, 630_000, 900_000)
#: ``marlplug bench benchmarl --json``: PPO's two, then the replay-based algorithms at one update of
#: 1,024 an iteration and at BenchMARL's own 1,000 updates of 128.
BENCHMARL_SPEED = (
    "benchmarl_speed_balance_ppo.json",
    "benchmarl_speed_balance_replay.json",
    "benchmarl_speed_balance_replay_1000.json",
)


def rows_benchmarl_equal_frames(
    task: str, sides: Mapping[str, tuple[tuple[str, str], ...]] = BENCHMARL_TASKS
) -> Iterator[str]:
    """Each side's final team return per seed, their IQM, and P(marlplug beats a run of it)."""
    for label, name, cells in benchmarl_sides(task, sides[task]):
        yield row(label, f"[`{name}`](../data/{name})", *cells)


def rows_benchmarl_equal_wall_time(
    task: str, sides: Mapping[str, tuple[tuple[str, str], ...]] = BENCHMARL_WALL_TIME
) -> Iterator[str]:
    """As at equal frames, with the frames each seed reached in its wall time."""
    for label, name, cells in benchmarl_sides(task, sides[task]):
        yield row(label, f"[`{name}`](../data/{name})", frames_per_seed(name), *cells)


def frames_per_seed(name: str) -> str:
    """The frames each seed of a results file trained, in millions."""
    return " / ".join(f"{run.frames / 1e6:.2f}M" for run in runs(name))


def rows_random(task: str) -> Iterator[str]:
    """The team return of uniform random actions on the task's 100 evaluation episodes."""
    for actions, name in REPLAY_RANDOM[task].items():
        yield row(
            f"uniform random {actions} actions",
            f"[`{name}`](../data/{name})",
            number(load(name)["mean"], digits=BENCHMARL_DIGITS[task]),
        )


def benchmarl_sides(
    task: str, sides: tuple[tuple[str, str], ...]
) -> Iterator[tuple[str, str, list[str]]]:
    """Per side (marlplug's first): label, results file, and the cells of its returns per seed,
    their IQM, and P(marlplug beats a run of it)."""
    ours = sides[0][1]
    digits = BENCHMARL_DIGITS[task]
    for label, name in sides:
        beats = ""
        if name != ours:
            (value,) = comparison(name, ours, metric="return").improvement.values()
            beats = estimate(value, digits=2)
        cells = [
            " / ".join(returns(name, digits=digits)),
            iqm(name, metric="return", digits=digits),
        ]
        yield label, name, [*cells, beats]


def rows_benchmarl_curves(task: str) -> Iterator[str]:
    """Each side's periodic evaluations, the mean over its seeds, every 60k frames."""
    digits = BENCHMARL_DIGITS[task]
    for label, name in BENCHMARL_TASKS[task]:
        points = zip(*(run.curve for run in runs(name)), strict=True)
        yield row(
            label,
            *(number(statistics.mean(p.mean for p in point), digits=digits) for point in points),
        )


def rows_maddpg_learning_rate() -> Iterator[str]:
    """Each configuration's periodic evaluations, seeds 0 / 1 / 2, at the chosen frames."""
    for label, name in MADDPG_LEARNING_RATE:
        at_frames = [{point.frames: point.mean for point in run.curve} for run in runs(name)]
        yield row(
            label,
            f"[`{name}`](../data/{name})",
            *(
                " / ".join(number(curve[frames], digits=2) for curve in at_frames)
                for frames in MADDPG_LEARNING_RATE_FRAMES
            ),
        )


def rows_benchmarl_settings() -> Iterator[str]:
    """Team return at 60k and 120k frames: marlplug's three seeds (their 20-episode periodic
    evaluations) and BenchMARL's MAPPO with marlplug's settings (100 episodes)."""
    for label, name in (
        ("marlplug PPO, seeds 0 / 1 / 2", BENCHMARL_TASKS["balance"][0][1]),
        ("BenchMARL MAPPO, marlplug's settings, seed 0", BENCHMARL_MARLPLUG_SETTINGS),
    ):
        seeds = runs(name)
        yield row(
            label,
            f"[`{name}`](../data/{name})",
            *(
                " / ".join(
                    number(point.mean)
                    for run in seeds
                    for point in run.curve
                    if point.frames == frames
                )
                for frames in (60_000, 120_000)
            ),
        )


def rows_benchmarl_navigation_settings() -> Iterator[str]:
    """Seed 0's periodic evaluations every 60k frames and its final 100-episode return."""
    for label, name in BENCHMARL_NAVIGATION_SETTINGS:
        seed_0 = runs(name)[0]
        points = {point.frames: point.mean for point in seed_0.curve}
        yield row(
            label,
            f"[`{name}`](../data/{name})",
            *(number(points[frames], digits=2) for frames in range(60_000, 360_001, 60_000)),
            number(seed_0.evaluation.mean, digits=2),
        )


def rows_benchmarl_speed() -> Iterator[str]:
    for name in BENCHMARL_SPEED:
        for result in load(name):
            yield row(
                f"`{result['algorithm']}`",
                number(result["frames_per_iteration"], digits=0),
                number(result["updates_per_iteration"], digits=0),
                number(result["minibatch_size"], digits=0),
                " × ".join(str(width) for width in result["hidden"]),
                number(result["marlplug_fps"], digits=0),
                number(result["benchmarl_fps"], digits=0),
                f"{result['ratio']:.2f}×",
            )


#: The tables this page prints, by name: (page, rows).
TABLES: dict[str, tuple[str, Callable[[], Iterator[str]]]] = {
    **{
        f"benchmarl: {task}{part}": ("benchmarl.md", functools.partial(rows, task))
        for task in BENCHMARL_TASKS
        for part, rows in (("", rows_benchmarl_equal_frames), (" curves", rows_benchmarl_curves))
    },
    **{
        f"benchmarl: {task} at equal wall time": (
            "benchmarl-wall-time.md",
            functools.partial(rows_benchmarl_equal_wall_time, task),
        )
        for task in BENCHMARL_WALL_TIME
    },
    **{
        f"benchmarl: {task} against IPPO at equal wall time": (
            "benchmarl-wall-time.md",
            functools.partial(rows_benchmarl_equal_wall_time, task, BENCHMARL_WALL_TIME_IPPO),
        )
        for task in BENCHMARL_WALL_TIME_IPPO
    },
    **{
        f"benchmarl: {task} {algorithm} at equal wall time": (
            REPLAY_PAGES[task],
            functools.partial(rows_benchmarl_equal_wall_time, task, sides),
        )
        for (task, algorithm), sides in BENCHMARL_WALL_TIME_REPLAY.items()
    },
    **{
        f"benchmarl: {task} random": (
            REPLAY_PAGES[task],
            functools.partial(rows_random, task),
        )
        for task in REPLAY_RANDOM
    },
    "benchmarl: navigation maddpg sharing": (
        "benchmarl-off-policy.md",
        functools.partial(rows_benchmarl_equal_frames, "navigation", MADDPG_SHARING),
    ),
    "benchmarl: navigation maddpg learning rate": (
        "benchmarl-off-policy.md",
        rows_maddpg_learning_rate,
    ),
    "benchmarl: marlplug's settings": ("benchmarl.md", rows_benchmarl_settings),
    "benchmarl: navigation settings": ("benchmarl.md", rows_benchmarl_navigation_settings),
    "benchmarl: speed": ("benchmarl.md", rows_benchmarl_speed),
}
