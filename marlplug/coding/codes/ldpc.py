"""``ldpc``: the systematic generator of a regular LDPC code, used as a real 0/1 matrix, decoded by peeling.

Two parity-check constructions: the authors' array LDPC (a γ×ρ array of p×p cyclic-shift powers) and
Gallager's random (d_v, d_c)-regular one for sizes the array code cannot reach.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field

from marlplug.coding import gf2
from marlplug.coding.decoding import Decoder, PeelingDecoder
from marlplug.coding.scheme import CodingScheme, InvalidCodeError
from marlplug.config import Options as ComponentOptions


def _is_prime(number: int) -> bool:
    return number >= 2 and all(number % divisor for divisor in range(2, int(number**0.5) + 1))


def array_parity_check(p: int, rho: int, gamma: int) -> np.ndarray:
    """H of the array LDPC code: block (a, b) is the p×p cyclic shift to the power a·b mod p.

    Examples:
        >>> array_parity_check(3, 5, 2).shape
        (6, 15)
    """
    identity = np.eye(p, dtype=np.uint8)
    return np.block(
        [[np.roll(identity, (a * b) % p, axis=1) for b in range(rho)] for a in range(gamma)]
    )


def gallager_parity_check(
    num_learners: int, d_v: int, d_c: int, rng: np.random.Generator
) -> np.ndarray:
    """H of a random (d_v, d_c)-regular Gallager code: d_v bands, each a column permutation of the first.

    Every column has d_v ones and every row d_c ones.

    Examples:
        >>> H = gallager_parity_check(15, 3, 5, np.random.default_rng(0))
        >>> H.shape, H.sum(axis=0).tolist() == [3] * 15, H.sum(axis=1).tolist() == [5] * 9
        ((9, 15), True, True)
    """
    band = np.kron(np.eye(num_learners // d_c, dtype=np.uint8), np.ones((1, d_c), dtype=np.uint8))
    bands = [band] + [band[:, rng.permutation(num_learners)] for _ in range(d_v - 1)]
    return np.vstack(bands)


class LDPCCode(CodingScheme):
    """A regular LDPC code's systematic generator as a real 0/1 assignment matrix, decoded by peeling.

    ``C = Gᵀ`` where G generates ``{c : H c = 0 (mod 2)}``: M learners are systematic (one agent
    each) and N-M learners update the sum of a few agents. ``construction="array"`` is the authors'
    code: p=3, ρ=5 gives N=15 with M=8 for γ=3 and M=10 for γ=2. ``"gallager"`` draws a random
    (d_v, d_c)-regular H (seeded) until the code has dimension M. ``"auto"`` (default) uses the array
    code when some p, ρ, γ fits N and M, and Gallager otherwise; unset parameters are searched.

    Examples:
        >>> C = LDPCCode().assignment_matrix(10, 15)
        >>> C.shape, sorted(set(C.ravel().tolist()))
        ((15, 10), [0.0, 1.0])
    """

    name = "ldpc"

    class Options(ComponentOptions):
        """Options of ``ldpc``."""

        construction: Literal["auto", "array", "gallager"] = "auto"
        p: int | None = Field(None, ge=2, description="Array code: circulant size (a prime).")
        rho: int | None = Field(None, ge=2, description="Array code: block columns (N = p·ρ).")
        gamma: int | None = Field(None, ge=1, description="Array code: block rows (column weight).")
        d_v: int | None = Field(None, ge=2, description="Gallager: ones per column of H.")
        d_c: int | None = Field(None, ge=2, description="Gallager: ones per row of H (divides N).")
        max_attempts: int = Field(200, ge=1, description="Gallager draws to try per (d_v, d_c).")

    options: Options

    def make_decoder(
        self, assignment_matrix: np.ndarray, *, max_condition: float | None = None
    ) -> Decoder:
        return PeelingDecoder(assignment_matrix, max_condition=max_condition)

    def build_matrix(self, num_agents: int, num_learners: int, seed: int) -> np.ndarray:
        construction = self.options.construction
        if construction in ("auto", "array"):
            parity_check = self._array_parity_check(
                num_agents, num_learners, required=construction == "array"
            )
            if parity_check is not None:
                return gf2.systematic_generator(parity_check).T.astype(np.float64)
        return self._gallager_matrix(num_agents, num_learners, seed)

    def _where(self, num_agents: int, num_learners: int) -> str:
        return f"{self.describe()} with M={num_agents} agents, N={num_learners} learners"

    def _array_parity_check(
        self, num_agents: int, num_learners: int, *, required: bool
    ) -> np.ndarray | None:
        opts = self.options
        shapes = [
            (p, num_learners // p)
            for p in range(2, num_learners + 1)
            if num_learners % p == 0
            and _is_prime(p)
            and num_learners // p >= 2
            and opts.p in (None, p)
            and opts.rho in (None, num_learners // p)
        ]
        tried: list[str] = []
        for p, rho in shapes:
            for gamma in [opts.gamma] if opts.gamma is not None else range(2, rho):
                parity_check = array_parity_check(p, rho, gamma)
                dimension = num_learners - gf2.rank(parity_check)
                if dimension == num_agents:
                    return parity_check
                tried.append(f"p={p}, rho={rho}, gamma={gamma} gives M={dimension}")
        if required:
            detail = (
                "; ".join(tried) if tried else "N is not p·ρ with p prime (and the given p, rho)"
            )
            raise InvalidCodeError(
                f"{self._where(num_agents, num_learners)}: no array LDPC fits ({detail})"
            )
        return None

    def _gallager_degrees(self, num_agents: int, num_learners: int) -> list[tuple[int, int]]:
        opts = self.options
        if opts.d_v is not None and opts.d_c is not None:
            return [(opts.d_v, opts.d_c)]
        degrees = []
        for d_c in range(2, num_learners + 1):
            for d_v in range(2, d_c):
                checks, remainder = divmod(num_learners * d_v, d_c)
                # A random Gallager H has rank checks - (d_v - 1) (each band sums to all ones).
                if (
                    num_learners % d_c == 0
                    and not remainder
                    and num_learners - checks + d_v - 1 == num_agents
                ):
                    degrees.append((d_v, d_c))
        return [
            (d_v, d_c)
            for d_v, d_c in degrees
            if opts.d_v in (None, d_v) and opts.d_c in (None, d_c)
        ]

    def _gallager_matrix(self, num_agents: int, num_learners: int, seed: int) -> np.ndarray:
        where = self._where(num_agents, num_learners)
        degrees = self._gallager_degrees(num_agents, num_learners)
        if not degrees:
            raise InvalidCodeError(
                f"{where}: no array LDPC fits and no (d_v, d_c)-regular Gallager code has dimension M "
                "(needs d_c dividing N and N - N·d_v/d_c + d_v - 1 = M); choose other sizes or a code "
                "like random_sparse"
            )
        rng = np.random.default_rng(seed)
        for d_v, d_c in degrees:
            if num_learners % d_c or (num_learners * d_v) % d_c:
                raise InvalidCodeError(f"{where}: d_c={d_c} must divide N and N·d_v")
            for _ in range(self.options.max_attempts):
                generator = gf2.systematic_generator(
                    gallager_parity_check(num_learners, d_v, d_c, rng)
                )
                if generator.shape[0] == num_agents and generator.any(axis=0).all():
                    return generator.T.astype(np.float64)
        raise InvalidCodeError(
            f"{where}: no Gallager draw with (d_v, d_c) in {degrees} had dimension M and no idle "
            f"learner in {self.options.max_attempts} attempts"
        )
