"""What the results pages' tests share: where pages and data live, how a table cell is printed, and
the check that a page holds every row its data gives (tests/results_pages/ and
tests/test_results_coding.py)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
DATA = ROOT / "docs" / "data"


def number(value: float, *, digits: int = 1, sign: bool = False) -> str:
    """A table cell as the pages print it: thousands separated, a Unicode minus, ``+`` where a
    margin's sign matters.

    Examples:
        >>> number(-3381.282), number(35172, digits=0), number(0.12345, digits=3)
        ('−3,381.3', '35,172', '0.123')
        >>> number(51.23, sign=True)
        '+51.2'
    """
    text = f"{value:+,.{digits}f}" if sign else f"{value:,.{digits}f}"
    return text.replace("-", "−")


def row(*cells: str) -> str:
    """A Markdown table row: ``| a | b |``."""
    return "| " + " | ".join(cells) + " |"


def load(name: str) -> Any:
    """``docs/data/NAME``, parsed."""
    return json.loads((DATA / name).read_text())


def assert_page_prints(page: str, rows: Iterable[str], *, hint: str = "") -> None:
    """Fail naming every row of ``rows`` that ``docs/results/PAGE`` does not print as a line."""
    lines = (RESULTS / page).read_text().splitlines()
    expected = list(rows)
    assert expected, f"no rows to look for on docs/results/{page}"
    missing = [line for line in expected if line not in lines]
    assert not missing, (
        f"docs/results/{page} does not print these rows as docs/data gives them{hint}:\n"
        + "\n".join(missing)
    )
