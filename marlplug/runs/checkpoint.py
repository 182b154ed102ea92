"""Checkpoints: plain data only, written atomically (temp file + ``os.replace``), with the RNG states.

A checkpoint is a ``torch.save`` dict of tensors, plain containers and primitives only, marked with
:data:`FORMAT`: ``training`` (every agent's ``theta`` and ``opt_state`` rows, the rollout source's
state and the counters: to resume, and ``theta`` to act, :func:`load_policy`), ``agents``,
``history``, ``round_logs``, ``wall_seconds`` (the run's training time up to it, which
``train.max_minutes`` counts across resumes), ``config`` (the resolved config it was written with)
and ``rng``. It is read with ``torch.load(weights_only=True)``: loading a file never runs code from
it, whoever wrote it; a file holding anything else is refused with one line.
"""

from __future__ import annotations

import pickle
import random
import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, NoReturn

import numpy as np
import torch

from marlplug.algorithms.acting import FlatActing, ModuleActing, acting_policy
from marlplug.algorithms.protocol import LearnerProgram
from marlplug.config import resolved_dict
from marlplug.envs.flat import MultiAgentEnvAdapter
from marlplug.errors import UserError
from marlplug.plugins import get_component
from marlplug.runs.atomic_files import write_atomically

if TYPE_CHECKING:
    from torchrl.envs import EnvBase

    from marlplug.config import MarlplugConfig

CHECKPOINT_NAME = "checkpoint.pt"
#: The entry holding the training state (``theta``, ``opt_state``, ``source``, ``counters``, ``frozen``).
TRAINING_KEY = "training"
#: The resolved config a checkpoint was written with (plain data).
CONFIG_KEY = "config"
#: The agent names a checkpoint was trained with, in the documented agent order.
AGENTS_KEY = "agents"
#: The run's periodic evaluations (plain dicts, :mod:`marlplug.runs.evaluations`).
EVALUATIONS_KEY = "evaluations"
RNG_KEY = "rng"
FORMAT_KEY = "format"
#: Marks a file as a marlplug checkpoint of this layout (plain data, numpy RNG state as a tensor).
FORMAT = "marlplug-checkpoint/1"
#: Leaves a checkpoint may hold besides tensors and plain containers.
_PLAIN_LEAVES = (torch.Tensor, str, bytes, int, float, bool, type(None), torch.Size, torch.dtype)


def rng_states() -> dict[str, Any]:
    """torch, numpy and Python RNG states, as plain data (numpy's key array becomes a tensor).

    Examples:
        >>> states = rng_states()
        >>> sorted(states), states["numpy"]["key"].dtype
        (['numpy', 'python', 'torch'], torch.int64)
    """
    name, key, position, has_gauss, cached_gaussian = np.random.get_state()
    return {
        "torch": torch.get_rng_state(),
        "numpy": {
            "bit_generator": str(name),
            "key": torch.from_numpy(np.asarray(key, dtype=np.int64)),
            "position": int(position),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached_gaussian),
        },
        "python": random.getstate(),
    }


def restore_rng_states(states: Mapping[str, Any]) -> None:
    """Set the torch, numpy and Python RNGs to :func:`rng_states`'s output."""
    numpy_state = states["numpy"]
    torch.set_rng_state(states["torch"])
    np.random.set_state(
        (
            numpy_state["bit_generator"],
            numpy_state["key"].numpy().astype(np.uint32),
            numpy_state["position"],
            numpy_state["has_gauss"],
            numpy_state["cached_gaussian"],
        )
    )
    random.setstate(states["python"])


def check_plain(value: object, where: str = "checkpoint") -> None:
    """Raise ``TypeError`` naming the first object in ``value`` that is not a tensor, a plain
    container (dict, list, tuple) or a primitive: what ``torch.load(weights_only=True)`` reads back.

    Called on every save, so a component whose ``state_dict`` grows a foreign object fails where it
    is written, not when a user resumes.

    Examples:
        >>> check_plain({"w": torch.zeros(2), "steps": [1, 2.0, None]})
        >>> check_plain({"rng": np.zeros(2)})
        Traceback (most recent call last):
        ...
        TypeError: checkpoint['rng'] is a numpy.ndarray; a checkpoint holds tensors, dicts, lists, tuples and primitives only
    """
    if isinstance(value, _PLAIN_LEAVES):
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, (str, int)):
                raise TypeError(f"{where} has a key of type {type(key).__name__}: {key!r}")
            check_plain(item, f"{where}[{key!r}]")
        return
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            check_plain(item, f"{where}[{index}]")
        return
    kind = f"{type(value).__module__}.{type(value).__qualname__}"
    raise TypeError(
        f"{where} is a {kind}; a checkpoint holds tensors, dicts, lists, tuples and primitives only"
    )


