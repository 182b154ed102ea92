"""Torch on one thread for a block of work, the previous count after it: one helper for every layer
(the algorithms' updates and collection, the distributed controller, evaluations), so none repeats
the save, set and restore. Which count a whole run uses is :mod:`marlplug.train.threads`' job.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def one_thread() -> Iterator[None]:
    """Torch on one thread inside the block, the previous count after it (also after an error):
    for work whose result must not depend on the thread count (with several threads torch splits
    reductions by tensor shape, so an agent's result would depend on which other agents share the
    call) or that a second thread only slows (products of a few rows, an evaluation acting on one
    env copy at a time).

    Examples:
        >>> previous = torch.get_num_threads()
        >>> with one_thread():
        ...     torch.get_num_threads()
        1
        >>> torch.get_num_threads() == previous
        True
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@contextmanager
def kept_thread_count() -> Iterator[None]:
    """Torch's thread count after the block as before it, whatever the block set (TorchRL's
    batched envs change it when they start and close).

    Examples:
        >>> previous = torch.get_num_threads()
        >>> with kept_thread_count():
        ...     torch.set_num_threads(previous + 1)
        >>> torch.get_num_threads() == previous
        True
    """
    threads = torch.get_num_threads()
    try:
        yield
    finally:
        torch.set_num_threads(threads)
