"""docs/results/{index,speed,learning,epymarl,many-agents,benchmarl}.md print their tables from the
JSON under docs/data/: each page's module in tests/results_pages/ makes its tables' rows from those
files (the sweeps' statistics through ``marlplug compare``'s own code, with its default seed and
resamples), and the test checks that the page holds every row, cell for cell. A rerun that changes
a JSON file fails here until the page shows the new numbers, so a page and its data cannot drift
apart, and a figure quoted on two pages comes from one file.

``python tests/test_results_pages.py`` prints every table's rows, ready to paste.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator

import pytest

from tests.results_pages import benchmarl, epymarl, index, learning, many_agents, speed
from tests.results_tables import DATA, RESULTS, assert_page_prints

#: Every table the pages print from docs/data, by the page that prints it.
TABLES: dict[str, tuple[str, Callable[[], Iterator[str]]]] = {
    **index.TABLES,
    **speed.TABLES,
    **learning.TABLES,
    **epymarl.TABLES,
    **many_agents.TABLES,
    **benchmarl.TABLES,
}


@pytest.mark.parametrize("name", list(TABLES))
def test_the_page_prints_its_data(name: str) -> None:
    page, rows = TABLES[name]
    assert_page_prints(
        page, rows(), hint=f" for '{name}' (python tests/test_results_pages.py prints them all)"
    )


def test_every_data_file_a_results_page_links_exists() -> None:
    pages = ("index.md", "speed.md", "env-copies.md", "learning.md", "many-agents.md", "epymarl.md")
    more = (
        "benchmarl.md",
        "benchmarl-wall-time.md",
        "benchmarl-off-policy.md",
        "benchmarl-off-policy-sampling.md",
    )
    for page in (*pages, *more):
        text = (RESULTS / page).read_text()
        for start in [i for i in range(len(text)) if text.startswith("../data/", i)]:
            name = text[start + len("../data/") :].split(")")[0].split("`")[0]
            assert (DATA / name).is_file(), f"docs/results/{page} links ../data/{name}"


if __name__ == "__main__":
    for name, (page, rows) in TABLES.items():
        print(f"## {page}: {name}", *rows(), "", sep="\n", file=sys.stdout)
