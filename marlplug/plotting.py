"""Figures saved to files with matplotlib's object API.

No pyplot: nothing changes matplotlib's global backend (a notebook that calls marlplug keeps its own),
and there is no figure registry to close.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@contextmanager
def saved_figure(
    path: str | Path,
    *,
    figsize: tuple[float, float],
    dpi: int = 110,
    **subplots: Any,
) -> Iterator[tuple[Figure, Any]]:
    """Yield ``(figure, axes)`` (``axes`` as ``Figure.subplots(**subplots)`` returns them); on a clean
    exit lay the figure out and save it to ``path``, creating its folder.

    Examples:
        >>> import tempfile
        >>> target = Path(tempfile.mkdtemp()) / "plots" / "line.png"
        >>> with saved_figure(target, figsize=(3, 2)) as (figure, axes):
        ...     _ = axes.plot([0, 1], [1, 0])
        >>> target.stat().st_size > 0
        True
    """
    from matplotlib.figure import Figure  # lazy: matplotlib is slow to import

    figure = Figure(figsize=figsize)
    axes = figure.subplots(**subplots)
    yield figure, axes
    figure.tight_layout()
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(target, dpi=dpi)
