"""The Ray backend on a local Ray with 2 CPUs: exact rounds, a killed actor, clean shutdown."""

from __future__ import annotations

import pytest

from marlplug.coding import MDSCode
from marlplug.distributed.controller import CodedController
from marlplug.distributed.stragglers import StragglerModel
from tests.distributed.helpers import centralized, relative_error, small_batch, small_program

ray = pytest.importorskip("ray")


@pytest.mark.slow  # starting a local Ray takes 20-80 s on a busy 2-core machine
def test_ray_rounds_decode_exactly_and_survive_a_killed_actor() -> None:
    from marlplug.distributed.backends.ray import RayBackend

    program = small_program(2)
    scheme = MDSCode()
    matrix = scheme.assignment_matrix(2, 3, 0)
    backend = RayBackend(3, num_cpus=2)
    stragglers = StragglerModel(count=1, delay_s=30.0, seed=0)
    theta = reference = program.init_state(0)
    with CodedController(
        program, matrix, backend, scheme=scheme, stragglers=stragglers, round_timeout_s=60
    ) as controller:
        for round_index in range(3):
            batch = small_batch(program, seed=round_index)
            if round_index == 1:
                backend.kill(0)
            theta, log = controller.update(theta, batch, round_index)
            reference = centralized(program, reference, batch, round_index)
            assert relative_error(theta, reference) <= 1e-5
            assert log.wait_s < 30  # never waited for the straggler
            if round_index == 1 and 0 not in log.stragglers:
                assert log.restarted == [0]
    assert not ray.is_initialized()  # the Ray that marlplug started is shut down


def test_an_unreachable_cluster_is_a_clear_error() -> None:
    from marlplug.distributed.backends.ray import RayBackend, RayUnavailableError

    backend = RayBackend(1, address="ray://127.0.0.1:1")
    with pytest.raises(RayUnavailableError, match="ray_address"):
        backend.start(small_program(1), seed=0)
