"""The tables of docs/results/epymarl.md, each row made from the files under docs/data/."""

from __future__ import annotations

import csv
import functools
import statistics
from collections.abc import Callable, Iterator, Mapping

from tests.results_pages.sweeps import iqm, runs
from tests.results_tables import DATA, load, number, row

#: LBF 8x8-2p-2f-coop with VDN and EPyMARL's settings (lbf_8x8_2p_2f_coop_vdn.yaml), seeds 0-2:
#: 100k env steps, then the same runs resumed to 300k.
LBF_VDN = ("sweep_lbf_8x8_2p_2f_coop_vdn.json", "sweep_lbf_8x8_2p_2f_coop_vdn_300k.json")
#: The same config with QMIX (``--set algorithm.name=qmix``), 100k env steps, seeds 0-2.
LBF_QMIX = "sweep_lbf_8x8_2p_2f_coop_qmix.json"


def rows_epymarl_lbf() -> Iterator[str]:
    """Each seed's greedy team return on 100 final episodes, and their IQM."""
    labels = {name: "`vdn`, EPyMARL's settings" for name in LBF_VDN}
    labels[LBF_QMIX] = "`qmix`, the same settings"
    for name, label in labels.items():
        seeds = runs(name)
        yield row(
            label,
            f"[`{name}`](../data/{name})",
            number(seeds[0].frames, digits=0),
            " / ".join(number(run.evaluation.mean, digits=2) for run in seeds),
            iqm(name, metric="return", digits=2),
        )


#: The same config for 30 minutes a run (``train.max_minutes=30``), what issue 46's "within 30
#: minutes" reaches: VDN with each seed alone on the machine (``--jobs 1``), VDN in an earlier sweep
#: with ``--jobs 2`` (seeds 0 and 1 at the same time, then seed 2), and QMIX.
LBF_30_MINUTES = {
    "sweep_lbf_8x8_2p_2f_coop_vdn_30min_alone.json": "`vdn`, EPyMARL's settings, one run at a time",
    "sweep_lbf_8x8_2p_2f_coop_vdn_30min.json": (
        "`vdn`, EPyMARL's settings, two at a time (seed 2 alone, after)"
    ),
    "sweep_lbf_8x8_2p_2f_coop_qmix_30min.json": "`qmix`, the same settings, one run at a time",
}


def rows_timed_sweeps(sweeps: Mapping[str, str], digits: int) -> Iterator[str]:
    """Per sweep of runs stopped by ``train.max_minutes``: each seed's frames (env steps) in its
    minutes and greedy team return on 100 final episodes, their IQM."""
    for name, label in sweeps.items():
        seeds = runs(name)
        yield row(
            label,
            f"[`{name}`](../data/{name})",
            " / ".join(f"{run.frames / 1e3:.0f}k" for run in seeds),
            " / ".join(number(run.evaluation.mean, digits=digits) for run in seeds),
            iqm(name, metric="return", digits=digits),
        )


def rows_curves(name: str, every: int, until: int | None = None) -> Iterator[str]:
    """Each seed's periodic evaluations (20 episodes) every ``every`` env steps up to ``until``
    (default: each seed's last), then the final 100."""
    for run in runs(name):
        points = [
            p for p in run.curve if p.frames % every == 0 and (until is None or p.frames <= until)
        ]
        yield row(
            str(run.seed),
            *(number(point.mean, digits=2) for point in points),
            number(run.evaluation.mean, digits=2),
        )


#: LBF 10x10-3p-3f with the same VDN settings (lbf_10x10_3p_3f_vdn.yaml), 30 minutes a run.
LBF_10X10 = "sweep_lbf_10x10_3p_3f_vdn_30min.json"


#: mpe2's speaker-listener (speaker_listener.yaml), 10 and 30 minutes a run, seeds 0-2.
SPEAKER_LISTENER = {
    "sweep_speaker_listener_10min.json": "`speaker_listener.yaml`, 10 minutes a run",
    "sweep_speaker_listener_30min.json": "`speaker_listener.yaml`, 30 minutes a run",
}


