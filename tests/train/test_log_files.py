"""Log rewrites on resume: atomic, mode-preserving, and robust to the torn last line of a crash."""

from __future__ import annotations

import csv
import os
import stat
from pathlib import Path

from marlplug.runs.atomic_files import write_atomically
from marlplug.runs.iteration_report import rounds_columns
from marlplug.runs.metrics_files import restart_rounds_csv, restart_scalar_csvs


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_rewritten_file_keeps_its_mode_and_a_new_one_gets_the_umasks(tmp_path: Path) -> None:
    shared = tmp_path / "rounds.csv"
    shared.write_text("old\n")
    shared.chmod(0o664)
    write_atomically(shared, lambda stream: stream.write(b"new\n"))
    assert shared.read_text() == "new\n" and _mode(shared) == 0o664

    umask = os.umask(0o027)
    try:
        fresh = write_atomically(tmp_path / "fresh.csv", lambda stream: stream.write(b"x"))
    finally:
        os.umask(umask)
    assert _mode(fresh) == 0o640  # not mkstemp's 0600


def test_a_symlinked_log_is_rewritten_through_the_link(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.csv"
    target.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    write_atomically(link, lambda stream: stream.write(b"new\n"))
    assert link.is_symlink() and target.read_text() == "new\n"


def test_torn_and_foreign_lines_are_dropped(tmp_path: Path) -> None:
    rounds = tmp_path / "rounds.csv"
    rounds.write_text("iteration,s,t\n0,a,b\n1,c,d\n2,e,f\n1\n")  # a crash cut the last row short
    assert restart_rounds_csv(rounds, ["iteration", "s", "t"], 5) == 3
    assert rounds.read_text().split() == ["iteration,s,t", "0,a,b", "1,c,d", "2,e,f"]

    scalars = tmp_path / "scalars"
    scalars.mkdir()
    (scalars / "loss.csv").write_text("1,0.5\n2,0.4\nnot a row\n3,0.3\n4")
    assert restart_scalar_csvs(scalars, 4) == 3
    assert (scalars / "loss.csv").read_text().split() == ["step,loss", "1,0.5", "2,0.4", "3,0.3"]


def test_a_coded_rounds_log_keeps_or_drops_an_iteration_s_rows_together(tmp_path: Path) -> None:
    rounds = tmp_path / "rounds.csv"
    rounds.write_text("iteration,round,t\n0,0,a\n0,1,b\n1,2,c\n1,3,d\n2,4,e\n")
    assert restart_rounds_csv(rounds, ["iteration", "round", "t"], 1) == 2
    assert rounds.read_text().split() == ["iteration,round,t", "0,0,a", "0,1,b"]


def test_a_rounds_log_of_one_row_per_iteration_gets_the_round_column(tmp_path: Path) -> None:
    # A coded run's rounds.csv from before it had a row per round: no `round` column.
    columns = rounds_columns(coded=True)
    old = [column for column in columns if column != "round"]
    written = [
        {"iteration": "0", "env_steps": "10", "collect_s": "0.1", "update_s": "0.0"},
        {"iteration": "1", "env_steps": "20", "return_team": "-3.0", "round_clock": "wall"},
        {"iteration": "2", "env_steps": "30", "return_team": "-2.0", "round_clock": "wall"},
    ]
    rounds = tmp_path / "rounds.csv"
    with rounds.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=old, restval="")
        writer.writeheader()
        writer.writerows(written)
    assert restart_rounds_csv(rounds, columns, 2) == 2
    with rounds.open(newline="") as handle:
        reader = csv.DictReader(handle)
        kept = list(reader)
    assert reader.fieldnames == columns
    assert kept == [{column: row.get(column, "") for column in columns} for row in written[:2]]
