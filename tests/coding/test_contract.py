"""Every built-in code passes the contract suite that plugin authors run (marlplug.testing)."""

from __future__ import annotations

from marlplug.coding import (
    LDPCCode,
    MDSCode,
    RandomSparseCode,
    ReplicationCode,
    UncodedScheme,
    VandermondeCode,
)
from marlplug.testing import CodingSchemeContract, check_coding_scheme


class TestUncoded(CodingSchemeContract):
    scheme_class = UncodedScheme
    registered_name = "uncoded"


class TestReplication(CodingSchemeContract):
    scheme_class = ReplicationCode
    registered_name = "replication"


class TestMDS(CodingSchemeContract):
    scheme_class = MDSCode
    registered_name = "mds"


class TestVandermonde(CodingSchemeContract):
    scheme_class = VandermondeCode
    registered_name = "vandermonde"
    well_conditioned = False


class TestRandomSparse(CodingSchemeContract):
    scheme_class = RandomSparseCode
    registered_name = "random_sparse"


class TestLDPC(CodingSchemeContract):
    scheme_class = LDPCCode
    registered_name = "ldpc"
    sizes = ((8, 15), (10, 15), (6, 12))


def test_contract_catches_an_ill_conditioned_code_claimed_well_conditioned() -> None:
    try:
        check_coding_scheme(VandermondeCode, sizes=((8, 15),), seeds=(0,))
    except AssertionError as exc:
        assert "not decodable" in str(exc)
    else:
        raise AssertionError("the contract accepted an undecodable code as well conditioned")
