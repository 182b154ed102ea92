"""The contract every auxiliary loss must meet, as a pytest base class and as one function.

Plugin authors subclass :class:`AuxLossContract` in a test module (or call :func:`check_aux_loss`);
marlplug runs the same suite on its built-in ``redundancy`` loss and on marlplug-cka.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import pytest
import torch
from torch import nn

from marlplug.config import Options, validate_options
from marlplug.errors import UserError

#: Feature widths of the agents in the suite's minibatches: unequal on purpose.
WIDTHS = (3, 5, 4)
#: Rows of the suite's minibatches.
ROWS = 32


def build_loss(loss_class: Any, options: Mapping[str, Any] | None = None) -> nn.Module:
    """The loss built from its ``Options`` (defaults overridden by ``options``), as a config does."""
    validated = validate_options(loss_class.Options, dict(options or {}), ["losses", 0])
    return loss_class(**validated.model_dump())


def make_features(
    widths: Sequence[int] = WIDTHS, *, rows: int = ROWS, seed: int = 0
) -> list[torch.Tensor]:
    """One ``[rows, d_i]`` float32 leaf tensor per agent, correlated across agents (as encoders that
    see overlapping observations are), with ``requires_grad``."""
    generator = torch.Generator().manual_seed(seed)
    shared = torch.randn(rows, max(widths), generator=generator)
    return [
        (shared[:, :width] + 0.5 * torch.randn(rows, width, generator=generator)).requires_grad_()
        for width in widths
    ]


def check_options(loss_class: type, options: Mapping[str, Any] | None = None) -> None:
    """``Options`` subclasses :class:`marlplug.Options`, builds the loss, rejects unknown fields."""
    options_model = getattr(loss_class, "Options", None)
    assert isinstance(options_model, type) and issubclass(options_model, Options), (
        f"{loss_class.__name__}.Options must subclass marlplug.Options"
    )
    assert isinstance(build_loss(loss_class, options), nn.Module), (
        f"{loss_class.__name__} must be a torch.nn.Module"
    )
    with pytest.raises(UserError, match=r"losses\[0\]\.no_such_option_xyz"):
        build_loss(loss_class, {**(options or {}), "no_such_option_xyz": 1})


def check_value(loss: nn.Module, features: list[torch.Tensor]) -> torch.Tensor:
    """A finite floating scalar, the same twice, computed without touching the features."""
    before = [f.detach().clone() for f in features]
    value = loss(features)
    where = f"{type(loss).__name__} on widths {[f.shape[1] for f in features]}"
    assert isinstance(value, torch.Tensor), f"{where}: returned {type(value).__name__}"
    assert value.ndim == 0, f"{where}: returned shape {tuple(value.shape)}, not a scalar"
    assert value.dtype.is_floating_point, f"{where}: returned dtype {value.dtype}"
    assert torch.isfinite(value), f"{where}: returned {float(value.detach())}"
    for original, feature in zip(before, features, strict=True):
        assert torch.equal(original, feature.detach()), f"{where}: modified its input in place"
    assert torch.equal(loss(features), value), f"{where}: two calls on the same input differ"
    return value


def check_gradients(loss: nn.Module, features: list[torch.Tensor]) -> None:
    """The gradient reaches every agent's features, and is finite."""
    grads = torch.autograd.grad(loss(features), features, allow_unused=True)
    for agent, grad in enumerate(grads):
        assert grad is not None and grad.abs().sum() > 0, (
            f"{type(loss).__name__}: no gradient reaches agent {agent}'s features"
        )
        assert torch.isfinite(grad).all(), f"{type(loss).__name__}: agent {agent}'s grad not finite"


def check_dead_column(loss: nn.Module, widths: Sequence[int] = WIDTHS) -> None:
    """A constant feature column (a dead unit) still gives a finite value and finite gradients."""
    features = [f.detach().clone() for f in make_features(widths, seed=1)]
    features[0][:, 0] = 1.0
    features = [f.requires_grad_() for f in features]
    try:
        value = check_value(loss, features)
    except AssertionError as exc:
        raise AssertionError(f"with a constant feature column (a dead unit): {exc}") from None
    grads = torch.autograd.grad(value, features, allow_unused=True)
    assert all(g is None or torch.isfinite(g).all() for g in grads), (
        f"{type(loss).__name__}: a constant feature column gives non-finite gradients"
    )


def check_aux_loss(
    loss_class: type,
    *,
    options: Mapping[str, Any] | None = None,
    widths: Sequence[Sequence[int]] = (WIDTHS, (6, 6)),
) -> None:
    """Run the whole contract on ``loss_class``; raises ``AssertionError`` naming what failed.

    Args:
        loss_class: the auxiliary-loss class a plugin registers.
        options: options to build it with (default: its ``Options`` defaults).
        widths: agents' feature widths to call it with (one tuple per case).

    Examples:
        >>> from marlplug.losses import RedundancyLoss
        >>> check_aux_loss(RedundancyLoss, options={"coef": 0.5})
    """
    check_options(loss_class, options)
    loss = build_loss(loss_class, options)
    for case in widths:
        features = make_features(case)
        check_value(loss, features)
        check_gradients(loss, features)
    check_dead_column(loss)


class AuxLossContract:
    """Pytest base class: subclass it as ``Test...`` and set ``loss_class`` to run the contract.

    Examples:
        A plugin's ``tests/test_contract.py``::

            from marlplug.testing import AuxLossContract
            from marlplug_cka import CKAPenalty

            class TestCKAPenalty(AuxLossContract):
                loss_class = CKAPenalty
                registered_name = "cka"
    """

    #: The auxiliary-loss class under test.
    loss_class: ClassVar[type]
    #: Options to build it with (default: its ``Options`` defaults).
    options: ClassVar[Mapping[str, Any]] = {}
    #: Agents' feature widths, one tuple per case.
    widths: ClassVar[tuple[tuple[int, ...], ...]] = (WIDTHS, (6, 6))
    #: If set, the name the installed plugin registers the class under.
    registered_name: ClassVar[str | None] = None

    def test_options(self) -> None:
        check_options(self.loss_class, self.options)

    def test_value(self) -> None:
        loss = build_loss(self.loss_class, self.options)
        for case in self.widths:
            check_value(loss, make_features(case))

    def test_gradients_reach_every_agent(self) -> None:
        loss = build_loss(self.loss_class, self.options)
        for case in self.widths:
            check_gradients(loss, make_features(case))

    def test_dead_column(self) -> None:
        check_dead_column(build_loss(self.loss_class, self.options))

    def test_registered(self) -> None:
        if self.registered_name is None:
            pytest.skip("registered_name not set")
        from marlplug.plugins import get_component

        assert get_component("loss", self.registered_name) is self.loss_class


__all__ = ["AuxLossContract", "check_aux_loss", "make_features"]
