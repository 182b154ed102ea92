"""docs/results/{index,speed,learning,many-agents,benchmarl}.md print their tables from the JSON under
docs/data/: each builder here makes a table's rows from its files (the sweeps' statistics through
``marlplug compare``'s own code, with its default seed and resamples), and the test checks that the
page holds every row, cell for cell. A rerun that changes a JSON file fails here until the page
shows the new numbers, so a page and its data cannot drift apart, and a figure quoted on two pages
comes from one file.

``python tests/test_results_pages.py`` prints every table's rows, ready to paste.
"""

from __future__ import annotations

import functools
import statistics
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from marlplug.experiments.compare import Comparison, Metric, compare, gather
from marlplug.experiments.results import RunResult, load_results
from marlplug.experiments.statistics import Estimate
from tests.results_tables import DATA, RESULTS, assert_page_prints, load, number, row


def percent(share: float) -> str:
    """
    Examples:
        >>> percent(0.4285)
        '43%'
    """
    return f"{round(share * 100)}%"


def duration(seconds: float) -> str:
    """
    Examples:
        >>> duration(112), duration(309), duration(45)
        ('1 min 52 s', '5 min 9 s', '45 s')
    """
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s" if minutes else f"{rest} s"


def estimate(value: Estimate, *, digits: int = 3) -> str:
    """``0.919 [0.905, 0.928]``, in the pages' number format."""
    point, low, high = (number(v, digits=digits) for v in (value.point, value.low, value.high))
    return f"{point} [{low}, {high}]"


def runs(name: str) -> list[RunResult]:
    """A sweep's runs in seed order."""
    return sorted(load_results(DATA / name).runs, key=lambda run: run.seed)


def comparison(*names: str, metric: Metric = "score") -> Comparison:
    """What ``marlplug compare docs/data/NAME ...`` reports (the first file is the baseline)."""
    groups = gather([(DATA / name, load_results(DATA / name)) for name in names])
    return compare(groups, metric=metric)


def iqm(name: str, *, metric: Metric = "score", digits: int = 3) -> str:
    (aggregates,) = comparison(name, metric=metric).aggregates.values()
    return estimate(aggregates.iqm, digits=digits)


def improvement(better: str, baseline: str) -> str:
    """P(a run of ``better`` scores above a run of ``baseline``), with its interval."""
    (value,) = comparison(baseline, better).improvement.values()
    return estimate(value, digits=2)


def scores(name: str) -> list[str]:
    return [number(run.evaluation.score or 0.0, digits=3) for run in runs(name)]


def returns(name: str, *, digits: int = 1) -> list[str]:
    return [number(run.evaluation.mean, digits=digits) for run in runs(name)]


def wall_times(name: str) -> list[str]:
    return [number(run.wall_seconds, digits=0) for run in runs(name)]


def median_of(values: list[float]) -> float:
    return float(statistics.median(values))


# --- results/index.md -------------------------------------------------------------------------


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


# --- results/speed.md -------------------------------------------------------------------------


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


def rows_speed_gymnasium_copies() -> Iterator[str]:
    """Per copy count: LBF's steps/s as SerialEnv copies and as one JointEnvCopies env (medians of
    the interleaved bench runs), the ratio, and worker processes beside JointEnvCopies."""
    runs = load("env_copies_lbf_joint.json")["runs"]
    for num_envs in sorted({r["num_envs"] for r in runs}):
        of = [r for r in runs if r["num_envs"] == num_envs]
        serial = statistics.median(
            r["serial_steps_per_s"] for r in of if r["copies_as"] == "SerialEnv"
        )
        joint = [r for r in of if r["copies_as"] == "JointEnvCopies"]
        batched = statistics.median(r["serial_steps_per_s"] for r in joint)
        processes = statistics.median(r["processes_steps_per_s"] for r in joint)
        yield row(
            str(num_envs),
            number(serial, digits=0),
            number(batched, digits=0),
            number(batched / serial, digits=2) + "×",
            number(processes, digits=0),
            number(processes / batched, digits=2) + "×",
        )


