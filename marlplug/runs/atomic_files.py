"""Atomic file writes: a temporary file beside the target, fsynced, then ``os.replace``.

Every file a run writes (checkpoint, CSVs, config.yaml, a sweep's results.json) goes through
:func:`write_atomically`, so a crash or a reader never sees half a file. Its temporary names are
the ones :func:`marlplug.runs.run_folder.remove_orphaned_temporaries` clears after a crash.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO


def write_atomically(path: Path, write: Callable[[BinaryIO], object]) -> Path:
    """Call ``write`` on a temporary file beside ``path``, fsync it and move it into place.

    A reader, or a run that crashes meanwhile, sees the old file or the new one, never half of one.
    The file keeps the mode it had (a new one gets the umask's), and a symlink's target is replaced,
    not the link.

    Examples:
        >>> import tempfile
        >>> target = Path(tempfile.mkdtemp()) / "notes.txt"
        >>> write_atomically(target, lambda stream: stream.write(b"done")).read_text()
        'done'
    """
    path = Path(os.path.realpath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else _default_file_mode()
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        os.fchmod(handle, mode)  # mkstemp makes the file private (0600)
        with os.fdopen(handle, "wb") as stream:
            write(stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    fsync_directory(path.parent)  # the rename itself survives a power loss
    return path


def _default_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def fsync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable; a no-op where directories cannot be opened."""
    try:
        handle = os.open(directory, os.O_RDONLY)
    except OSError:  # a platform or file system that cannot open directories
        return
    try:
        os.fsync(handle)
    except OSError:
        pass
    finally:
        os.close(handle)
