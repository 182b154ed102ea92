"""Issue 13's eight breakages of the ClipPPOLoss -> JointPPOLoss swap, one test each, plus the aux-loss
return checks of issue 11. Networks are built the tutorial's way (``MultiAgentMLP``, group "agents")."""

from __future__ import annotations

import warnings

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from tensordict.nn.distributions import NormalParamExtractor
from torchrl.modules import MultiAgentMLP, ProbabilisticActor, TanhNormal
from torchrl.objectives import ClipPPOLoss, ValueEstimators

import marlplug.build
from marlplug.errors import UserError
from marlplug.losses import JointPPOLoss, RedundancyLoss, sum_losses

N_AGENTS, OBS, ACT, ROWS, STEPS = 3, 6, 2, 8, 5


def tutorial_networks(
    share_params: bool = True, log_prob_key: str | None = None
) -> tuple[ProbabilisticActor, TensorDictModule]:
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        MultiAgentMLP(
            n_agent_inputs=OBS,
            n_agent_outputs=2 * ACT,
            n_agents=N_AGENTS,
            centralized=False,
            share_params=share_params,
            depth=2,
            num_cells=32,
        ),
        NormalParamExtractor(),
    )
    extra = {} if log_prob_key is None else {"log_prob_key": ("agents", log_prob_key)}
    policy = ProbabilisticActor(
        TensorDictModule(
            net,
            in_keys=[("agents", "observation")],
            out_keys=[("agents", "loc"), ("agents", "scale")],
        ),
        in_keys=[("agents", "loc"), ("agents", "scale")],
        out_keys=[("agents", "action")],
        distribution_class=TanhNormal,
        return_log_prob=True,
        **extra,
    )
    critic = TensorDictModule(
        MultiAgentMLP(
            n_agent_inputs=OBS,
            n_agent_outputs=1,
            n_agents=N_AGENTS,
            centralized=True,
            share_params=share_params,
            depth=2,
            num_cells=32,
        ),
        in_keys=[("agents", "observation")],
        out_keys=[("agents", "state_value")],
    )
    return policy, critic


def rollout(policy: ProbabilisticActor, seed: int = 1) -> TensorDict:
    """``[ROWS, STEPS]`` of tutorial-shaped data: per-agent rewards, env-level done flags."""
    generator = torch.Generator().manual_seed(seed)
    td = TensorDict(
        {
            ("agents", "observation"): torch.randn(ROWS, STEPS, N_AGENTS, OBS, generator=generator),
            ("next", "agents", "observation"): torch.randn(
                ROWS, STEPS, N_AGENTS, OBS, generator=generator
            ),
            ("next", "agents", "reward"): torch.randn(
                ROWS, STEPS, N_AGENTS, 1, generator=generator
            ),
            ("next", "done"): torch.zeros(ROWS, STEPS, 1, dtype=torch.bool),
            ("next", "terminated"): torch.zeros(ROWS, STEPS, 1, dtype=torch.bool),
        },
        batch_size=[ROWS, STEPS],
    )
    with torch.no_grad():
        torch.manual_seed(seed)
        policy(td)
    return td


def tutorial_loss(
    policy: ProbabilisticActor, critic: TensorDictModule, **kwargs: object
) -> JointPPOLoss:
    loss = JointPPOLoss(actor_network=policy, critic_network=critic, **kwargs)  # type: ignore[arg-type]
    loss.set_keys(value=("agents", "state_value"), reward=("agents", "reward"))
    loss.make_value_estimator(ValueEstimators.GAE, gamma=0.9, lmbda=0.9)
    return loss


def test_point1_a_policy_without_features_works_and_aux_losses_name_the_missing_key() -> None:
    policy, critic = tutorial_networks()
    data = rollout(policy)
    out = tutorial_loss(policy, critic)(data)
    assert torch.isfinite(out["loss_objective"])
    with_aux = tutorial_loss(policy, critic, aux_losses={"redundancy": RedundancyLoss()})
    with pytest.raises(UserError) as error:
        with_aux(data)
    message = str(error.value)
    assert "\n" not in message
    assert "('agents', 'features')" in message and "redundancy" in message
    with_aux.set_keys(features="loc")  # any key the actor writes
    assert torch.isfinite(with_aux(data)["loss_redundancy"])


