"""Coding for distributed learning: the math, independent of where learners run.

Learner j returns ``y_j = Σ_i C[j, i]·θ_i`` for an ``N×M`` assignment matrix ``C``; a decoder
recovers every ``θ_i`` from the first learners to answer. This package holds:

- :mod:`~marlplug.coding.scheme` and :mod:`~marlplug.coding.codes`: coding schemes (assignment
  matrices; plugins through hook ``marlplug_codes``): uncoded, replication, MDS, random sparse,
  LDPC, Vandermonde;
- :mod:`~marlplug.coding.decoding`: decoders (least squares, peeling) and the one test of whether a
  set of answers decodes (:func:`~marlplug.coding.decoding.rows_condition`: rank M and a condition
  number within the decoder's limit);
- :mod:`~marlplug.coding.exact`: exact coding of float32 states through their ordinals;
- :mod:`~marlplug.coding.completion`: the one-agent tasks that complete an undecodable round;
- :mod:`~marlplug.coding.stragglers`: the straggler model and the rule that ends a round;
- :mod:`~marlplug.coding.conditioning`, :mod:`~marlplug.coding.analysis`,
  :mod:`~marlplug.coding.verdict`, :mod:`~marlplug.coding.plots`: ``marlplug codes analyze`` (recovery,
  conditioning, round times) and the check that refuses a code that cannot decode before a run starts;
- :mod:`~marlplug.coding.gf2`: linear algebra over GF(2) for the LDPC construction.

See docs/concepts/coded-training.md (and docs/results/coding.md for what the codes measure).
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
