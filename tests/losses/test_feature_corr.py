"""The cross-agent feature correlation diagnostic (issue 14 item 7): logged by every PPO update,
with or without the redundancy penalty, and equal to the plain definition."""

from __future__ import annotations

import itertools

import numpy as np
import torch

from marlplug.algorithms.ppo import PPO
from marlplug.losses import RedundancyLoss
from marlplug.losses.redundancy import mean_abs_correlation
from tests.losses.helpers import make_batch, make_loss, make_model


def test_it_is_the_mean_abs_correlation_over_agent_pairs() -> None:
    generator = torch.Generator().manual_seed(0)
    base = torch.randn(300, 5, generator=generator, dtype=torch.float64)
    features = [
        base + 0.5 * torch.randn(300, 5, generator=generator, dtype=torch.float64) for _ in range(3)
    ]
    expected = []
    for i, j in itertools.combinations(range(3), 2):
        corr = np.corrcoef(features[i].numpy().T, features[j].numpy().T)[:5, 5:]
        expected.append(np.abs(corr).mean())
    assert abs(float(mean_abs_correlation(features)) - float(np.mean(expected))) < 1e-4
    assert torch.isnan(mean_abs_correlation(features[:1]))


def _neighbour_pairs_by_definition(agents: list[torch.Tensor]) -> float:
    count = len(agents)
    pairs = [(0, 1)] if count == 2 else [(i, (i + 1) % count) for i in range(count)]
    means = []
    for i, j in pairs:
        width = agents[i].shape[1]
        corr = np.corrcoef(agents[i].numpy().T, agents[j].numpy().T)[:width, width:]
        means.append(np.abs(corr).mean())
    return float(np.mean(means))


def test_groups_stacked_or_not_and_of_different_widths_pair_neighbours_across_groups() -> None:
    generator = torch.Generator().manual_seed(1)
    base = torch.randn(300, 5, generator=generator, dtype=torch.float64)
    for layout in ([1, 1], [2], [1, 2], [2, 3], [4, 1, 2], [6]):
        entries, agents = [], []
        for index, count in enumerate(layout):
            width = 3 + index  # every group its own width
            members = [
                base[:, :width] + torch.randn(300, width, generator=generator, dtype=torch.float64)
                for _ in range(count)
            ]
            agents += members
            # A one-agent group as plain [B, d] on even indices, stacked [B, 1, d] otherwise.
            single = count == 1 and index % 2 == 0
            entries.append(members[0] if single else torch.stack(members, dim=1))
        got = float(mean_abs_correlation(entries))
        assert abs(got - _neighbour_pairs_by_definition(agents)) < 1e-4, layout


def test_every_update_logs_it_and_the_penalty() -> None:
    for aux in ({}, {"redundancy": RedundancyLoss(coef=0.01)}):
        model = make_model((("agent", 3),))
        loss = make_loss(model, aux_losses=aux)
        program = PPO().program(loss, lr=1e-3, max_grad_norm=0.5)
        theta, opt_state = program.rows()
        stats = program.update(theta, opt_state, make_batch(model), [0, 1, 2], seed=0).stats
        assert 0.0 < float(stats["feature_abs_corr"]) < 1.0
        assert ("loss_redundancy" in stats) == bool(aux)
