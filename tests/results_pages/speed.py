"""The tables of docs/results/speed.md, each row made from the files under docs/data/."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterator
from pathlib import Path

from tests.results_pages.sweeps import duration
from tests.results_tables import load, number, row


def rows_speed_whole_runs() -> Iterator[str]:
    for run in load("train_speed.json")["whole_runs"]:
        evaluation = run["evaluation"]
        yield row(
            f"`{Path(run['config']).name}`",
            run["version"],
            f"`{run['command']}`",
            run["date"] or "issue 44",
            run["cpu"],
            run["load"],
            "—" if run["torch_threads"] is None else str(run["torch_threads"]),
            "—" if run["frames_per_s"] is None else number(run["frames_per_s"], digits=0),
            duration(run["command_s"]),
            "—"
            if evaluation is None
            else f"{number(evaluation['team_return'], digits=2)}, score "
            f"{evaluation['score']} ({evaluation['episodes']} episodes)",
        )


def rows_speed_loss_m32() -> Iterator[str]:
    for r in load("loss_m32_breakdown_zen4.json"):
        yield row(
            {"relu": "ReLU", "tanh": "tanh"}[r["activation"]],
            str(r["run"]),
            number(r["joint_ms"]),
            number(r["separate_ms"]),
            number(r["speedup"], digits=2),
            number(r["gemm_floor_ms"]),
            number(r["step_over_floor"], digits=2),
            number(r["gemm_in_step_ms"]),
            number(r["rest_ms"]),
        )


def rows_speed_loss_state() -> Iterator[str]:
    for r in load("loss_state_breakdown_zen4.json"):
        yield row(
            str(r["agents"]),
            number(r["joint_ms"]),
            number(r["separate_ms"]),
            number(r["speedup"], digits=2),
            number(r["gemm_floor_ms"]),
            number(r["step_over_floor"], digits=2),
            number(r["gemm_in_step_ms"]),
            number(r["rest_ms"]),
        )


def rows_speed_redundancy() -> Iterator[str]:
    for r in load("loss_m32_breakdown_zen4.json"):
        yield row(
            {"relu": "ReLU", "tanh": "tanh"}[r["activation"]],
            str(r["run"]),
            number(r["redundancy_ms"]),
            number(r["redundancy_pairloop_ms"]),
            number(r["redundancy_floor_ms"]),
            number(r["pairloop_over_redundancy"], digits=2),
            number(r["redundancy_over_floor"], digits=2),
            number(r["redundancy_ratio"], digits=2),
        )


def rows_speed_busy_loads() -> Iterator[str]:
    for bench in load("busy_machine.json")["loads"]:
        for r in bench["rows"]:
            yield row(
                f"`{bench['config']}`",
                r["threads"],
                r["load"],
                number(r["fps"], digits=0),
                number(r["vs_idle"], digits=2),
                number(r["vs_one_thread"], digits=2),
                number(r["collect_vs_idle"], digits=2),
                number(r["update_vs_idle"], digits=2),
            )


def rows_speed_busy_waits() -> Iterator[str]:
    for r in load("busy_machine.json")["waits"]["rows"]:
        yield row(
            r["threads"],
            r["waits"],
            r["load"],
            number(r["fps"], digits=0),
            str(r["runs"]),
        )


def rows_speed_busy_idle() -> Iterator[str]:
    for r in load("busy_machine.json")["idle"]:
        yield row(
            f"`{r['config']}`",
            str(r["old_threads"]),
            number(r["old_fps"], digits=0),
            number(r["auto_fps"], digits=0),
            number(r["auto_over_old"], digits=2),
        )


def rows_speed_busy_sweeps() -> Iterator[str]:
    for r in load("busy_machine.json")["sweeps"]:
        yield row(
            f"`{r['config']}`",
            duration(r["jobs_1_s"]),
            duration(r["jobs_2_s"]),
            number(r["jobs_2_over_jobs_1"], digits=2),
        )


def rows_speed_busy_replay() -> Iterator[str]:
    """A VDN run idle and beside a second one, before and after the fix that runs it on one thread."""
    for bench in load("busy_machine_replay.json")["benches"]:
        for r in bench["rows"]:
            yield row(
                bench["code"],
                r["load"],
                number(r["fps"], digits=0),
                number(r["vs_idle"], digits=2),
                number(r["collect_vs_idle"], digits=2),
                number(r["update_vs_idle"], digits=2),
            )


def rows_speed_env_copies() -> Iterator[str]:
    for r in load("env_copies.json"):
        yield row(
            r["env"],
            str(r["agents"]),
            r["copies"],
            number(r["steps_per_s"], digits=0),
            number(r["start_s"], digits=1),
            number(r["vs_serial"], digits=2) + "×" if r["copies"] != "serial" else "",
        )


def rows_speed_gymnasium_copies(data: str = "env_copies_lbf_joint.json") -> Iterator[str]:
    """Per copy count: an env's steps/s as SerialEnv copies and as one JointEnvCopies env (medians
    of the interleaved bench runs), the ratio, and worker processes beside JointEnvCopies (a dash
    where they were not run)."""
    runs = load(data)["runs"]
    for num_envs in sorted({r["num_envs"] for r in runs}):
        of = [r for r in runs if r["num_envs"] == num_envs]
        serial = statistics.median(
            r["serial_steps_per_s"] for r in of if r["copies_as"] == "SerialEnv"
        )
        joint = [r for r in of if r["copies_as"] == "JointEnvCopies"]
        batched = statistics.median(r["serial_steps_per_s"] for r in joint)
        measured = [r["processes_steps_per_s"] for r in joint if r["processes_steps_per_s"]]
        processes = statistics.median(measured) if measured else None
        yield row(
            str(num_envs),
            number(serial, digits=0),
            number(batched, digits=0),
            number(batched / serial, digits=2) + "×",
            "—" if processes is None else number(processes, digits=0),
            "—" if processes is None else number(processes / batched, digits=2) + "×",
        )


def rows_speed_gymnasium_copies_training() -> Iterator[str]:
    """Per env: PPO's training frames/s with SerialEnv copies and with JointEnvCopies, the median
    of each side's runs with their range, and the ratio of the medians."""
    data = load("train_copies_joint.json")
    for env in dict.fromkeys(r["env"] for r in data["runs"]):
        sides = [
            sorted(
                r["frames_per_s"] for r in data["runs"] if r["env"] == env and r["copies_as"] == as_
            )
            for as_ in ("SerialEnv", "JointEnvCopies")
        ]
        serial, joint = (statistics.median(side) for side in sides)
        yield row(
            env,
            str(next(r["num_envs"] for r in data["runs"] if r["env"] == env)),
            *(
                f"{number(median, digits=0)} ({number(side[0], digits=0)}–"
                f"{number(side[-1], digits=0)})"
                for median, side in zip((serial, joint), sides, strict=True)
            ),
            number(joint / serial, digits=2) + "×",
        )