# --- results/learning.md ----------------------------------------------------------------------


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


def q_learner_row(label: str, name: str, *extra: str) -> str:
    """A Q-learner sweep's row: its seeds' team returns and scores, each with their IQM."""
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
        yield q_learner_row(label, name)


def rows_learning_q_updates() -> Iterator[str]:
    """15k env steps: one update per 25 steps (the defaults) against one per 5 (VDN and IQL over
    three seeds, QMIX seed 0 only)."""
    yield q_learner_row("`vdn`, 1 per 25 steps", "sweep_spread_vdn.json", "")
    yield q_learner_row(
        "`vdn`, 1 per 5 steps",
        "sweep_spread_vdn_updates5.json",
        improvement("sweep_spread_vdn_updates5.json", "sweep_spread_vdn.json"),
    )
    yield q_learner_row("`iql`, 1 per 25 steps", "sweep_spread_iql.json", "")
    yield q_learner_row(
        "`iql`, 1 per 5 steps",
        "sweep_spread_iql_updates5.json",
        improvement("sweep_spread_iql_updates5.json", "sweep_spread_iql.json"),
    )
    yield q_learner_row(
        "`qmix`, 1 per 5 steps, seed 0", "sweep_spread_qmix_updates5_seed0.json", ""
    )


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


# --- results/epymarl.md -----------------------------------------------------------------------


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


def rows_curves(name: str, every: int) -> Iterator[str]:
    """Each seed's periodic evaluations (20 episodes) every ``every`` env steps, then the final 100."""
    for run in runs(name):
        yield row(
            str(run.seed),
            *(number(point.mean, digits=2) for point in run.curve if point.frames % every == 0),
            number(run.evaluation.mean, digits=2),
        )


#: LBF 10x10-3p-3f with the same VDN settings (lbf_10x10_3p_3f_vdn.yaml), 30 minutes a run.
LBF_10X10 = "sweep_lbf_10x10_3p_3f_vdn_30min.json"


#: mpe2's speaker-listener (speaker_listener.yaml), 10 and 30 minutes a run, seeds 0-2.
SPEAKER_LISTENER = {
    "sweep_speaker_listener_10min.json": "`speaker_listener.yaml`, 10 minutes a run",
    "sweep_speaker_listener_30min.json": "`speaker_listener.yaml`, 30 minutes a run",
}


# --- results/many-agents.md -------------------------------------------------------------------


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


# --- results/benchmarl.md ---------------------------------------------------------------------

#: BenchMARL's VMAS tasks with its task settings, 360k frames, seeds 0-2: marlplug's sweep of the
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
#: ``marlplug bench benchmarl --json``: PPO's two, then the replay-based algorithms at one update of
#: 1,024 an iteration and at BenchMARL's own 1,000 updates of 128.
BENCHMARL_SPEED = (
    "benchmarl_speed_balance_ppo.json",
    "benchmarl_speed_balance_replay.json",
    "benchmarl_speed_balance_replay_1000.json",
)
#: The shape of rows measured before the bench wrote it: one update of 1,024 an iteration.
BENCHMARL_FIRST_REPLAY_SHAPE = {"updates_per_iteration": 1, "minibatch_size": 1024}


def rows_benchmarl_equal_frames(task: str) -> Iterator[str]:
    """Each side's final team return per seed, their IQM, and P(marlplug beats a run of it)."""
    for label, name, cells in benchmarl_sides(task, BENCHMARL_TASKS[task]):
        yield row(label, f"[`{name}`](../data/{name})", *cells)


