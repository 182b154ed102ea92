"""The CKA penalty's math, marlplug's aux-loss contract, and discovery through the entry point."""

from __future__ import annotations

import importlib.metadata

import pytest
import torch
from marlplug_cka import CKAPenalty

from marlplug.plugins import PluginManager
from marlplug.testing import AuxLossContract


class TestCKAContract(AuxLossContract):
    loss_class = CKAPenalty
    registered_name = "cka"


def reference_cka(x: torch.Tensor, y: torch.Tensor) -> float:
    x = x - x.mean(0)
    y = y - y.mean(0)
    return float((x.T @ y).norm() ** 2 / ((x.T @ x).norm() * (y.T @ y).norm()))


def test_matches_pairwise_reference_for_unequal_widths() -> None:
    torch.manual_seed(0)
    base = torch.randn(200, 3)
    features = [
        torch.cat([base, torch.randn(200, 2)], 1),
        base @ torch.randn(3, 4),
        torch.randn(200, 6),
    ]
    pairs = [(0, 1), (0, 2), (1, 2)]
    expected = sum(reference_cka(features[i], features[j]) for i, j in pairs) / len(pairs)
    got = CKAPenalty(coef=1.0, eps=0.0)(features)
    assert float(got) == pytest.approx(expected, rel=1e-5)


def test_invariant_to_rotation_and_scale() -> None:
    torch.manual_seed(1)
    x, y = torch.randn(128, 5), torch.randn(128, 5)
    rotation, _ = torch.linalg.qr(torch.randn(5, 5))
    penalty = CKAPenalty(coef=1.0, eps=0.0)
    assert float(penalty([x, y])) == pytest.approx(float(penalty([3 * x @ rotation, y])), rel=1e-5)


def test_discovered_through_installed_entry_point() -> None:
    # Installed with pip (scripts/setup.sh), so the distribution's metadata names the entry point.
    dist = importlib.metadata.distribution("marlplug-cka")
    assert [ep.name for ep in dist.entry_points if ep.group == "marlplug"] == ["cka"]
    manager = PluginManager.from_entry_points(strict=True, disabled=set())
    entry = manager.registry("loss").entry("cka")
    assert entry.obj is CKAPenalty
    assert entry.distribution == "marlplug-cka"
