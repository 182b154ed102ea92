"""Runs never share a folder: creation is atomic and exclusive (a default-named clash picks the next
free name, an explicit name that is taken is one line), one process holds a folder at a time, and a
crashed run's temporary files are removed at the next start."""

from __future__ import annotations

import datetime as dt
import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from marlplug import load_config
from marlplug.errors import UserError
from marlplug.runs.run_config import new_run_dir
from marlplug.runs.run_folder import (
    LOCK_NAME,
    claim_run_dir,
    create_run_dir,
    hold_run_dir,
    remove_orphaned_temporaries,
)
from tests.train.helpers import SMALL_RUN

FROZEN = dt.datetime(2026, 1, 1, 12, 0, 0)


def _frozen() -> dt.datetime:
    return FROZEN


def _create(parent: str, name: str | None, start: Any, results: Any) -> None:
    start.wait()
    try:
        results.put(str(create_run_dir(Path(parent), name, now=_frozen)))
    except UserError as exc:
        results.put(f"error: {exc}")


def _race(parent: Path, name: str | None, processes: int = 6) -> list[str]:
    """``processes`` processes create a run folder at the same moment (same clock second)."""
    context = multiprocessing.get_context("fork")
    start, results = context.Barrier(processes), context.Queue()
    workers = [
        context.Process(target=_create, args=(str(parent), name, start, results))
        for _ in range(processes)
    ]
    for worker in workers:
        worker.start()
    outcomes = [results.get(timeout=120) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
    return outcomes


def test_runs_started_in_the_same_second_get_their_own_folders(tmp_path: Path) -> None:
    outcomes = _race(tmp_path, None)
    assert len(set(outcomes)) == len(outcomes), outcomes
    assert sorted(Path(o).name for o in outcomes) == [
        "20260101-120000",
        *(f"20260101-120000-{n}" for n in range(2, 7)),
    ]


def test_runs_with_the_same_run_name_at_once_one_wins_the_others_get_one_line(
    tmp_path: Path,
) -> None:
    outcomes = _race(tmp_path, "same")
    winners = [o for o in outcomes if not o.startswith("error: ")]
    assert winners == [str(tmp_path / "same")], outcomes
    for outcome in outcomes:
        if outcome.startswith("error: "):
            assert outcome == (
                f"error: logging.run_name: {tmp_path / 'same'} already holds a run; continue it "
                f"with --resume {tmp_path / 'same'}, or choose another name"
            )


def test_new_run_dir_never_hands_out_a_folder_twice(tmp_path: Path) -> None:
    # Today's default (a timestamp) twice within one second, and a run_name twice.
    default = load_config(overrides=[*SMALL_RUN, f"logging.dir={tmp_path}"])
    assert new_run_dir(default) != new_run_dir(default)
    named = load_config(overrides=[*SMALL_RUN, f"logging.dir={tmp_path}", "logging.run_name=a"])
    first = new_run_dir(named)
    with pytest.raises(UserError, match=r"^logging.run_name: .* already holds a run"):
        new_run_dir(named)
    assert first == tmp_path / "a"


def test_an_empty_folder_made_beforehand_can_be_claimed_once(tmp_path: Path) -> None:
    folder = tmp_path / "made"
    folder.mkdir()
    assert claim_run_dir(folder) == folder
    with pytest.raises(UserError, match="already holds a run"):
        claim_run_dir(folder)
    other = tmp_path / "used"
    other.mkdir()
    (other / "notes.txt").write_text("someone's files")
    with pytest.raises(UserError, match="already holds a run"):
        claim_run_dir(other)
    assert not (other / LOCK_NAME).exists()


def test_a_run_folder_is_held_by_one_process(tmp_path: Path, run_cli: Any) -> None:
    config = load_config(
        overrides=[*SMALL_RUN, "train.updates=1", f"logging.dir={tmp_path}", "logging.run_name=r"]
    )
    from marlplug.train.run import run_training

    run_dir = run_training(config).run_dir
    with hold_run_dir(run_dir):
        result = run_cli("train", "--resume", str(run_dir), "--set", "train.updates=2")
    assert result.exit_code == 2
    assert result.err.strip().splitlines() == [
        f"error: {run_dir} is in use by another marlplug run (pid {__import__('os').getpid()}); "
        f"wait for it to end or stop it"
    ]
    # Released: the resume goes ahead.
    assert run_cli("train", "--resume", str(run_dir), "--set", "train.updates=2").exit_code == 0


def test_orphaned_temporary_files_are_removed_and_nothing_else(tmp_path: Path) -> None:
    scalars = tmp_path / "metrics" / "scalars"
    scalars.mkdir(parents=True)
    orphans = [
        tmp_path / ".checkpoint.pt-abc_1234",
        tmp_path / ".rounds.csv-zz99yy88",
        scalars / ".total_loss.csv-q1w2e3r4",
    ]
    kept = [
        tmp_path / "checkpoint.pt",
        tmp_path / ".notes-12345678",
        tmp_path / ".checkpoint.pt-short",
        scalars / "total_loss.csv",
    ]
    for path in [*orphans, *kept]:
        path.write_bytes(b"x")
    assert sorted(remove_orphaned_temporaries(tmp_path)) == sorted(orphans)
    assert all(path.exists() for path in kept)
    assert not any(path.exists() for path in orphans)


def test_an_unwritable_logging_dir_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the logging dir should be")
    with pytest.raises(UserError, match=r"^logging.dir: cannot create .*file/x"):
        create_run_dir(blocker / "x", None)
