"""A known PettingZoo parallel task (:class:`PettingZooTask`): where it lives, how it acts, and how
to build and count it; its options model comes from :func:`marlplug.envs.task_options.task_options`.
"""

from __future__ import annotations

import importlib
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from marlplug.envs.task_options import ActionKind, TaskProbe, flat_size
from marlplug.errors import UserError


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
        >>> from marlplug.envs.task_options import task_options
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
    #: PettingZoo's tasks take their defaults from their signatures.
    defaults: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """``"pettingzoo/<name>"``."""
        return f"pettingzoo/{self.name}"

    def import_module(self) -> types.ModuleType:
        """The task's module; a missing dependency is one line naming the extra to install."""
        try:
            return importlib.import_module(self.module)
        except ImportError as exc:
            install = (
                f"pip install 'marlplug[{self.extra}]'" if self.extra else "reinstall marlplug"
            )
            raise UserError(
                f"env '{self.key}' needs the {self.suite} suite ({exc}); {install}"
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

    def probe(self, kwargs: Mapping[str, Any]) -> TaskProbe:
        """Build the task once and count its agents and their observation floats."""
        env = self.parallel_env(**kwargs)
        env.reset(seed=0)
        sizes = [flat_size(env.observation_space(agent)) for agent in env.possible_agents]
        env.close()
        return TaskProbe(agents=len(sizes), min_observation_floats=min(sizes))


__all__ = ["PettingZooTask"]
