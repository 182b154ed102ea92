"""Action masks in PPO's discrete policy (issue 45): the rollout policy and the loss's actor act among
the valid actions only, the loss's log-probabilities and entropy are the masked categorical's, a group
without a mask keeps the plain categorical, and a mask that does not fit is a one-line error."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from torchrl.data import Categorical
from torchrl.envs.utils import ExplorationType, set_exploration_type
from torchrl.modules import MaskedCategorical

from marlplug.envs import make_env, read_layout
from marlplug.envs.joint import JointEnvWrapper, JointStepResult
from marlplug.errors import UserError
from marlplug.losses import JointPPOLoss
from marlplug.nn import GroupSpec, JointActorCritic

OBS, ACTIONS, AGENTS, ROWS = 6, 5, 3, 2000


def _model(*, masked: bool, seed: int = 0) -> JointActorCritic:
    torch.manual_seed(seed)
    spec = GroupSpec(
        group="agent",
        agent_names=tuple(f"agent_{i}" for i in range(AGENTS)),
        observation_dim=OBS,
        n_actions=ACTIONS,
        action_mask=masked,
    )
    return JointActorCritic([spec], hidden_size=16, feature_dim=8)


def _observations(seed: int = 1) -> TensorDict:
    """Rows of observations and random masks, every row with at least one valid action."""
    generator = torch.Generator().manual_seed(seed)
    observation = 3.0 * torch.randn(ROWS, AGENTS, OBS, generator=generator)
    mask = torch.rand(ROWS, AGENTS, ACTIONS, generator=generator) < 0.4
    one_valid = torch.randint(ACTIONS, (ROWS, AGENTS, 1), generator=generator)
    mask.scatter_(-1, one_valid, True)
    return TensorDict(
        {("agent", "observation"): observation, ("agent", "action_mask"): mask}, batch_size=[ROWS]
    )


def _logits(model: JointActorCritic, td: TensorDict) -> torch.Tensor:
    nets = model.groups["agent"]
    with torch.no_grad():
        return nets.policy_head.module(nets.encoder.module(td["agent", "observation"]))


def _valid(td: TensorDict) -> torch.Tensor:
    """Whether each agent's action in ``td`` is allowed by its mask."""
    action = td["agent", "action"].unsqueeze(-1)
    return td["agent", "action_mask"].gather(-1, action).squeeze(-1)


@pytest.mark.parametrize("exploration", [ExplorationType.RANDOM, ExplorationType.DETERMINISTIC])
def test_the_rollout_policy_never_takes_a_masked_action(exploration: ExplorationType) -> None:
    model, td = _model(masked=True), _observations()
    unmasked = _logits(model, td).argmax(-1)
    torch.manual_seed(0)
    with set_exploration_type(exploration), torch.no_grad():
        model.policy(td)
    assert bool(_valid(td).all())
    # The test can fail: unmasked, the network's favourite action is often a masked one.
    assert not bool(td["agent", "action_mask"].gather(-1, unmasked.unsqueeze(-1)).all())
    if exploration is ExplorationType.DETERMINISTIC:
        masked_logits = _logits(model, td).masked_fill(~td["agent", "action_mask"], -torch.inf)
        assert torch.equal(td["agent", "action"], masked_logits.argmax(-1))


@pytest.mark.parametrize("exploration", [ExplorationType.RANDOM, ExplorationType.DETERMINISTIC])
def test_the_loss_actor_never_takes_a_masked_action(exploration: ExplorationType) -> None:
    model, td = _model(masked=True), _observations()
    torch.manual_seed(0)
    with set_exploration_type(exploration), torch.no_grad():
        model.actors["agent"](td)
    assert bool(_valid(td).all())


def test_sampling_follows_the_masked_probabilities() -> None:
    """Each valid action is drawn about as often as the masked categorical says (one observation
    repeated, so every row has the same distribution)."""
    model = _model(masked=True)
    td = _observations()[:1].expand(20_000).clone()
    torch.manual_seed(0)
    with torch.no_grad():
        model.policy(td)
    expected = MaskedCategorical(logits=_logits(model, td[:1]), mask=td[:1]["agent", "action_mask"])
    counts = torch.nn.functional.one_hot(td["agent", "action"], ACTIONS).float().mean(0)
    torch.testing.assert_close(counts, expected.probs[0], atol=0.015, rtol=0)