def save_checkpoint(path: Path, state: dict[str, Any]) -> Path:
    """Write ``state`` (plus RNG states and the format mark) to ``path`` atomically: a reader never
    sees half a file, and a crash leaves the previous checkpoint in place.

    Raises:
        TypeError: ``state`` holds something other than plain data (see :func:`check_plain`).
        OSError: the file cannot be written (the previous checkpoint is kept).
    """
    payload = {FORMAT_KEY: FORMAT, **state, RNG_KEY: rng_states()}
    check_plain(payload)

    def write(stream: BinaryIO) -> None:
        try:
            torch.save(payload, stream)
        except RuntimeError as exc:  # torch wraps the stream's OSError (a full disk) in its own
            if isinstance(exc.__context__, OSError):
                raise exc.__context__ from None
            raise

    try:
        return write_atomically(path, write)
    except OSError as exc:
        if exc.filename is None:  # a failed write() or fsync() names no file
            raise OSError(exc.errno, exc.strerror, str(path)) from None
        raise


def load_checkpoint(
    path: Path, *, option: str = "--resume", required: Iterable[str] = ()
) -> dict[str, Any]:
    """Read a checkpoint written by :func:`save_checkpoint`, never running code from the file.

    Args:
        path: the checkpoint file.
        option: the CLI flag named in errors.
        required: entries the caller needs (besides the RNG states); a missing one is a one-line
            :class:`UserError`.

    Raises:
        UserError: the file is missing, truncated, foreign, holds objects other than plain data
            (a pickle that would call a function is refused before anything runs), or lacks an entry.
    """
    if not path.is_file():
        raise UserError(f"{option}: no checkpoint at {path}")
    try:
        with warnings.catch_warnings():  # torch warns about pickle protocols of foreign files
            warnings.simplefilter("ignore")
            state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:  # the restricted unpickler refused something
        found = re.search(r"GLOBAL (\S+)", str(exc))
        what = f"'{found.group(1)}'" if found else "objects other than tensors and plain data"
        raise UserError(
            f"{option}: {path} is not a marlplug checkpoint: it refers to {what}, and marlplug loads "
            f"only tensors and plain data from a file"
        ) from None
    except Exception as exc:  # a truncated, empty or foreign file
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(
            f"{option}: {path} is not a marlplug checkpoint (cannot read it: {reason})"
        ) from None
    if not isinstance(state, dict) or state.get(FORMAT_KEY) != FORMAT:
        raise UserError(
            f"{option}: {path} is not a marlplug checkpoint (no '{FORMAT}' mark: written by another "
            f"program or an older marlplug)"
        )
    for key in (*required, RNG_KEY):
        if key not in state:
            # The mark without an entry this marlplug writes: a checkpoint of marlplug 0.1 (a
            # joint-trainer or MADDPG-runner one), whose rows have another layout.
            raise UserError(
                f"{option}: {path} was written by an earlier marlplug (no '{key}' entry) and "
                f"cannot be resumed; start a new run"
            )
    return state


def check_agents(state: Mapping[str, Any], agents: list[str], path: Path, option: str) -> None:
    """A one-line :class:`UserError` when the checkpoint was trained with other agents than the
    config builds (e.g. ``--resume RUN --set env.agents=3`` on a 2-agent run)."""
    saved = state.get(AGENTS_KEY)
    if saved is None or list(saved) == list(agents):
        return
    raise UserError(
        f"{option}: the networks in {path} do not fit this config: trained with {len(saved)} agents "
        f"({', '.join(map(str, saved))}), this config builds {len(agents)} ({', '.join(agents)}); "
        f"was env.agents changed?"
    )


