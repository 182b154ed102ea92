"""The contract every auxiliary loss must meet, as a pytest base class and as one function.

Plugin authors subclass :class:`AuxLossContract` in a test module (or call :func:`check_aux_loss`);
marlplug runs the same suite on its built-in ``redundancy`` loss and on marlplug-cka.

Where agents die: the check that a loss takes ``alive=`` and that what the dead rows hold changes
nothing (:func:`check_dead_rows`) is opt-in (``dead_agents``), because joint PPO passes ``alive``
only on envs with deaths (MAgent2 battle): a loss without the parameter is correct everywhere else,
is refused in one line there, and its suite must keep passing. A loss meant for such envs sets
``dead_agents`` (the built-in ``redundancy`` and the example plugin's ``feature_scale`` do).
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


def make_alive(agents: int, *, rows: int = ROWS, seed: int = 0) -> list[torch.Tensor]:
    """One ``[rows]`` bool per agent, as joint PPO passes where agents die: each agent dead on
    about a third of the rows (different rows per agent), never on every row.

    Examples:
        >>> [bool(rows.any() and not rows.all()) for rows in make_alive(3)]
        [True, True, True]
    """
    generator = torch.Generator().manual_seed(seed)
    alive = [torch.rand(rows, generator=generator) > 1 / 3 for _ in range(agents)]
    for rows_of_agent in alive:  # at least two alive rows and one dead row for every agent
        rows_of_agent[:2] = True
        rows_of_agent[-1] = False
    return alive


def _call_with_alive(loss: Any, features: list[torch.Tensor], alive: list[torch.Tensor]) -> Any:
    """``loss(features, alive=alive)`` under a fixed seed (a loss that samples rows from torch's
    global RNG draws the same rows every call; the caller's RNG state is left as it was)."""
    where = getattr(loss, "__qualname__", type(loss).__name__)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        try:
            return loss(features, alive=alive)
        except TypeError as error:
            if "alive" not in str(error):
                raise
            raise AssertionError(
                f"{where} takes no alive=: joint PPO passes it where agents die; give it a "
                "parameter alive: list[Tensor] | None = None"
            ) from None


def _with_dead_rows_replaced(
    features: list[torch.Tensor], alive: list[torch.Tensor], seed: int
) -> list[torch.Tensor]:
    """``features`` with every dead row overwritten by large values unrelated to the rest (what an
    env may write for a dead agent), as new leaves with ``requires_grad``."""
    generator = torch.Generator().manual_seed(seed)
    replaced = []
    for z, rows in zip(features, alive, strict=True):
        junk = 100.0 + 30.0 * torch.randn(z.shape, generator=generator)
        replaced.append(torch.where(rows[:, None], z.detach(), junk).requires_grad_())
    return replaced


def check_dead_rows(loss: nn.Module, widths: Sequence[int] = WIDTHS) -> None:
    """Called with ``alive=`` (one ``[B]`` bool per agent), the loss returns a finite scalar that
    the dead rows do not change: overwriting them changes neither the value nor
    :meth:`diagnostics`, and they get no gradient; every row alive gives the value without
    ``alive`` (to float rounding). Checked again with the last agent dead on every row."""
    name = type(loss).__name__
    features = make_features(widths, seed=2)
    alive = make_alive(len(widths), seed=2)
    every_row_dead = [*alive[:-1], torch.zeros_like(alive[-1])]
    for case, rows_alive in (("", alive), (" (the last agent dead on every row)", every_row_dead)):
        where = f"{name} with alive={[int(rows.sum()) for rows in rows_alive]} rows{case}"
        value = _call_with_alive(loss, features, rows_alive)
        assert isinstance(value, torch.Tensor) and value.ndim == 0, (
            f"{where}: returned {type(value).__name__}, not a scalar tensor"
        )
        assert torch.isfinite(value), f"{where}: returned {float(value.detach())}"
        replaced = _with_dead_rows_replaced(features, rows_alive, seed=3)
        changed = _call_with_alive(loss, replaced, rows_alive)
        assert torch.equal(changed, value), (
            f"{where}: overwriting the dead rows changed the value from {float(value.detach())} "
            f"to {float(changed.detach())}; read each agent on its alive rows only"
        )
        # No pair alive together (two agents, one dead throughout) may leave no graph at all.
        grads = (
            torch.autograd.grad(changed, replaced, allow_unused=True)
            if changed.requires_grad
            else [None] * len(replaced)
        )
        for agent, (grad, rows) in enumerate(zip(grads, rows_alive, strict=True)):
            assert grad is None or not grad[~rows].any(), (
                f"{where}: agent {agent}'s dead rows get a gradient"
            )
        report = getattr(loss, "diagnostics", None)
        if report is not None:
            before, after = (_call_with_alive(report, z, rows_alive) for z in (features, replaced))
            for stat in before:
                assert torch.equal(before[stat].nan_to_num(-1.0), after[stat].nan_to_num(-1.0)), (
                    f"{where}: overwriting the dead rows changed diagnostics()['{stat}']"
                )
    every_row = [torch.ones_like(rows) for rows in alive]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        unmasked = loss(features)
    masked = _call_with_alive(loss, features, every_row)
    assert torch.allclose(masked, unmasked, rtol=1e-5, atol=1e-7), (
        f"{name}: with every row alive it returned {float(masked.detach())}, without alive= "
        f"{float(unmasked.detach())}"
    )


def check_aux_loss(
    loss_class: type,
    *,
    options: Mapping[str, Any] | None = None,
    widths: Sequence[Sequence[int]] = (WIDTHS, (6, 6)),
    dead_agents: bool = False,
) -> None:
    """Run the whole contract on ``loss_class``; raises ``AssertionError`` naming what failed.

    Args:
        loss_class: the auxiliary-loss class a plugin registers.
        options: options to build it with (default: its ``Options`` defaults).
        widths: agents' feature widths to call it with (one tuple per case).
        dead_agents: also check it where agents die (:func:`check_dead_rows`, once per case);
            off by default, see the module docstring.

    Examples:
        >>> from marlplug.losses import RedundancyLoss
        >>> check_aux_loss(RedundancyLoss, options={"coef": 0.5}, dead_agents=True)
    """
    check_options(loss_class, options)
    loss = build_loss(loss_class, options)
    for case in widths:
        features = make_features(case)
        check_value(loss, features)
        check_gradients(loss, features)
        if dead_agents:
            check_dead_rows(loss, case)
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
                dead_agents = False  # True once it takes alive= (see the module docstring)
    """

    #: The auxiliary-loss class under test.
    loss_class: ClassVar[type]
    #: Options to build it with (default: its ``Options`` defaults).
    options: ClassVar[Mapping[str, Any]] = {}
    #: Agents' feature widths, one tuple per case.
    widths: ClassVar[tuple[tuple[int, ...], ...]] = (WIDTHS, (6, 6))
    #: If set, the name the installed plugin registers the class under.
    registered_name: ClassVar[str | None] = None
    #: Check it where agents die too (:func:`check_dead_rows`); off by default (module docstring).
    dead_agents: ClassVar[bool] = False

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

    def test_dead_rows_change_nothing(self) -> None:
        if not self.dead_agents:
            pytest.skip("dead_agents not set: not checked where agents die")
        loss = build_loss(self.loss_class, self.options)
        for case in self.widths:
            check_dead_rows(loss, case)

    def test_registered(self) -> None:
        if self.registered_name is None:
            pytest.skip("registered_name not set")
        from marlplug.plugins import get_component

        assert get_component("loss", self.registered_name) is self.loss_class


__all__ = ["AuxLossContract", "check_aux_loss", "check_dead_rows", "make_alive", "make_features"]