def test_point2_gae_takes_the_critic_params_the_tutorial_passes() -> None:
    policy, critic = tutorial_networks()
    loss = tutorial_loss(policy, critic)
    data = rollout(policy)
    loss.value_estimator(
        data, params=loss.critic_network_params, target_params=loss.target_critic_network_params
    )
    plain = rollout(policy)
    loss.value_estimator(plain)
    torch.testing.assert_close(data["agents", "advantage"], plain["agents", "advantage"])
    # The params are really used: zeroed critic weights give another advantage.
    zeroed = loss.critic_network_params.detach().clone().zero_()
    other = rollout(policy)
    loss.value_estimator(other, params=zeroed, target_params=zeroed)
    assert not torch.allclose(other["agents", "advantage"], plain["agents", "advantage"])
    assert data["agents", "advantage"].shape == (ROWS, STEPS, N_AGENTS, 1)


def test_point3_repr_out_keys_and_select_out_keys() -> None:
    policy, critic = tutorial_networks()
    loss = tutorial_loss(policy, critic)
    text = repr(loss)
    assert "JointPPOLoss" in text and "groups=['agents']" in text and "reduction='mean'" in text
    clip = ClipPPOLoss(policy, critic)
    assert set(clip.out_keys) <= set(loss.out_keys)
    data = rollout(policy)
    loss.value_estimator(data)
    assert set(loss(data).keys()) == set(loss.out_keys)
    loss.select_out_keys("loss_objective", "loss_critic")
    # Leaves: the hook's select() may keep an empty ("agents",) node (the in_keys' prefix).
    assert set(loss(data).keys(True, True)) == {"loss_objective", "loss_critic"}


@pytest.mark.parametrize("share_params", [True, False])
def test_point4_agent_slices_count_agents_for_shared_and_per_agent_networks(
    share_params: bool,
) -> None:
    policy, critic = tutorial_networks(share_params=share_params)
    loss = tutorial_loss(policy, critic)
    assert loss.agent_slices() == [("agents", 0), ("agents", 1), ("agents", 2)]


def test_point5_keys_are_accepted_as_torchrl_accepts_them() -> None:
    policy, critic = tutorial_networks(log_prob_key="sample_log_prob")
    loss = JointPPOLoss(actor_network=policy, critic_network=critic)
    # The log-prob key comes from the actor, as in ClipPPOLoss.
    assert ("agents", "sample_log_prob") in loss.in_keys
    loss.set_keys(
        value=("agents", "state_value"),
        sample_log_prob=("agents", "sample_log_prob"),
        done=("agents", "done"),
        terminated=("agents", "terminated"),
    )
    assert ("agents", "agents", "state_value") not in loss.in_keys
    data = rollout(policy)
    assert ("agents", "sample_log_prob") in data.keys(True)
    out = loss(data)  # runs GAE itself (no advantage yet), reading the absolute keys
    assert torch.isfinite(out["loss_critic"])


def test_point6_defaults_are_torchrl_s_and_reduction_averages_over_agents() -> None:
    policy, critic = tutorial_networks()
    joint, clip = JointPPOLoss(policy, critic), ClipPPOLoss(policy, critic)
    assert joint.normalize_advantage is clip.normalize_advantage is False
    assert joint.critic_coeff == float(clip.critic_coeff) == 1.0
    assert joint.loss_critic_type == clip.loss_critic_type == "smooth_l1"
    assert joint.clip_value is None and clip.clip_value is None
    assert joint.reduction == clip.reduction == "mean"
    marlplug_style = JointPPOLoss(policy, critic, defaults="marlplug")
    assert (marlplug_style.critic_coeff, marlplug_style.clip_value) == (0.5, 0.2)
    assert marlplug_style.reduction == "agent_sum"
    data = rollout(policy)
    outputs = {}
    for reduction in ("mean", "sum", "none", "agent_sum"):
        loss = tutorial_loss(policy, critic, reduction=reduction)
        outputs[reduction] = loss(data.clone())
    per_agent = outputs["mean"]["agents", "policy_loss"]
    torch.testing.assert_close(outputs["mean"]["loss_objective"], per_agent.mean())
    torch.testing.assert_close(outputs["agent_sum"]["loss_objective"], per_agent.sum())
    assert outputs["none"]["loss_objective"].shape == (ROWS * STEPS, N_AGENTS)
    torch.testing.assert_close(
        outputs["sum"]["loss_objective"], outputs["none"]["loss_objective"].sum()
    )


