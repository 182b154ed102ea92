"""The per-agent Adam (functional and as AgentAdam) and the per-agent clip."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from marlplug.errors import UserError
from marlplug.optim import (
    AdamSettings,
    AgentAdam,
    AgentGroupParameters,
    adam,
    adam_,
    clip_grad_norm_per_agent_,
    clip_per_agent,
)
from tests.torch_threads import one_torch_thread  # noqa: F401  (autouse: one torch thread)


def test_functional_adam_matches_torch_adam_and_leaves_its_inputs_alone() -> None:
    torch.manual_seed(0)
    param = torch.randn(3, 4)
    reference = [nn.Parameter(param[i].clone()) for i in range(3)]
    optimizers = [torch.optim.Adam([p], lr=1e-2, foreach=False) for p in reference]
    state = ([param], [torch.zeros(3, 4)], [torch.zeros(3, 4)], torch.zeros(3))
    for _ in range(5):
        grad = torch.randn(3, 4)
        before = [t.clone() for t in (state[0][0], state[1][0], state[2][0], state[3])]
        params, avgs, sqs, step = adam(
            state[0], [grad], state[1], state[2], state[3], settings=AdamSettings(lr=1e-2)
        )
        after = (state[0][0], state[1][0], state[2][0], state[3])
        assert all(torch.equal(x, y) for x, y in zip(before, after, strict=True))
        state = (params, avgs, sqs, step)
        for i, (p, opt) in enumerate(zip(reference, optimizers, strict=True)):
            p.grad = grad[i].clone()
            opt.step()
    assert state[3].tolist() == [5.0, 5.0, 5.0]
    for i in range(3):
        torch.testing.assert_close(state[0][0][i], reference[i].detach(), atol=1e-7, rtol=1e-6)


def test_functional_adam_skips_inactive_agents_exactly() -> None:
    param, grad = torch.randn(3, 4), torch.randn(3, 4)
    moments = [torch.rand(3, 4)], [torch.rand(3, 4)]
    params, avgs, sqs, step = adam(
        [param],
        [grad],
        *moments,
        torch.tensor([2.0, 2.0, 5.0]),
        torch.tensor([True, False, True]),
        settings=AdamSettings(lr=0.1),
    )
    assert torch.equal(params[0][1], param[1]) and torch.equal(avgs[0][1], moments[0][0][1])
    assert torch.equal(sqs[0][1], moments[1][0][1])
    assert step.tolist() == [3.0, 2.0, 6.0]
    assert not torch.equal(params[0][0], param[0]) and not torch.equal(params[0][2], param[2])


def test_clip_per_agent_scales_each_agent_and_zeroes_non_finite_ones() -> None:
    grads = [torch.tensor([[3.0, 4.0], [0.3, 0.4], [float("inf"), 0.0]]), torch.zeros(3, 1)]
    clipped, norms, finite = clip_per_agent(grads, 1.0)
    assert finite.tolist() == [True, True, False]
    assert norms[:2].tolist() == pytest.approx([5.0, 0.5])
    assert float(clipped[0][0].norm()) == pytest.approx(1.0, rel=1e-5)
    assert torch.equal(clipped[0][1], grads[0][1])
    assert torch.count_nonzero(clipped[0][2]) == 0


def test_in_place_clip_equals_the_functional_clip() -> None:
    torch.manual_seed(3)
    grads = [torch.randn(4, 3, 2) * 10, torch.randn(4, 5)]
    params = [nn.Parameter(torch.zeros_like(g)) for g in grads]
    for param, grad in zip(params, grads, strict=True):
        param.grad = grad.clone()
    norms, finite = clip_grad_norm_per_agent_([AgentGroupParameters("g", 4, params)], 1.0)
    clipped, expected_norms, expected_finite = clip_per_agent(grads, 1.0)
    assert torch.equal(norms, expected_norms) and torch.equal(finite, expected_finite)
    for param, grad in zip(params, clipped, strict=True):
        assert torch.equal(param.grad, grad)


def test_one_adam_over_stacked_weights_equals_one_adam_per_agent() -> None:
    torch.manual_seed(0)
    n_agents = 4
    stacked = nn.Parameter(torch.randn(n_agents, 5, 3))
    singles = [nn.Parameter(stacked[i].detach().clone()) for i in range(n_agents)]
    joint = AgentAdam([AgentGroupParameters("agent", n_agents, [stacked])], lr=1e-2)
    separate = [torch.optim.Adam([p], lr=1e-2, foreach=False) for p in singles]
    for _ in range(10):
        grad = torch.randn(n_agents, 5, 3)
        stacked.grad = grad.clone()
        joint.step()
        for i, (param, optimizer) in enumerate(zip(singles, separate, strict=True)):
            param.grad = grad[i].clone()
            optimizer.step()
    for i in range(n_agents):
        torch.testing.assert_close(stacked[i], singles[i], atol=1e-7, rtol=1e-6)
        torch.testing.assert_close(
            joint.state[stacked]["exp_avg_sq"][i], separate[i].state[singles[i]]["exp_avg_sq"]
        )


def test_masked_agents_keep_their_own_step_count() -> None:
    """An agent that skipped steps continues exactly like a per-agent Adam that never saw them."""
    stacked = nn.Parameter(torch.zeros(2, 3))
    single = nn.Parameter(torch.zeros(3))
    joint = AgentAdam([AgentGroupParameters("agent", 2, [stacked])], lr=0.1)
    alone = torch.optim.Adam([single], lr=0.1, foreach=False)
    for step in range(6):
        grad = torch.full((2, 3), float(step + 1))
        stacked.grad = grad
        active = step % 2 == 0
        joint.step(active={"agent": torch.tensor([True, active])})
        if active:
            single.grad = grad[1].clone()
            alone.step()
    torch.testing.assert_close(stacked[1], single, atol=1e-7, rtol=1e-6)
    assert joint.state[stacked]["step"].tolist() == [6.0, 3.0]


@pytest.mark.parametrize("layout", ["transposed", "expanded"])
def test_a_gradient_laid_out_unlike_its_parameter_steps_correctly(layout: str) -> None:
    # The fused kernel pairs elements in memory order: a gradient with other strides must not
    # be paired with the wrong entries of the parameter.
    grad = torch.arange(24.0).reshape(2, 3, 4)
    if layout == "transposed":
        strided = grad.transpose(1, 2).contiguous().transpose(1, 2)
    else:
        grad = torch.arange(4.0).expand(2, 3, 4)
        strided = grad
    assert not strided.is_contiguous()
    results = []
    for given in (grad.contiguous(), strided):
        param = nn.Parameter(torch.zeros(2, 3, 4))
        optimizer = AgentAdam([AgentGroupParameters("agent", 2, [param])], lr=0.1)
        param.grad = given
        optimizer.step()
        results.append(param.detach().clone())
    torch.testing.assert_close(results[1], results[0], rtol=0.0, atol=0.0)


def test_non_contiguous_parameters_are_refused() -> None:
    param = nn.Parameter(torch.zeros(3, 2).T)  # agent dimension 2, not contiguous
    optimizer = AgentAdam([AgentGroupParameters("agent", 2, [param])], lr=0.1)
    param.grad = torch.ones(2, 3)
    with pytest.raises(UserError, match="contiguous"):
        optimizer.step()


def test_an_active_mask_of_the_wrong_length_is_refused() -> None:
    param = nn.Parameter(torch.zeros(2, 3))
    optimizer = AgentAdam([AgentGroupParameters("agent", 2, [param])], lr=0.1)
    param.grad = torch.ones(2, 3)
    with pytest.raises(UserError, match=r"active\['agent'\] has shape \(3,\)"):
        optimizer.step(active={"agent": torch.tensor([True, False, True])})


def test_agents_out_of_lockstep_each_equal_their_own_adam() -> None:
    # Runs of agents with different step counts go through the fused kernel as separate slices.
    torch.manual_seed(1)
    stacked = nn.Parameter(torch.randn(5, 4))
    singles = [nn.Parameter(stacked[i].detach().clone()) for i in range(5)]
    joint = AgentAdam([AgentGroupParameters("agent", 5, [stacked])], lr=1e-2)
    separate = [torch.optim.Adam([p], lr=1e-2, foreach=False) for p in singles]
    masks = [[1, 1, 1, 1, 1], [1, 0, 1, 1, 0], [0, 1, 1, 0, 1], [1, 1, 1, 1, 1], [1, 1, 0, 1, 1]]
    for mask in masks:
        grad = torch.randn(5, 4)
        stacked.grad = grad.clone()
        joint.step(active={"agent": torch.tensor(mask, dtype=torch.bool)})
        for i, on in enumerate(mask):
            if on:
                singles[i].grad = grad[i].clone()
                separate[i].step()
    assert joint.state[stacked]["step"].tolist() == [4.0, 4.0, 4.0, 4.0, 4.0]
    for i in range(5):
        torch.testing.assert_close(stacked[i], singles[i], atol=1e-7, rtol=1e-6)


def test_a_large_but_finite_gradient_is_clipped_not_skipped() -> None:
    param = nn.Parameter(torch.zeros(2, 1000))
    param.grad = torch.cat([torch.full((1, 1000), 1e19), torch.ones(1, 1000)])
    norms, finite = clip_grad_norm_per_agent_([AgentGroupParameters("agent", 2, [param])], 0.5)
    assert finite.tolist() == [True, True]  # float32 would overflow: ‖g_0‖ = 3.16e20
    assert float(norms[0]) == pytest.approx(1e19 * 1000**0.5, rel=1e-6)
    assert float(param.grad[0].double().norm()) == pytest.approx(0.5, rel=1e-4)


def test_tensors_with_different_counts_in_one_call_each_step_by_their_own() -> None:
    # adam_ finds the runs of each distinct count once; tensors whose counts differ (the second)
    # must not take another tensor's runs, and equal counts (the first and third) share them.
    torch.manual_seed(1)
    shapes = [(3, 4), (3, 2), (3, 5)]
    params = [torch.randn(shape) for shape in shapes]
    grads = [torch.randn(shape) for shape in shapes]
    counts = [torch.tensor([2.0, 2.0, 2.0]), torch.tensor([2.0, 7.0, 2.0]), torch.full((3,), 2.0)]
    active, settings = torch.tensor([True, True, False]), AdamSettings(lr=0.1)

    def step(indices: list[int]) -> list[tuple[torch.Tensor, ...]]:
        """Adam on the tensors at ``indices`` in one call: each one's (param, moments, count)."""
        state = [
            (params[i].clone(), torch.zeros(shapes[i]), torch.zeros(shapes[i]), counts[i].clone())
            for i in indices
        ]
        param, avg, sq, count = (list(column) for column in zip(*state, strict=True))
        adam_(param, [grads[i] for i in indices], avg, sq, count, active, settings=settings)
        return state

    together = step([0, 1, 2])
    for index in range(3):
        (alone,) = step([index])
        assert all(torch.equal(x, y) for x, y in zip(together[index], alone, strict=True))
    assert [s[3].tolist() for s in together] == [[3.0, 3.0, 2.0], [3.0, 8.0, 2.0], [3.0, 3.0, 2.0]]
    assert not torch.equal(together[1][0][1], params[1][1])  # agent 1 stepped at its own count
