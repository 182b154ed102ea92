"""The tables of docs/results/index.md, each row made from the files under docs/data/."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from tests.results_pages.sweeps import duration, iqm
from tests.results_tables import load, number, row


def rows_index_headlines() -> Iterator[str]:
    """The front page's headline figures, each from the file its own page's table reads."""
    default_run = load("train_speed.json")["whole_runs"][0]
    yield row(
        "Training speed, `spread_vmas.yaml`",
        f"{number(default_run['frames_per_s'], digits=0)} frames/s; "
        f"{duration(default_run['command_s'])} for the whole command",
        f"{default_run['cpu']}, {default_run['load']}, {default_run['date']}",
        "[speed](speed.md#the-default-route-end-to-end)",
    )
    yield row(
        "Learning, `spread_vmas.yaml` (3 agents, 3M frames, 5 seeds)",
        f"IQM score {iqm('sweep_spread_vmas_relu_nearest.json')}",
        "2-core AMD EPYC Zen 5 (family 26, model 2), 2026-12-03",
        "[learning](learning.md#the-default-route-spread_vmasyaml)",
    )
    yield row(
        "Learning, `spread_vmas_m8.yaml` (8 agents, 2.4M frames, 3 seeds)",
        f"IQM score {iqm('sweep_spread_vmas_m8_nearest.json')}",
        "2-core AMD EPYC Zen 5 (family 26, model 2), 2026-12-03",
        "[many agents](many-agents.md#the-packaged-configs-at-8-and-32-agents)",
    )
    yield row(
        "Learning, `spread_vmas_m32.yaml` (32 agents, 500k frames, 3 seeds)",
        f"IQM score {iqm('sweep_spread_vmas_m32_nearest.json')}",
        "2-core AMD EPYC Zen 5 (family 26, model 2), 2026-12-03",
        "[many agents](many-agents.md#the-packaged-configs-at-8-and-32-agents)",
    )
    breakdown = [r for r in load("loss_m32_breakdown_zen4.json") if r["activation"] == "relu"]
    speedups = [r["speedup"] for r in breakdown]
    yield row(
        "Joint PPO step against M separate `ClipPPOLoss` modules, M = 32",
        f"{number(min(speedups), digits=2)}–{number(max(speedups), digits=2)}× faster (ReLU)",
        "2-core AMD EPYC Zen 4 (family 25, model 17), 2026-12-04",
        "[speed](speed.md#the-joint-ppo-step)",
    )


#: The tables this page prints, by name: (page, rows).
TABLES: dict[str, tuple[str, Callable[[], Iterator[str]]]] = {
    "index headlines": ("index.md", rows_index_headlines),
}
