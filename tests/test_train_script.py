"""The README's train command, `bash scripts/train.sh`: the VMAS route by default, evaluated on mpe;
a config file as its first argument trains that instead."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
TINY = [
    "--set", "train.updates=1",
    "--set", "train.rollout_steps=25",
    "--set", "train.minibatch_size=50",
    "--set", "train.eval_episodes=2",
    "--set", "train.final_eval_episodes=2",
    "--no-progress",
]  # fmt: skip


def train_script(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(ROOT / "scripts" / "train.sh"), *args, *TINY,
         "--set", f"logging.dir={tmp_path}", "--set", "logging.run_name=run"],
        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=900,
    )  # fmt: skip


@pytest.mark.skipif(
    not (ROOT / ".venv" / ".marlplug-setup-stamp").is_file(),
    reason="needs scripts/setup.sh's .venv",
)
@pytest.mark.parametrize(
    ("args", "backend"),
    [
        (("--set", "train.num_envs=4"), "vmas"),
        (("marlplug/configs/default.yaml",), "mpe"),
    ],
)
def test_train_script_trains_the_vmas_route_and_evaluates_on_mpe(
    tmp_path: Path, args: tuple[str, ...], backend: str
) -> None:
    result = train_script(*args, tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    config = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    assert config["env"]["backend"] == backend
    evaluation = next(line for line in result.stdout.splitlines() if line.startswith("evaluation"))
    assert "2 deterministic mpe episodes after update 1; oracle-normalized score" in evaluation
