"""Reaching a Ray, moved to :mod:`marlplug.ray_connection` (the lowest layer) so that env copies on
Ray actors (``env.copies: ray``) start and join Ray the same way the learners do; re-exported here."""

from marlplug.ray_connection import (
    RayOutputToStderr,
    RayUnavailableError,
    check_reachable,
    loopback_only,
    unavailable_message,
)

__all__ = [
    "RayOutputToStderr",
    "RayUnavailableError",
    "check_reachable",
    "loopback_only",
    "unavailable_message",
]