#: The tables this page prints, by name: (page, rows).
TABLES: dict[str, tuple[str, Callable[[], Iterator[str]]]] = {
    "speed: whole runs": ("speed.md", rows_speed_whole_runs),
    "speed: joint step, M = 32": ("speed.md", rows_speed_loss_m32),
    "speed: joint step, state critic": ("speed.md", rows_speed_loss_state),
    "speed: redundancy penalty, M = 32": ("speed.md", rows_speed_redundancy),
    "speed: busy machine, loads": ("speed.md", rows_speed_busy_loads),
    "speed: busy machine, OpenMP waits": ("speed.md", rows_speed_busy_waits),
    "speed: busy machine, idle": ("speed.md", rows_speed_busy_idle),
    "speed: busy machine, sweeps": ("speed.md", rows_speed_busy_sweeps),
    "speed: busy machine, replay runs": ("speed.md", rows_speed_busy_replay),
    "speed: env copies in worker processes": ("env-copies.md", rows_speed_env_copies),
    "speed: gymnasium copies in one env": ("env-copies.md", rows_speed_gymnasium_copies),
    "speed: gymnasium copies in one env, RWARE": (
        "env-copies.md",
        lambda: rows_speed_gymnasium_copies("env_copies_rware_joint.json"),
    ),
    "speed: gymnasium copies in training": ("env-copies.md", rows_speed_gymnasium_copies_training),
}
