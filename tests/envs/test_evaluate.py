"""``evaluate``: whole episodes on fixed evaluation seeds; returns summed over steps and agents."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from marlplug.config import load_config
from marlplug.envs import EvaluationResult, evaluate, make_env, normalized_score, random_policy
from marlplug.envs.copies import serial_copies
from marlplug.envs.evaluate import (
    EVALUATION_SALT,
    first_episode_returns,
    reference_episode_returns,
    reference_returns,
    references_of_first,
)
from marlplug.envs.joint_copies import JointEnvCopies
from marlplug.envs.policies import ScriptedSpread
from marlplug.errors import UserError
from marlplug.seeding import derive_seed
from tests.envs.dice import dice


def test_a_return_is_the_episode_reward_summed_over_steps_and_agents() -> None:
    env = make_env("cooperative_navigation", agents=3)
    policy = ScriptedSpread(agents=3)
    result = evaluate(env, policy, episodes=2, seed=5)
    # The same two episodes by hand: round r is reset from derive_seed(seed, salt, r).
    for episode in range(2):
        env.set_seed(derive_seed(5, EVALUATION_SALT, episode))
        rollout = env.rollout(100, policy)
        assert rollout.shape == (25,)
        expected = float(rollout["next", "agent", "reward"].sum())
        assert result.returns[episode] == pytest.approx(expected, rel=1e-6)
    assert result.group_returns["agent"] == result.returns
    assert result.episodes == 2 and result.frames == 50


def test_same_seed_same_returns_other_seed_other_returns() -> None:
    env = make_env("cooperative_navigation", agents=2)
    policy = random_policy(env)
    first = evaluate(env, policy, episodes=3, seed=1, deterministic=False)
    assert evaluate(env, policy, episodes=3, seed=1, deterministic=False).returns == first.returns
    assert evaluate(env, policy, episodes=3, seed=2, deterministic=False).returns != first.returns


def test_evaluation_leaves_torch_rng_alone() -> None:
    env = make_env("cooperative_navigation", agents=2)
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    evaluate(env, random_policy(env), episodes=1)
    assert torch.equal(torch.rand(3), expected)


def test_batched_env_runs_rounds_and_keeps_the_asked_number_of_episodes() -> None:
    env = make_env("cooperative_navigation", agents=2, num_envs=3)
    result = evaluate(env, random_policy(env), episodes=4)
    assert result.episodes == 4 and len(set(result.returns)) == 4
    assert result.frames == 2 * 3 * 25  # two rounds of three copies


def test_group_returns_add_up_to_the_team_return() -> None:
    env = make_env("predator_prey", agents=3, adversaries=1)
    result = evaluate(env, random_policy(env), episodes=2)
    assert set(result.group_returns) == {"agent", "adversary"}
    for episode, team in enumerate(result.returns):
        parts = [values[episode] for values in result.group_returns.values()]
        assert team == pytest.approx(sum(parts))


def test_a_config_builds_its_env() -> None:
    config = load_config(data={"env": {"name": "keep_away", "agents": 3, "adversaries": 1}})
    still = make_env("keep_away", agents=3, adversaries=1).full_action_spec.zero()
    result = evaluate(config, lambda td: td.update(still), episodes=2)
    assert result.episodes == 2 and set(result.group_means) == {"agent", "adversary"}
    assert len(result.group_returns["adversary"]) == 2


def test_steps_after_the_first_done_are_not_counted() -> None:
    # Two copies, four steps: copy 0 ends at step 1 (then auto-resets), copy 1 at step 3.
    done = torch.tensor([[0, 1, 0, 1], [0, 0, 0, 1]], dtype=torch.bool)[..., None]
    reward = torch.arange(8.0).reshape(2, 4, 1, 1).expand(2, 4, 2, 1)  # two agents
    rollout = TensorDict({"next": {"done": done, "agent": {"reward": reward}}}, batch_size=[2, 4])
    returns = first_episode_returns(rollout, ["agent"])["agent"]
    assert returns.tolist() == [2 * (0 + 1), 2 * (4 + 5 + 6 + 7)]


def test_an_episode_that_does_not_end_is_an_error() -> None:
    rollout = TensorDict(
        {
            "next": {
                "done": torch.zeros(3, 1, dtype=torch.bool),
                "agent": {"reward": torch.zeros(3, 2, 1)},
            }
        },
        batch_size=[3],
    )
    with pytest.raises(UserError, match="did not end within 3 steps"):
        first_episode_returns(rollout, ["agent"])


def test_summary_and_score() -> None:
    result = EvaluationResult(returns=[-10.0, -30.0], group_returns={"agent": [-10.0, -30.0]})
    assert (result.mean, result.std) == (-20.0, 10.0)
    assert result.as_dict()["returns"] == [-10.0, -30.0]
    assert normalized_score(-20.0, random=-80.0, scripted=-20.0) == 1.0
    assert normalized_score(-80.0, random=-80.0, scripted=-20.0) == 0.0
    with pytest.raises(ValueError, match="equal"):
        normalized_score(-1.0, random=-2.0, scripted=-2.0)


def test_no_episodes_is_an_error() -> None:
    env = make_env("cooperative_navigation", agents=2)
    with pytest.raises(UserError, match="episodes must be >= 1, got 0"):
        evaluate(env, random_policy(env), episodes=0)


def test_the_references_of_fewer_episodes_are_those_of_the_first_episodes() -> None:
    # What lets a run measure its references once for the periodic and the final evaluations.
    env = make_env("cooperative_navigation", agents=2)
    three = reference_episode_returns(env, "cooperative_navigation", episodes=3, seed=0)
    assert three is not None and [len(values) for values in three.values()] == [3, 3]
    two = reference_returns(env, "cooperative_navigation", episodes=2, seed=0)
    assert references_of_first(three, 2) == two


@pytest.mark.parametrize("batched", [False, True], ids=["serial-env", "joint-env-copies"])
def test_copies_whose_episodes_end_apart_are_each_scored_on_their_first_episode(
    batched: bool,
) -> None:
    # TorchRL leaves a nested "_neg_step" mark once some copies are done (a KeyError before).
    env = (
        JointEnvCopies([dice() for _ in range(3)])
        if batched
        else serial_copies(dice, num_envs=3, seed=None, device="cpu")
    )
    result = evaluate(env, random_policy(env), episodes=5, seed=3)
    serial = serial_copies(dice, num_envs=3, seed=None, device="cpu")
    assert result.returns == evaluate(serial, random_policy(env), episodes=5, seed=3).returns
    assert result.episodes == 5 and len(set(result.returns)) > 1