def config_changes(
    saved: object, config: MarlplugConfig, sections: Iterable[str] = ("env", "algorithm")
) -> list[str]:
    """The fields of ``sections`` (what builds the networks) whose value in ``saved`` (a checkpoint's
    ``config`` entry) differs from ``config``'s, as ``field: old -> new``.

    Examples:
        >>> from marlplug.config import load_config, resolved_dict
        >>> saved = resolved_dict(load_config(overrides=["algorithm.hidden_size=16"]))
        >>> config_changes(saved, load_config(overrides=["algorithm.hidden_size=32"]))
        ['algorithm.hidden_size: 16 -> 32']
    """
    if not isinstance(saved, Mapping):
        return []
    now = resolved_dict(config)
    changes = []
    for section in sections:
        old, new = saved.get(section), now.get(section)
        if not isinstance(old, Mapping) or not isinstance(new, Mapping):
            continue
        for key in [*old, *(key for key in new if key not in old)]:
            if old.get(key) != new.get(key):
                changes.append(f"{section}.{key}: {old.get(key)} -> {new.get(key)}")
    return changes


def restore_state(
    restore: Callable[[], object], path: Path, option: str, *, changes: Iterable[str] = ()
) -> None:
    """Run ``restore`` (a ``load_state_dict`` call with a checkpoint's entries); a checkpoint whose
    entries do not fit this config's networks becomes one :class:`UserError` line naming the first
    mismatch instead of torch's multi-line dump, and the config fields that changed since the
    checkpoint (``changes``, :func:`config_changes`) when known."""
    try:
        restore()
    except (RuntimeError, KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        _does_not_fit(exc, path, option, list(changes))


def _does_not_fit(exc: BaseException, path: Path, option: str, changes: list[str]) -> NoReturn:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    detail = next((line for line in lines if "mismatch" in line or "Missing" in line), None)
    detail = detail or (lines[0] if lines else type(exc).__name__)
    cause = (
        f"changed since it was written: {'; '.join(changes)}"
        if changes
        else "was the env or the algorithm changed?"
    )
    raise UserError(
        f"{option}: the state in {path} does not fit this config ({detail.rstrip('.')}); {cause}"
    ) from None


def load_policy(
    path: Path, env: EnvBase, config: MarlplugConfig, *, option: str = "--checkpoint"
) -> Any:
    """The acting policy of a checkpoint's agents, for ``env``: the configured algorithm bound to
    ``env`` with ``config``, acting with every agent's trained ``theta`` row
    (:func:`marlplug.algorithms.acting.acting_policy`: PPO's policy module, MADDPG's actors).

    Args:
        path: a checkpoint written by ``marlplug train``.
        env: an env with the same agents and sizes as the one trained on.
        config: the run's config (its ``algorithm`` section sizes the networks).
        option: the CLI argument named in errors.

    Returns:
        A policy: writes the agents' actions into a tensordict (greedy under TorchRL's
        ``DETERMINISTIC`` exploration type, sampled under ``RANDOM``).

    Raises:
        UserError: the file is missing or not a checkpoint, the algorithm has no acting policy, or
            the stored rows do not fit ``env`` and ``config`` (naming the config fields changed
            since the checkpoint).
    """
    state = load_checkpoint(path, option=option, required=(TRAINING_KEY,))
    algorithm = get_component("algorithm", config.algorithm.name, field="algorithm.name")(
        **config.algorithm.options.model_dump()
    )
    check_agents(state, [str(name) for name in _agent_names(env)], path, option)
    program: LearnerProgram = algorithm.bind(env, config)
    if not isinstance(program, (ModuleActing, FlatActing)):
        raise UserError(
            f"algorithm.name: '{config.algorithm.name}' has no acting policy to load from a "
            f"checkpoint (its program needs 'policy' and 'load(theta)', or 'act' and 'env_scale')"
        )
    theta = state[TRAINING_KEY].get("theta") if isinstance(state[TRAINING_KEY], Mapping) else None
    changes = config_changes(state.get(CONFIG_KEY), config)
    policy: Any = None

    def restore() -> None:
        nonlocal policy
        if not isinstance(theta, torch.Tensor):
            raise TypeError(f"'{TRAINING_KEY}' holds no 'theta' tensor")
        expected = (program.num_agents, program.theta_size)
        if tuple(theta.shape) != expected:
            raise ValueError(
                f"size mismatch for the agents' parameters: {theta.shape[1]} per agent in the "
                f"checkpoint, {expected[1]} for this config's networks"
            )
        policy = acting_policy(program, env, theta)

    restore_state(restore, path, option, changes=changes)
    if policy is None:
        raise UserError(
            f"algorithm.name: '{config.algorithm.name}' has no acting policy to load from a "
            f"checkpoint (its program's 'policy' is unset)"
        )
    return policy


def _agent_names(env: EnvBase) -> list[str]:
    return [agent.name for agent in MultiAgentEnvAdapter(env).agents]
