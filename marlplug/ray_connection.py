"""Reaching a Ray: the one-line error when it cannot be started or joined, a fast check that a
cluster's address answers, a local Ray that listens on loopback only, and Ray's driver messages on
stderr (never in a run's summary on stdout). Imports no Ray until a Ray is started.

Coded learners (``coding.backend: ray``) and env copies (``env.copies: ray``) both reach Ray
through it; ``field`` names the config field the one-line errors start with.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
from collections.abc import Iterator
from typing import Any, TextIO

from marlplug.errors import UserError


class RayUnavailableError(UserError):
    """Ray is not installed, or the cluster cannot be reached."""


def unavailable_message(
    address: str | None, error: BaseException, *, field: str = "coding.ray_address"
) -> str:
    """The one line for a Ray that could not be started or joined.

    A cluster with token authentication (Ray's default since 2.5x for clusters started by
    ``ray start``) refuses a driver without its token after a long retry, with a message that does
    not say so; the line then says which variables to set.

    Examples:
        >>> unavailable_message("10.0.0.1:6379", ConnectionError("Failed to connect"))
        "coding.ray_address: cannot start or reach Ray at '10.0.0.1:6379': Failed to connect"
    """
    where = address or "a local Ray"
    line = f"{field}: cannot start or reach Ray at '{where}': {error}".splitlines()[0]
    chain: list[BaseException] = []
    cause: BaseException | None = error
    while cause is not None and len(chain) < 10:
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    if any("AuthToken" in str(link) or "Authentication" in type(link).__name__ for link in chain):
        line += (
            " (the cluster wants its auth token: set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN, "
            "or put the token in ~/.ray/auth_token; see docs/how-to/ray-cluster.md)"
        )
    return line


def check_reachable(
    address: str,
    *,
    timeout_s: float = 5.0,
    field: str = "coding.ray_address",
    unset_hint: str = "leave ray_address unset to start a local Ray",
) -> None:
    """Fail fast, with the address in the message, when a ``host:port`` cluster does not answer.

    Ray itself retries an unreachable address for a long time; ``"auto"`` and addresses without a
    port are left to Ray. ``field`` starts the message, ``unset_hint`` ends it.
    """
    target = address.removeprefix("ray://")
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit():
        return
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s):
            pass
    except OSError as exc:
        raise RayUnavailableError(
            f"{field}: cannot reach the Ray cluster at '{address}' ({exc.strerror or exc}); "
            f"check the address, or {unset_hint}"
        ) from None


#: Ray reads this when it is imported: off, a node it starts advertises (and so listens on) 127.0.0.1.
_CLUSTER_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


@contextlib.contextmanager
def loopback_only() -> Iterator[None]:
    """Within the block, a Ray started by ``ray.init()`` binds every server to 127.0.0.1.

    Ray 2.x listens on all interfaces unless its node address is loopback, and it turns an explicit
    ``127.0.0.1`` into the host's address; its single-machine mode keeps loopback. That mode is read
    from the environment when Ray is imported (and by the processes it starts), and from
    ``ray._private.ray_constants`` at ``ray.init`` time, so both are set for the block. The test
    suite checks the sockets the processes really open.
    """
    import ray._private.ray_constants as ray_constants

    previous_env = os.environ.get(_CLUSTER_SWITCH)
    previous = getattr(ray_constants, "ENABLE_RAY_CLUSTER", None)
    os.environ[_CLUSTER_SWITCH] = "0"
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        if previous_env is None:
            os.environ.pop(_CLUSTER_SWITCH, None)
        else:
            os.environ[_CLUSTER_SWITCH] = previous_env
        if previous is not None:
            ray_constants.ENABLE_RAY_CLUSTER = previous


class RayOutputToStderr:
    """A ``sys.stdout`` stand-in that sends what Ray's driver threads print to stderr.

    Ray prints cluster messages (e.g. "A worker died or was killed while executing a task") from its
    background threads (named ``ray_...``) to ``sys.stdout``; a run's summary is on stdout, so those
    lines are moved to stderr. Everything else passes through unchanged.
    """

    def __init__(self, stdout: TextIO) -> None:
        self._stdout = stdout

    @classmethod
    def install(cls) -> RayOutputToStderr:
        """Put a router in front of the current ``sys.stdout``."""
        router = cls(sys.stdout)
        sys.stdout = router
        return router

    def uninstall(self) -> None:
        """Give ``sys.stdout`` back (unless someone replaced it since)."""
        if sys.stdout is self:
            sys.stdout = self._stdout

    def _target(self) -> TextIO:
        return sys.stderr if threading.current_thread().name.startswith("ray_") else self._stdout

    def write(self, text: str) -> int:
        return self._target().write(text)

    def flush(self) -> None:
        self._target().flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stdout, name)
