"""The observation normalizer (``algorithm.obs_norm``): exact running statistics per agent, a
standardize-and-clip forward, no gradient into its statistics."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from marlplug.nn import (
    ObservationNormalized,
    ObservationNormalizer,
    StackedMLP,
    observation_normalizers,
)
from tests.losses.helpers import make_batch, make_loss, make_model


@settings(max_examples=25, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 9), min_size=1, max_size=4),
    scale=st.floats(0.1, 100.0),
    offset=st.floats(-50.0, 50.0),
)
def test_the_statistics_are_those_of_every_row_folded_in(
    sizes: list[int], scale: float, offset: float
) -> None:
    generator = torch.Generator().manual_seed(len(sizes))
    chunks = [
        torch.randn(size, 2, 3, generator=generator, dtype=torch.float64) * scale + offset
        for size in sizes
    ]
    norm = ObservationNormalizer(n_agents=2, observation_dim=3).double()
    for chunk in chunks:
        norm.update(chunk)
    every = torch.cat(chunks)
    mean, var, count = norm.moments()
    torch.testing.assert_close(mean, every.mean(0), rtol=1e-9, atol=1e-9 * scale)
    torch.testing.assert_close(var, every.var(0, correction=0), rtol=1e-7, atol=1e-9 * scale**2)
    assert count.flatten().tolist() == [float(sum(sizes))] * 2


def test_forward_standardizes_per_agent_and_clips() -> None:
    norm = ObservationNormalizer(n_agents=2, observation_dim=2, clip=3.0)
    # Before any update: the identity, clipped.
    assert norm(torch.tensor([[[1.0, -9.0], [2.0, 0.5]]])).tolist() == [[[1.0, -3.0], [2.0, 0.5]]]
    norm.update(torch.tensor([[[0.0, 10.0], [5.0, 5.0]], [[2.0, 10.0], [5.0, 7.0]]]))
    out = norm(torch.tensor([[[2.0, 10.0], [100.0, 4.0]]]))
    # Agent 0: mean (1, 10), std (1, 0): a constant column gives 0, not a division by zero.
    # Agent 1: mean (5, 6), std (0, 1): 95 / sqrt(1e-8) is clipped.
    assert out.tolist() == [[[1.0, 0.0], [3.0, -2.0]]]


def test_the_statistics_get_no_gradient() -> None:
    norm = ObservationNormalizer(n_agents=1, observation_dim=2)
    norm.stats.requires_grad_(True)  # as a pure update makes every theta slot a leaf
    observation = torch.randn(4, 1, 2, requires_grad=True)
    norm(observation).sum().backward()
    assert norm.stats.grad is None
    assert observation.grad is not None


def test_the_networks_read_normalized_observations_only_when_asked() -> None:
    plain = make_model((("agent", 2),))
    normalized = make_model((("agent", 2),), obs_norm=True)
    assert not observation_normalizers(plain)
    # One normalizer for the encoder, one for the critic; the weights are drawn as without them.
    assert len(observation_normalizers(normalized.groups["agent"])) == 2
    weights = [p for p in normalized.parameters() if p.requires_grad]
    assert all(torch.equal(a, b) for a, b in zip(plain.parameters(), weights, strict=True))
    encoder = normalized.groups["agent"].encoder.module
    assert isinstance(encoder, ObservationNormalized) and isinstance(encoder.network, StackedMLP)


def test_gae_holds_a_normalized_critic_out_of_the_graph() -> None:
    # TorchRL's hold_out_net reads the critic's first parameter: it must be a weight, not the
    # statistics (else GAE's values carry a graph, and a second backward through it fails).
    model = make_model((("agent", 2),), obs_norm=True)
    loss = make_loss(model)
    batch = make_batch(model)
    rollout = batch.clone()
    rollout["next"] = batch.clone()
    rollout["next", "agent", "reward"] = torch.zeros(64, 2, 1)
    rollout["next", "agent", "done"] = torch.zeros(64, 2, 1, dtype=torch.bool)
    rollout["next", "agent", "terminated"] = torch.zeros(64, 2, 1, dtype=torch.bool)
    loss.make_value_estimator(gamma=0.9, lmbda=0.9)
    with torch.no_grad():
        loss.value_estimator(rollout)
    assert not rollout["agent", "advantage"].requires_grad
