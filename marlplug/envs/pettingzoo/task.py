"""A known PettingZoo parallel task (:class:`PettingZooTask`) and the options model read from it.

A task's options are the keyword arguments of its constructor, read with ``inspect.signature``:
their defaults and annotations become a pydantic model (:func:`task_options`), so a typo is a
one-line error naming the valid options and the closest, and a wrong type names the field. Options
a config file cannot write (callables, policies) are left at the task's defaults.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

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


@dataclass(frozen=True, eq=False)  # hashed by identity: tasks are module-level constants
class PettingZooTask:
    """One PettingZoo parallel task marlplug can build by name.

    Args:
        name: the scenario name in configs (``env: {backend: pettingzoo, name: <name>}``).
        module: the module whose ``parallel_env(**options)`` builds the task.
        suite: the library it comes from (``mpe2``, ``sisl``, ``magent2``), for listings.
        summary: one line for ``marlplug envs``.
        extra: the marlplug extra that installs the suite's dependencies (``None``: core).
        signature: the ``"module:attribute"`` callable whose signature lists the options, where
            ``parallel_env`` only takes ``**kwargs`` (default: the module's ``raw_env``).
        max_steps_option: the constructor argument that ``max_steps`` sets (episode length).
        actions: ``choice`` when the task takes ``continuous_actions``, else its fixed kind.
        extra_options: options passed through ``**kwargs`` that the signature does not list
            (MAgent2's rewards), with their defaults.
        dead_agents: agents leave before the episode ends (TorchRL's ``use_mask``: each group
            gets a ``mask`` entry of the agents still in play).

    Example:
        >>> task = PettingZooTask(name="simple_push", module="mpe2.simple_push_v3", suite="mpe2",
        ...                       summary="one agent pushes an adversary off a landmark")
        >>> sorted(task_options(task).model_fields)[:4]
        ['agents', 'benchmark_data', 'continuous_actions', 'dynamic_rescaling']
    """

    name: str
    module: str
    suite: str
    summary: str
    extra: str | None = None
    signature: str | None = None
    max_steps_option: str | None = "max_cycles"
    actions: ActionKind = "choice"
    extra_options: Mapping[str, Any] = field(default_factory=dict)
    dead_agents: bool = False

    def import_module(self) -> types.ModuleType:
        """The task's module; a missing dependency is one line naming the extra to install."""
        try:
            return importlib.import_module(self.module)
        except ImportError as exc:
            install = (
                f"pip install 'marlplug[{self.extra}]'" if self.extra else "reinstall marlplug"
            )
            raise UserError(
                f"env 'pettingzoo/{self.name}' needs the {self.suite} suite ({exc}); {install}"
            ) from None

    def constructor(self) -> Callable[..., Any]:
        """The callable whose signature lists the task's options."""
        if self.signature is None:
            return self.import_module().raw_env
        self.import_module()
        module_name, _, attribute = self.signature.partition(":")
        return getattr(importlib.import_module(module_name), attribute)

    def parallel_env(self, **kwargs: Any) -> Any:
        """A fresh PettingZoo parallel env of the task."""
        return self.import_module().parallel_env(**kwargs)


@dataclass(frozen=True)
class TaskProbe:
    """What a task built with given options reports: its agents and their observation sizes."""

    agents: int
    min_observation_floats: int


class TaskRefusedError(Exception):
    """The task's constructor or first reset raised (the message is its own words)."""


@functools.lru_cache(maxsize=256)
def _probe(task: PettingZooTask, kwargs_json: str) -> TaskProbe:
    kwargs = json.loads(kwargs_json)
    try:
        env = task.parallel_env(**kwargs)
        env.reset(seed=0)
    except UserError:
        raise
    except Exception as exc:  # the task's own check of its arguments, in its own words
        raise TaskRefusedError(f"{type(exc).__name__}: {exc}") from None
    sizes = [int(_flat_size(env.observation_space(agent))) for agent in env.possible_agents]
    env.close()
    return TaskProbe(agents=len(sizes), min_observation_floats=min(sizes))


def _flat_size(space: Any) -> int:
    shape = getattr(space, "shape", None) or (1,)
    size = 1
    for extent in shape:
        size *= int(extent)
    return size


class PettingZooOptions(ScenarioOptions):
    """Options of a PettingZoo task: the task's own constructor arguments, plus marlplug's
    ``max_steps`` (the task's episode length) and ``continuous_actions`` where it offers both.

    ``agents`` is the number of agents the task makes with these options (PettingZoo tasks count
    their agents their own way, e.g. simple_tag's ``num_good + num_adversaries``); giving another
    value is an error naming the task's count.
    """

    #: The task the options belong to (set by :func:`task_options`).
    task: ClassVar[PettingZooTask]

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
                "pettingzoo/{task} does not build with {options}: {error}",
                {"task": self.task.name, "options": shown, "error": str(exc)},
            ) from None
        if "agents" in self.model_fields_set and self.agents != count:
            raise PydanticCustomError(
                "agents_fixed_by_task",
                "agents: pettingzoo/{task} makes {count} agents with these options; set the "
                "task's own options to change that, or leave agents out",
                {"task": self.task.name, "count": count},
            )
        self.__dict__["agents"] = count  # not an assignment: validate_assignment would recurse
        return self


def _plain(annotation: Any) -> bool:
    """Whether a config file can write a value of this type (plain scalars and their unions)."""
    if annotation in _PLAIN_TYPES:
        return True
    return typing.get_origin(annotation) in (typing.Union, types.UnionType) and all(
        argument in _PLAIN_TYPES for argument in typing.get_args(annotation)
    )


def _annotation(parameter: inspect.Parameter, hints: Mapping[str, Any]) -> Any:
    if parameter.name in hints:
        return hints[parameter.name]
    default = parameter.default
    return Any if default is None else type(default)


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


def _create(task: PettingZooTask, fields: Mapping[str, Any]) -> type[PettingZooOptions]:
    model: type[PettingZooOptions] = create_model(
        f"{_camel(task.name)}Options", __base__=PettingZooOptions, __module__=__name__, **fields
    )
    model.task = task
    model.supports_continuous_actions = task.actions != "discrete"
    return model


def task_options(task: PettingZooTask) -> type[PettingZooOptions]:
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
        if parameter.default is inspect.Parameter.empty:
            continue
        if name == task.max_steps_option:
            fields["max_steps"] = (
                int,
                Field(parameter.default, ge=1, le=10**6, description=f"Episode length ({name})."),
            )
            continue
        annotation = _annotation(parameter, hints)
        if _plain(annotation):
            fields[name] = (
                annotation,
                Field(parameter.default, description=f"{task.suite} option"),
            )
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


__all__ = ["ActionKind", "PettingZooOptions", "PettingZooTask", "TaskProbe", "task_options"]
