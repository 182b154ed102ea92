"""The auxiliary-loss contract: a module that sees every agent's encoder features on one minibatch.

An aux loss is registered through the ``marlplug_losses`` hook, declares its options in an ``Options``
model and is called with ``features: list[Tensor]`` (one ``[B, d_i]`` tensor per agent, in the
documented agent order: groups in ``env.group_map`` order, agents in group order). It returns a scalar.

Where agents die (a group has TorchRL's dead-agent ``mask``: MAgent2 battle), a dead agent's rows
hold features of whatever the env wrote for it. There the loss is also called with ``alive=``: one
``[B]`` bool tensor per agent, True where the agent was in play on that row. A loss over several
agents should read agent i on its alive rows only (the redundancy penalty computes each pair on
the rows where both are alive). Without deaths ``alive`` is not passed, so a loss without the
parameter works as before; on an env with deaths it is refused in one line rather than fed the
dead rows silently.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

import torch
from torch import nn

from marlplug.errors import UserError
from marlplug.options import Options as ConfigOptions
from marlplug.plugins import get_plugin_manager


@runtime_checkable
class AuxLossProtocol(Protocol):
    """What :class:`marlplug.losses.JointPPOLoss` needs from an auxiliary loss (``alive``: one
    ``[B]`` bool per agent, passed only where agents die; see the module docstring)."""

    def __call__(
        self, features: list[torch.Tensor], alive: list[torch.Tensor] | None = None
    ) -> torch.Tensor: ...


class AuxLoss(nn.Module):
    """Base class for auxiliary losses (subclassing it is optional; the call signature is the contract).

    Subclasses set a nested ``Options`` model, take exactly its fields as keyword-only constructor
    arguments, implement :meth:`forward`, and may override :meth:`diagnostics` to report detached
    statistics (they appear under ``("aux_stats", <name>, <stat>)`` in the loss output).

    Examples:
        >>> class MeanActivation(AuxLoss):
        ...     class Options(ConfigOptions):
        ...         coef: float = 1.0
        ...     def __init__(self, *, coef: float = 1.0) -> None:
        ...         super().__init__()
        ...         self.coef = coef
        ...     def forward(self, features):
        ...         return self.coef * sum(z.mean() for z in features)
        >>> MeanActivation(coef=2.0)([torch.ones(4, 3), torch.zeros(4, 5)])
        tensor(2.)
    """

    class Options(ConfigOptions):
        """No options by default."""

    def forward(
        self, features: list[torch.Tensor], alive: list[torch.Tensor] | None = None
    ) -> torch.Tensor:
        raise NotImplementedError

    def diagnostics(
        self, features: list[torch.Tensor], alive: list[torch.Tensor] | None = None
    ) -> dict[str, torch.Tensor]:
        """Detached statistics about ``features`` (on each agent's ``alive`` rows where given) for
        logging; none by default."""
        del features, alive
        return {}


def _describe(name: str) -> str:
    """``aux loss 'name'`` plus the distribution that registered it, when it is a plugin."""
    try:
        entry = get_plugin_manager().registry("loss").entry(name)
        return f"aux loss '{name}' (from {entry.distribution})"
    except Exception:  # not registered (built by hand): the name alone says enough
        return f"aux loss '{name}'"


def agents_alive(weights: list[tuple[int, torch.Tensor | None]]) -> list[torch.Tensor] | None:
    """Each agent's ``[B]`` alive rows from every group's ``(n_agents, weight)`` (``weight``:
    ``[B, n_agents]`` 0/1, or ``None`` for a group whose agents never die), in agent order;
    ``None`` when no group has a weight (aux losses are then called without ``alive``).

    Examples:
        >>> alive = agents_alive([(1, None), (2, torch.tensor([[1.0, 0.0], [1.0, 1.0]]))])
        >>> [a.tolist() for a in alive]
        [[True, True], [True, True], [False, True]]
        >>> agents_alive([(2, None)]) is None
        True
    """
    if all(weight is None for _, weight in weights):
        return None
    known = next(weight for _, weight in weights if weight is not None)
    alive: list[torch.Tensor] = []
    for n_agents, weight in weights:
        if weight is None:
            every_row = torch.ones(known.shape[0], dtype=torch.bool, device=known.device)
            alive.extend(every_row for _ in range(n_agents))
        else:
            alive.extend((weight > 0).unbind(-1))
    return alive


def call_with_alive(
    name: str,
    function: Callable[..., Any],
    features: list[torch.Tensor],
    alive: list[torch.Tensor] | None,
) -> Any:
    """``function(features)``, or ``function(features, alive=alive)`` where agents die; a loss (or
    its ``diagnostics``) without an ``alive`` parameter is then a one-line :class:`UserError`."""
    if alive is None:
        return function(features)
    try:
        return function(features, alive=alive)
    except TypeError as error:
        if "alive" not in str(error):
            raise
        raise UserError(
            f"{_describe(name)} takes no alive=: agents die in this env (a group has a dead-agent "
            "mask), and without it their dead rows would count; give it a parameter "
            "alive: list[Tensor] | None = None (docs/how-to/loss-plugin.md)"
        ) from error


def call_aux_loss(
    name: str, aux: Any, features: list[torch.Tensor], alive: list[torch.Tensor] | None = None
) -> torch.Tensor:
    """Call ``aux(features)`` (with ``alive=`` where agents die, :func:`call_with_alive`) and check
    it returned a float scalar tensor.

    A wrong return type or shape, or an exception inside the aux loss, becomes a one-line
    :class:`UserError` naming the loss and the fix. (Non-finite values are the trainer's to report.)

    Examples:
        >>> call_aux_loss("mine", lambda features: features[0].sum(), [torch.ones(2, 3)])
        tensor(6.)
        >>> call_aux_loss("mine", lambda features: 1.0, [torch.ones(2, 3)])
        Traceback (most recent call last):
        ...
        marlplug.errors.UserError: aux loss 'mine' returned float; it must return a scalar float tensor (e.g. torch.stack(terms).sum(), not .item())
        >>> call_aux_loss("mine", lambda features: features[0].sum(), [torch.ones(2, 3)],
        ...               alive=[torch.tensor([True, False])])
        Traceback (most recent call last):
        ...
        marlplug.errors.UserError: aux loss 'mine' takes no alive=: agents die in this env (a group has a dead-agent mask), and without it their dead rows would count; give it a parameter alive: list[Tensor] | None = None (docs/how-to/loss-plugin.md)
    """
    try:
        value = call_with_alive(name, aux, features, alive)
    except UserError:
        raise
    except Exception as error:
        message = str(error).splitlines()[0] if str(error) else ""
        raise UserError(
            f"{_describe(name)} raised {type(error).__name__}: {message} (it is called with a list "
            f"of {len(features)} [rows, d] feature tensors, one per agent)"
        ) from error
    if not isinstance(value, torch.Tensor):
        raise UserError(
            f"{_describe(name)} returned {type(value).__name__}; it must return a scalar float "
            "tensor (e.g. torch.stack(terms).sum(), not .item())"
        )
    if value.ndim != 0:
        raise UserError(
            f"{_describe(name)} returned a tensor of shape {list(value.shape)}; it must return a "
            "scalar (reduce it, e.g. .sum() or .mean())"
        )
    if not value.dtype.is_floating_point:
        raise UserError(
            f"{_describe(name)} returned a {value.dtype} scalar; it must return a floating-point "
            "scalar (an integer loss has no gradient)"
        )
    return value


class AuxBackwardCheck:
    """Warns once when a backward pass went through the PPO terms but skipped an aux loss: the
    symptom of a TorchRL loop that sums only ``loss_objective + loss_critic + loss_entropy``."""

    def __init__(self) -> None:
        self.reached: dict[str, bool] = {}
        self.warned = False

    def _mark(self, name: str) -> Any:
        def hook(grad: torch.Tensor) -> None:
            self.reached[name] = True

        return hook

    def check(self) -> None:
        if self.warned or not self.reached.get("loss_objective", False):
            return
        missing = [name for name, reached in self.reached.items() if not reached]
        if missing:
            self.warned = True
            warnings.warn(
                f"JointPPOLoss: the backward pass used loss_objective but not {', '.join(missing)}; "
                "sum every loss_* entry (marlplug.losses.sum_losses(loss_vals)), "
                "see docs/how-to/torchrl.md",
                UserWarning,
                stacklevel=3,
            )

    def arm(self, objective: torch.Tensor, aux: Mapping[str, torch.Tensor]) -> None:
        self.check()
        self.reached = {}
        if not aux or not objective.requires_grad:
            return
        for name, value in {"loss_objective": objective, **aux}.items():
            if value.requires_grad:
                self.reached[name] = False
                value.register_hook(self._mark(name))
