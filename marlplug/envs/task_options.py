"""Options read from a task constructor's signature, for the backends that name tasks from a
registry (``pettingzoo``, ``gymnasium``).

A task's options are the keyword arguments of its constructor, read with ``inspect.signature``:
their defaults and annotations become a pydantic model (:func:`task_options`), so a typo is a
one-line error naming the valid options and the closest, and a wrong type names the field. Options
a config file cannot write (callables, policies, enums) are left at the task's defaults.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol

from pydantic import Field, create_model, model_validator
from pydantic_core import PydanticCustomError
from typing_extensions import Self

from marlplug.envs.options import ScenarioOptions
from marlplug.errors import UserError

#: How a task acts: ``choice`` (its ``continuous_actions`` option picks), or fixed.
ActionKind = Literal["choice", "discrete", "continuous"]
#: Option types a config file can write; options of other types keep the task's default.
_PLAIN_TYPES = (bool, int, float, str, type(None))
#: Common options of every scenario, and the constructor arguments marlplug sets itself.
_COMMON = ("agents", "continuous_actions", "max_steps")


class KeywordTask(Protocol):
    """A task built from keyword options (:class:`marlplug.envs.pettingzoo.PettingZooTask`,
    :class:`marlplug.envs.gymnasium.GymnasiumTask`); instances are hashed by identity."""

    @property
    def name(self) -> str:
        """The scenario name in configs."""

    @property
    def key(self) -> str:
        """The registry key, ``"<backend>/<name>"``, for messages."""

    @property
    def suite(self) -> str:
        """The library it comes from, for listings and option descriptions."""

    @property
    def max_steps_option(self) -> str | None:
        """The constructor argument that ``max_steps`` sets."""

    @property
    def actions(self) -> ActionKind:
        """Whether ``continuous_actions`` is an option, or the task's fixed action kind."""

    @property
    def extra_options(self) -> Mapping[str, Any]:
        """Options the signature does not list (passed through ``**kwargs``), with defaults."""

    @property
    def defaults(self) -> Mapping[str, Any]:
        """Defaults that replace the signature's (a registered id's arguments)."""

    def __hash__(self) -> int: ...

    def constructor(self) -> Callable[..., Any]:
        """The callable whose signature lists the options."""

    def probe(self, kwargs: Mapping[str, Any]) -> TaskProbe:
        """Build the task with ``kwargs`` and report its agents (raises what the task raises)."""


@dataclass(frozen=True)
class TaskProbe:
    """What a task built with given options reports: its agents and their observation sizes."""

    agents: int
    min_observation_floats: int


class TaskRefusedError(Exception):
    """The task's constructor or first reset raised (the message is its own words)."""


@functools.lru_cache(maxsize=256)
def _probe(task: KeywordTask, kwargs_json: str) -> TaskProbe:
    try:
        return task.probe(json.loads(kwargs_json))
    except UserError:
        raise
    except Exception as exc:  # the task's own check of its arguments, in its own words
        raise TaskRefusedError(f"{type(exc).__name__}: {exc}") from None


def flat_size(space: Any) -> int:
    """The number of floats in one observation of a Gymnasium ``space`` (its flattened shape).

    >>> import gymnasium
    >>> flat_size(gymnasium.spaces.Box(0, 1, (7, 7, 3)))
    147
    """
    size = 1
    for extent in getattr(space, "shape", None) or (1,):
        size *= int(extent)
    return size


