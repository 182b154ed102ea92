"""``env.copies``: the copies of a non-vectorized env in worker processes give exactly the serial
copies' transitions (so the option changes speed only), one copy stays in the process, and a
vectorized backend refuses it in one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from torchrl.envs import ParallelEnv, SerialEnv, TransformedEnv

from marlplug.config import load_config
from marlplug.config.checks import ConfigWarning
from marlplug.envs import available_envs, make_env
from marlplug.errors import ConfigError
from marlplug.train import run_training
from tests.envs.copies_checks import NON_VECTORIZED, assert_serial_transitions, small_run


@pytest.mark.parametrize(("backend", "scenario", "options"), NON_VECTORIZED)
def test_worker_processes_give_the_serial_transitions(
    backend: str, scenario: str, options: dict[str, Any]
) -> None:
    assert_serial_transitions("processes", backend, scenario, options, num_envs=2)


def test_the_copies_run_where_the_option_says() -> None:
    threads = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        serial = make_env("cooperative_navigation", num_envs=2, copies="serial")
        processes = make_env("cooperative_navigation", num_envs=2, copies="processes")
        # the run's thread count stays (ParallelEnv would take one thread per worker off it)
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(threads)
    one = make_env("cooperative_navigation", num_envs=1, copies="processes")
    try:
        assert isinstance(serial, SerialEnv) and isinstance(processes, ParallelEnv)
        assert processes.batch_size == serial.batch_size == torch.Size([2])
        assert one.batch_size == torch.Size([])  # one copy: nothing to run beside it
    finally:
        for env in (serial, processes, one):
            env.close()


@pytest.mark.skipif("vmas" not in available_envs(), reason="needs the marlplug-vmas plugin")
def test_a_vectorized_backend_refuses_worker_processes_in_one_line() -> None:
    with pytest.raises(ConfigError) as caught:
        make_env("cooperative_navigation", backend="vmas", num_envs=2, copies="processes")
    message = str(caught.value)
    assert message.startswith("env.copies: ") and "vmas/cooperative_navigation" in message
    assert "env.copies: serial" in message and "\n" not in message


def test_an_unknown_choice_names_the_field_and_the_choices() -> None:
    with pytest.raises(ConfigError, match=r"env\.copies: expected one of serial, processes"):
        make_env("cooperative_navigation", num_envs=2, copies="threads")  # type: ignore[arg-type]
    with pytest.raises(
        ConfigError, match=r"env\.copies: input should be 'serial', 'processes' or 'ray'"
    ):
        load_config(overrides=["env.copies=threads"])


def test_worker_processes_for_one_copy_warn_that_they_do_nothing() -> None:
    with pytest.warns(ConfigWarning, match=r"^env\.copies: processes does nothing with train"):
        load_config(overrides=["env.copies=processes"])


def test_the_config_carries_the_choice_to_the_training_env() -> None:
    from marlplug.config.resolve import resolved_dict
    from marlplug.train.components import training_env

    config = load_config(overrides=["env.copies=processes", "train.num_envs=2", "env.agents=2"])
    assert resolved_dict(config)["env"]["copies"] == "processes"
    env = training_env(config)
    try:
        assert isinstance(env, TransformedEnv)  # nearest first, the run default
        assert isinstance(env.base_env, ParallelEnv)
    finally:
        env.close()


def _trained_state(copies: str, folder: Path) -> torch.Tensor:
    result = run_training(load_config(data=small_run(copies, folder)))
    return torch.cat([result.theta.flatten(), result.opt_state.flatten()])


@pytest.mark.slow
def test_a_run_trains_the_same_with_its_copies_in_worker_processes(tmp_path: Path) -> None:
    serial = _trained_state("serial", tmp_path / "serial")
    processes = _trained_state("processes", tmp_path / "processes")
    assert torch.equal(serial, processes)


@pytest.mark.parametrize(
    ("name", "backend", "package"),
    [
        ("cooperative_navigation", "mpe", None),
        ("simple_push", "pettingzoo", None),
        ("Foraging-8x8-2p-2f-coop-v3", "gymnasium", "lbforaging"),
    ],
)
def test_closing_serial_copies_keeps_the_torch_thread_count(
    name: str, backend: str, package: str | None
) -> None:
    # TorchRL's SerialEnv.close raises it (by workers it does not have); the count is the run's.
    if package is not None:
        pytest.importorskip(package)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        env = make_env(name, backend=backend, num_envs=2, seed=0)
        env.close()
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(threads)
