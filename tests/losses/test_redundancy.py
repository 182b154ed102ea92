"""The redundancy penalty: the DESIGN.md formula, all pairs at once, gradients, reductions, stats."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from marlplug.config import load_config
from marlplug.errors import ConfigError, UserError
from marlplug.losses import RedundancyLoss, redundancy_all_pairs, redundancy_pair_loop
from marlplug.losses.redundancy import symmetric_gram


def _formula(features: list[torch.Tensor], eps: float) -> float:
    """The penalty written out entry by entry in float64, straight from DESIGN.md."""
    rows = features[0].shape[0]
    standardized = []
    for z in features:
        z = z.double()
        mean = z.mean(0)
        var = ((z - mean) ** 2).mean(0)  # population variance
        standardized.append((z - mean) / torch.sqrt(var + eps))
    total = 0.0
    for i in range(len(features)):
        for j in range(i + 1, len(features)):
            c = standardized[i].T @ standardized[j] / rows
            total += float((c**2).sum()) / (features[i].shape[1] * features[j].shape[1])
    return total


@settings(max_examples=25, deadline=None)
@given(
    widths=st.lists(st.integers(1, 6), min_size=2, max_size=5),
    rows=st.integers(3, 40),
    seed=st.integers(0, 2**16),
)
def test_all_pairs_equals_the_formula_for_mixed_widths(
    widths: list[int], rows: int, seed: int
) -> None:
    generator = torch.Generator().manual_seed(seed)
    features = [torch.randn(rows, d, generator=generator, dtype=torch.float64) for d in widths]
    expected = _formula(features, eps=1e-5)
    assert float(redundancy_all_pairs(features, eps=1e-5)) == pytest.approx(
        expected, rel=1e-9, abs=1e-12
    )
    assert float(redundancy_pair_loop(features, eps=1e-5)) == pytest.approx(
        expected, rel=1e-9, abs=1e-12
    )


@pytest.mark.parametrize(
    ("rows", "widths"),
    [(7, (2, 3, 3)), (12, (3, 3, 3))],
    ids=["unequal-widths-row-gram", "equal-widths-feature-gram"],
)
def test_gradient_matches_float64_finite_differences(rows: int, widths: tuple[int, ...]) -> None:
    generator = torch.Generator().manual_seed(0)
    features = tuple(
        torch.randn(rows, d, generator=generator, dtype=torch.float64, requires_grad=True)
        for d in widths
    )
    assert torch.autograd.gradcheck(
        lambda *zs: redundancy_all_pairs(list(zs), coef=0.7, eps=1e-3),
        features,
        eps=1e-6,
        atol=1e-7,
    )


def _autograd_reference(features: list[torch.Tensor], eps: float) -> torch.Tensor:
    """The penalty through plain autograd: standardize, one full Gram, minus the own blocks."""
    widths = [z.shape[1] for z in features]
    scaled = torch.cat(
        [
            (z - z.mean(0)) / torch.sqrt(z.var(0, unbiased=False) + eps) / d**0.5
            for z, d in zip(features, widths, strict=True)
        ],
        dim=1,
    )
    own = sum((y.T @ y).square().sum() for y in torch.split(scaled, widths, dim=1))
    return ((scaled.T @ scaled).square().sum() - own) / (2 * scaled.shape[0] ** 2)


@pytest.mark.parametrize(
    ("rows", "widths"),
    [(600, (200, 250, 300)), (1100, (300, 300)), (1100, (16, 16, 16, 16)), (900, (5, 40, 9))],
    ids=[
        "row-gram-banded",
        "feature-gram-banded",
        "feature-gram-equal-widths",
        "feature-gram-mixed-widths",
    ],
)
def test_hand_written_backward_equals_autograd_at_banded_sizes(
    rows: int, widths: tuple[int, ...]
) -> None:
    # The first two cases are large enough that the Gram (B×B, then D×D) is computed in bands of
    # GRAM_BAND_ROWS; all run the standardization's backward on real column statistics, in float64
    # so only the algebra can differ.
    generator = torch.Generator().manual_seed(1)
    base = [torch.randn(rows, d, generator=generator, dtype=torch.float64) for d in widths]
    mixing = torch.randn(widths[0], widths[1], generator=generator, dtype=torch.float64)
    base[1] = base[1] + base[0] @ mixing / widths[0] ** 0.5  # correlated with agent 0
    ours = [z.clone().requires_grad_() for z in base]
    reference = [z.clone().requires_grad_() for z in base]
    value = redundancy_all_pairs(ours, eps=1e-3)
    expected = _autograd_reference(reference, eps=1e-3)
    value.backward()
    expected.backward()
    torch.testing.assert_close(value, expected, rtol=1e-10, atol=0.0)
    for mine, theirs in zip(ours, reference, strict=True):
        assert mine.grad is not None and theirs.grad is not None
        torch.testing.assert_close(mine.grad, theirs.grad, rtol=1e-9, atol=1e-12)


def test_symmetric_gram_matches_the_full_product() -> None:
    matrix = torch.randn(1003, 37, dtype=torch.float64)
    for band_rows in (1003, 500, 250, 100):
        torch.testing.assert_close(
            symmetric_gram(matrix, band_rows=band_rows), matrix @ matrix.T, rtol=1e-12, atol=1e-12
        )


def test_identical_features_and_independent_features() -> None:
    hadamard = torch.tensor([[1.0]], dtype=torch.float64)
    for _ in range(3):
        hadamard = torch.cat(
            [torch.cat([hadamard, hadamard], 1), torch.cat([hadamard, -hadamard], 1)]
        )
    z = hadamard[:, 1:5]  # zero-mean, mutually orthogonal columns
    # Identical agents with uncorrelated columns: C = I, so each pair contributes ‖I‖²/16 = 4/16.
    assert float(redundancy_all_pairs([z, z, z], eps=1e-12)) == pytest.approx(3 * 0.25, rel=1e-6)
    # Independent features still score about 1/B per pair.
    rows = 2000
    features = [torch.randn(rows, 8, dtype=torch.float64) for _ in range(4)]
    per_pair = float(redundancy_all_pairs(features)) / 6
    assert per_pair == pytest.approx(1 / rows, rel=0.2)


def test_pair_reduction_mean_divides_by_the_number_of_pairs() -> None:
    features = [torch.randn(50, 3) for _ in range(4)]
    total = RedundancyLoss(coef=2.0, pair_reduction="sum")(features)
    mean = RedundancyLoss(coef=2.0, pair_reduction="mean")(features)
    torch.testing.assert_close(mean, total / 6)


def test_dead_feature_columns_are_counted() -> None:
    features = [torch.randn(64, 5), torch.randn(64, 3)]
    features[0][:, 1] = 0.3  # a constant (dead) unit
    features[1][:, 2] = 1e-5 * torch.randn(64)  # a near-dead unit
    assert int(RedundancyLoss(dead_threshold=1e-3).diagnostics(features)["dead_features"]) == 2


def test_single_agent_is_zero_and_bad_shapes_are_user_errors() -> None:
    assert float(redundancy_all_pairs([torch.randn(5, 3)])) == 0.0
    with pytest.raises(UserError, match="same B"):
        redundancy_all_pairs([torch.randn(5, 3), torch.randn(6, 3)])
    with pytest.raises(UserError, match="pair_reduction"):
        RedundancyLoss(pair_reduction="max")  # type: ignore[arg-type]


def test_options_come_from_the_config() -> None:
    config = load_config(data={"losses": [{"name": "redundancy", "coef": 0.5}]})
    options = config.losses[0].options
    loss = RedundancyLoss(**options.model_dump())
    assert loss.coef == 0.5 and loss.pair_reduction == "sum"
    with pytest.raises(ConfigError, match=r"losses\[1\].pair_reduction"):
        load_config(data={"losses": ["cka", {"name": "redundancy", "pair_reduction": "max"}]})


def _correlated_features(rows: int, agents: int, width: int, seed: int) -> list[torch.Tensor]:
    """Agents' features as tanh of linear maps of one shared observation: correlated across agents."""
    generator = torch.Generator().manual_seed(seed)
    observation = torch.randn(rows, 16, generator=generator)
    return [
        torch.tanh(observation @ torch.randn(16, width, generator=generator) / 4.0)
        for _ in range(agents)
    ]


