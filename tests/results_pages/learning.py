"""The tables of docs/results/learning.md, each row made from the files under docs/data/."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterator

from marlplug.experiments.results import RunResult
from tests.results_pages.sweeps import (
    comparison,
    estimate,
    improvement,
    iqm,
    median_of,
    percent,
    returns,
    runs,
    scores,
    wall_times,
)
from tests.results_tables import load, number, row


def rows_learning_default_route() -> Iterator[str]:
    name = "sweep_spread_vmas_relu_nearest.json"
    yield row("score", *scores(name), iqm(name))
    yield row("team return", *returns(name), iqm(name, metric="return", digits=1))
    yield row("`marlplug train` s", *wall_times(name), "")


#: The default route's shipped choices, in the order they were adopted (all on one CPU model).
ROUTE_CHOICES = [
    ("world order, tanh", "sweep_spread_vmas_world.json"),
    ("nearest first, tanh", "sweep_spread_vmas_nearest.json"),
    ("nearest first, ReLU (today's config)", "sweep_spread_vmas_relu_nearest.json"),
]


def rows_learning_route_choices() -> Iterator[str]:
    previous = None
    for label, name in ROUTE_CHOICES:
        yield row(
            label,
            f"[`{name}`](../data/{name})",
            " / ".join(scores(name)),
            iqm(name),
            "" if previous is None else improvement(name, previous),
        )
        previous = name


def rows_learning_mpe_route() -> Iterator[str]:
    before, now = "sweep_default_world_tanh.json", "sweep_default_nearest_relu.json"
    yield row("world order, tanh: team return", *returns(before), iqm(before), "")
    yield row(
        "nearest first, ReLU (today's config): team return",
        *returns(now),
        iqm(now),
        improvement(now, before),
    )


def rows_learning_redundancy() -> Iterator[str]:
    name = "sweep_spread_vmas_redundancy.json"
    result = comparison(name)
    by_configuration: dict[str, list[RunResult]] = {}
    for run in runs(name):
        by_configuration.setdefault(run.configuration, []).append(run)
    for configuration, its_runs in by_configuration.items():
        yield row(
            f"`{configuration}`",
            *(number(run.evaluation.score or 0.0, digits=3) for run in its_runs),
            estimate(result.aggregates[configuration].iqm),
            estimate(result.improvement[configuration], digits=2)
            if configuration in result.improvement
            else "",
        )


#: default.yaml in world order with tanh, the same code and seeds on three AMD generations.
ACROSS_CPUS = [
    ("2-core AMD EPYC Zen 3 (family 25, model 1), 2026-12-01", "sweep_mpe_default_amd.json"),
    ("2-core AMD EPYC Zen 4 (family 25, model 17), 2026-12-02", "sweep_mpe_default_zen4.json"),
    ("2-core AMD EPYC Zen 5 (family 26, model 2), 2026-12-03", "sweep_default_world_tanh.json"),
]


def rows_learning_across_cpus() -> Iterator[str]:
    for label, name in ACROSS_CPUS:
        first_three = [run.evaluation.mean for run in runs(name)][:3]
        yield row(
            label,
            f"`{name}`",
            *(number(value) for value in first_three),
            number(median_of(first_three)),
        )


#: The Q-learners' packaged configs on cooperative navigation (mpe, 3 agents), by algorithm.
Q_LEARNERS = [
    ("`iql`", "sweep_spread_iql.json"),
    ("`vdn`", "sweep_spread_vdn.json"),
    ("`qmix`", "sweep_spread_qmix.json"),
]


def spread_row(label: str, name: str, *extra: str) -> str:
    """A sweep's row on cooperative navigation: its seeds' team returns and scores, each with
    their IQM."""
    return row(
        label,
        f"[`{name}`](../data/{name})",
        " / ".join(returns(name)),
        iqm(name, metric="return", digits=1),
        " / ".join(scores(name)),
        iqm(name),
        *extra,
    )


def rows_learning_q_learners() -> Iterator[str]:
    for label, name in Q_LEARNERS:
        yield spread_row(label, name)


#: The replay-based actor-critics on ``maddpg_spread.yaml`` (mpe, 3 agents, 60k env steps), by
#: algorithm (``algorithm.name`` set for all but MADDPG).
ACTOR_CRITICS = [
    ("`maddpg`", "sweep_spread_maddpg_60k.json"),
    ("`iddpg`", "sweep_spread_iddpg_60k.json"),
    ("`masac`", "sweep_spread_masac_60k.json"),
    ("`isac`", "sweep_spread_isac_60k.json"),
]


def rows_learning_actor_critics() -> Iterator[str]:
    for label, name in ACTOR_CRITICS:
        yield spread_row(label, name)


def rows_learning_q_updates() -> Iterator[str]:
    """15k env steps: one update per 25 steps (the defaults) against one per 5 (VDN and IQL over
    three seeds, QMIX seed 0 only)."""
    yield spread_row("`vdn`, 1 per 25 steps", "sweep_spread_vdn.json", "")
    yield spread_row(
        "`vdn`, 1 per 5 steps",
        "sweep_spread_vdn_updates5.json",
        improvement("sweep_spread_vdn_updates5.json", "sweep_spread_vdn.json"),
    )
    yield spread_row("`iql`, 1 per 25 steps", "sweep_spread_iql.json", "")
    yield spread_row(
        "`iql`, 1 per 5 steps",
        "sweep_spread_iql_updates5.json",
        improvement("sweep_spread_iql_updates5.json", "sweep_spread_iql.json"),
    )
    yield spread_row("`qmix`, 1 per 5 steps, seed 0", "sweep_spread_qmix_updates5_seed0.json", "")


#: MAgent2 battle 64 vs 64 (battle_64v64.yaml, seed 0): `marlplug evaluate --json` of the red army,
#: after update 50 (a first run, stopped there) and after update 295 (the run stopped by its
#: 35-minute budget), against a uniform random blue army and against the run's earlier checkpoints.
BATTLE = (
    ("uniform random (`--random-group blue`)", "battle_64v64_eval_random.json"),
    ("the same run after update 20 (`--opponent`)", "battle_64v64_eval_early.json"),
    ("uniform random (`--random-group blue`)", "battle_64v64_295_eval_random.json"),
    ("uniform random (`--random-group blue`)", "battle_64v64_295_eval_random100.json"),
    ("the same run after update 40 (`--opponent`)", "battle_64v64_295_eval_update40.json"),
    ("the same run after update 160 (`--opponent`)", "battle_64v64_295_eval_update160.json"),
)


def rows_learning_battle() -> Iterator[str]:
    """Each evaluation's win rates and the agents alive at the end, the mean over its battles."""
    for label, name in BATTLE:
        result = load(name)
        alive = {group: statistics.mean(n) for group, n in result["group_survivors"].items()}
        yield row(
            f"after update {result['updates']}",
            label,
            str(result["episodes"]),
            percent(result["win_rates"]["red"]),
            percent(result["win_rates"]["blue"]),
            number(alive["red"]),
            number(alive["blue"]),
        )


#: The tables this page prints, by name: (page, rows).
TABLES: dict[str, tuple[str, Callable[[], Iterator[str]]]] = {
    "learning: default route": ("learning.md", rows_learning_default_route),
    "learning: route choices": ("learning.md", rows_learning_route_choices),
    "learning: mpe route": ("learning.md", rows_learning_mpe_route),
    "learning: redundancy penalty": ("learning.md", rows_learning_redundancy),
    "learning: across CPU models": ("learning.md", rows_learning_across_cpus),
    "learning: Q-learners": ("learning.md", rows_learning_q_learners),
    "learning: Q-learners' updates": ("learning.md", rows_learning_q_updates),
    "learning: replay actor-critics": ("learning.md", rows_learning_actor_critics),
    "learning: MAgent2 battle": ("learning.md", rows_learning_battle),
}
