"""The auxiliary-loss contract: a module that sees every agent's encoder features on one minibatch.

An aux loss is registered through the ``marlplug_losses`` hook, declares its options in an ``Options``
model and is called with ``features: list[Tensor]`` (one ``[B, d_i]`` tensor per agent, in the
documented agent order: groups in ``env.group_map`` order, agents in group order). It returns a scalar.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch
from torch import nn

from marlplug.config import Options as ConfigOptions


@runtime_checkable
class AuxLossProtocol(Protocol):
    """What :class:`marlplug.losses.JointPPOLoss` needs from an auxiliary loss."""

    def __call__(self, features: list[torch.Tensor]) -> torch.Tensor: ...


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

    def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
        raise NotImplementedError

    def diagnostics(self, features: list[torch.Tensor]) -> dict[str, torch.Tensor]:
        """Detached statistics about ``features`` for logging; none by default."""
        del features
        return {}
