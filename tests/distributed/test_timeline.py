"""The round timeline names its marks in a legend and numbers its learner rows with integers."""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure

from marlplug.distributed.controller import RoundLog
from marlplug.runs.timeline import draw_timeline, plot_timeline


def _round(index: int, arrivals: dict[int, float]) -> RoundLog:
    return RoundLog(
        round_index=index,
        clock="simulated",
        stragglers=[2],
        learners_used=[0, 1],
        arrivals=arrivals,
        compute_s={},
        wait_s=0.2,
        decode_s=0.01,
        round_s=0.21,
    )


def test_rows_are_learners_with_integer_ticks_and_a_legend_names_the_marks() -> None:
    axes = Figure().subplots()
    draw_timeline(
        axes, [_round(0, {0: 0.1, 1: 0.2}), _round(1, {0: 0.1, 1: 0.15, 2: 0.5})], num_learners=5
    )
    assert [label.get_text() for label in axes.get_yticklabels()] == ["0", "1", "2", "3", "4"]
    assert list(axes.get_yticks()) == [0, 1, 2, 3, 4]
    legend = axes.get_legend()
    assert legend is not None
    assert [text.get_text() for text in legend.get_texts()] == [
        "answer, used",
        "answer, not needed",
        "straggler (delayed)",
        "round decoded",
    ]


def test_a_redispatched_task_gets_its_own_row(tmp_path: Path) -> None:
    axes = Figure().subplots()
    draw_timeline(axes, [_round(0, {0: 0.1, 1: 0.2, 7: 0.3})], num_learners=3)
    assert [label.get_text() for label in axes.get_yticklabels()] == ["-1", "0", "1", "2"]
    assert "re-dispatched" in axes.get_ylabel()
    assert (
        plot_timeline([_round(0, {0: 0.1})], tmp_path / "t.png", num_learners=3).stat().st_size > 0
    )
