"""Start-up survives lost learners: a learner killed while it starts (the first start or a restart) is
started again and the run ends as the centralized run ends; a learner that cannot start for a reason
of its own stops the run, after a bounded number of starts, with one line naming it and the cause.

The kills here are the learner's own doing at a chosen moment (its program kills its process while it
is loaded, on the starts the test names), so which learner dies when is the same on any machine.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import types
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml

import marlplug
from marlplug.algorithms.protocol import AgentUpdate
from marlplug.coding import MDSCode
from marlplug.distributed.backends.local import LocalBackend
from marlplug.distributed.controller import CodedController, LearnerStartError, StartPolicy
from marlplug.losses.aux import AuxLoss
from marlplug.plugins import get_plugin_manager
from marlplug.seeding import derive_seed
from tests.distributed.helpers import (
    DiesWhileStarting,
    LinearProgram,
    centralized,
    linear_batch,
)

M = 3
#: Short waits between starts: these tests are about what happens, not how long it takes.
QUICK = StartPolicy(max_attempts=5, backoff_s=0.05, max_backoff_s=0.2)


def run_rounds(
    controller: CodedController,
    program: LinearProgram,
    rounds: int,
    before_round: Callable[[int], None] = lambda _: None,
    *,
    until: Callable[[], bool] = lambda: True,
) -> tuple[AgentUpdate, AgentUpdate, list[list[int]]]:
    """At least ``rounds`` coded rounds, and more until ``until()``, and the centralized ones:
    (coded state, centralized state, each round's restarted learners)."""
    state = reference = AgentUpdate(*program.init_state(0))
    restarted = []
    round_index, deadline = 0, time.monotonic() + 180
    while round_index < rounds or not until():
        assert time.monotonic() < deadline, f"still not done after {round_index} rounds"
        batch, seed = linear_batch(program, seed=round_index), derive_seed(0, round_index)
        before_round(round_index)
        state, log = controller.update(state.theta, state.opt_state, batch, round_index, seed=seed)
        reference = centralized(program, reference.theta, reference.opt_state, batch, seed)
        restarted.append(sorted(log.restarted))
        round_index += 1
    return state, reference, restarted


def test_learners_killed_while_they_start_and_restart_are_started_again(tmp_path: Path) -> None:
    # N = M: every learner is needed, so the run waits for each one and every restart is seen.
    # Learner 0 dies on its first two starts, learner 1 on its first; learner 2 starts, is killed
    # after round 1 and then dies on its next two starts (a restart killed while it starts).
    deaths = {0: {1, 2}, 1: {1}, 2: {2, 3}}
    program = DiesWhileStarting(M, deaths, tmp_path)
    scheme = MDSCode()
    backend = LocalBackend(M)

    def kill_learner_2(round_index: int) -> None:
        if round_index == 2:
            os.kill(backend.pid(2), signal.SIGKILL)

    with CodedController(
        program,
        scheme.assignment_matrix(M, M, 0),
        backend,
        scheme=scheme,
        round_timeout_s=60,
        start_policy=QUICK,
    ) as controller:
        state, reference, restarted = run_rounds(controller, program, 4, kill_learner_2)
    # Start-up's restarts are in the first round's record.
    assert restarted == [[0, 0, 1], [], [2, 2, 2], []]
    assert torch.equal(state.theta, reference.theta)
    assert torch.equal(state.opt_state, reference.opt_state)


ALWAYS = set(range(1, 100))


def mds_on_five(program: LinearProgram) -> CodedController:
    scheme = MDSCode()
    return CodedController(
        program,
        scheme.assignment_matrix(M, 5, 0),
        LocalBackend(5),
        scheme=scheme,
        round_timeout_s=60,
        start_policy=QUICK,
    )


def test_learners_that_never_start_are_left_out_while_the_others_decode(tmp_path: Path) -> None:
    # Learners 3 and 4 are killed on every start: after 5 starts each they are left out, and
    # learners 0-2 decode every round alone.
    program = DiesWhileStarting(M, {3: ALWAYS, 4: ALWAYS}, tmp_path)
    with mds_on_five(program) as controller:
        starts = controller.starts
        assert starts is not None
        # Their starts go on while rounds poll the backend: run rounds until both are given up.
        state, reference, _ = run_rounds(
            controller, program, 3, until=lambda: len(starts.given_up) == 2
        )
        given_up = dict(starts.given_up)
    assert given_up == {3: "process killed by SIGKILL", 4: "process killed by SIGKILL"}
    assert torch.equal(state.theta, reference.theta)
    assert torch.equal(state.opt_state, reference.opt_state)


def test_learners_left_out_that_the_code_needs_stop_the_run_with_one_line(tmp_path: Path) -> None:
    program = DiesWhileStarting(M, {2: ALWAYS, 3: ALWAYS, 4: ALWAYS}, tmp_path)
    theta, opt_state = program.init_state(0)
    with mds_on_five(program) as controller, pytest.raises(LearnerStartError) as caught:
        controller.update(theta, opt_state, linear_batch(program), 0, seed=0)
    assert str(caught.value) == (
        "local backend: learners [2, 3, 4] died while starting 5 times in a row (learner 2: "
        "process killed by SIGKILL, learner 3: process killed by SIGKILL, learner 4: process "
        "killed by SIGKILL), and learners [0, 1] alone cannot decode a round"
    )


@contextmanager
def controller_only_module(name: str) -> Iterator[types.ModuleType]:
    """A module that exists in this process only: a learner that needs it cannot import it, as
    where a plugin is installed for the controller but not where the learners run."""
    module = types.ModuleType(name)
    sys.modules[name] = module
    try:
        yield module
    finally:
        del sys.modules[name]


def defined_in(module: types.ModuleType, name: str, base: type) -> type:
    """A subclass of ``base`` that pickles as ``module.name``."""
    cls = type(name, (base,), {"__module__": module.__name__, "__qualname__": name})
    setattr(module, name, cls)
    return cls


def test_a_learner_that_cannot_load_its_program_stops_the_run_after_bounded_starts() -> None:
    with controller_only_module("marlplug_controller_only") as module:
        program = defined_in(module, "Program", LinearProgram)(M)
        scheme = MDSCode()
        backend = LocalBackend(5)
        with (
            CodedController(
                program,
                scheme.assignment_matrix(M, 5, 0),
                backend,
                scheme=scheme,
                round_timeout_s=60,
                start_policy=QUICK,
            ) as controller,
            pytest.raises(LearnerStartError) as caught,
        ):
            theta, opt_state = program.init_state(0)
            controller.update(theta, opt_state, linear_batch(program), 0, seed=0)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("local backend: learner ")
    assert message.endswith(
        "cannot start (5 starts in a row failed): "
        "ModuleNotFoundError: No module named 'marlplug_controller_only'"
    )


class TrainOnlyAuxLossPlugin:
    """Provides the aux loss ``controller_only``, whose class only this process can import."""

    def __init__(self, loss: type) -> None:
        self.loss = loss

    @marlplug.hookimpl
    def marlplug_losses(self) -> Mapping[str, Any]:
        return {"controller_only": self.loss}


class ZeroLoss(AuxLoss):
    def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
        return sum(z.sum() for z in features) * 0.0  # type: ignore[return-value]


def test_train_names_a_learner_that_cannot_start_in_one_line(
    run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"losses": [{"name": "controller_only"}]}))
    overrides = [
        "env.agents=3",
        "algorithm.hidden_size=16",
        "algorithm.feature_dim=16",
        "train.updates=2",
        "train.rollout_steps=25",
        "train.minibatch_size=25",
        "train.n_epochs=1",
        "train.eval_every=0",
        "coding.scheme=mds",
        "coding.learners=5",
        "coding.backend=local",
        f"logging.dir={tmp_path}",
        "logging.run_name=run",
    ]
    manager = get_plugin_manager()
    with controller_only_module("marlplug_controller_only") as module:
        plugin = TrainOnlyAuxLossPlugin(defined_in(module, "ControllerOnlyLoss", ZeroLoss))
        manager.register(plugin, name="controller-only-loss")
        try:
            result = run_cli(
                "train", str(config), *(f"--set={item}" for item in overrides), "--no-progress"
            )
        finally:
            manager.unregister(name="controller-only-loss")
    assert result.exit_code == 2, result.err
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.err, result.err
    assert lines[0].startswith("error: local backend: learner ")
    assert lines[0].endswith(
        "cannot start (5 starts in a row failed): "
        "ModuleNotFoundError: No module named 'marlplug_controller_only'"
    )
