"""Where a step's time goes beyond its GEMM floor (``marlplug bench loss``): its matrix products as
they ran inside the step, and the same products replayed alone at their own shapes.

The floor (:mod:`marlplug.bench.gemm_floor`) prices every FLOP at the rate of one large square-ish
product. A step's products are rarely that shape: 32 agents' ``[1000, 64] @ [64, 64]`` run at a
fraction of that rate on a CPU, and a product whose inputs were just written by other ops may find
them out of cache. Replaying each product alone, on random tensors of its shapes and strides with
warm caches, gives the time the products need at their shapes (:func:`replayed_medians_ms`);
timing them inside the step (:func:`record_products`) shows what the rest of the step costs around
them.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from marlplug.bench.gemm_floor import MATRIX_PRODUCTS


@dataclass(frozen=True)
class TensorLayout:
    """A tensor argument's shape, strides and dtype (what a replay needs, not its values).

    >>> layout = TensorLayout.of(torch.ones(3, 4).T)
    >>> layout, layout.random().stride()
    (TensorLayout(shape=(4, 3), stride=(1, 4), dtype=torch.float32), (1, 4))
    """

    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: torch.dtype

    @classmethod
    def of(cls, tensor: torch.Tensor) -> TensorLayout:
        return cls(tuple(tensor.shape), tuple(tensor.stride()), tensor.dtype)

    def random(self) -> torch.Tensor:
        """Standard normal values laid out like the recorded tensor (broadcast strides included)."""
        if 0 in self.shape:
            return torch.empty(self.shape, dtype=self.dtype)
        span = 1 + sum(
            (size - 1) * step for size, step in zip(self.shape, self.stride, strict=True)
        )
        return torch.randn(span, dtype=self.dtype).as_strided(self.shape, self.stride)


@dataclass(frozen=True)
class MatrixProduct:
    """One call of a matrix product op (:data:`~marlplug.bench.gemm_floor.MATRIX_PRODUCTS`):
    the op, and its arguments with every tensor replaced by its :class:`TensorLayout`."""

    op: Any  # a torch OpOverload, e.g. torch.ops.aten.bmm.default
    args: tuple[object, ...]

    @property
    def operands(self) -> tuple[TensorLayout, TensorLayout]:
        """The two matrices multiplied (``addmm`` and ``baddbmm`` take the added term first)."""
        left, right = [arg for arg in self.args if isinstance(arg, TensorLayout)][-2:]
        return left, right

    @property
    def flops(self) -> int:
        """``2·m·k·n`` per matrix pair, times the batch.

        >>> MatrixProduct(torch.ops.aten.bmm.default,
        ...               (TensorLayout((3, 2, 4), (8, 4, 1), torch.float32),
        ...                TensorLayout((3, 4, 5), (20, 5, 1), torch.float32))).flops
        240
        """
        left, right = self.operands
        batch = left.shape[0] if len(left.shape) == 3 else 1
        return 2 * batch * left.shape[-2] * left.shape[-1] * right.shape[-1]

    def describe(self) -> str:
        """The op and its operands' shapes, e.g. ``bmm 32x1000x64 @ 32x64x64``."""
        left, right = self.operands
        shapes = " @ ".join("x".join(map(str, layout.shape)) for layout in (left, right))
        return f"{self.op.overloadpacket.__name__} {shapes}"

    def replay(self) -> Callable[[], object]:
        """The same call on fresh random tensors of the same layouts.

        >>> product = MatrixProduct(torch.ops.aten.mm.default,
        ...                         (TensorLayout((2, 3), (3, 1), torch.float32),
        ...                          TensorLayout((3, 4), (4, 1), torch.float32)))
        >>> product.replay()().shape
        torch.Size([2, 4])
        """
        args = [arg.random() if isinstance(arg, TensorLayout) else arg for arg in self.args]
        return lambda: self.op(*args)


class _ProductRecorder(TorchDispatchMode):
    """Records and times every matrix product run under it (autograd's backward included: on a
    CPU the engine runs it on the calling thread). A product called with keyword arguments (an
    ``out=`` tensor, say) runs unrecorded; the networks' steps make none, and a test checks that the
    recorded FLOPs equal ``FlopCounterMode``'s count."""

    def __init__(self) -> None:
        super().__init__()
        self.products: list[MatrixProduct] = []
        self.ms = 0.0

    def __torch_dispatch__(
        self,
        func: Any,
        types: Sequence[type],
        args: Sequence[object] = (),
        kwargs: dict[str, object] | None = None,
    ) -> object:
        kwargs = kwargs or {}
        if str(func.overloadpacket) not in MATRIX_PRODUCTS or kwargs:
            return func(*args, **kwargs)
        start = time.perf_counter()
        out = func(*args)
        self.ms += (time.perf_counter() - start) * 1e3
        layouts = tuple(TensorLayout.of(a) if isinstance(a, torch.Tensor) else a for a in args)
        self.products.append(MatrixProduct(func, layouts))
        return out


def record_products(function: Callable[[], object]) -> tuple[list[MatrixProduct], float]:
    """The matrix products one call of ``function`` runs, in order, and the milliseconds they took
    inside it.

    >>> products, ms = record_products(lambda: torch.ones(4, 3) @ torch.ones(3, 2))
    >>> [str(p.op) for p in products], ms > 0
    (['aten.mm.default'], True)
    """
    with _ProductRecorder() as recorder:
        function()
    return recorder.products, recorder.ms


def replayed_medians_ms(
    products: Collection[MatrixProduct], *, repeats: int
) -> dict[MatrixProduct, float]:
    """Each distinct product of ``products`` replayed alone (:meth:`MatrixProduct.replay`): the
    median (ms) of ``repeats`` timed calls, each right after an untimed call of the same product
    (warm caches).

    The calls run in rounds (every distinct product once a round), so a change in the machine's
    load hits every product alike; a reference product in the same rounds prices them fairly.

    >>> mm = MatrixProduct(torch.ops.aten.mm.default,
    ...                    (TensorLayout((8, 8), (8, 1), torch.float32),) * 2)
    >>> medians = replayed_medians_ms([mm, mm], repeats=3)
    >>> list(medians) == [mm], medians[mm] > 0
    (True, True)
    """
    replays = {product: product.replay() for product in products}
    times: dict[MatrixProduct, list[float]] = {product: [] for product in replays}
    for _ in range(repeats):
        for product, replay in replays.items():
            replay()
            start = time.perf_counter()
            replay()
            times[product].append((time.perf_counter() - start) * 1e3)
    return {product: statistics.median(values) for product, values in times.items()}
