"""JointPPOLoss: equality with per-agent ClipPPOLoss, clipping math, gradient isolation, TorchRL API."""

from __future__ import annotations

import math

import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from torch import nn
from torch.distributions import Categorical
from torchrl.modules import ProbabilisticActor
from torchrl.objectives import ClipPPOLoss

from marlplug.bench.loss_sides import per_agent_batches
from marlplug.errors import UserError
from marlplug.losses import JointPPOLoss, RedundancyLoss, sum_losses
from marlplug.nn import JointActorCritic
from marlplug.nn.stacked import StackedLinear, StackedMLP
from tests.losses.helpers import make_batch, make_loss, make_model


def _linear_from_stack(layer: StackedLinear, agent: int) -> nn.Linear:
    linear = nn.Linear(layer.in_features, layer.out_features)
    with torch.no_grad():
        linear.weight.copy_(layer.weight[agent].T)
        linear.bias.copy_(layer.bias[agent])
    return linear


def _mlp_from_stack(mlp: StackedMLP, agent: int) -> nn.Sequential:
    return nn.Sequential(
        *[
            _linear_from_stack(layer, agent) if isinstance(layer, StackedLinear) else nn.Tanh()
            for layer in mlp.layers
        ]
    )


def _separate_clip_ppo_losses(
    model: JointActorCritic, batch: TensorDict, **kwargs: object
) -> list[TensorDict]:
    """One independent TorchRL ClipPPOLoss per agent, on that agent's slice of the batch."""
    nets = model.groups["agent"]
    encoder, head, critic = nets.encoder.module, nets.policy_head.module, nets.critic.module
    outputs = []
    agent_batches = per_agent_batches(batch)
    for agent in range(nets.spec.n_agents):
        actor_net = nn.Sequential(_mlp_from_stack(encoder, agent), _linear_from_stack(head, agent))
        actor = ProbabilisticActor(
            TensorDictModule(actor_net, in_keys=["observation"], out_keys=["logits"]),
            in_keys=["logits"],
            out_keys=["action"],
            distribution_class=Categorical,
            return_log_prob=True,
        )
        value = TensorDictModule(
            _mlp_from_stack(critic, agent), in_keys=["all_observations"], out_keys=["state_value"]
        )
        loss = ClipPPOLoss(actor, value, loss_critic_type="l2", **kwargs)  # type: ignore[arg-type]
        loss.set_keys(sample_log_prob="action_log_prob")
        outputs.append(loss(agent_batches[agent]))
    return outputs


@pytest.mark.parametrize("normalize", [True, False])
def test_equals_sum_of_independent_clip_ppo_losses(normalize: bool) -> None:
    model = make_model((("agent", 3),))
    batch = make_batch(model, rows=128)
    settings = dict(
        clip_epsilon=0.2,
        entropy_coeff=0.01,
        critic_coeff=0.5,
        normalize_advantage=normalize,
        clip_value=0.2,
    )
    joint = make_loss(model, **settings)(batch)
    separate = _separate_clip_ppo_losses(model, batch, **settings)
    for key in ("loss_objective", "loss_critic", "loss_entropy"):
        expected = sum(out[key] for out in separate)
        torch.testing.assert_close(joint[key], expected, atol=1e-6, rtol=0)
    total_separate = sum(
        sum_losses(out, ["loss_objective", "loss_critic", "loss_entropy"]) for out in separate
    )
    torch.testing.assert_close(sum_losses(joint), total_separate, atol=1e-6, rtol=0)
    clip_fractions = torch.stack([out["clip_fraction"] for out in separate])
    torch.testing.assert_close(joint["agent", "clip_fraction"], clip_fractions)


def test_clipping_math_matches_the_formula() -> None:
    model = make_model((("agent", 2),))
    batch = make_batch(model, rows=6)
    loss = make_loss(model, normalize_advantage=False, clip_epsilon=0.2, entropy_coeff=0.0)
    with torch.no_grad():
        new_log_prob = (
            model.actors["agent"]
            .get_dist(batch.select(("agent", "observation")))
            .log_prob(batch["agent", "action"])
        )
    ratios = torch.tensor([[1.5, 0.5], [1.5, 0.5], [1.1, 0.9], [0.7, 1.3], [0.7, 1.3], [1.0, 1.0]])
    advantages = torch.tensor(
        [[2.0, -2.0], [-2.0, 2.0], [1.0, -1.0], [1.0, 1.0], [-1.0, -1.0], [3.0, 3.0]]
    )
    batch["agent", "action_log_prob"] = new_log_prob - ratios.log()
    batch["agent", "advantage"] = advantages.unsqueeze(-1)
    expected = torch.empty(2)
    for agent in range(2):
        terms = []
        for ratio, adv in zip(
            ratios[:, agent].tolist(), advantages[:, agent].tolist(), strict=True
        ):
            clipped = min(max(ratio, 0.8), 1.2)
            terms.append(-min(ratio * adv, clipped * adv))
        expected[agent] = sum(terms) / len(terms)
    out = loss(batch)
    torch.testing.assert_close(out["agent", "policy_loss"], expected, atol=1e-5, rtol=0)
    torch.testing.assert_close(out["loss_objective"], expected.sum(), atol=1e-5, rtol=0)
    # Rows whose ratio left [0.8, 1.2]: 4 of 6 for each agent.
    torch.testing.assert_close(out["agent", "clip_fraction"], torch.tensor([4 / 6, 4 / 6]))