class TaskOptions(ScenarioOptions):
    """Options of a task built by name: the task's own constructor arguments, plus marlplug's
    ``max_steps`` (the task's episode length) and ``continuous_actions`` where it offers both.

    ``agents`` is the number of agents the task makes with these options (tasks count their agents
    their own way, e.g. simple_tag's ``num_good + num_adversaries``, LBF's ``players``); giving
    another value is an error naming the task's count.
    """

    #: The task the options belong to (set by :func:`task_options`).
    task: ClassVar[KeywordTask]

    def task_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of the task's ``parallel_env``."""
        kwargs = {k: v for k, v in self.model_dump().items() if k not in _COMMON}
        if self.task.max_steps_option is not None:
            kwargs[self.task.max_steps_option] = self.max_steps
        if self.task.actions == "choice":
            kwargs["continuous_actions"] = self.continuous_actions
        return kwargs

    def probe(self) -> TaskProbe:
        """The task's agent count and observation sizes with these options (built once, cached)."""
        return _probe(self.task, json.dumps(self.task_kwargs(), sort_keys=True))

    def min_observation_floats(self) -> int:
        return self.probe().min_observation_floats

    @model_validator(mode="after")
    def _agents_from_task(self) -> Self:
        if self.task.actions == "continuous" and not self.continuous_actions:
            raise PydanticCustomError(
                "continuous_only",
                "continuous_actions: this task only has continuous actions (true)",
            )
        try:
            count = self.probe().agents
        except TaskRefusedError as exc:
            chosen = sorted(self.model_fields_set - {"agents"})
            shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in chosen) or "defaults"
            raise PydanticCustomError(
                "task_refused",
                "{task} does not build with {options}: {error}",
                {"task": self.task.key, "options": shown, "error": str(exc)},
            ) from None
        if "agents" in self.model_fields_set and self.agents != count:
            raise PydanticCustomError(
                "agents_fixed_by_task",
                "agents: pettingzoo/{task} makes {count} agents with these options; set the "
                "task's own options to change that, or leave agents out",
                {"task": self.task.key, "count": count},
            )
        self.__dict__["agents"] = count  # not an assignment: validate_assignment would recurse
        return self


def _plain(annotation: Any) -> bool:
    """Whether a config file can write a value of this type (plain scalars and their unions)."""
    if annotation in _PLAIN_TYPES or annotation is Any:
        return True
    if typing.get_origin(annotation) is tuple:
        return all(
            argument in (*_PLAIN_TYPES, Ellipsis) for argument in typing.get_args(annotation)
        )
    return typing.get_origin(annotation) in (typing.Union, types.UnionType) and all(
        argument in _PLAIN_TYPES for argument in typing.get_args(annotation)
    )


def _annotation(name: str, default: Any, hints: Mapping[str, Any]) -> Any:
    if name in hints:
        return hints[name]
    if isinstance(default, tuple) and default and len({type(v) for v in default}) == 1:
        element = type(default[0])
        return tuple[element, ...]  # type: ignore[valid-type]  # LBF's field_size: (8, 8)
    return Any if default is None else type(default)


def _camel(name: str) -> str:
    """A class name for a task: ``simple_tag`` -> ``SimpleTag``, ``rware-tiny-2ag-v2`` ->
    ``RwareTiny2agV2``."""
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[^A-Za-z0-9]+", name))


def _create(task: KeywordTask, fields: Mapping[str, Any]) -> type[TaskOptions]:
    model: type[TaskOptions] = create_model(
        f"{_camel(task.name)}Options", __base__=TaskOptions, __module__=__name__, **fields
    )
    model.task = task
    model.supports_continuous_actions = task.actions != "discrete"
    return model


def task_options(task: KeywordTask) -> type[TaskOptions]:
    """The pydantic options model of ``task``, read from its constructor's signature.

    Raises:
        UserError: the task's suite is not installed (the message names the extra).
    """
    constructor = task.constructor()
    target = constructor.__init__ if inspect.isclass(constructor) else constructor
    try:
        hints = typing.get_type_hints(target)
    except Exception:  # annotations that do not resolve: fall back to the defaults' types
        hints = {}
    fields: dict[str, Any] = {}
    for parameter in inspect.signature(constructor).parameters.values():
        name = parameter.name
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        if name in ("self", "render_mode", "seed", "continuous_actions"):
            continue  # marlplug renders, seeds and picks the action kind itself
        default = task.defaults.get(name, parameter.default)
        if default is inspect.Parameter.empty:
            continue
        if name == task.max_steps_option:
            fields["max_steps"] = (
                int,
                Field(default, ge=1, le=10**6, description=f"Episode length ({name})."),
            )
            continue
        annotation = _annotation(name, default, hints)
        if _plain(annotation):
            fields[name] = (annotation, Field(default, description=f"{task.suite} option"))
    for name, default in task.extra_options.items():
        fields[name] = (type(default), Field(default, description=f"{task.suite} option"))
    continuous = task.actions == "continuous"
    fields["continuous_actions"] = (
        bool,
        Field(continuous, description="Continuous actions (Box) instead of discrete ones."),
    )
    probe_model = _create(task, fields)
    # The listed default of agents is the task's count with its default options.
    fields["agents"] = (
        int,
        Field(
            probe_model.model_validate({}).agents,
            ge=1,
            description="Number of agents: the task's own count with these options (read-only).",
        ),
    )
    model = _create(task, fields)
    return model


__all__ = ["ActionKind", "KeywordTask", "TaskOptions", "TaskProbe", "flat_size", "task_options"]
