"""MASAC: ISAC's joint-critic option under its own name; it meets the algorithm contract and its
critics read every agent's observation and action."""

from __future__ import annotations

from typing import Any, ClassVar

from marlplug.algorithms.sac.isac import ISAC
from marlplug.algorithms.sac.masac import MASAC
from marlplug.algorithms.sac.options import MasacOptions
from marlplug.testing import AlgorithmContract
from marlplug.testing.algorithms import build_algorithm, rollout_case

SMALL: dict[str, Any] = {
    "hidden_sizes": [16, 16],
    "minibatch_size": 16,
    "learning_starts": 32,
    "steps_per_iteration": 16,
}
CONTINUOUS: dict[str, Any] = {"agents": 3, "continuous_actions": True}


class TestMASAC(AlgorithmContract):
    algorithm_class = MASAC
    options: ClassVar[dict[str, Any]] = SMALL
    env_options: ClassVar[dict[str, Any]] = CONTINUOUS
    registered_name = "masac"


def test_masac_is_isac_with_joint_critics() -> None:
    assert MasacOptions().critic == "joint"
    assert MASAC(critic="local").options.critic == "local"  # still ISAC's option
    assert MasacOptions().model_dump() == {**ISAC().options.model_dump(), "critic": "joint"}
    program = rollout_case(build_algorithm(MASAC, SMALL), env_options=CONTINUOUS).program
    assert program.critic_sizes[0] == 3 * (program.obs_dim + program.action_dim)
