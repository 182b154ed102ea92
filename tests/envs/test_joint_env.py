"""A user's own non-TorchRL environment (a :class:`JointEnv`) trains with the joint trainer through
:class:`JointEnvWrapper`; the wrapper's data matches its specs, it reseeds, and misuse is one line."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from torchrl.envs.utils import ExplorationType, check_env_specs, set_exploration_type

import marlplug
from marlplug.build import build_trainer
from marlplug.envs import JointEnv, JointEnvWrapper, JointStepResult, MultiAgentEnvAdapter
from marlplug.errors import UserError
from marlplug.nn import JointActorCritic
from marlplug.testing import check_env_scenario, register_plugin
from marlplug.train import JointMultiAgentTrainer, JointTrainerConfig
from tests.envs.line_world import LinePursuit, LinePursuitScenario


def _greedy_reward(policy: torch.nn.Module, *, seed: int) -> float:
    """Mean reward per agent and step of the greedy policy over 5 seeded episodes."""
    env = JointEnvWrapper(LinePursuit(), n_actions=3)
    env.set_seed(seed)
    with set_exploration_type(ExplorationType.DETERMINISTIC), torch.no_grad():
        rollout = env.rollout(60, policy, break_when_any_done=False)
    return float(rollout["next", "agent", "reward"].mean())


def test_a_joint_env_trains_with_the_joint_trainer() -> None:
    env = JointEnvWrapper(LinePursuit(), n_actions=3)
    config = JointTrainerConfig(rollout_steps=120, minibatch_size=120, n_epochs=4, lr=1e-2, seed=0)
    trainer = JointMultiAgentTrainer(env, config=config)
    before = _greedy_reward(trainer.model.policy, seed=123)
    returns = [trainer.train_update().mean_return for _ in range(6)]
    after = _greedy_reward(trainer.model.policy, seed=123)
    trainer.close()
    assert all(r is not None for r in returns)  # 12-step episodes end inside every rollout
    # Random moves earn about -0.1 per step, chasing about +0.5 (the prey walks away at times);
    # across training seeds, six updates take the greedy policy from <= 0.2 to >= 0.3.
    assert after > before + 0.15 and after > 0.25, (before, after, returns)


def test_a_joint_env_scenario_trains_from_a_config() -> None:
    @marlplug.hookimpl
    def marlplug_envs() -> dict[str, type]:
        return {"joint/line_pursuit": LinePursuitScenario}

    with register_plugin(SimpleNamespace(marlplug_envs=marlplug_envs), name="line-pursuit"):
        check_env_scenario(
            LinePursuitScenario, options={"agents": 3}, num_envs=(1,), steps=6, renders=False
        )
        trainer = build_trainer(
            {
                "env": {"name": "line_pursuit", "backend": "joint", "agents": 2, "max_steps": 12},
                "train": {"rollout_steps": 24, "minibatch_size": 24, "n_epochs": 1},
            }
        )
        stats = trainer.train_update()
        trainer.close()
    assert trainer.agent_names == ["agent_0", "agent_1"]
    assert stats.mean_return is not None and stats.frames == 24


def test_continuous_actions_train_one_update() -> None:
    env = JointEnvWrapper(LinePursuit(continuous=True), action_low=[-1.0], action_high=[1.0])
    config = JointTrainerConfig(rollout_steps=24, minibatch_size=24, n_epochs=1, seed=0)
    trainer = JointMultiAgentTrainer(env, config=config)
    stats = trainer.train_update()
    trainer.close()
    assert trainer.model.groups["agent"].spec.continuous
    assert stats.mean_return is not None and len(stats.per_agent["grad_norm"]) == 2


@pytest.mark.parametrize("continuous", [False, True])
def test_data_matches_specs(continuous: bool) -> None:
    actions = {"action_low": [-1.0], "action_high": [1.0]} if continuous else {"n_actions": 3}
    env = JointEnvWrapper(LinePursuit(num_agents=3, continuous=continuous), **actions)
    check_env_specs(env)
    assert env.group_map == {"agent": ["agent_0", "agent_1", "agent_2"]}
    rollout = env.rollout(12)
    assert rollout["next", "agent", "reward"].shape == (12, 3, 1)
    assert bool(rollout["next", "truncated"][-1]) and not bool(rollout["next", "terminated"].any())


def test_same_seed_same_episode() -> None:
    def episode(seed: int) -> torch.Tensor:
        env = JointEnvWrapper(LinePursuit(), n_actions=3)
        env.set_seed(seed)
        torch.manual_seed(0)  # rand_action draws from the global generator
        return env.rollout(12).get(("next", "agent", "observation"))

    assert torch.equal(episode(5), episode(5))
    assert not torch.equal(episode(5), episode(6))


def test_the_layout_is_the_joint_envs() -> None:
    env = JointEnvWrapper(
        LinePursuit(num_agents=3), n_actions=3, group="pursuer", agent_names=["a", "b", "c"]
    )
    agents = MultiAgentEnvAdapter(env).agents
    assert [(a.name, a.group, a.obs_dim, a.action_dim) for a in agents] == [
        (name, "pursuer", 2, 3) for name in "abc"
    ]
    assert JointActorCritic.from_env(env, hidden_size=8, feature_dim=8).agent_names == [
        ("pursuer", name) for name in "abc"
    ]


class _Broken:
    """Returns one observation too few from step()."""

    num_agents = 2

    def reset(self, seed: int | None = None) -> list[torch.Tensor]:
        return [torch.zeros(3), torch.zeros(3)]

    def step(self, actions: list[torch.Tensor]) -> JointStepResult:
        return JointStepResult([0.0, 0.0], done=False, observations=[torch.zeros(3)])


def test_mistakes_are_one_line_user_errors() -> None:
    assert isinstance(LinePursuit(), JointEnv) and not isinstance(object(), JointEnv)
    with pytest.raises(UserError, match="object is not a JointEnv: it needs num_agents"):
        JointEnvWrapper(object(), n_actions=3)  # type: ignore[arg-type]
    with pytest.raises(
        UserError, match=r"either as n_actions \(discrete\) or as action_low and action_high"
    ):
        JointEnvWrapper(LinePursuit(), n_actions=3, action_low=[-1.0], action_high=[1.0])
    with pytest.raises(UserError, match="either as n_actions"):
        JointEnvWrapper(LinePursuit())
    with pytest.raises(UserError, match="action_low and action_high with one entry"):
        JointEnvWrapper(LinePursuit(), action_low=[-1.0])
    with pytest.raises(UserError, match="1 agent_names for 2 agents"):
        JointEnvWrapper(LinePursuit(), n_actions=3, agent_names=["solo"])
    with pytest.raises(UserError, match="observations of length 3"):
        JointEnvWrapper(LinePursuit(), n_actions=3, observation_dim=3).reset()
    env = JointEnvWrapper(_Broken(), n_actions=2)
    with pytest.raises(UserError, match=r"^_Broken.step\(\) returned 1 observations of length 3; "):
        env.rollout(2)
