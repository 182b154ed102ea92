"""The options every recurrent algorithm shares (PPO's actor, the Q-learners' Q-networks):
``recurrent``, ``recurrent_hidden_size`` and ``sequence_length``, their names, defaults and bounds
declared once here, each described for its algorithm (:mod:`marlplug.nn.recurrent` is the GRU)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from marlplug.config import MAX_WIDTH

__all__ = ["recurrent_field", "recurrent_hidden_size_field", "sequence_length_field"]

#: The longest ``sequence_length`` a replay-based algorithm takes (PPO's is bounded by
#: ``train.rollout_steps``, which it must divide).
MAX_REPLAYED_SEQUENCE = 10**6


def recurrent_field(description: str) -> Any:
    """The ``recurrent`` option (``none`` or ``gru``, :data:`~marlplug.nn.recurrent.Recurrent`),
    described for its algorithm; with :func:`recurrent_hidden_size_field` and
    :func:`sequence_length_field`, the names and bounds every recurrent algorithm shares.

    Examples:
        >>> recurrent_field("The Q-networks' memory.").default
        'none'
    """
    return Field("none", description=description)


def recurrent_hidden_size_field() -> Any:
    """The ``recurrent_hidden_size`` option: the GRU's state width, 1 to ``MAX_WIDTH``.

    Examples:
        >>> recurrent_hidden_size_field().default
        64
    """
    return Field(
        64, ge=1, le=MAX_WIDTH, description="Width of the GRU's hidden state (recurrent: gru)."
    )


def sequence_length_field(description: str, *, le: int | None = MAX_REPLAYED_SEQUENCE) -> Any:
    """The ``sequence_length`` option: steps per training sequence (default 25, an MPE episode),
    at most ``le`` (``None``: no bound of its own).

    Examples:
        >>> sequence_length_field("Steps per sequence.").default
        25
    """
    return Field(25, ge=1, le=le, description=description)
