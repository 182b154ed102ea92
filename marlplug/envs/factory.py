"""``make_env``: look a scenario up in the env registry, validate its options, build the TorchRL env."""

from __future__ import annotations

from typing import Any

from torchrl.envs import EnvBase

from marlplug.envs.scenario import EnvScenario
from marlplug.errors import ConfigError
from marlplug.plugins import get_plugin_manager, unknown_name_message


def available_envs() -> dict[str, list[str]]:
    """Installed scenarios by backend: ``{"mpe": ["cooperative_navigation", ...], ...}``."""
    by_backend: dict[str, list[str]] = {}
    for key in get_plugin_manager().registry("env"):
        backend, _, scenario = key.partition("/")
        by_backend.setdefault(backend, []).append(scenario)
    return {backend: sorted(names) for backend, names in sorted(by_backend.items())}


def get_scenario(name: str, *, backend: str = "mpe") -> type[EnvScenario]:
    """The scenario class registered as ``"<backend>/<name>"``, or a config error naming the field.

    Example:
        >>> get_scenario("keep_away").Options().agents
        2
    """
    envs = available_envs()
    if backend not in envs:
        raise ConfigError("env.backend: " + unknown_name_message("backend", backend, list(envs)))
    if name not in envs[backend]:
        raise ConfigError(
            "env.name: " + unknown_name_message(f"{backend} scenario", name, envs[backend])
        )
    component = get_plugin_manager().registry("env")[f"{backend}/{name}"]
    assert isinstance(component, type)
    return component


def make_env(
    name: str,
    *,
    backend: str = "mpe",
    num_envs: int = 1,
    seed: int | None = None,
    device: str = "cpu",
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
        **options: the scenario's options, e.g. ``agents=8, adversaries=4, max_steps=25``.

    Returns:
        A TorchRL ``EnvBase`` with groups ``"agent"`` (and ``"adversary"``) and ``env.group_map``.

    Raises:
        ConfigError: unknown backend or scenario, or an option that does not validate; the message
            names the field (``env.adversaries: must be fewer than agents (4) ...``).

    Example:
        >>> env = make_env("cooperative_navigation", agents=3, seed=0)
        >>> env.rollout(3)["next", "agent", "reward"].shape
        torch.Size([3, 3, 1])
    """
    scenario_cls = get_scenario(name, backend=backend)
    scenario = scenario_cls(**options)
    return scenario.make(num_envs=num_envs, seed=seed, device=device)
