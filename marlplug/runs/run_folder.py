"""Run folders: created atomically (two runs never share one), held by one process at a time,
cleared of a crashed run's temporary files, and write failures turned into one line.

A run folder is ``logging.dir/<name>``. The default name is the start time (``20260101-120000``);
when another run took that name in the same second, the next free ``<time>-2``, ``<time>-3``, ...
is used. An explicit ``logging.run_name`` (or ``run_dir``) that already holds files is refused: a
new run never writes into another run's folder (``--resume`` continues one).
"""

from __future__ import annotations

import datetime as dt
import errno
import os
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from marlplug.errors import UserError

#: Held (``flock``) by the process that trains in the folder; the kernel releases it when the
#: process ends, however it ends.
LOCK_NAME = ".lock"
#: A default-named run that clashes tries this many suffixed names before giving up.
MAX_NAME_ATTEMPTS = 1000
#: ``write_atomically``'s temporary files: ``.<target>-<8 random characters>`` (``tempfile``'s
#: alphabet), for the files a run writes (checkpoint, CSVs, config.yaml).
_TEMPORARY = re.compile(r"^\.(?P<target>.+\.(?:pt|csv|yaml))-[a-z0-9_]{8}$")
#: Errors of the file system rather than of marlplug: reported in one line, never a traceback.
STORAGE_ERRNOS = frozenset(
    {errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EPERM, errno.EFBIG}
)


def create_run_dir(
    parent: Path, name: str | None, *, now: Callable[[], dt.datetime] = dt.datetime.now
) -> Path:
    """Create and claim a new run folder under ``parent``; no other run can get the same one.

    Args:
        parent: ``logging.dir`` (created if missing).
        name: ``logging.run_name``; ``None`` names the run after the current time and picks the
            next free suffix when another run already has that name.
        now: the clock (for tests).

    Raises:
        UserError: ``name`` is taken by a folder with files in it, or ``parent`` cannot be written.

    Examples:
        >>> import tempfile
        >>> parent = Path(tempfile.mkdtemp())
        >>> clock = lambda: dt.datetime(2026, 1, 1, 12, 0, 0)
        >>> [create_run_dir(parent, None, now=clock).name for _ in range(2)]
        ['20260101-120000', '20260101-120000-2']
    """
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"logging.dir: cannot create {parent} ({exc.strerror})") from None
    if name is not None:
        return claim_run_dir(parent / name, field="logging.run_name")
    stamp = now().strftime("%Y%m%d-%H%M%S")
    for attempt in range(1, MAX_NAME_ATTEMPTS + 1):
        candidate = parent / (stamp if attempt == 1 else f"{stamp}-{attempt}")
        if _make_exclusive(candidate):
            return candidate
    raise UserError(
        f"logging.dir: {MAX_NAME_ATTEMPTS} runs named {stamp} already exist in {parent}; "
        f"set logging.run_name"
    )


def claim_run_dir(path: Path, *, field: str = "run_dir") -> Path:
    """Create ``path`` for a new run, or claim it if it exists and is empty; else one line.

    Exactly one of several processes claiming the same folder at once succeeds: the claim is the
    exclusive creation (``O_EXCL``) of its lock file, and a folder holding anything else is refused.
    """
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # a file of that name
        pass
    except OSError as exc:
        raise UserError(f"{field}: cannot create {path} ({exc.strerror})") from None
    taken = UserError(
        f"{field}: {path} already holds a run; continue it with --resume {path}, or choose "
        f"another name"
    )
    if not path.is_dir() or not _claim(path, field):
        raise taken
    if any(name != LOCK_NAME for name in os.listdir(path)):
        (path / LOCK_NAME).unlink()
        raise taken
    return path


def _make_exclusive(path: Path) -> bool:
    """Create and claim a new folder ``path``; False when it already exists (``mkdir`` is atomic
    on every POSIX file system) or another process claimed it first."""
    try:
        path.mkdir()
    except FileExistsError:
        return False
    except OSError as exc:
        raise UserError(f"logging.dir: cannot create {path} ({exc.strerror})") from None
    return _claim(path, "logging.dir")


def _claim(path: Path, field: str) -> bool:
    """Create ``path``'s lock file exclusively: True for the one process that did."""
    try:
        os.close(os.open(path / LOCK_NAME, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
    except FileExistsError:
        return False
    except OSError as exc:
        raise UserError(f"{field}: cannot write in {path} ({exc.strerror})") from None
    return True


@contextmanager
def hold_run_dir(path: Path) -> Iterator[list[Path]]:
    """Hold ``path`` for this process (a second run or resume of it gets one line), and remove the
    temporary files a killed run left there; yields the removed files.

    Raises:
        UserError: another process holds the folder, or the folder cannot be written.
    """
    import fcntl

    try:
        handle = os.open(path / LOCK_NAME, os.O_CREAT | os.O_RDWR, 0o644)
    except OSError as exc:
        raise UserError(f"--resume: cannot open {path / LOCK_NAME} ({exc.strerror})") from None
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(
                f"{path} is in use by another marlplug run (pid {_holder(handle)}); wait for it "
                f"to end or stop it"
            ) from None
        _write_holder(handle)
        yield remove_orphaned_temporaries(path)
    finally:
        os.close(handle)  # releases the lock


def _holder(handle: int) -> str:
    return os.pread(handle, 32, 0).decode(errors="replace").strip() or "unknown"


def _write_holder(handle: int) -> None:
    try:
        os.ftruncate(handle, 0)
        os.pwrite(handle, f"{os.getpid()}\n".encode(), 0)
    except OSError:  # a full disk: the pid is only for the message above
        pass


def remove_orphaned_temporaries(run_dir: Path) -> list[Path]:
    """Delete the temporary files (``.checkpoint.pt-*``, ``.rounds.csv-*``, ...) that a process
    killed while writing left in ``run_dir`` and its sub-folders; call it holding the folder.

    Examples:
        >>> import tempfile
        >>> run_dir = Path(tempfile.mkdtemp())
        >>> _ = (run_dir / ".checkpoint.pt-k3j2_x9a").write_bytes(b"half")
        >>> _ = (run_dir / ".config.yaml-femmuiw_").write_text("half")
        >>> _ = (run_dir / "notes.txt").write_text("kept")
        >>> [path.name for path in remove_orphaned_temporaries(run_dir)]
        ['.checkpoint.pt-k3j2_x9a', '.config.yaml-femmuiw_']
    """
    removed = []
    for path in sorted(run_dir.rglob(".*-*")):
        if _TEMPORARY.match(path.name) and path.is_file() and not path.is_symlink():
            path.unlink(missing_ok=True)
            removed.append(path)
    return removed


@contextmanager
def storage_errors(run_dir: Path, kept: Callable[[], str]) -> Iterator[None]:
    """Turn a file-system failure (read-only, full, no permission, file too large) while a run
    writes into one :class:`UserError` line naming the file and what was kept (``kept()``)."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in STORAGE_ERRNOS:
            raise
        where = exc.filename or run_dir
        raise UserError(f"logging.dir: cannot write {where} ({exc.strerror}); {kept()}") from None
