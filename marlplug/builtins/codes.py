"""Built-in coding schemes (``marlplug_codes``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from marlplug.hookspecs import hookimpl


@hookimpl
def marlplug_codes() -> Mapping[str, Any]:
    """``uncoded``, ``replication``, ``mds``, ``vandermonde`` (the authors' MDS), ``random_sparse``,
    ``ldpc``; see docs/concepts/coded-training.md."""
    return {
        "uncoded": "marlplug.coding.codes:UncodedScheme",
        "replication": "marlplug.coding.codes:ReplicationCode",
        "mds": "marlplug.coding.codes:MDSCode",
        "vandermonde": "marlplug.coding.codes:VandermondeCode",
        "random_sparse": "marlplug.coding.codes:RandomSparseCode",
        "ldpc": "marlplug.coding.codes:LDPCCode",
    }