def test_the_loss_uses_the_masked_log_probabilities_and_entropy() -> None:
    model, td = _model(masked=True), _observations()
    torch.manual_seed(0)
    with torch.no_grad():
        model.policy(td)
        for critic in model.critics.values():
            critic(td)
    generator = torch.Generator().manual_seed(2)
    td.set(("agent", "advantage"), torch.randn(ROWS, AGENTS, 1, generator=generator))
    td.set(("agent", "value_target"), td["agent", "state_value"] + 1.0)
    batch = td.exclude(("agent", "features"), ("agent", "logits"))
    expected = MaskedCategorical(logits=_logits(model, td), mask=td["agent", "action_mask"])

    actor = model.actors["agent"]
    distribution = actor.get_dist(batch.select(*actor.in_keys))
    assert isinstance(distribution, MaskedCategorical)
    torch.testing.assert_close(
        distribution.log_prob(batch["agent", "action"]),
        expected.log_prob(batch["agent", "action"]),
        atol=0,
        rtol=0,
    )
    # The rollout policy's log-probabilities are the loss's: every ratio of the first epoch is 1.
    torch.testing.assert_close(
        batch["agent", "action_log_prob"], expected.log_prob(batch["agent", "action"])
    )
    loss = JointPPOLoss(
        actor_network=model.actors, critic_network=model.critics, defaults="marlplug"
    )
    with torch.no_grad():
        out = loss(batch)
    torch.testing.assert_close(out["max_ratio"], torch.tensor(1.0))
    torch.testing.assert_close(out["mean_ratio"], torch.tensor(1.0))
    torch.testing.assert_close(out["agent", "entropy"], expected.entropy().mean(0))
    unmasked_entropy = torch.distributions.Categorical(logits=_logits(model, td)).entropy()
    assert bool((out["agent", "entropy"] < unmasked_entropy.mean(0) - 0.1).all())


def test_a_group_without_a_mask_keeps_the_plain_categorical() -> None:
    model, td = _model(masked=False), _observations()
    assert ("agent", "action_mask") not in model.policy.in_keys
    assert ("agent", "action_mask") not in model.actors["agent"].in_keys
    distribution = model.actors["agent"].get_dist(td.select(("agent", "observation")))
    assert type(distribution) is torch.distributions.Categorical
    # Same weights as the masked model (same seed): without a mask it picks masked actions.
    with set_exploration_type(ExplorationType.DETERMINISTIC), torch.no_grad():
        model.policy(td)
    assert not bool(_valid(td).all())


def test_lbf_layout_has_a_mask_and_mpe_has_none() -> None:
    lbf = make_env("Foraging-8x8-2p-2f-coop-v3", backend="gymnasium", seed=0)
    assert read_layout(lbf).group("agent").action_mask
    mpe = make_env("cooperative_navigation", agents=2, seed=0)
    assert not any(group.action_mask for group in read_layout(mpe))


class _Counter:
    """Two agents, observation = step count; every action valid."""

    num_agents = 2

    def reset(self, seed: int | None = None) -> list[torch.Tensor]:
        return [torch.zeros(1), torch.zeros(1)]

    def step(self, actions: list[torch.Tensor]) -> JointStepResult:
        return JointStepResult([0.0, 0.0], done=True, observations=self.reset())

    def action_mask(self) -> torch.Tensor:
        return torch.ones(2, 3, dtype=torch.bool)


def _with_mask_spec(env: JointEnvWrapper, shape: tuple[int, ...]) -> JointEnvWrapper:
    """``env`` declaring an ``action_mask`` of ``shape`` (as a buggy env adapter would)."""
    observation_spec = env.observation_spec.clone()
    observation_spec["agent", "action_mask"] = Categorical(2, shape, dtype=torch.bool)
    env.observation_spec = observation_spec
    return env


def _one_line_error(env: JointEnvWrapper) -> str:
    with pytest.raises(UserError) as caught:
        read_layout(env)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_a_mask_of_the_wrong_shape_is_a_one_line_error() -> None:
    env = JointEnvWrapper(_Counter(), n_actions=3, action_mask=True)
    assert read_layout(env).group("agent").action_mask
    message = _one_line_error(_with_mask_spec(env, (2, 4)))
    assert "group 'agent': action_mask of shape (2, 4)" in message
    assert "(..., 2, 3)" in message


def test_a_mask_on_continuous_actions_is_a_one_line_error() -> None:
    env = JointEnvWrapper(_Counter(), action_low=[-1.0, -1.0, -1.0], action_high=[1.0, 1.0, 1.0])
    message = _one_line_error(_with_mask_spec(env, (2, 3)))
    assert "group 'agent': an action_mask needs discrete actions" in message
    assert "continuous" in message
