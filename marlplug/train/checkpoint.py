"""Checkpoints: written atomically (temp file + ``os.replace``), with the RNG states.

A checkpoint is a ``torch.save`` dict: ``trainer`` (loss, optimizer and counters, to resume),
``model`` (the :class:`~marlplug.models.JointActorCritic` state dict, to act), ``history`` and ``rng``.
"""

from __future__ import annotations

import os
import random
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import numpy as np
import torch

from marlplug.errors import UserError

if TYPE_CHECKING:
    from torchrl.envs import EnvBase

    from marlplug.config import MarlplugConfig
    from marlplug.models import JointActorCritic

CHECKPOINT_NAME = "checkpoint.pt"
MODEL_KEY = "model"


def rng_states() -> dict[str, Any]:
    """torch, numpy and Python RNG states."""
    return {
        "torch": torch.get_rng_state(),
        "numpy": np.random.get_state(),
        "python": random.getstate(),
    }


def restore_rng_states(states: dict[str, Any]) -> None:
    torch.set_rng_state(states["torch"])
    np.random.set_state(states["numpy"])
    random.setstate(states["python"])


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
    _fsync_directory(path.parent)  # the rename itself survives a power loss
    return path


def _default_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _fsync_directory(directory: Path) -> None:
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


def save_checkpoint(path: Path, state: dict[str, Any]) -> Path:
    """Write ``state`` (plus RNG states) to ``path`` atomically: a reader never sees half a file."""
    payload = {**state, "rng": rng_states()}
    return write_atomically(path, lambda stream: torch.save(payload, stream))


def load_checkpoint(path: Path, *, option: str = "--resume") -> dict[str, Any]:
    """Read a checkpoint written by :func:`save_checkpoint` (``option`` names the CLI flag in errors)."""
    if not path.is_file():
        raise UserError(f"{option}: no checkpoint at {path}")
    try:
        state: dict[str, Any] = torch.load(path, weights_only=False)
    except Exception as exc:  # a truncated or foreign file
        raise UserError(f"{option}: {path} is not a marlplug checkpoint ({exc})") from None
    if not isinstance(state, dict):
        raise UserError(f"{option}: {path} is not a marlplug checkpoint")
    return state


def load_policy(path: Path, env: EnvBase, config: MarlplugConfig) -> JointActorCritic:
    """The trained actor/critic networks stored in a checkpoint, sized for ``env``.

    Args:
        path: a checkpoint written by ``marlplug train``.
        env: an env with the same agent groups and sizes as the one trained on.
        config: the run's config (its ``algorithm`` section sizes the networks).

    Raises:
        UserError: the file is missing or not a checkpoint, or its networks do not fit ``env``.
    """
    from marlplug.algorithms.ppo import PPO
    from marlplug.plugins import get_component

    algorithm_cls = get_component("algorithm", config.algorithm.name, field="algorithm.name")
    if not (isinstance(algorithm_cls, type) and issubclass(algorithm_cls, PPO)):
        raise UserError(
            f"algorithm.name: rendering from a checkpoint needs a 'ppo' run, got '{config.algorithm.name}'"
        )
    state = load_checkpoint(path, option="--checkpoint")
    if MODEL_KEY not in state:
        raise UserError(
            f"--checkpoint: {path} holds no '{MODEL_KEY}' entry; was it written by marlplug train?"
        )
    model = algorithm_cls(**config.algorithm.options.model_dump()).build_model(env)
    try:
        model.load_state_dict(state[MODEL_KEY])
    except RuntimeError as exc:
        first_line = str(exc).splitlines()[1].strip() if "\n" in str(exc) else str(exc)
        raise UserError(
            f"--checkpoint: the networks in {path} do not fit this config's env ({first_line})"
        ) from None
    model.eval()
    return model
