"""The redundancy penalty where agents die: each pair on the rows where both agents were alive."""

from __future__ import annotations

import torch

from marlplug.losses import RedundancyLoss
from marlplug.losses.alive_pairs import redundancy_alive_pairs
from marlplug.losses.redundancy import redundancy_all_pairs
from marlplug.testing import make_features


def _alive(rows: int, seed: int, agents: int) -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return [torch.rand(rows, generator=generator) < 0.7 for _ in range(agents)]


def test_every_row_alive_is_the_unmasked_penalty() -> None:
    features = make_features((3, 5, 4), rows=48)
    every_row = [torch.ones(48, dtype=torch.bool)] * 3
    torch.testing.assert_close(
        RedundancyLoss(coef=0.5, pair_reduction="mean")(features, alive=every_row),
        RedundancyLoss(coef=0.5, pair_reduction="mean")(features),
    )


def test_a_dead_row_gets_no_gradient_and_moves_nothing() -> None:
    features = make_features((3, 5, 4), rows=48)
    alive = _alive(48, 1, 3)
    value = redundancy_alive_pairs(features, alive)
    grads = torch.autograd.grad(value, features)
    for grad, rows in zip(grads, alive, strict=True):
        assert bool(grad[~rows].eq(0).all()) and bool(grad[rows].ne(0).any())
    # Whatever a dead agent's rows hold, the penalty is the same.
    changed = [z.detach().clone() for z in features]
    for z, rows in zip(changed, alive, strict=True):
        z[~rows] = 1e3
    torch.testing.assert_close(redundancy_alive_pairs(changed, alive), value.detach())
    pair = redundancy_all_pairs([z[alive[0] & alive[1]] for z in features[:2]])
    torch.testing.assert_close(redundancy_alive_pairs(features[:2], alive[:2]), pair)


def test_a_pair_that_never_lived_together_adds_nothing() -> None:
    features = make_features((4, 4), rows=10)
    alive = [torch.arange(10) < 5, torch.arange(10) >= 5]
    assert float(redundancy_alive_pairs(features, alive)) == 0.0
