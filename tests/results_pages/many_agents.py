"""The tables of docs/results/many-agents.md, each row made from the files under docs/data/."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tests.results_pages.sweeps import iqm, median_of, percent, returns, runs, scores, wall_times
from tests.results_tables import load, number, row


def rows_many_packaged() -> Iterator[str]:
    for label, name in (
        ("`spread_vmas_m8.yaml`", "sweep_spread_vmas_m8_nearest.json"),
        ("`spread_vmas_m32.yaml`", "sweep_spread_vmas_m32_nearest.json"),
    ):
        yield row(f"{label}: score", *scores(name), iqm(name))
        yield row(f"{label}: team return", *returns(name), "")
        yield row(f"{label}: `marlplug train` s", *wall_times(name), "")


#: Each change the packaged many-agent configs took, the sweep that measured it, in order.
M8_CHOICES = [
    ("state critic", "sweep_spread_vmas_m8_state.json"),
    ("+ `share_params`, `value_norm`", "sweep_spread_vmas_m8_shared.json"),
    ("+ the shared critic computed once", "sweep_spread_vmas_m8_once.json"),
    ("+ nearest first (today's config)", "sweep_spread_vmas_m8_nearest.json"),
    ("ReLU instead of tanh (not adopted)", "sweep_spread_vmas_m8_relu_nearest.json"),
]
M32_CHOICES = [
    ("state critic, `share_params`, `value_norm`, 200 × 50", "sweep_spread_vmas_m32.json"),
    ("+ the shared critic computed once", "sweep_spread_vmas_m32_once.json"),
    ("+ 400 copies × 25 steps", "sweep_spread_vmas_m32_episode_rollouts.json"),
    ("+ ReLU", "sweep_spread_vmas_m32_relu.json"),
    ("+ nearest first (today's config)", "sweep_spread_vmas_m32_nearest.json"),
]


def choice_rows(choices: list[tuple[str, str]]) -> Iterator[str]:
    for label, name in choices:
        cpus = dict.fromkeys(run.cpu for run in runs(name))
        yield row(
            label,
            f"[`{name}`](../data/{name})",
            "; ".join(cpus),
            " / ".join(scores(name)),
            iqm(name) if len(runs(name)) > 1 else "",
        )


def rows_many_m8_choices() -> Iterator[str]:
    return choice_rows(M8_CHOICES)


def rows_many_m32_choices() -> Iterator[str]:
    return choice_rows(M32_CHOICES)


def rows_many_loop_speed() -> Iterator[str]:
    for loop in load("train_speed.json")["loop_rounds"]:
        rounds = loop["frames_per_s"]
        today = median_of(rounds[loop["today"]])
        yield row(
            f"`{Path(loop['config']).name}`",
            str(loop["torch_threads"]),
            " / ".join(number(value, digits=0) for value in rounds["world"]),
            " / ".join(number(value, digits=0) for value in rounds["nearest"]),
            number(today, digits=0),
            number(today / median_of(rounds["world"]), digits=2),
        )


def agent_rows(name: str) -> list[dict[str, Any]]:
    """The agents sweep of a ``bench scaling --json`` file (its rows, or its ``rows`` key)."""
    data = load(name)
    rows = data["rows"] if isinstance(data, dict) else data
    return [r for r in rows if r["sweep"] == "agents"]


def rows_many_scaling() -> Iterator[str]:
    rows = agent_rows("scaling_relu_shared.json")
    for agents in dict.fromkeys(r["agents"] for r in rows):
        two = [r for r in rows if r["agents"] == agents and r["threads"] == 2]
        (one,) = [r for r in rows if r["agents"] == agents and r["threads"] == 1]
        yield row(
            str(agents),
            " / ".join(number(r["fps"], digits=0) for r in two),
            " / ".join(number(r["train_over_sim"], digits=2) for r in two),
            number(median_of([r["train_over_sim"] for r in two]), digits=2),
            f"{number(one['fps'], digits=0)}, {number(one['train_over_sim'], digits=2)}",
        )


def rows_many_critics() -> Iterator[str]:
    rows = agent_rows("scaling_critics.json")
    order = ("joint", "local", "state")
    for agents in dict.fromkeys(r["agents"] for r in rows):
        by_critic = {r["critic"]: r for r in rows if r["agents"] == agents}
        yield row(
            str(agents),
            *(
                " / ".join(number(by_critic[c][key], digits=digits) for c in order)
                for key, digits in (("fps", 0), ("agent_steps_per_s", 0), ("train_over_sim", 2))
            ),
            number(by_critic["joint"]["sim_steps_per_s"], digits=0),
        )


def rows_many_shared_critic() -> Iterator[str]:
    rows = agent_rows("scaling_shared_critic.json")
    for agents in dict.fromkeys(r["agents"] for r in rows):
        by_critic = {r["critic"]: r for r in rows if r["agents"] == agents}
        state, shared = by_critic["state"], by_critic["state+shared"]
        yield row(
            str(agents),
            number(state["fps"], digits=0),
            number(shared["fps"], digits=0),
            number(shared["fps"] / state["fps"], digits=2),
            f"{percent(state['other_share'])} / {percent(shared['other_share'])}",
            f"{number(state['train_over_sim'], digits=2)} / "
            f"{number(shared['train_over_sim'], digits=2)}",
            number(state["sim_steps_per_s"], digits=0),
        )


def rows_many_m64() -> Iterator[str]:
    for r in agent_rows("scaling_m64.json"):
        yield row(
            r["critic"],
            str(r["agents"]),
            f"{r['num_envs']} × {r['rollout_steps']}",
            number(r["fps"], digits=0),
            number(r["agent_steps_per_s"], digits=0),
            f"{percent(r['collect_share'])} / {percent(r['update_share'])} / "
            f"{percent(r['other_share'])}",
            number(r["sim_steps_per_s"], digits=0),
            number(r["train_over_sim"], digits=2),
        )


def rows_many_loss_m64() -> Iterator[str]:
    for r in [*load("loss_state_m64_m128.json"), *load("loss_joint_m64.json")]:
        yield row(
            r["critic"],
            str(r["agents"]),
            number(r["joint_ms"]),
            number(r["separate_ms"]),
            number(r["speedup"], digits=2),
            number(r["redundancy_ms"]),
            number(r["redundancy_pairloop_ms"]),
            number(r["redundancy_floor_ms"]),
            number(r["redundancy_over_floor"], digits=2),
            number(r["redundancy_ratio"], digits=2),
            number(r["step_over_floor"], digits=2),
        )


def rows_many_maddpg() -> Iterator[str]:
    for day, name in (
        ("2026-12-02", "scaling_maddpg_vmas.json"),
        ("2026-12-04", "scaling_maddpg_m64.json"),
    ):
        for r in agent_rows(name):
            yield row(
                day,
                str(r["agents"]),
                number(r["fps"], digits=0),
                number(r["agent_steps_per_s"], digits=0),
                percent(r["update_share"]),
                number(r["sim_steps_per_s"], digits=0),
                number(r["train_over_sim"], digits=2),
            )


#: ``bench scaling --algorithm NAME`` for every built-in algorithm, one file each.
SCALED_ALGORITHMS = ("ppo", "maddpg", "iddpg", "iql", "vdn", "qmix", "isac", "masac")


def rows_many_every_algorithm() -> Iterator[str]:
    for algorithm in SCALED_ALGORITHMS:
        for r in agent_rows(f"scaling_algorithm_{algorithm}.json"):
            yield row(
                f"`{algorithm}`",
                r["critic"],
                str(r["agents"]),
                number(r["fps"], digits=0),
                number(r["agent_steps_per_s"], digits=0),
                percent(r["update_share"]),
                number(r["train_over_sim"], digits=2),
            )


#: The tables this page prints, by name: (page, rows).
TABLES: dict[str, tuple[str, Callable[[], Iterator[str]]]] = {
    "many agents: packaged configs": ("many-agents.md", rows_many_packaged),
    "many agents: M = 8 choices": ("many-agents.md", rows_many_m8_choices),
    "many agents: M = 32 choices": ("many-agents.md", rows_many_m32_choices),
    "many agents: training loops": ("many-agents.md", rows_many_loop_speed),
    "many agents: scaling": ("many-agents.md", rows_many_scaling),
    "many agents: critics": ("many-agents.md", rows_many_critics),
    "many agents: shared critic": ("many-agents.md", rows_many_shared_critic),
    "many agents: M = 64": ("many-agents.md", rows_many_m64),
    "many agents: step and penalty at 64 and 128": ("many-agents.md", rows_many_loss_m64),
    "many agents: MADDPG": ("many-agents.md", rows_many_maddpg),
    "many agents: every algorithm": ("many-agents.md", rows_many_every_algorithm),
}
