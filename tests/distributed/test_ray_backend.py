"""The Ray backend on a local Ray with 2 CPUs: exact rounds, a killed actor, clean shutdown."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from marlplug.algorithms.protocol import AgentUpdate
from marlplug.coding import MDSCode
from marlplug.coding.stragglers import StragglerModel
from marlplug.distributed.controller import CodedController
from tests.distributed.helpers import LinearProgram, centralized, linear_batch, state_error
from tests.distributed.sockets import descendants, is_loopback, listening_addresses

ray = pytest.importorskip("ray")


@pytest.mark.slow  # starting a local Ray takes 20-80 s on a busy 2-core machine
def test_ray_rounds_decode_exactly_and_survive_a_killed_actor() -> None:
    from marlplug.distributed.backends.ray import RayBackend

    program = LinearProgram(2)
    scheme = MDSCode()
    matrix = scheme.assignment_matrix(2, 3, 0)
    backend = RayBackend(3, num_cpus=2, start_timeout_s=600)  # a loaded CI machine
    stragglers = StragglerModel(count=1, delay_s=30.0, seed=0)
    state = reference = AgentUpdate(*program.init_state(0))
    with CodedController(
        program, matrix, backend, scheme=scheme, stragglers=stragglers, round_timeout_s=60
    ) as controller:
        for round_index in range(3):
            batch = linear_batch(program, seed=round_index)
            if round_index == 1:
                backend.kill(0)
            state, log = controller.update(
                state.theta, state.opt_state, batch, round_index, seed=round_index
            )
            reference = centralized(
                program, reference.theta, reference.opt_state, batch, seed=round_index
            )
            assert state_error(state, reference) <= 1e-6
            assert state.stats["loss"].shape == (2,)
            # Decoded without the straggler's answer (not a timing check: a loaded machine may
            # take 30 s for a round with a restart).
            assert not set(log.stragglers) & set(log.learners_used)
            if round_index == 1 and 0 not in log.stragglers:
                assert log.restarted == [0]
    assert not ray.is_initialized()  # the Ray that marlplug started is shut down


def test_an_unreachable_cluster_is_a_clear_error() -> None:
    from marlplug.distributed.backends.ray import RayBackend
    from marlplug.distributed.backends.ray_connection import RayUnavailableError

    backend = RayBackend(1, address="ray://127.0.0.1:1")
    with pytest.raises(RayUnavailableError, match="ray_address"):
        backend.start(LinearProgram(1))


def command_line(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # exited meanwhile
        return b""


@pytest.mark.slow  # starts a local Ray
@pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads listening sockets from /proc")
def test_a_local_ray_listens_on_loopback_only_and_keeps_stdout_clean(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from marlplug.distributed.backends.ray import RayBackend

    program = LinearProgram(2)
    scheme = MDSCode()
    backend = RayBackend(3, num_cpus=2, start_timeout_s=600)  # a loaded CI machine
    theta, opt_state = program.init_state(0)
    out, err = "", ""
    with CodedController(
        program, scheme.assignment_matrix(2, 3, 0), backend, scheme=scheme, round_timeout_s=60
    ) as controller:
        controller.update(theta, opt_state, linear_batch(program), 0, seed=0)
        tree = descendants(os.getpid())
        listening = listening_addresses(tree)
        actors = [pid for pid in tree if b"LearnerActor" in command_line(pid)]
        os.kill(actors[0], signal.SIGKILL)  # Ray then reports "A worker died or was killed ..."
        for round_index in (1, 2):
            batch = linear_batch(program, seed=round_index)
            controller.update(theta, opt_state, batch, round_index, seed=round_index)
        deadline = time.monotonic() + 60
        while "died" not in err and time.monotonic() < deadline:
            time.sleep(0.5)
            captured = capsys.readouterr()
            out, err = out + captured.out, err + captured.err
    captured = capsys.readouterr()
    out, err = out + captured.out, err + captured.err
    assert listening, "found no listening socket of Ray's processes"
    assert all(is_loopback(address) for address, _ in listening), listening
    assert "died" in err  # Ray's message came, on stderr ...
    assert "died" not in out and "raylet" not in out  # ... and not on stdout


def test_a_cluster_that_wants_its_token_is_named_in_the_error() -> None:
    from ray.exceptions import AuthenticationError

    from marlplug.distributed.backends.ray_connection import unavailable_message

    # What ray.init raises against a token-auth cluster without the token (the cause is chained).
    try:
        try:
            raise AuthenticationError(
                "RPC error: InvalidAuthToken: Authentication token is missing"
            )
        except AuthenticationError as refused:
            raise ConnectionError("Failed to connect to Ray cluster at 10.0.0.5:6379") from refused
    except ConnectionError as error:
        message = unavailable_message("10.0.0.5:6379", error)
    assert "\n" not in message
    assert message.startswith("coding.ray_address: cannot start or reach Ray at '10.0.0.5:6379'")
    assert "RAY_AUTH_MODE=token and RAY_AUTH_TOKEN" in message
    plain = unavailable_message(None, ConnectionError("refused"))
    assert plain == "coding.ray_address: cannot start or reach Ray at 'a local Ray': refused"
