"""Every user mistake is one or two lines on stderr, exit status 2, and no traceback."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from marlplug.configs import default_config_path

# (case id, config file text or None for "no file", extra CLI args, expected message fragment)
CONFIG_CASES: list[tuple[str, str | None, list[str], str]] = [
    ("missing-file", None, [], "config file not found"),
    ("malformed-yaml", "train: {updates: 3\n", [], "malformed YAML"),
    ("not-a-mapping", "- a\n- b\n", [], "expected a mapping at the top level, got list"),
    (
        "unknown-top-level",
        "trian: {}\n",
        [],
        "trian: unknown field 'trian' (did you mean 'train'?)",
    ),
    (
        "unknown-train-field",
        "train: {updatess: 3}\n",
        [],
        "train.updatess: unknown field 'updatess' in train (did you mean 'updates'?)",
    ),
    (
        "wrong-type-int",
        "train: {updates: many}\n",
        [],
        "train.updates: expected an integer, got 'many'",
    ),
    (
        "out-of-range",
        "train: {updates: 0}\n",
        [],
        "train.updates: input should be greater than or equal to 1",
    ),
    (
        "loss-coef-not-number",
        "losses: [{name: clip_ppo}, {name: cka, coef: high}]\n",
        [],
        "losses[1].coef: expected a number, got 'high'",
    ),
    (
        "unknown-loss",
        "losses: [{name: clip_ppo}, {name: ckaa}]\n",
        [],
        "losses[1].name: unknown loss 'ckaa' (did you mean 'cka'?)",
    ),
    (
        "unknown-loss-field",
        "losses: [{name: clip_ppo}, {name: cka, coeff: 0.1}]\n",
        [],
        "losses[1].coeff: unknown field 'coeff' in loss 'cka' (did you mean 'coef'?)",
    ),
    (
        "loss-without-name",
        "losses: [{coef: 0.1}]\n",
        [],
        "losses[0].name: required field is missing",
    ),
    (
        "unknown-env-backend",
        "env: {name: cooperative_navigation, backend: mpee}\n",
        [],
        "env.backend: unknown backend 'mpee' (did you mean 'mpe'?)",
    ),
    (
        "unknown-scenario",
        "env: {name: cooperative_navigaton}\n",
        [],
        "env.name: unknown mpe scenario 'cooperative_navigaton' (did you mean 'cooperative_navigation'?)",
    ),
    (
        "unknown-code",
        "coding: {scheme: mdss, learners: 15}\n",
        [],
        "coding.scheme.name: unknown code 'mdss' (did you mean 'mds'?)",
    ),
    (
        "coding-missing-learners",
        "coding: {scheme: mds}\n",
        [],
        "coding.learners: required field is missing",
    ),
    (
        "coding-bad-backend",
        "coding: {scheme: mds, learners: 4, backend: slurm}\n",
        [],
        "coding.backend: input should be 'local' or 'ray', got 'slurm'",
    ),
    (
        "straggler-probability",
        "coding: {scheme: mds, learners: 4, stragglers: {probability: 1.5}}\n",
        [],
        "coding.stragglers.probability: input should be less than or equal to 1",
    ),
    (
        "logging-bool",
        "logging: {progress: maybe}\n",
        [],
        "logging.progress: expected true or false, got 'maybe'",
    ),
    (
        "set-without-equals",
        "",
        ["--set", "train.updates"],
        "--set 'train.updates': expected KEY=VALUE",
    ),
    (
        "set-malformed-key",
        "",
        ["--set", "train..updates=3"],
        "--set: malformed key 'train..updates'",
    ),
    (
        "set-index-out-of-range",
        "losses: [clip_ppo]\n",
        ["--set", "losses[5].coef=1"],
        "--set losses[5].coef: losses[5] does not exist (the list has 1 items)",
    ),
    ("set-bad-value", "", ["--set", "seed=abc"], "seed: expected an integer, got 'abc'"),
    # Values every backend would refuse later, with a traceback (issue 11): refused up front.
    ("negative-seed", "seed: -1\n", [], "seed: input should be greater than or equal to 0, got -1"),
    (
        "seed-over-32-bits",
        f"seed: {2**70}\n",
        [],
        f"seed: input should be less than or equal to 4294967295, got {2**70}",
    ),
    ("boolean-seed", "seed: true\n", [], "seed: expected an integer, got a boolean (true)"),
    (
        "infinite-lr",
        "train: {lr: .inf}\n",
        [],
        "train.lr: input should be a finite number, got inf",
    ),
    ("nan-lr", "", ["--set", "train.lr=.nan"], "train.lr: input should be a finite number"),
    (
        "trillion-rollout-steps",
        "train: {rollout_steps: 1000000000000}\n",
        [],
        "train.rollout_steps: input should be less than or equal to 10000000",
    ),
    (
        "rollout-that-cannot-fit",
        "train: {rollout_steps: 10000000, num_envs: 4096}\n",
        [],
        "train.rollout_steps: this run needs at least 9.8 TB of memory for one rollout",
    ),
    (
        "hundred-thousand-agents",
        "env: {agents: 100000}\n",
        [],
        "env.agents: input should be less than or equal to 1024, got 100000",
    ),
    (
        "agents-whose-networks-cannot-fit",
        "env: {agents: 1000}\n",
        [],
        "env.agents: this run needs at least 2.1 TB of memory for the networks of 1000 agents",
    ),
    (
        "negative-maddpg-hidden-size",
        "algorithm: {name: maddpg, hidden_sizes: [64, -3]}\n",
        [],
        "algorithm.hidden_sizes: layer 1 has -3 units; each layer needs 1 to 16384, got [64, -3]",
    ),
    (
        "huge-ppo-hidden-size",
        "",
        ["--set", "algorithm.hidden_size=1000000000"],
        "algorithm.hidden_size: input should be less than or equal to 16384",
    ),
    (
        "infinite-round-timeout",
        "coding: {scheme: mds, learners: 5, round_timeout_s: .inf}\n",
        [],
        "coding.round_timeout_s: input should be a finite number, got inf",
    ),
    (
        "infinite-straggler-delay",
        "coding: {scheme: mds, learners: 5, stragglers: {count: 1, delay_s: .inf}}\n",
        [],
        "coding.stragglers.delay_s: input should be a finite number",
    ),
    (
        "aux-loss-under-maddpg",
        "algorithm: {name: maddpg}\nlosses: [clip_ppo, {name: redundancy, coef: 0.1}]\n",
        [],
        "losses: algorithm 'maddpg' trains with its own losses and ignores this list "
        "(clip_ppo, redundancy)",
    ),
    (
        "same-loss-twice",
        "losses: [clip_ppo, redundancy, {name: redundancy, coef: 0.5}]\n",
        [],
        "losses[2].name: 'redundancy' is already losses[1]",
    ),
]


@pytest.mark.parametrize(
    ("text", "extra", "expected"),
    [case[1:] for case in CONFIG_CASES],
    ids=[case[0] for case in CONFIG_CASES],
)
def test_bad_config_is_a_short_error(
    run_cli: Callable[..., object],
    tmp_path: Path,
    text: str | None,
    extra: list[str],
    expected: str,
) -> None:
    path = tmp_path / "run.yaml"
    if text is not None:
        path.write_text(text)
    result = run_cli("config", "check", str(path), *extra)
    assert result.exit_code == 2  # type: ignore[attr-defined]
    assert expected in result.err  # type: ignore[attr-defined]
    assert len(result.err.strip().splitlines()) <= 2  # type: ignore[attr-defined]
    assert "Traceback" not in result.err  # type: ignore[attr-defined]


def test_malformed_toml(run_cli: Callable[..., object], tmp_path: Path) -> None:
    path = tmp_path / "run.toml"
    path.write_text("[train\nupdates = 3\n")
    result = run_cli("config", "check", str(path))
    assert result.exit_code == 2  # type: ignore[attr-defined]
    assert "malformed TOML" in result.err  # type: ignore[attr-defined]


def test_unknown_file_format(run_cli: Callable[..., object], tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text("{}")
    result = run_cli("config", "check", str(path))
    assert result.exit_code == 2  # type: ignore[attr-defined]
    assert "unknown config format '.json'; use .yaml, .yml or .toml" in result.err  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["trian"], "No such command 'trian'"),
        (["plugins", "--jsn"], "No such option '--jsn'. Did you mean '--json'?"),
        (["config", "check"], "Missing argument 'PATH'"),
        (
            ["bench", "loss", "--agents", "0"],
            "Invalid value for '--agents': 0 is not in the range x>=1",
        ),
        (["bench", "loss", "--repeats", "0"], "Invalid value for '--repeats'"),
        (["bench", "loss", "--threads", "0"], "Invalid value for '--threads'"),
        (["bench", "train", "--trials", "0"], "Invalid value for '--trials'"),
        (["bench", "decode", "--repeats", "0"], "Invalid value for '--repeats'"),
        (["bench", "coding", "--rounds", "0"], "Invalid value for '--rounds'"),
        (["render", "--fps", "0", "x.yaml"], "Invalid value for '--fps'"),
    ],
)
def test_bad_command_line(run_cli: Callable[..., object], args: list[str], expected: str) -> None:
    result = run_cli(*args)
    assert result.exit_code == 2  # type: ignore[attr-defined]
    assert expected in result.err  # type: ignore[attr-defined]
    assert len(result.err.strip().splitlines()) <= 2  # type: ignore[attr-defined]


def test_real_process_exit_status_and_debug_traceback(tmp_path: Path) -> None:
    missing = str(tmp_path / "absent.yaml")
    plain = subprocess.run(
        [sys.executable, "-m", "marlplug.cli.main", "config", "check", missing],
        capture_output=True,
        text=True,
        check=False,
    )
    assert plain.returncode == 2
    assert plain.stderr.strip() == f"error: config file not found: {missing}"
    debug = subprocess.run(
        [sys.executable, "-m", "marlplug.cli.main", "--debug", "config", "check", missing],
        capture_output=True,
        text=True,
        check=False,
    )
    assert debug.returncode != 0 and "Traceback" in debug.stderr


def test_train_refuses_a_bad_value_before_any_work(
    run_cli: Callable[..., object], tmp_path: Path
) -> None:
    """`marlplug train` validates the whole config first: no run folder is created."""
    result = run_cli("train", "--set", "seed=-1", "--set", f"logging.dir={tmp_path / 'runs'}")
    assert result.exit_code == 2  # type: ignore[attr-defined]
    assert result.err.strip() == (  # type: ignore[attr-defined]
        "error: seed: input should be greater than or equal to 0, got -1"
    )
    assert not (tmp_path / "runs").exists()


def test_resume_says_what_is_wrong_with_the_folder(
    run_cli: Callable[..., object], tmp_path: Path
) -> None:
    (tmp_path / "a_file").write_text("x")
    (tmp_path / "empty").mkdir()
    for name, expected in [
        ("absent", "does not exist; give the folder of a run to continue"),
        ("a_file", "is a file, not a run folder"),
        ("empty", "is not a run folder (no config.yaml)"),
    ]:
        result = run_cli("train", "--resume", str(tmp_path / name))
        assert result.exit_code == 2, name  # type: ignore[attr-defined]
        assert result.err.strip() == f"error: --resume: {tmp_path / name} {expected}"  # type: ignore[attr-defined]
    assert not (tmp_path / "absent").exists()


def test_setting_that_does_nothing_is_one_warning_line(tmp_path: Path) -> None:
    """A real process: pytest would capture the warning before the CLI prints it."""
    path = tmp_path / "run.yaml"
    path.write_text("coding: {scheme: mds, learners: 5, stragglers: {count: 1}}\n")
    done = subprocess.run(
        [sys.executable, "-m", "marlplug.cli.main", "config", "check", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0
    assert done.stdout.strip() == f"{path}: ok"
    assert done.stderr.strip() == (
        "warning: coding.stragglers.count: does nothing without delay_s (a straggler answers "
        "delay_s seconds late; it is 0); set coding.stragglers.delay_s, e.g. 0.25"
    )


def test_render_to_an_unwritable_path_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    process = subprocess.run(
        [
            sys.executable,
            "-m",
            "marlplug.cli.main",
            "render",
            str(default_config_path()),
            "--out",
            str(blocker / "episode.gif"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert process.returncode == 2, process.stderr
    lines = process.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: --out: cannot write {blocker}"), lines
