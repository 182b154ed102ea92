"""The env-component contract: a scenario class with validated ``Options`` that builds TorchRL envs.

Backends (``mpe``, ``vmas``, third-party plugins) subclass :class:`EnvScenario`; ``make_env`` builds one.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from torchrl.envs import EnvBase

from marlplug.config import validate_options
from marlplug.envs.copies import COPIES, Copies, process_copies
from marlplug.envs.options import ScenarioOptions
from marlplug.errors import ConfigError, UserError


class EnvScenario(ABC):
    """A scenario on one backend: validated options plus :meth:`make` that returns a TorchRL env.

    The constructor takes exactly the fields of the class's ``Options`` model as keyword arguments.
    The env it builds has one nested key per agent group: ``"agent"`` (good agents) and, when there
    are adversaries, ``"adversary"``; each group carries ``observation``, ``action``, ``reward``,
    ``done``, ``terminated`` and ``truncated``, and ``env.group_map`` lists the agent names.

    Args:
        **options: the scenario's options (see its ``Options`` model).

    Examples:
        >>> from marlplug.envs import get_scenario
        >>> scenario = get_scenario("cooperative_navigation", backend="mpe")(agents=3)
        >>> env = scenario.make(num_envs=1, seed=0)
        >>> env.group_map["agent"]
        ['agent_0', 'agent_1', 'agent_2']
    """

    Options: ClassVar[type[ScenarioOptions]] = ScenarioOptions
    #: Scenario name without the backend (``"cooperative_navigation"``).
    scenario: ClassVar[str] = ""
    #: Backend name (``"mpe"``, ``"vmas"``).
    backend: ClassVar[str] = ""
    #: One line for ``marlplug envs``.
    summary: ClassVar[str] = ""

    def __init__(self, **options: Any) -> None:
        validated = validate_options(self.Options, options, ["env"], owner=f"env '{self.scenario}'")
        if not isinstance(validated, ScenarioOptions):  # the plugin manager rejects such classes
            raise TypeError(
                f"{type(self).__name__}.Options must subclass marlplug.envs.ScenarioOptions"
            )
        self.options = validated

    def make(
        self,
        *,
        num_envs: int = 1,
        seed: int | None = None,
        device: str = "cpu",
        copies: Copies = "serial",
    ) -> EnvBase:
        """Build the TorchRL env.

        Args:
            num_envs: parallel copies; the env's batch size is ``[num_envs]`` (for the ``mpe``
                backend, a single copy is unbatched, like a plain ``PettingZooWrapper``).
            seed: seeds the env; the same seed gives bit-identical episodes for the same actions.
            device: torch device of the returned tensors.
            copies: ``"serial"`` (the backend's own way: a vectorized backend batches its copies,
                the others step them one after the other in this process) or ``"processes"``
                (each copy of a non-vectorized env in its own worker process, TorchRL's
                ``ParallelEnv``; the same transitions as ``"serial"`` for the same seed) or
                ``"ray"`` (each copy in a Ray actor, :mod:`marlplug.envs.ray_copies`; the same
                transitions too). One copy always runs in this process.

        Raises:
            ConfigError: ``num_envs`` below 1, an unknown ``copies``, or ``"processes"`` or
                ``"ray"`` for a vectorized backend (one copy is already a batch).
            UserError: ``"ray"`` without Ray installed, or a Ray that cannot be started or
                reached (``RAY_ADDRESS``).
        """
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise ConfigError(f"num_envs: expected an integer >= 1, got {num_envs!r}")
        if copies not in COPIES:
            raise ConfigError(f"env.copies: expected one of {', '.join(COPIES)}, got {copies!r}")
        if copies == "serial" or num_envs == 1:
            return self._build(num_envs=num_envs, seed=seed, device=device)
        return self._build_in_workers(copies, num_envs=num_envs, seed=seed, device=device)

    def _build_in_workers(
        self, copies: Copies, *, num_envs: int, seed: int | None, device: str
    ) -> EnvBase:
        # Any backend whose one copy is unbatched qualifies, plugins' included: each worker builds
        # its copy as `make(num_envs=1)` would, and the copies are seeded as SerialEnv seeds them.
        make_one = functools.partial(self._build, num_envs=1, seed=None, device=device)
        first = make_one()  # for its layout; TorchRL builds its own copies
        try:
            batch_size, group_map = first.batch_size, getattr(first, "group_map", {})
            if batch_size:
                raise ConfigError(
                    f"env.copies: {copies} runs copies of an unbatched env, but "
                    f"{self.backend}/{self.scenario} is vectorized (one copy has batch size "
                    f"{list(batch_size)}) and steps its copies as one batch; use env.copies: serial"
                )
            if copies == "ray":
                from marlplug.envs.ray_copies import ray_copies  # Ray only when asked for

                return ray_copies(
                    make_one,
                    num_envs=num_envs,
                    seed=seed,
                    device=device,
                    first=first,
                    group_map=group_map,
                )
        finally:
            first.close()
        return process_copies(
            make_one, num_envs=num_envs, seed=seed, device=device, group_map=group_map
        )

    @abstractmethod
    def _build(self, *, num_envs: int, seed: int | None, device: str) -> EnvBase:
        """Backend-specific construction; options are in ``self.options``."""

    def place(
        self,
        env: EnvBase,
        *,
        agents: Mapping[str, Sequence[float]],
        landmarks: Sequence[Sequence[float]] = (),
        target: int | None = None,
    ) -> None:
        """Put agents (by name) and landmarks (by index) at rest at given positions, in every copy.

        Scripts situations for tests and docs: call after ``env.reset()``, then step with no-op
        actions and read the rewards (see :func:`marlplug.envs.scripted_rewards`).

        Args:
            env: an env built by this scenario's :meth:`make`.
            agents: agent name -> ``(x, y)``; agents not named stay where they are.
            landmarks: positions of the first ``len(landmarks)`` landmarks (obstacles in
                predator-prey).
            target: index of the landmark to make the target, in scenarios that have one.
        """
        raise UserError(f"{self.backend}/{self.scenario} does not support scripted placement")

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in self.options.model_dump().items())
        return f"{type(self).__name__}({fields})"