#: RWARE tiny-2ag and tiny-4ag with PPO (rware_tiny_ppo.yaml), 30 minutes a run, seeds 0-2, by
#: task: the sweep, and the env steps every seed of it reached (where its tables stop).
RWARE = {
    "2ag": ("sweep_rware_tiny_2ag_ppo_30min.json", 1_200_000),
    "4ag": ("sweep_rware_tiny_4ag_ppo_30min.json", 1_000_000),
}


def rows_epymarl_rware_policies() -> Iterator[str]:
    """Per task, the team return on 100 episodes of uniform random actions and of each seed's final
    policy, acting greedily (the sweep's final evaluation) and sampling its actions (``marlplug
    evaluate --sample --json``, saved as ``rware_tiny_<task>_ppo_30min_seed<seed>_sample.json``)."""
    for task, (name, _) in RWARE.items():
        greedy = runs(name)
        sampled = [
            load(f"rware_tiny_{task}_ppo_30min_seed{run.seed}_sample.json") for run in greedy
        ]
        for actions, means in (
            ("uniform random", [load(f"rware_tiny_{task}_random.json")["mean"]]),
            ("PPO, greedy", [run.evaluation.mean for run in greedy]),
            ("PPO, sampled", [result["mean"] for result in sampled]),
        ):
            yield row(f"tiny-{task}", actions, " / ".join(number(m, digits=2) for m in means))


def rows_epymarl_rware_training(task: str, every: int = 200_000) -> Iterator[str]:
    """Each seed's team return per training episode (sampled actions), the mean over each
    ``every`` env steps of its rollouts (``rware_tiny_<task>_ppo_30min_seed<seed>_rounds.csv``,
    the run's ``rounds.csv``)."""
    name, until = RWARE[task]
    for run in runs(name):
        rounds = DATA / f"rware_tiny_{task}_ppo_30min_seed{run.seed}_rounds.csv"
        with rounds.open() as file:
            rollouts = [
                (int(r["env_steps"]), float(r["return_team"])) for r in csv.DictReader(file)
            ]
        blocks = [
            [team for steps, team in rollouts if start < steps <= start + every]
            for start in range(0, until, every)
        ]
        yield row(str(run.seed), *(number(statistics.mean(block), digits=2) for block in blocks))


#: The tables this page prints, by name: (page, rows).
TABLES: dict[str, tuple[str, Callable[[], Iterator[str]]]] = {
    "epymarl: LBF": ("epymarl.md", rows_epymarl_lbf),
    "epymarl: LBF curves": ("epymarl.md", functools.partial(rows_curves, LBF_VDN[-1], 50_000)),
    "epymarl: LBF 10x10": (
        "epymarl.md",
        functools.partial(
            rows_timed_sweeps, {LBF_10X10: "`lbf_10x10_3p_3f_vdn.yaml`, two at a time"}, digits=2
        ),
    ),
    "epymarl: LBF 10x10 curves": ("epymarl.md", functools.partial(rows_curves, LBF_10X10, 250_000)),
    "epymarl: LBF in 30 minutes": (
        "epymarl.md",
        functools.partial(rows_timed_sweeps, LBF_30_MINUTES, digits=2),
    ),
    "epymarl: speaker-listener": (
        "epymarl.md",
        functools.partial(rows_timed_sweeps, SPEAKER_LISTENER, digits=1),
    ),
    "epymarl: RWARE": (
        "epymarl.md",
        functools.partial(
            rows_timed_sweeps,
            {name: f"`rware_tiny_ppo.yaml`, tiny-{task}" for task, (name, _) in RWARE.items()},
            digits=2,
        ),
    ),
    "epymarl: RWARE policies": ("epymarl.md", rows_epymarl_rware_policies),
    **{
        f"epymarl: RWARE tiny-{task} curves": (
            "epymarl.md",
            functools.partial(rows_curves, name, 200_000, until),
        )
        for task, (name, until) in RWARE.items()
    },
    **{
        f"epymarl: RWARE tiny-{task} training": (
            "epymarl.md",
            functools.partial(rows_epymarl_rware_training, task),
        )
        for task in RWARE
    },
}
