"""``make_env``: look a scenario up in the env registry, validate its options, build the TorchRL env."""

from __future__ import annotations

from typing import Any

from torchrl.envs import EnvBase

from marlplug.envs.checks import check_env_object, check_specs_against_data
from marlplug.envs.copies import Copies
from marlplug.envs.entity_order import with_nearest_first
from marlplug.envs.options import EntityOrderOptions
from marlplug.envs.scenario import EnvScenario
from marlplug.envs.state import with_global_state
from marlplug.errors import ConfigError
from marlplug.plugins import get_plugin_manager


def available_envs() -> dict[str, list[str]]:
    """Installed scenarios by backend: ``{"mpe": ["cooperative_navigation", ...], ...}``."""
    by_backend: dict[str, list[str]] = {}
    for key in get_plugin_manager().registry("env"):
        backend, _, scenario = key.partition("/")
        by_backend.setdefault(backend, []).append(scenario)
    return {backend: sorted(names) for backend, names in sorted(by_backend.items())}


def get_scenario(name: str, *, backend: str = "mpe") -> type[EnvScenario]:
    """The scenario class registered as ``"<backend>/<name>"``, or a config error naming the field.

    Raises:
        UnknownComponentError: (a :class:`ConfigError`) unknown backend or scenario; the message
            names ``env.backend`` or ``env.name``, the closest name and a plugin that failed to load.

    Example:
        >>> get_scenario("keep_away").Options().agents
        2
    """
    component = get_plugin_manager().registry("env").get_env(name, backend)
    # The plugin manager registers only EnvScenario subclasses (marlplug.plugin_checks).
    scenario: type[EnvScenario] = component.obj
    return scenario


def make_env(
    name: str,
    *,
    backend: str = "mpe",
    num_envs: int = 1,
    seed: int | None = None,
    device: str = "cpu",
    global_state: bool = False,
    copies: Copies = "serial",
    **options: Any,
) -> EnvBase:
    """Build scenario ``name`` on ``backend`` as a TorchRL env with agent groups as nested keys.

    Args:
        name: scenario name (``cooperative_navigation``, ``predator_prey``, ``physical_deception``,
            ``keep_away`` or one from a plugin).
        backend: ``"mpe"`` (PettingZoo/mpe2, the reference) or ``"vmas"`` (vectorized, needs the
            ``marlplug-vmas`` plugin).
        num_envs: parallel copies (batch size ``[num_envs]``).
        seed: the same seed gives bit-identical episodes for the same actions.
        device: torch device of the returned tensors.
        global_state: also write the scenario's compact global state as the root key
            ``"state"`` (:mod:`marlplug.envs.state`; MAPPO's state critic reads it).
        copies: how the copies of a non-vectorized env run: ``"serial"`` in this process or
            ``"processes"``, one worker process each (:mod:`marlplug.envs.copies`); the same
            transitions either way. Close the env when done.
        **options: the scenario's options, e.g. ``agents=8, adversaries=4, max_steps=25``.

    Returns:
        A TorchRL ``EnvBase`` with groups ``"agent"`` (and ``"adversary"``) and ``env.group_map``.

    Raises:
        ConfigError: unknown backend or scenario (an ``UnknownComponentError``), or an option that
            does not validate; the message names the field (``env.adversaries: must be fewer ...``);
            ``global_state`` for a scenario that declares no state; ``copies: processes`` for
            a vectorized backend.
        PluginError: a plugin's env that breaks the contract: ``make`` returns no ``EnvBase`` with a
            ``group_map`` dict, or its data does not match its specs (checked once per process on a
            separate copy, for plugins' envs only); the message names the env, plugin and fix.

    Example:
        >>> env = make_env("cooperative_navigation", agents=3, seed=0)
        >>> env.rollout(3)["next", "agent", "reward"].shape
        torch.Size([3, 3, 1])
    """
    component = get_plugin_manager().registry("env").get_env(name, backend)
    scenario = component.obj(**options)
    columns = scenario.options.state_columns() if global_state else None
    if global_state and columns is None:
        raise ConfigError(
            f"env '{backend}/{name}' declares no global state (its options' state_columns); "
            "train its critics on observations instead"
        )
    check_specs_against_data(scenario, component)
    env = check_env_object(
        scenario.make(num_envs=num_envs, seed=seed, device=device, copies=copies), component
    )
    chosen = scenario.options
    if isinstance(chosen, EntityOrderOptions) and chosen.entity_order == "nearest":
        lists = chosen.entity_lists()
        # None: a plugin that takes entity_order without declaring lists fails its contract
        # tests. Empty: nothing to sort at this size (physical deception with one good agent).
        if lists:
            env = with_nearest_first(env, lists)
    return env if columns is None else with_global_state(env, columns)