def _train_steps(
    loss: JointPPOLoss, data: TensorDict, total: object
) -> list[warnings.WarningMessage]:
    optimizer = torch.optim.Adam(loss.parameters(), 1e-3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            loss_vals = loss(data)
            value = total(loss_vals)  # type: ignore[operator]
            value.backward()
            optimizer.step()
            optimizer.zero_grad()
    return [w for w in caught if "JointPPOLoss" in str(w.message)]


def test_point7_a_sum_that_drops_the_aux_loss_is_reported() -> None:
    policy, critic = tutorial_networks()
    data = rollout(policy)
    loss = tutorial_loss(policy, critic, aux_losses={"redundancy": RedundancyLoss()})
    loss.set_keys(features="loc")
    loss.value_estimator(data)

    def tutorial_sum(v: TensorDict) -> torch.Tensor:
        return v["loss_objective"] + v["loss_critic"] + v["loss_entropy"]

    caught = _train_steps(loss, data, tutorial_sum)
    assert len(caught) == 1  # once, not every step
    assert "loss_redundancy" in str(caught[0].message)
    assert "sum_losses" in str(caught[0].message)
    fresh = tutorial_loss(policy, critic, aux_losses={"redundancy": RedundancyLoss()})
    fresh.set_keys(features="loc")
    assert _train_steps(fresh, data, sum_losses) == []


def test_point8_a_public_config_to_trainer_and_loss_entry() -> None:
    config = {
        "env": {"name": "cooperative_navigation", "agents": 2},
        "algorithm": {"name": "ppo", "clip_range": 0.1},
        "losses": [{"name": "redundancy", "coef": 0.1}],
        "train": {"rollout_steps": 20, "minibatch_size": 10},
    }
    setup = marlplug.build.build_loss(config)
    assert isinstance(setup.loss, JointPPOLoss)
    assert setup.loss.reduction == "agent_sum"  # the trainer's own settings
    assert setup.loss.clip_epsilon == 0.1  # the algorithm's option
    rollout_data = setup.env.rollout(5, setup.policy)
    setup.loss.value_estimator(rollout_data)
    total = sum_losses(setup.loss(rollout_data.reshape(-1)))
    total.backward()
    assert torch.isfinite(total)
    trainer = marlplug.build.build_trainer(config, ["seed=2"])
    assert trainer.config.seed == 2
    trainer.close()
    for bad, field in (
        ({**config, "losses": [{"name": "redundancy"}, {"name": "redundancyy"}]}, "losses[1]"),
        ({**config, "env": {"name": "cooperative_navigaton"}}, "env"),
    ):
        with pytest.raises(UserError) as error:
            marlplug.build.build_trainer(bad)
        assert field in str(error.value)


@pytest.mark.parametrize(
    ("returned", "expected"),
    [
        (lambda z: torch.stack([f.sum() for f in z]), r"shape \[3\]"),
        (lambda z: z[0].sum(-1), r"shape \[40\]"),
        (lambda z: 0.5, "returned float"),
        (lambda z: torch.tensor(1), "torch.int64"),
        (lambda z: z[0] @ z[1], "raised RuntimeError"),
    ],
)
def test_aux_losses_must_return_a_float_scalar_tensor(returned: object, expected: str) -> None:
    class BadAux(torch.nn.Module):
        def forward(self, features: list[torch.Tensor]) -> object:
            return returned(features)  # type: ignore[operator]

    policy, critic = tutorial_networks()
    loss = tutorial_loss(policy, critic, aux_losses={"mine": BadAux()})
    loss.set_keys(features="loc")
    data = rollout(policy)[:, 0]
    data.batch_size = [ROWS]
    data = torch.cat([rollout(policy, seed=s)[:, 0] for s in range(5)])
    loss.value_estimator(rollout(policy))  # just builds it
    data["agents", "advantage"] = torch.randn(40, N_AGENTS, 1)
    data["agents", "value_target"] = torch.randn(40, N_AGENTS, 1)
    with pytest.raises(UserError, match=expected) as error:
        loss(data)
    assert "aux loss 'mine'" in str(error.value) and "\n" not in str(error.value)