def test_sample_rows_approximates_the_exact_penalty_reproducibly() -> None:
    features = _correlated_features(rows=2048, agents=4, width=8, seed=0)
    exact = float(RedundancyLoss(coef=1.0)(features))
    sampled = RedundancyLoss(coef=1.0, sample_rows=1024)
    torch.manual_seed(5)
    first = float(sampled(features))
    torch.manual_seed(5)
    assert float(sampled(features)) == first  # the same RNG state draws the same rows
    assert first != exact
    assert first == pytest.approx(exact, rel=0.1)
    # No more rows than the minibatch has: the exact penalty.
    assert float(RedundancyLoss(coef=1.0, sample_rows=4096)(features)) == exact


def test_sample_rows_sends_gradient_to_the_sampled_rows_only() -> None:
    features = [
        z.requires_grad_() for z in _correlated_features(rows=300, agents=3, width=5, seed=1)
    ]
    RedundancyLoss(coef=1.0, sample_rows=100)(features).backward()
    for z in features:
        assert z.grad is not None
        assert int((z.grad.abs().sum(dim=1) > 0).sum()) == 100


def test_double_backward_is_refused_not_silently_wrong() -> None:
    # The hand-written backward is not itself differentiable (gradgradcheck would get a wrong
    # Jacobian): a second backward must fail loudly.
    features = [torch.randn(20, 3, requires_grad=True) for _ in range(3)]
    weight = torch.ones((), requires_grad=True)
    (grad,) = torch.autograd.grad(
        redundancy_all_pairs(features), features[0], grad_outputs=weight, create_graph=True
    )
    with pytest.raises(RuntimeError, match="twice"):
        grad.sum().backward()


def test_sample_rows_below_two_is_a_config_error() -> None:
    with pytest.raises(UserError, match="sample_rows"):
        RedundancyLoss(sample_rows=1)
    with pytest.raises(ConfigError, match=r"losses\[0\].sample_rows"):
        load_config(data={"losses": [{"name": "redundancy", "sample_rows": 1}]})


@pytest.mark.parametrize(("rows", "agents", "width"), [(16384, 4, 8), (1000, 32, 64)])
def test_float32_value_is_accurate_for_tall_and_wide_batches(
    rows: int, agents: int, width: int
) -> None:
    # Tall (B ≫ Σd, the feature-side Gram) and wide (B < Σd, the row-side Gram): a float32 value
    # within 1e-6 of the float64 pair loop, where a difference of two large sums lost ~1e-5.
    generator = torch.Generator().manual_seed(0)
    features = [torch.randn(rows, width, generator=generator) for _ in range(agents)]
    expected = float(redundancy_pair_loop([z.double() for z in features]))
    assert float(redundancy_all_pairs(features)) == pytest.approx(expected, rel=1e-6)
