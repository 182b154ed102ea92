"""Coded distributed learning: coding schemes (assignment matrices), decoders and straggler analysis.

Learner j returns y_j = Σ_i C[j,i]·θ_i for an N×M assignment matrix C; a decoder recovers θ from the
first learners to answer. Schemes are plugins (hook ``marlplug_codes``); see docs/coding.md.
"""

from marlplug.coding.codes import (
    LDPCCode,
    MDSCode,
    RandomSparseCode,
    ReplicationCode,
    UncodedScheme,
    VandermondeCode,
)
from marlplug.coding.conditioning import ConditionSummary, worst_condition
from marlplug.coding.decoding import (
    DEFAULT_MAX_CONDITION,
    Decoder,
    LeastSquaresDecoder,
    NotDecodableError,
    PeelingDecoder,
    make_decoder,
    peeling_schedule,
)
from marlplug.coding.scheme import CodingScheme, InvalidCodeError, validate_assignment_matrix

__all__ = [
    "DEFAULT_MAX_CONDITION",
    "CodingScheme",
    "ConditionSummary",
    "Decoder",
    "InvalidCodeError",
    "LDPCCode",
    "LeastSquaresDecoder",
    "MDSCode",
    "NotDecodableError",
    "PeelingDecoder",
    "RandomSparseCode",
    "ReplicationCode",
    "UncodedScheme",
    "VandermondeCode",
    "make_decoder",
    "peeling_schedule",
    "validate_assignment_matrix",
    "worst_condition",
]