def test_clipped_rows_give_no_policy_gradient() -> None:
    model = make_model((("agent", 2),))
    batch = make_batch(model, rows=8)
    with torch.no_grad():
        log_prob = (
            model.actors["agent"]
            .get_dist(batch.select(("agent", "observation")))
            .log_prob(batch["agent", "action"])
        )
    batch["agent", "action_log_prob"] = log_prob - math.log(1.5)  # ratio 1.5 > 1 + ε everywhere
    batch["agent", "advantage"] = torch.ones(8, 2, 1)  # positive: the clipped term is the min
    loss = make_loss(model, normalize_advantage=False)
    objective = loss(batch)["loss_objective"]
    grads = torch.autograd.grad(objective, list(model.actors["agent"].parameters()))
    assert all(torch.count_nonzero(grad) == 0 for grad in grads)


def test_gradient_isolation_between_agents() -> None:
    model = make_model((("agent", 3), ("adversary", 2)))
    batch = make_batch(model, rows=32)
    loss = make_loss(model)
    agent_losses = loss.agent_losses(batch)
    assert agent_losses.shape == (5,)
    slices = loss.agent_slices()
    params = {group: list(model.groups[group].parameters()) for group in model.group_sizes}
    for agent, (own_group, own_index) in enumerate(slices):
        grads = torch.autograd.grad(
            agent_losses[agent],
            [p for ps in params.values() for p in ps],
            retain_graph=True,
            allow_unused=True,
        )
        position = 0
        for group, group_params in params.items():
            for _ in group_params:
                grad = grads[position]
                position += 1
                grad = torch.zeros(1) if grad is None else grad
                for index in range(model.group_sizes[group]):
                    block = grad[index] if grad.ndim > 0 and grad.shape[0] > index else grad
                    if (group, index) == (own_group, own_index):
                        continue
                    assert torch.count_nonzero(block) == 0, (agent, group, index)
        own = [g for g in grads if g is not None]
        assert any(torch.count_nonzero(g[own_index]) > 0 for g in own)


def test_output_structure_and_diagnostics() -> None:
    model = make_model((("agent", 3), ("adversary", 2)))
    batch = make_batch(model)
    out = make_loss(model, aux_losses={"redundancy": RedundancyLoss(coef=0.5)})(batch)
    loss_keys = {k for k in out.keys() if k.startswith("loss_")}  # noqa: SIM118
    assert loss_keys == {"loss_objective", "loss_critic", "loss_entropy", "loss_redundancy"}
    for group, n in (("agent", 3), ("adversary", 2)):
        for stat in (
            "policy_loss",
            "value_loss",
            "entropy",
            "clip_fraction",
            "approx_kl",
            "explained_variance",
        ):
            assert out[group, stat].shape == (n,)
            assert not out[group, stat].requires_grad
    assert out["aux_stats", "redundancy", "dead_features"] == 0
    assert (out["agent", "approx_kl"] >= 0).all()


def test_set_keys_rejects_unknown_names_and_renames_inputs() -> None:
    model = make_model()
    loss = make_loss(model)
    with pytest.raises(ValueError, match="accepted"):
        loss.set_keys(advantages="adv")
    batch = make_batch(model)
    expected = loss(batch)["loss_objective"]
    batch.rename_key_(("agent", "advantage"), ("agent", "adv"))
    loss.set_keys(advantage="adv")
    torch.testing.assert_close(loss(batch)["loss_objective"], expected)


def test_bad_arguments_are_user_errors() -> None:
    model = make_model()
    with pytest.raises(UserError, match="clip_epsilon"):
        make_loss(model, clip_epsilon=1.5)
    with pytest.raises(UserError, match="loss_critic_type"):
        make_loss(model, loss_critic_type="huber")
    with pytest.raises(TypeError):
        JointPPOLoss(model.actors, model.critics, None)  # type: ignore[misc]
