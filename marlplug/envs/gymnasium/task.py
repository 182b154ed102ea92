"""A known Gymnasium multi-agent task (:class:`GymnasiumTask`, named by its registered id) and the
scenario class that builds it (:func:`gymnasium_scenario`)."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from torchrl.envs import EnvBase

from marlplug.envs.gymnasium.adapter import ActionMaskReader, TupleAgentsEnv
from marlplug.envs.joint import JointEnvWrapper
from marlplug.envs.joint_copies import JointEnvCopies
from marlplug.envs.options import ScenarioOptions
from marlplug.envs.scenario import EnvScenario
from marlplug.envs.task_options import ActionKind, TaskOptions, TaskProbe, flat_size, task_options
from marlplug.errors import UserError


@dataclass(frozen=True, eq=False)  # hashed by identity: tasks are module-level constants
class GymnasiumTask:
    """One Gymnasium multi-agent task marlplug can build by its registered id.

    Args:
        name: the Gymnasium id (``Foraging-8x8-2p-2f-coop-v3``), the scenario name in configs.
        package: the package whose import registers the id (``lbforaging``).
        suite: the library, for listings.
        summary: one line for ``marlplug envs``.
        extra: the marlplug extra that installs the package.
        max_steps_option: the constructor argument that ``max_steps`` sets.
        read_action_mask: reads valid actions from the env (``None``: it has none).

    Example:
        >>> from marlplug.envs.gymnasium.lbf_tasks import LBF_8X8_2P_2F_COOP
        >>> LBF_8X8_2P_2F_COOP.defaults["field_size"]
        (8, 8)
    """

    name: str
    package: str
    suite: str
    summary: str
    extra: str
    max_steps_option: str | None
    read_action_mask: ActionMaskReader | None = None
    actions: ActionKind = "discrete"
    extra_options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """``"gymnasium/<id>"``."""
        return f"gymnasium/{self.name}"

    def _gymnasium(self) -> Any:
        try:
            importlib.import_module(self.package)
        except ImportError as exc:
            raise UserError(
                f"env '{self.key}' needs {self.package} ({exc}); pip install 'marlplug[{self.extra}]'"
            ) from None
        import gymnasium

        return gymnasium

    @functools.cached_property
    def defaults(self) -> Mapping[str, Any]:
        """The id's registered arguments (they replace the constructor's defaults)."""
        return dict(self._gymnasium().spec(self.name).kwargs)

    def constructor(self) -> Callable[..., Any]:
        entry_point = self._gymnasium().spec(self.name).entry_point
        if callable(entry_point):
            return entry_point
        module_name, _, attribute = str(entry_point).partition(":")
        return getattr(importlib.import_module(module_name), attribute)

    def make(self, **kwargs: Any) -> TupleAgentsEnv:
        """A fresh env of the task, as per-agent lists."""
        # Gymnasium's checker warns about the tuple spaces it does not know how to check.
        env = self._gymnasium().make(self.name, disable_env_checker=True, **kwargs)
        return TupleAgentsEnv(env, read_action_mask=self.read_action_mask)

    def probe(self, kwargs: Mapping[str, Any]) -> TaskProbe:
        env = self.make(**kwargs)
        env.reset(seed=0)
        sizes = [flat_size(space) for space in env.env.observation_space.spaces]
        env.env.close()
        return TaskProbe(agents=env.num_agents, min_observation_floats=min(sizes))


class GymnasiumScenario(EnvScenario):
    """Base class of the ``gymnasium`` backend's scenarios: one agent group ``"agent"``, and the
    ``action_mask`` entry where the task gives valid actions.

    Examples:
        >>> from marlplug.envs import make_env
        >>> env = make_env("Foraging-8x8-2p-2f-coop-v3", backend="gymnasium", seed=0)
        >>> env.reset()["agent", "action_mask"].shape
        torch.Size([2, 6])
    """

    backend: ClassVar[str] = "gymnasium"
    task: ClassVar[GymnasiumTask]

    def _single(self) -> EnvBase:
        options = self.options
        assert isinstance(options, TaskOptions)
        joint = self.task.make(**options.task_kwargs())
        return JointEnvWrapper(
            joint,
            n_actions=joint.n_actions,
            # Given, not read from a first reset: LBF places players around those of the previous
            # episode, so an unseeded first reset would make the seeded episodes differ.
            observation_dim=joint.observation_dim,
            action_mask=self.task.read_action_mask is not None,
        )

    def _build(self, *, num_envs: int, seed: int | None, device: str) -> EnvBase:
        # The copies of SerialEnv (the same episodes), with TorchRL's per-step work done once.
        env = (
            self._single()
            if num_envs == 1
            else JointEnvCopies([self._single() for _ in range(num_envs)])
        )
        if seed is not None:
            env.set_seed(seed)
        return env.to(device)


def gymnasium_scenario(task: GymnasiumTask) -> type[GymnasiumScenario]:
    """The scenario class of ``task``: register it as ``"gymnasium/<task.name>"``.

    Raises:
        UserError: the task's package is not installed (the message names the extra).
    """
    options: type[ScenarioOptions] = task_options(task)
    return type(
        options.__name__.removesuffix("Options"),
        (GymnasiumScenario,),
        {
            "Options": options,
            "task": task,
            "scenario": task.name,
            "summary": f"{task.summary} ({task.suite})",
            "__module__": GymnasiumScenario.__module__,
            "__doc__": f"Gymnasium task {task.name}: {task.summary}.",
        },
    )


__all__ = ["GymnasiumScenario", "GymnasiumTask", "gymnasium_scenario"]
