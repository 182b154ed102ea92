"""docs/results/coding.md prints its tables from the JSON under docs/data/ (and the codes analysis
from the code itself): each test rebuilds a table's rows from their source and checks that the page
holds them, cell for cell, so the page and its data cannot drift apart."""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterator
from typing import Any

import pytest

from marlplug.cli.main import main
from tests.results_tables import RESULTS, assert_page_prints, number, row
from tests.results_tables import load as load_data

PAGE = RESULTS / "coding.md"

#: Group labels of the M = 8 figure's table, per scenario and metric key.
GROUPS_M8 = {
    "cooperative_navigation": [("return", "team")],
    "predator_prey": [
        ("return/agent", "predators (`agent`)"),
        ("return/adversary", "prey (`adversary`)"),
    ],
    "physical_deception": [("return/agent", "good agents"), ("return/adversary", "adversary")],
    "keep_away": [("return/agent", "good agents"), ("return/adversary", "adversaries")],
}
SCENARIO_NAMES = {
    "cooperative_navigation": "cooperative navigation",
    "predator_prey": "predator-prey",
    "physical_deception": "physical deception",
    "keep_away": "keep-away",
}
SEEDS = ("0", "1", "2")


def load(name: str) -> Any:
    return load_data(f"{name}.json")


def curve_at(curve: list[dict[str, Any]], env_steps: int) -> dict[str, Any]:
    return next(point for point in curve if point["env_steps"] == env_steps)


def rows_m3_scenarios() -> Iterator[str]:
    """Centralized seed 0 of the three competitive scenarios at M = 3, every 10k steps."""
    labels = {"agent": "good agents", "adversary": "adversary"}
    for scenario in ("predator_prey", "physical_deception", "keep_away"):
        result = load(f"parity_{scenario}")[scenario]
        for group in ("agent", "adversary"):
            label = labels[group]
            if scenario == "predator_prey":
                label = {"agent": "predators (`agent`)", "adversary": "prey (`adversary`)"}[group]
            curve = result["centralized"]["0"]
            yield row(
                SCENARIO_NAMES[scenario],
                label,
                *(number(point[f"return/{group}"]) for point in curve),
                number(result["random_groups"][group]),
            )


def rows_m8() -> Iterator[str]:
    """The M = 8 figure: medians of three centralized seeds every 16k steps, each seed's end."""
    results = load("parity_m8")
    for scenario, groups in GROUPS_M8.items():
        result = results[scenario]
        for key, label in groups:
            group = key.split("/")[-1]
            medians = [
                statistics.median(
                    curve_at(result["centralized"][seed], steps)[key] for seed in SEEDS
                )
                for steps in (0, 16_000, 32_000, 48_000)
            ]
            ends = [curve_at(result["centralized"][seed], 64_000)[key] for seed in SEEDS]
            end = f"{number(statistics.median(ends))} ({' / '.join(number(v) for v in ends)})"
            random = result["random_groups"].get(group, result["random"])
            yield row(
                SCENARIO_NAMES[scenario], label, *(number(v) for v in medians), end, number(random)
            )


def margins(result: dict[str, Any], group: str, env_steps: int) -> tuple[list[float], list[float]]:
    """Each seed's return and its random reference (random actions against the trained others)."""
    points = [curve_at(result["centralized"][seed], env_steps) for seed in SEEDS]
    return (
        [point[f"return/{group}"] for point in points],
        [point[f"random_vs_trained/{group}"] for point in points],
    )


def rows_m8_margins() -> Iterator[str]:
    """The adversarial scenarios' groups at 64k steps against their own random reference."""
    results = load("parity_m8")
    for scenario in ("predator_prey", "physical_deception", "keep_away"):
        for key, label in GROUPS_M8[scenario]:
            trained, random = margins(results[scenario], key.split("/")[-1], 64_000)
            gaps = [t - r for t, r in zip(trained, random, strict=True)]
            yield row(
                SCENARIO_NAMES[scenario],
                label,
                " / ".join(number(v) for v in trained),
                " / ".join(number(v) for v in random),
                " / ".join(number(v, sign=True) for v in gaps),
            )


def rows_m8_margins_by_point() -> Iterator[str]:
    """Predator-prey's and physical deception's margins every 8k steps, per seed."""
    results = load("parity_m8")
    for scenario, groups in (
        ("predator_prey", ("agent", "adversary")),
        ("physical_deception", ("agent", "adversary")),
    ):
        result = results[scenario]
        for seed in SEEDS:
            cells = []
            for group in groups:
                curve = result["centralized"][seed][1:]  # 8k to 64k
                gaps = [p[f"return/{group}"] - p[f"random_vs_trained/{group}"] for p in curve]
                cells.append(", ".join(number(v, sign=True) for v in gaps))
            yield row(SCENARIO_NAMES[scenario], seed, *cells)


def rows_ppo_deception() -> Iterator[str]:
    """PPO on physical deception at M = 8: medians, each seed's end and its margin."""
    result = load("parity_ppo_deception_m8")["physical_deception"]
    for group, label in (("agent", "good agents"), ("adversary", "adversary")):
        medians = [
            statistics.median(
                curve_at(result["centralized"][seed], steps)[f"return/{group}"] for seed in SEEDS
            )
            for steps in (600_000, 1_200_000, 1_800_000)
        ]
        trained, random = margins(result, group, 2_400_000)
        gaps = [t - r for t, r in zip(trained, random, strict=True)]
        yield row(
            label,
            *(number(v) for v in medians),
            " / ".join(number(v) for v in trained),
            " / ".join(number(v) for v in random),
            " / ".join(number(v, sign=True) for v in gaps),
        )


