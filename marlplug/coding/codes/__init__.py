"""The built-in coding schemes."""

from marlplug.coding.codes.ldpc import LDPCCode
from marlplug.coding.codes.mds import MDSCode, VandermondeCode
from marlplug.coding.codes.random_sparse import RandomSparseCode
from marlplug.coding.codes.replication import ReplicationCode, UncodedScheme

__all__ = [
    "LDPCCode",
    "MDSCode",
    "RandomSparseCode",
    "ReplicationCode",
    "UncodedScheme",
    "VandermondeCode",
]
