"""Keep freed memory in the process heap (glibc), so training steps stop page-faulting.

A PyTorch CPU training step allocates and frees the same multi-megabyte activations and gradients
every time. glibc serves blocks above its mmap threshold with fresh ``mmap`` pages and trims the heap
back to the OS on ``free``, so every step touches new pages: at 32 agents that is ~17% of a joint PPO
step (``marlplug bench loss``). Raising both thresholds keeps the memory for reuse, as jemalloc and
tcmalloc do (what PyTorch's CPU performance guides recommend preloading). The cost: the process keeps
its peak heap until exit.

``marlplug`` commands call :func:`keep_freed_memory` once at start-up. It does nothing on non-glibc
systems, when ``MARLPLUG_MALLOC_TUNING=0``, or when the user already tuned malloc themselves
(``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_`` or ``glibc.malloc`` in ``GLIBC_TUNABLES``:
theirs win).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

from marlplug.switches import env_flag

#: glibc's ``mallopt`` parameter numbers (malloc.h).
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3

#: Blocks below this come from the heap; glibc caps the mmap threshold at 32 MiB on 64-bit.
MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024
#: Free heap above this is returned to the OS.
TRIM_THRESHOLD_BYTES = 1024 * 1024 * 1024

_USER_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")


def keep_freed_memory() -> bool:
    """Raise glibc's mmap and trim thresholds for this process; ``True`` if it did.

    Examples:
        >>> keep_freed_memory()  # doctest: +SKIP
        True
    """
    if not env_flag("MARLPLUG_MALLOC_TUNING", default=True):
        return False
    if any(name in os.environ for name in _USER_SETTINGS):
        return False
    if "glibc.malloc." in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    library = ctypes.util.find_library("c")
    if library is None:
        return False
    libc = ctypes.CDLL(library)
    if not hasattr(libc, "mallopt") or not hasattr(libc, "gnu_get_libc_version"):
        return False  # not glibc (musl, macOS): leave the allocator alone
    return bool(
        libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
        and libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES)
    )