def rows_benchmarl_equal_wall_time(
    task: str, sides: Mapping[str, tuple[tuple[str, str], ...]] = BENCHMARL_WALL_TIME
) -> Iterator[str]:
    """As at equal frames, with the frames each seed's 20 minutes reached."""
    for label, name, cells in benchmarl_sides(task, sides[task]):
        frames = " / ".join(f"{run.frames / 1e6:.2f}M" for run in runs(name))
        yield row(label, f"[`{name}`](../data/{name})", frames, *cells)


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
        for measured in load(name):
            result = {**BENCHMARL_FIRST_REPLAY_SHAPE, **measured}
            yield row(
                f"`{result['algorithm']}`",
                number(result["frames_per_iteration"], digits=0),
                number(result["updates_per_iteration"], digits=0),
                number(result["minibatch_size"], digits=0),
                number(result["marlplug_fps"], digits=0),
                number(result["benchmarl_fps"], digits=0),
                f"{result['ratio']:.2f}×",
            )


#: Every table the pages print from docs/data, by the page that prints it.
TABLES: dict[str, tuple[str, Callable[[], Iterator[str]]]] = {
    "index headlines": ("index.md", rows_index_headlines),
    "speed: whole runs": ("speed.md", rows_speed_whole_runs),
    "speed: joint step, M = 32": ("speed.md", rows_speed_loss_m32),
    "speed: joint step, state critic": ("speed.md", rows_speed_loss_state),
    "speed: redundancy penalty, M = 32": ("speed.md", rows_speed_redundancy),
    "speed: busy machine, loads": ("speed.md", rows_speed_busy_loads),
    "speed: busy machine, OpenMP waits": ("speed.md", rows_speed_busy_waits),
    "speed: busy machine, idle": ("speed.md", rows_speed_busy_idle),
    "speed: busy machine, sweeps": ("speed.md", rows_speed_busy_sweeps),
    "speed: busy machine, replay runs": ("speed.md", rows_speed_busy_replay),
    "speed: env copies in worker processes": ("speed.md", rows_speed_env_copies),
    "speed: gymnasium copies in one env": ("speed.md", rows_speed_gymnasium_copies),
    "learning: default route": ("learning.md", rows_learning_default_route),
    "learning: route choices": ("learning.md", rows_learning_route_choices),
    "learning: mpe route": ("learning.md", rows_learning_mpe_route),
    "learning: redundancy penalty": ("learning.md", rows_learning_redundancy),
    "learning: across CPU models": ("learning.md", rows_learning_across_cpus),
    "learning: Q-learners": ("learning.md", rows_learning_q_learners),
    "learning: Q-learners' updates": ("learning.md", rows_learning_q_updates),
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
    "learning: MAgent2 battle": ("learning.md", rows_learning_battle),
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
    "benchmarl: marlplug's settings": ("benchmarl.md", rows_benchmarl_settings),
    "benchmarl: navigation settings": ("benchmarl.md", rows_benchmarl_navigation_settings),
    "benchmarl: speed": ("benchmarl.md", rows_benchmarl_speed),
}


@pytest.mark.parametrize("name", list(TABLES))
def test_the_page_prints_its_data(name: str) -> None:
    page, rows = TABLES[name]
    assert_page_prints(
        page, rows(), hint=f" for '{name}' (python tests/test_results_pages.py prints them all)"
    )


def test_every_data_file_a_results_page_links_exists() -> None:
    pages = ("index.md", "speed.md", "learning.md", "many-agents.md", "benchmarl.md", "epymarl.md")
    for page in (*pages, "benchmarl-wall-time.md"):
        text = (RESULTS / page).read_text()
        for start in [i for i in range(len(text)) if text.startswith("../data/", i)]:
            name = text[start + len("../data/") :].split(")")[0].split("`")[0]
            assert (DATA / name).is_file(), f"docs/results/{page} links ../data/{name}"


if __name__ == "__main__":
    for name, (page, rows) in TABLES.items():
        print(f"## {page}: {name}", *rows(), "", sep="\n", file=sys.stdout)
