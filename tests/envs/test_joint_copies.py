"""``JointEnvCopies``: copies of a joint env as one batched TorchRL env give the transitions of
TorchRL's ``SerialEnv`` over the same copies, bit for bit, across partial resets and seeds."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
from tensordict import TensorDictBase
from torchrl.envs import EnvBase, StepCounter, TransformedEnv

from marlplug.envs import get_scenario, make_env
from marlplug.envs.copies import serial_copies
from marlplug.envs.joint_copies import JointEnvCopies
from tests.envs.dice import dice


def lbf() -> EnvBase:
    pytest.importorskip("lbforaging")
    scenario = get_scenario("Foraging-8x8-2p-2f-coop-v3", backend="gymnasium")(max_steps=10)
    return scenario._single()


def _rollout(env: EnvBase, steps: int = 40) -> TensorDictBase:
    """Random valid-or-not actions from a fixed generator, through TorchRL's auto-reset, with the
    step counter a collector adds."""
    counted = TransformedEnv(env, StepCounter(max_steps=7), auto_unwrap=True)
    counted.set_seed(11)
    generator = torch.Generator().manual_seed(0)
    td = counted.reset()
    steps_taken = []
    for _ in range(steps):
        td["agent", "action"] = torch.randint(
            0, 3, td["agent", "observation"].shape[:-1], generator=generator
        )
        stepped, td = counted.step_and_maybe_reset(td)
        steps_taken.append(stepped.clone())
    return torch.stack(steps_taken, dim=1)


@pytest.mark.parametrize("make_one", [dice, lbf], ids=["dice", "lbf"])
def test_the_copies_give_the_serial_env_transitions(make_one: Callable[[], EnvBase]) -> None:
    serial = _rollout(serial_copies(make_one, num_envs=3, seed=None, device="cpu"))
    batched = _rollout(JointEnvCopies([make_one() for _ in range(3)]))
    assert set(batched.keys(True, True)) == set(serial.keys(True, True))
    for key in serial.keys(True, True):
        assert torch.equal(batched[key], serial[key]), key
    done = serial["next", "done"].squeeze(-1)
    assert bool(done.any())  # the rollout crosses resets
    if make_one is dice:  # LBF's copies end together (its time limit); Dice's apart
        assert bool((done.any(0) & ~done.all(0)).any())


def test_seeding_chains_from_copy_to_copy_as_serial_env_does() -> None:
    serial = serial_copies(dice, num_envs=3, seed=None, device="cpu")
    batched = JointEnvCopies([dice() for _ in range(3)])
    assert batched.set_seed(5) == serial.set_seed(5)
    first, second = (env.reset()["agent", "observation"] for env in (serial, batched))
    assert torch.equal(first, second)
    assert not torch.equal(second[0], second[1])  # each copy has its own seed


def test_the_gymnasium_backend_batches_its_copies() -> None:
    pytest.importorskip("lbforaging")
    env = make_env("Foraging-8x8-2p-2f-coop-v3", backend="gymnasium", num_envs=4, seed=0)
    assert isinstance(env, JointEnvCopies)
    assert env.batch_size == torch.Size([4]) and env.group_map == {"agent": ["agent_0", "agent_1"]}
    assert env.reset()["agent", "action_mask"].shape == torch.Size([4, 2, 6])
