"""Coded == centralized holds through faults: 80 MADDPG iterations on cooperative navigation, with
learners killed (SIGKILL) mid-run and a straggler every round, end where the centralized run ends —
parameters, target parameters and Adam moments each within 1e-6 relative."""

from __future__ import annotations

import os
import signal
from typing import Any

import pytest
import torch

from marlplug.algorithms.env_adapter import MultiAgentEnvAdapter
from marlplug.algorithms.maddpg import MADDPG
from marlplug.algorithms.row_bridge import MaddpgRows
from marlplug.coding import MDSCode
from marlplug.distributed.backends.local import LocalBackend
from marlplug.distributed.controller import CodedController
from marlplug.distributed.stragglers import StragglerModel
from marlplug.envs import make_env
from marlplug.train.maddpg_loop import CentralizedUpdater, MaddpgRunner

M, N, ITERATIONS = 3, 5, 80
#: Iterations before which learners are killed, and which ones: the round then runs without them
#: (restarted, their tasks resent), so it decodes from other rows than a fault-free round would.
KILLS = {12: [0, 1], 30: [2], 47: [0, 3, 4], 66: [1]}


def program_and_env() -> tuple[MaddpgRows, Any]:
    env = make_env("cooperative_navigation", backend="mpe", seed=0, agents=M)
    algorithm = MADDPG(
        hidden_sizes=[64, 64],  # the authors' network; with [16] the drift stayed below 1e-6
        minibatch_size=64,
        learning_starts=64,
        steps_per_iteration=10,
        buffer_size=2000,
    )
    return MaddpgRows(algorithm.program(MultiAgentEnvAdapter(env).agents)), env


def per_tensor_relative_error(
    program: MaddpgRows, actual: torch.Tensor, expected: torch.Tensor
) -> dict[str, float]:
    """``‖actual − expected‖ / ‖expected‖`` per agent and named state tensor (0 where both are 0)."""
    errors = {}
    mine, theirs = program.codec.unflatten(actual), program.codec.unflatten(expected)
    for name in mine:
        for agent in range(program.num_agents):
            difference = (mine[name][agent].double() - theirs[name][agent].double()).norm()
            scale = theirs[name][agent].double().norm()
            errors[f"{name}[{agent}]"] = (
                float(difference / scale) if scale > 0 else float(difference)
            )
    return errors


@pytest.mark.slow  # 40 s of CPU; 1-3 min on a busy 2-core machine (2 x 80 iterations, 5 workers)
def test_a_run_with_learner_kills_ends_where_the_centralized_run_ends() -> None:
    program, env = program_and_env()
    reference = MaddpgRunner(env, program, CentralizedUpdater(program, seed=0), seed=0)
    reference.run(ITERATIONS)

    program, env = program_and_env()
    scheme = MDSCode()
    backend = LocalBackend(N)
    controller = CodedController(
        program,
        scheme.assignment_matrix(M, N, 0),
        backend,
        scheme=scheme,
        stragglers=StragglerModel(count=1, delay_s=0.05, seed=0),
        round_timeout_s=30,
        seed=0,
    )
    restarted, rounds = [], 0
    with controller:
        runner = MaddpgRunner(env, program, controller, seed=0)
        for iteration in range(ITERATIONS):
            for learner in KILLS.get(iteration, []) if runner.rounds else []:
                os.kill(backend.pid(learner), signal.SIGKILL)
            log = runner.step()
            if log.round is not None:
                rounds += 1
                restarted += log.round.restarted
    assert rounds >= ITERATIONS - 10  # learning starts after 64 transitions
    assert sorted(set(restarted)) == [0, 1, 2, 3, 4]  # every kill was seen and recovered from
    errors = per_tensor_relative_error(program, runner.theta, reference.theta)
    worst = max(errors, key=errors.__getitem__)
    assert errors[worst] <= 1e-6, f"{worst}: {errors[worst]:.3g}"
    assert not torch.equal(runner.theta, program.init_state(0))  # it did learn something
