"""``coding.start_timeout_s``: how long the first round waits for enough learners to start. A bad
value is a one-line error naming the field; a good one reaches the backend the run builds, and a
start that outlasts it stops the run with a line that names the option to raise."""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from marlplug import load_config
from marlplug.coding import MDSCode
from marlplug.config import CodingSection
from marlplug.distributed.controller import CodedController, LearnerStartError
from marlplug.train.executors import make_backend
from tests.distributed.helpers import LinearProgram, linear_batch

M = 3


def coding_section(**fields: Any) -> CodingSection:
    """A run's ``coding:`` section, mds on 5 learners plus ``fields``, through the config loader."""
    coding = load_config(data={"coding": {"scheme": "mds", "learners": 5, **fields}}).coding
    assert coding is not None
    return coding


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("0", "input should be greater than 0, got 0"),
        ("-5", "input should be greater than 0, got -5"),
        (".inf", "input should be a finite number, got inf"),
        ("100000", "input should be less than or equal to 86400, got 100000"),
    ],
)
def test_a_bad_start_timeout_is_one_line_naming_the_field(
    run_cli: Callable[..., Any], tmp_path: Path, value: str, expected: str
) -> None:
    config = tmp_path / "run.yaml"
    config.write_text(f"coding: {{scheme: mds, learners: 5, start_timeout_s: {value}}}\n")
    result = run_cli("config", "check", str(config))
    assert result.exit_code == 2
    assert result.err.strip().splitlines() == [f"error: coding.start_timeout_s: {expected}"]


def load_slowly(num_agents: int, delay_s: float) -> SlowToStart:
    """Unpickle a :class:`SlowToStart`; in a local learner, first sleep ``delay_s``."""
    if multiprocessing.current_process().name.startswith("marlplug-learner-"):
        time.sleep(delay_s)
    return SlowToStart(num_agents, delay_s)


class SlowToStart(LinearProgram):
    """A :class:`LinearProgram` whose learners take ``delay_s`` to load it: a loaded machine."""

    def __init__(self, num_agents: int, delay_s: float) -> None:
        super().__init__(num_agents)
        self.delay_s = delay_s

    def __reduce__(self) -> tuple[Any, ...]:
        return load_slowly, (self.num_agents, self.delay_s)


def test_learners_slower_to_start_than_the_option_stop_the_run_naming_it() -> None:
    backend = make_backend(coding_section(start_timeout_s=1.5))
    assert backend is not None and backend.name == "local"
    program, scheme = SlowToStart(M, delay_s=60.0), MDSCode()
    theta, opt_state = program.init_state(0)
    with (
        CodedController(
            program, scheme.assignment_matrix(M, 5, 0), backend, scheme=scheme, round_timeout_s=60
        ) as controller,
        pytest.raises(LearnerStartError) as caught,
    ):
        controller.update(theta, opt_state, linear_batch(program), 0, seed=0)
    # 1.5 s, not the default 120 s: the config's value is the one the backend waited for.
    assert str(caught.value) == (
        "local backend: learners [0, 1, 2, 3, 4] were not ready within 1.5 s, and learners [] "
        "alone cannot decode a round; if they are only slow to start, raise coding.start_timeout_s"
    )


def test_the_ray_backend_gets_the_start_timeout() -> None:
    pytest.importorskip("ray")
    backend = make_backend(coding_section(backend="ray", start_timeout_s=600))
    # Made, not started: no Ray runs until the controller starts the backend.
    assert backend is not None and (backend.name, backend.start_timeout_s) == ("ray", 600.0)
