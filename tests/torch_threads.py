"""One torch thread for tests of small networks: fastest, and most predictable on a shared machine.

Test folders that want it import the fixture into their ``conftest.py`` (it is autouse there).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch


@pytest.fixture(autouse=True)
def one_torch_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
