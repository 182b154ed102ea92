"""A run folder's ``config.yaml``: where a run's folder comes from, what it was started with, and the
one-line reminder of what a failed write leaves behind."""

from __future__ import annotations

from pathlib import Path

import yaml

from marlplug.config import MarlplugConfig, load_config, resolved_dict
from marlplug.errors import UserError
from marlplug.runs.atomic_files import write_atomically
from marlplug.runs.run_folder import claim_run_dir, create_run_dir

CONFIG_NAME = "config.yaml"


def new_run_dir(config: MarlplugConfig, run_dir: str | Path | None = None) -> Path:
    """A fresh run folder, created and claimed atomically: ``run_dir`` when given, else
    ``logging.dir/logging.run_name`` (default name: a timestamp); runs started at once never share
    a folder (see :mod:`marlplug.runs.run_folder`).

    Examples:
        >>> import tempfile
        >>> from marlplug import load_config
        >>> root = tempfile.mkdtemp()
        >>> config = load_config(data={"logging": {"dir": root, "run_name": "a"}})
        >>> new_run_dir(config).name
        'a'
    """
    if run_dir is not None:
        return claim_run_dir(Path(run_dir))
    return create_run_dir(Path(config.logging.dir), config.logging.run_name)


def kept_checkpoint(checkpoint: Path) -> str:
    """What a failed write leaves: the last good checkpoint, if any (for one-line errors)."""
    if not checkpoint.is_file():
        return "no checkpoint was written yet"
    return f"the last good checkpoint is kept: {checkpoint}"


def load_run_config(run_dir: Path, overrides: list[str] | tuple[str, ...] = ()) -> MarlplugConfig:
    """The config a run was started with (``RUN_DIR/config.yaml``), plus overrides.

    Raises:
        UserError: one line for ``--resume``: ``run_dir`` does not exist, is a file, or holds no
            ``config.yaml``.
    """
    if not run_dir.exists():
        raise UserError(f"--resume: {run_dir} does not exist; give the folder of a run to continue")
    if not run_dir.is_dir():
        raise UserError(f"--resume: {run_dir} is a file, not a run folder")
    path = run_dir / CONFIG_NAME
    if not path.is_file():
        raise UserError(f"--resume: {run_dir} is not a run folder (no {CONFIG_NAME})")
    return load_config(path, overrides)


def save_run_config(run_dir: Path, config: MarlplugConfig) -> Path:
    """Write ``config`` (resolved, every default filled in) to ``RUN_DIR/config.yaml``, atomically.

    A fresh run writes the config it starts with; a resumed run writes it again once its checkpoint
    has loaded, so the overrides of ``--resume RUN_DIR --set ...`` (e.g. a larger
    ``train.updates``) hold for the next plain ``--resume`` too."""
    text = yaml.safe_dump(resolved_dict(config), sort_keys=False)
    return write_atomically(run_dir / CONFIG_NAME, lambda stream: stream.write(text.encode()))
