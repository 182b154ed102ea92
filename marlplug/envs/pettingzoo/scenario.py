"""The ``pettingzoo`` backend: a known PettingZoo parallel task as a TorchRL env with agent groups.

TorchRL's ``PettingZooWrapper`` groups agents by name (``speaker_0`` and ``listener_0`` are two
groups, ``adversary_0..2`` one), so agents of different sizes always land in different groups.
Image observations (SISL pursuit, MAgent2) are flattened per agent, since marlplug's networks read
one observation vector per agent. ``num_envs`` copies run as the ``mpe`` backend's do: in one process
(TorchRL's ``SerialEnv``) or in worker processes (``env.copies``, :mod:`marlplug.envs.copies`).
"""

from __future__ import annotations

import warnings
from typing import Any, ClassVar

from torchrl.envs import EnvBase, FlattenObservation, PettingZooWrapper

from marlplug.envs.copies import serial_copies
from marlplug.envs.options import ScenarioOptions
from marlplug.envs.pettingzoo.task import PettingZooTask
from marlplug.envs.scenario import EnvScenario
from marlplug.envs.task_options import TaskOptions, task_options
from marlplug.envs.transformed import with_transform


class PettingZooScenario(EnvScenario):
    """Base class of the ``pettingzoo`` backend's scenarios; :func:`pettingzoo_scenario` makes one
    per :class:`~marlplug.envs.pettingzoo.PettingZooTask`.

    Examples:
        >>> from marlplug.envs import get_scenario
        >>> env = get_scenario("simple_speaker_listener", backend="pettingzoo")().make(seed=0)
        >>> env.group_map
        {'speaker': ['speaker_0'], 'listener': ['listener_0']}
    """

    backend: ClassVar[str] = "pettingzoo"
    task: ClassVar[PettingZooTask]

    @property
    def task_options(self) -> TaskOptions:
        assert isinstance(self.options, TaskOptions)
        return self.options

    def parallel_env(self) -> Any:
        """One PettingZoo parallel env of the task with these options."""
        return self.task.parallel_env(**self.task_options.task_kwargs())

    def _single(self, device: str) -> EnvBase:
        with warnings.catch_warnings():
            # TorchRL warns that it was tested with an older PettingZoo.
            warnings.filterwarnings("ignore", message="PettingZoo in TorchRL is tested")
            env: EnvBase = PettingZooWrapper(
                self.parallel_env(),
                categorical_actions=True,
                device=device,
                use_mask=self.task.dead_agents,
                # TorchRL ends a parallel env's episode when ANY agent is done by default: a
                # battle would end at its first death. Where agents die, the episode runs on
                # until every agent is done (the dead are masked).
                done_on_any=not self.task.dead_agents,
            )
        image_groups = [
            group
            for group in env.group_map
            if len(env.observation_spec[group, "observation"].shape) > 2
        ]
        for group in image_groups:
            # [n_agents, H, W, C] -> [n_agents, H*W*C]
            env = with_transform(
                env,
                FlattenObservation(
                    first_dim=-3,
                    last_dim=-1,
                    in_keys=[(group, "observation")],
                    allow_positive_dim=False,
                ),
            )
        return env

    def _build(self, *, num_envs: int, seed: int | None, device: str) -> EnvBase:
        return serial_copies(
            lambda: self._single(device), num_envs=num_envs, seed=seed, device=device
        )


def pettingzoo_scenario(task: PettingZooTask) -> type[PettingZooScenario]:
    """The scenario class of ``task``: register it as ``"pettingzoo/<task.name>"``.

    A plugin adds a task the same way marlplug adds its own (``marlplug.envs.pettingzoo.tasks``)::

        MyTask = pettingzoo_scenario(PettingZooTask(name="my_task", module="my_pkg.my_task_v1",
                                                    suite="my_suite", summary="..."))
        # in its marlplug_envs hook: {"pettingzoo/my_task": "my_plugin:MyTask"}

    Raises:
        UserError: the task's suite is not installed (the message names the extra).
    """
    options: type[ScenarioOptions] = task_options(task)
    scenario_class = type(
        f"{options.__name__.removesuffix('Options')}",
        (PettingZooScenario,),
        {
            "Options": options,
            "task": task,
            "scenario": task.name,
            "summary": f"{task.summary} ({task.suite} {task.module.rsplit('.', 1)[-1]})",
            "__module__": PettingZooScenario.__module__,
            "__doc__": f"PettingZoo task {task.module}: {task.summary}.",
        },
    )
    return scenario_class


__all__ = ["PettingZooScenario", "pettingzoo_scenario"]
