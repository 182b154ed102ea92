"""Per-agent GAE through JointPPOLoss's value estimator, against a hand-computed example."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from torchrl.objectives.utils import ValueEstimators

from marlplug.errors import UserError
from marlplug.losses import JointPPOLoss
from tests.losses.helpers import make_model

GAMMA, LMBDA = 0.9, 0.8


def _rollout() -> TensorDict:
    """5 steps, 2 agents. Agent 0 terminates after step 1; both are truncated after step 3."""
    values = torch.tensor([[1.0, 2.0], [0.5, 1.5], [3.0, 0.0], [2.0, 1.0], [1.0, -1.0]])
    next_values = torch.tensor([[0.5, 1.5], [9.0, 0.0], [2.0, 1.0], [7.0, 8.0], [4.0, 2.0]])
    rewards = torch.tensor([[1.0, 0.0], [2.0, 1.0], [0.0, -1.0], [1.0, 1.0], [0.5, 0.5]])
    terminated = torch.zeros(5, 2, dtype=torch.bool)
    terminated[1, 0] = True
    truncated = torch.zeros(5, 2, dtype=torch.bool)
    truncated[3, :] = True
    done = terminated | truncated
    # The critic below reads the value straight from the first observation feature.
    return TensorDict(
        {
            ("agent", "observation"): values.unsqueeze(-1),
            ("next", "agent", "observation"): next_values.unsqueeze(-1),
            ("next", "agent", "reward"): rewards.unsqueeze(-1),
            ("next", "agent", "done"): done.unsqueeze(-1),
            ("next", "agent", "terminated"): terminated.unsqueeze(-1),
        },
        batch_size=[5],
    )


def _hand_gae(td: TensorDict) -> tuple[torch.Tensor, torch.Tensor]:
    values = td["agent", "observation"][..., 0]
    next_values = td["next", "agent", "observation"][..., 0]
    rewards = td["next", "agent", "reward"][..., 0]
    done = td["next", "agent", "done"][..., 0].float()
    terminated = td["next", "agent", "terminated"][..., 0].float()
    advantage = torch.zeros(5, 2)
    for agent in range(2):
        running = 0.0
        for t in reversed(range(5)):
            delta = (
                rewards[t, agent]
                + GAMMA * next_values[t, agent] * (1 - terminated[t, agent])
                - values[t, agent]
            )
            running = delta + GAMMA * LMBDA * (1 - done[t, agent]) * running
            advantage[t, agent] = running
    return advantage, advantage + values


def test_gae_matches_a_hand_computed_example_with_terminal_and_truncated_steps() -> None:
    critic = TensorDictModule(
        lambda obs: obs[..., :1],
        in_keys=[("agent", "observation")],
        out_keys=[("agent", "state_value")],
    )
    model = make_model((("agent", 2),))
    loss = JointPPOLoss(actor_network=model.actors, critic_network={"agent": critic})
    loss.make_value_estimator(ValueEstimators.GAE, gamma=GAMMA, lmbda=LMBDA)
    td = _rollout()
    expected_advantage, expected_target = _hand_gae(td)
    # The last step of agent 1 before truncation bootstraps from its next value (8.0), by hand:
    assert float(expected_advantage[3, 1]) == pytest.approx(1.0 + GAMMA * 8.0 - 1.0)
    # Agent 0's terminal step does not bootstrap: r - V(s) + nothing from step 2.
    assert float(expected_advantage[1, 0]) == pytest.approx(2.0 - 0.5)
    loss.value_estimator(td)
    torch.testing.assert_close(td["agent", "advantage"][..., 0], expected_advantage)
    torch.testing.assert_close(td["agent", "value_target"][..., 0], expected_target)


def test_env_level_done_flags_are_broadcast_to_agents() -> None:
    critic = TensorDictModule(
        lambda obs: obs[..., :1],
        in_keys=[("agent", "observation")],
        out_keys=[("agent", "state_value")],
    )
    model = make_model((("agent", 2),))
    loss = JointPPOLoss(actor_network=model.actors, critic_network={"agent": critic})
    loss.make_value_estimator(gamma=GAMMA, lmbda=LMBDA)
    per_agent = _rollout()
    both_done = per_agent["next", "agent", "done"].all(-2)
    per_agent["next", "agent", "done"] = both_done.unsqueeze(-2).expand(5, 2, 1).clone()
    per_agent["next", "agent", "terminated"] = torch.zeros(5, 2, 1, dtype=torch.bool)
    env_level = per_agent.clone()
    env_level["next", "done"] = both_done
    env_level["next", "terminated"] = torch.zeros_like(both_done)
    del env_level["next", "agent", "done"]
    del env_level["next", "agent", "terminated"]
    loss.value_estimator(per_agent)
    loss.value_estimator(env_level)
    torch.testing.assert_close(env_level["agent", "advantage"], per_agent["agent", "advantage"])
    expected, _ = _hand_gae(per_agent)
    torch.testing.assert_close(env_level["agent", "advantage"][..., 0], expected)


def test_only_gae_is_supported() -> None:
    model = make_model()
    loss = JointPPOLoss(actor_network=model.actors, critic_network=model.critics)
    with pytest.raises(UserError, match="available: GAE, MAGAE"):
        loss.make_value_estimator(ValueEstimators.TD0)
