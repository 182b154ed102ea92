"""Checks across a config's sections, run once every component validated its own options.

Each field is checked by its schema; what a schema cannot see is checked here, before any work
starts: settings the chosen algorithm ignores (aux losses under MADDPG: refused; PPO-only ``train``
fields: a warning), PPO rollouts shorter than an episode (a warning), recurrent training
sequences that do not divide the rollout, the same loss twice (:func:`check_unique_losses`, run
before moved entries leave the list), straggler settings that delay nobody, worker processes for
one env copy, env copies and coded learners on two different Rays, tracker settings of a backend
the run does not log to, and a memory estimate that refuses runs which cannot fit in this
machine's memory.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable
from typing import Any, Protocol

from marlplug.config.schema import MarlplugConfig
from marlplug.config.train import TrainSection
from marlplug.errors import ConfigError


class ConfigWarning(UserWarning):
    """A setting that is valid but does nothing (or is almost certainly not what was meant).

    The CLI prints it as one ``warning:`` line on stderr.
    """


class MemoryEstimate(Protocol):
    """What an algorithm's ``Options`` may provide so that runs that cannot fit are refused early.

    ``min_memory_bytes`` returns ``(bytes, what, field)``: a lower bound of the memory the largest
    allocation of a run needs, a few words naming it, and the config field that sizes it.
    """

    def min_memory_bytes(
        self, *, agents: int, observation_floats: int, train: TrainSection
    ) -> tuple[int, str, str]: ...


def check_config(config: MarlplugConfig) -> None:
    """Refuse (:class:`ConfigError`) or warn (:class:`ConfigWarning`) about cross-section problems.

    Example:
        >>> from marlplug.config import load_config
        >>> load_config(data={"algorithm": "maddpg", "losses": ["redundancy"]})
        Traceback (most recent call last):
        ...
        marlplug.errors.ConfigError: losses: algorithm 'maddpg' trains with its own losses ...
    """
    _check_losses_are_used(config)
    _check_global_state(config)
    _check_ignored_train_fields(config)
    _check_rollouts_cover_episodes(config)
    _check_sequences(config)
    _check_stragglers(config)
    _check_env_copies(config)
    _check_tracker_settings(config)
    _check_memory(config)


def check_unique_losses(config: MarlplugConfig) -> None:
    """Refuse a loss listed twice (weight it with its options instead).

    Example:
        >>> from marlplug.config import load_config
        >>> load_config(data={"losses": ["redundancy", "redundancy"]})
        Traceback (most recent call last):
        ...
        marlplug.errors.ConfigError: losses[1].name: 'redundancy' is already losses[0]; ...
    """
    first_index: dict[str, int] = {}
    for index, spec in enumerate(config.losses):
        if spec.name in first_index:
            raise ConfigError(
                f"losses[{index}].name: '{spec.name}' is already losses[{first_index[spec.name]}]; "
                "list each loss once (set its coef to weight it)"
            )
        first_index[spec.name] = index


def _check_losses_are_used(config: MarlplugConfig) -> None:
    names = [spec.name for spec in config.losses]
    if names and not getattr(config.algorithm.options, "uses_losses", True):
        raise ConfigError(
            f"losses: algorithm '{config.algorithm.name}' trains with its own losses and ignores "
            f"this list ({', '.join(names)}); remove the losses section (or --set losses=[])"
        )


def _check_global_state(config: MarlplugConfig) -> None:
    state_columns = getattr(config.env.options, "state_columns", lambda: None)
    if config.algorithm.uses_global_state and state_columns() is None:
        raise ConfigError(
            f"algorithm.critic: 'state' reads the env's global state, which "
            f"{config.env.backend}/{config.env.name} does not declare; choices here: joint, local"
        )


def _check_ignored_train_fields(config: MarlplugConfig) -> None:
    ignored: frozenset[str] = getattr(config.algorithm.options, "ignored_train_fields", frozenset())
    given = sorted(set(config.train.model_fields_set) & set(ignored))
    if given:
        warn(
            f"train.{given[0]}: algorithm '{config.algorithm.name}' does not use "
            f"{_listing('train.', given)}; its own settings are under algorithm:"
        )


def _check_rollouts_cover_episodes(config: MarlplugConfig) -> None:
    """A rollout shorter than an episode, where every rollout starts from a reset: training then
    never sees the episode's later steps, which evaluation runs (a 10-step rollout of 25-step
    cooperative navigation at 32 agents ended far below random, docs/notes/benchmarks-history.md,
    "One episode per rollout at M = 32").

    Example:
        >>> import warnings
        >>> from marlplug.config import load_config
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     _ = load_config(data={"train": {"rollout_steps": 10}})
        >>> print(caught[0].message)
        train.rollout_steps: 10 is shorter than an episode (env.max_steps 25); every rollout starts from a reset, so training never sees steps 11-25; set it to at least 25
    """
    if not getattr(config.algorithm.options, "rollouts_start_from_reset", False):
        return
    episode = getattr(config.env.options, "max_steps", None)
    steps = config.train.rollout_steps
    if isinstance(episode, int) and steps < episode:
        warn(
            f"train.rollout_steps: {steps} is shorter than an episode (env.max_steps {episode}); "
            f"every rollout starts from a reset, so training never sees steps {steps + 1}-{episode}; "
            f"set it to at least {episode}"
        )


def _check_sequences(config: MarlplugConfig) -> None:
    """A recurrent policy trains on whole chunks of each rollout (``training_sequence_length``,
    PPO's ``recurrent: gru``), so the chunk length must divide the rollout.

    Example:
        >>> from marlplug.config import load_config
        >>> load_config(data={"algorithm": {"name": "ppo", "recurrent": "gru",
        ...     "sequence_length": 30}, "train": {"rollout_steps": 100}})
        Traceback (most recent call last):
        ...
        marlplug.errors.ConfigError: algorithm.sequence_length: 30 does not divide train.rollout_steps (100); ...
    """
    length = getattr(config.algorithm.options, "training_sequence_length", None)
    steps = config.train.rollout_steps
    if isinstance(length, int) and steps % length:
        divisors = [d for d in range(1, min(steps, 200) + 1) if steps % d == 0]
        raise ConfigError(
            f"algorithm.sequence_length: {length} does not divide train.rollout_steps ({steps}); "
            f"each rollout is cut into whole training sequences; e.g. "
            f"{', '.join(map(str, divisors[-4:]))}"
        )


def _check_stragglers(config: MarlplugConfig) -> None:
    if config.coding is None:
        return
    stragglers = config.coding.stragglers
    if stragglers.model == "fixed" and stragglers.probability > 0:
        warn(
            "coding.stragglers.probability: used only by model 'random'; "
            "model 'fixed' delays `count` learners per round"
        )
    if stragglers.model == "random" and stragglers.count > 0:
        warn(
            "coding.stragglers.count: used only by model 'fixed'; "
            "model 'random' delays each learner with `probability`"
        )
    active = stragglers.count if stragglers.model == "fixed" else stragglers.probability
    if active > 0 and stragglers.delay_s == 0:
        field = "count" if stragglers.model == "fixed" else "probability"
        warn(
            f"coding.stragglers.{field}: does nothing without delay_s (a straggler answers "
            "delay_s seconds late; it is 0); set coding.stragglers.delay_s, e.g. 0.25"
        )


def _check_env_copies(config: MarlplugConfig) -> None:
    # One copy always runs in the training process (marlplug.envs.copies).
    if config.env.copies in ("processes", "ray") and config.train.num_envs == 1:
        warn(
            f"env.copies: {config.env.copies} does nothing with train.num_envs 1 (the one copy "
            "runs in the training process); set train.num_envs to 2 or more"
        )
    coding = config.coding
    if (
        config.env.copies == "ray"
        and config.train.num_envs > 1
        and coding is not None
        and coding.backend == "ray"
        and coding.ray_address is not None
        and os.environ.get("RAY_ADDRESS") != coding.ray_address
    ):
        # The env (and its Ray) starts before the learners, which then join the Ray running.
        raise ConfigError(
            f"env.copies: ray joins the Ray at RAY_ADDRESS "
            f"({os.environ.get('RAY_ADDRESS') or 'unset: a local Ray'}), and the learners would "
            f"join that one, not coding.ray_address '{coding.ray_address}'; set "
            f"RAY_ADDRESS={coding.ray_address}"
        )


def _check_tracker_settings(config: MarlplugConfig) -> None:
    """``logging.wandb``/``logging.mlflow`` changed from their defaults while the run logs to
    another backend. Only changes count: ``config.yaml`` holds every section, defaults included.

    Example:
        >>> import warnings
        >>> from marlplug.config import load_config
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     _ = load_config(data={"logging": {"wandb": {"project": "spread"}}})
        >>> print(caught[0].message)
        logging.wandb.project: used only by logging.backend wandb (it is csv); set logging.backend=wandb to log there
    """
    logging = config.logging
    for backend, section in (("wandb", logging.wandb), ("mlflow", logging.mlflow)):
        changed = [
            name
            for name, info in type(section).model_fields.items()
            if getattr(section, name) != info.default
        ]
        if changed and logging.backend != backend:
            warn(
                f"logging.{backend}.{changed[0]}: used only by logging.backend {backend} "
                f"(it is {logging.backend}); set logging.backend={backend} to log there"
            )


def _check_memory(config: MarlplugConfig) -> None:
    estimate = getattr(config.algorithm.options, "min_memory_bytes", None)
    env_options = config.env.options
    agents = getattr(env_options, "agents", None)
    available = physical_memory_bytes()
    if estimate is None or not isinstance(agents, int) or available is None:
        return
    floats = getattr(env_options, "min_observation_floats", lambda: 1)()
    needed, what, field = estimate(agents=agents, observation_floats=floats, train=config.train)
    if needed > available:
        raise ConfigError(
            f"{field}: this run needs at least {format_bytes(needed)} of memory for {what}, "
            f"more than this machine has ({format_bytes(available)}); make it smaller"
        )


def physical_memory_bytes() -> int | None:
    """This machine's physical memory, or ``None`` where the OS does not say (then nothing is
    refused for size).

    >>> (physical_memory_bytes() or 1) > 0
    True
    """
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def format_bytes(count: float) -> str:
    """``24e12`` -> ``'24.0 TB'``.

    >>> format_bytes(1536), format_bytes(24e12)
    ('1.5 kB', '24.0 TB')
    """
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if count < 1000 or unit == "PB":
            return f"{count:.1f} {unit}" if unit != "B" else f"{int(count)} B"
        count /= 1000
    raise AssertionError("unreachable")


def warn(message: str) -> None:
    """Issue a :class:`ConfigWarning` (shown by the CLI as ``warning: <message>``)."""
    warnings.warn(message, ConfigWarning, stacklevel=3)


def _listing(prefix: str, names: Iterable[Any]) -> str:
    return ", ".join(f"{prefix}{name}" for name in names)
