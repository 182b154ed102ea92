"""Checkpoints: written atomically (temp file + ``os.replace``), with the RNG states."""

from __future__ import annotations

import os
import random
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import torch

from marlplug.errors import UserError

CHECKPOINT_NAME = "checkpoint.pt"


def rng_states() -> dict[str, Any]:
    """torch, numpy and Python RNG states."""
    return {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "python": random.getstate()}


def restore_rng_states(states: dict[str, Any]) -> None:
    torch.set_rng_state(states["torch"])
    np.random.set_state(states["numpy"])
    random.setstate(states["python"])


def save_checkpoint(path: Path, state: dict[str, Any]) -> Path:
    """Write ``state`` (plus RNG states) to ``path`` atomically: a reader never sees half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {**state, "rng": rng_states()}
    handle, temporary = tempfile.mkstemp(prefix=".checkpoint-", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            torch.save(payload, stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def load_checkpoint(path: Path) -> dict[str, Any]:
    """Read a checkpoint written by :func:`save_checkpoint`."""
    if not path.is_file():
        raise UserError(f"--resume: no checkpoint at {path}")
    state: dict[str, Any] = torch.load(path, weights_only=False)
    return state