def rows_coded_ppo() -> Iterator[str]:
    """Coded against centralized PPO at M = 8, every 300k frames."""
    result = load("parity_ppo_m8")["cooperative_navigation"]
    for kind in ("centralized", "coded"):
        yield row(f"{kind}, seed 0", *(number(p["return"]) for p in result[kind]["0"]))


def rows_round_times_amd() -> Iterator[str]:
    """`marlplug bench coding --code uncoded --code mds`: each setting's rounds and mds's ratio."""
    rounds = load("coding_sim_amd")
    by_key = {(r["scenario"], r["agents"], r["stragglers"], r["code"]): r for r in rounds}
    for scenario, agents, stragglers, code in by_key:
        if code != "uncoded":
            continue
        mds = by_key[scenario, agents, stragglers, "mds"]
        uncoded_k0 = next(
            r for (s, m, k, c), r in by_key.items() if (s, m, c) == (scenario, agents, "uncoded")
        )
        yield row(
            scenario,
            str(agents),
            str(stragglers),
            number(by_key[scenario, agents, stragglers, code]["round_s"], digits=3),
            number(mds["round_s"], digits=3),
            number(mds["round_s"] / uncoded_k0["round_s"], digits=2),
            number(mds["compute_s"] / uncoded_k0["compute_s"], digits=1),
        )


def rows_m32() -> Iterator[str]:
    """`marlplug bench coding --agents 32 --learners 48`, the code of today (``new``), two runs."""
    runs = load("coding_m32_n48_blocks")["runs"]["new"]
    codes = dict.fromkeys(r["code"] for r in runs[0])
    for code in codes:
        per_run = [[r for r in run if r["code"] == code] for run in runs]
        rounds = " / ".join(", ".join(number(r["round_s"], digits=2) for r in rs) for rs in per_run)
        ratios = " / ".join(
            ", ".join(number(r["round_over_uncoded_k0"], digits=2) for r in rs) for rs in per_run
        )
        every = [r for rs in per_run for r in rs]
        decode = [r["decode_s"] for r in every]
        per_agent = [r["compute_per_agent_s"] for r in every]
        yield row(
            code,
            str(every[0]["agents_per_learner"]),
            rounds,
            ratios,
            f"{number(min(decode), digits=2)}–{number(max(decode), digits=2)}",
            f"{number(min(per_agent), digits=3)}–{number(max(per_agent), digits=3)}",
        )


@pytest.mark.parametrize(
    "rows",
    [
        rows_m3_scenarios,
        rows_m8,
        rows_m8_margins,
        rows_m8_margins_by_point,
        rows_ppo_deception,
        rows_coded_ppo,
        rows_round_times_amd,
        rows_m32,
    ],
)
def test_the_page_prints_its_data(rows: Any) -> None:
    assert_page_prints("coding.md", rows())


def test_coded_equals_centralized_in_every_parity_file_the_page_cites() -> None:
    files = {
        "parity_predator_prey": ["predator_prey"],
        "parity_physical_deception": ["physical_deception"],
        "parity_keep_away": ["keep_away"],
        "parity_m8": list(GROUPS_M8),
        "parity_ppo_deception_m8": ["physical_deception"],
        "parity_ppo_m8": ["cooperative_navigation"],
    }
    page = PAGE.read_text()
    for name, scenarios in files.items():
        assert f"../data/{name}.json" in page, name
        for scenario in scenarios:
            result = load(name)[scenario]
            assert result["max_abs_difference"] == 0.0, (name, scenario)
            coded = result["coded"]["0"]
            assert coded == result["centralized"]["0"][: len(coded)], (name, scenario)


@pytest.mark.slow
@pytest.mark.parametrize("agents", [8, 10])
def test_the_codes_analysis_tables_are_what_the_command_prints(
    agents: int, capsys: pytest.CaptureFixture[str]
) -> None:
    codes = ["uncoded", "replication", "mds", "vandermonde", "random_sparse", "ldpc"]
    args = ["codes", "analyze", "-M", str(agents), "-N", "15", "--codes", ",".join(codes)]
    assert main([*args, "--json"]) == 0
    analysis = json.loads(capsys.readouterr().out)
    reports = {report["name"]: report for report in analysis["codes"]}

    def rows() -> Iterator[str]:
        for code in codes:
            report = reports[code]
            round_s = report["expected_round_s"]
            yield row(
                code,
                f"{report['density']:.2f}",
                "none" if report["tolerance"] is None else str(report["tolerance"]),
                f"{report['worst_condition']:.2g}",
                "never" if round_s is None else f"{round_s:.3f}",
                *(f"{p:.2f}" for p in report["recovery"].values()),
            )

    assert_page_prints("coding.md", rows())
    best = analysis["recommended"]["name"]
    best_s = reports[best]["expected_round_s"]
    assert f"`{best}` ({best_s:.3f} s)" in PAGE.read_text()
