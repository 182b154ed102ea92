"""Kept checkpoints: ``train.keep_checkpoint_every`` keeps the checkpoint of every K-th update.

Each kept file is ``RUN_DIR/checkpoints/update-NNNNNN.pt``, a hard link to the checkpoint just
written (no bytes copied), or an atomic copy where the file system has no hard links; the next
checkpoint write replaces ``checkpoint.pt`` and leaves the kept files as they were. They are for
evaluating a run against its earlier self (``marlplug evaluate --opponent``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from marlplug.runs.atomic_files import fsync_directory, write_atomically

#: The run folder's sub-folder of the checkpoints ``train.keep_checkpoint_every`` keeps.
KEPT_DIR = "checkpoints"


def kept_checkpoint_path(run_dir: Path, update: int) -> Path:
    """Where ``train.keep_checkpoint_every`` keeps the checkpoint written after ``update``.

    Examples:
        >>> kept_checkpoint_path(Path("runs/battle"), 160).as_posix()
        'runs/battle/checkpoints/update-000160.pt'
    """
    return run_dir / KEPT_DIR / f"update-{update:06d}.pt"


def keep_checkpoint(checkpoint: Path, update: int) -> Path:
    """Keep ``checkpoint`` as it is now, at :func:`kept_checkpoint_path` of its folder, atomically.

    A hard link: no bytes are copied, and the next
    :func:`~marlplug.runs.checkpoint.save_checkpoint` puts a new file in
    ``checkpoint``'s place, leaving the kept one as it was. A copy where the file system has no
    hard links.

    Examples:
        >>> import tempfile
        >>> from marlplug.runs.checkpoint import CHECKPOINT_NAME, load_checkpoint, save_checkpoint
        >>> run_dir = Path(tempfile.mkdtemp())
        >>> _ = save_checkpoint(run_dir / CHECKPOINT_NAME, {"update": 40})
        >>> kept = keep_checkpoint(run_dir / CHECKPOINT_NAME, 40)
        >>> _ = save_checkpoint(run_dir / CHECKPOINT_NAME, {"update": 50})
        >>> kept.name, load_checkpoint(kept)["update"], load_checkpoint(run_dir / CHECKPOINT_NAME)["update"]
        ('update-000040.pt', 40, 50)
    """
    kept = kept_checkpoint_path(checkpoint.parent, update)
    kept.parent.mkdir(parents=True, exist_ok=True)
    # A free name of the form remove_orphaned_temporaries clears after a crash.
    handle, temporary = tempfile.mkstemp(prefix=f".{kept.name}-", dir=kept.parent)
    os.close(handle)
    os.unlink(temporary)
    try:
        os.link(checkpoint, temporary)
    except OSError:  # no hard links on this file system (e.g. some network or FAT ones)
        with checkpoint.open("rb") as source:
            return write_atomically(kept, lambda stream: shutil.copyfileobj(source, stream))
    try:
        os.replace(temporary, kept)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    fsync_directory(kept.parent)
    return kept
