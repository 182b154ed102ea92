"""Loss entries whose settings moved into the algorithm's options: still read, with a warning.

A loss component that declares ``moved_to_algorithm`` (a class attribute: the config spelling to use
instead) is no loss of its own: its settings are fields of the algorithm's ``Options``. Such an entry
in ``losses:`` (``clip_ppo``: the PPO terms, which are ``algorithm: {name: ppo, clip_range: ...}``
now) is validated where it stands, so an error names ``losses[i]`` as the file has it, then taken
out of the list and its fields given to the algorithm, with one ``warning:`` line saying what to
write instead. Under an algorithm without those fields (MADDPG) a lone entry left at its defaults is
dropped (old MADDPG run folders hold one); any other is refused.
"""

from __future__ import annotations

from typing import Any

from marlplug.config.checks import warn
from marlplug.config.messages import format_loc
from marlplug.config.schema import ComponentSpec, MarlplugConfig
from marlplug.errors import ConfigError
from marlplug.registry import Registry

#: The release that no longer reads moved loss entries (CHANGELOG.md, "Deprecation policy").
MOVED_REMOVED_IN = "0.3.0"


def moved_to_algorithm(registry: Registry, spec: ComponentSpec) -> str | None:
    """What to write instead of the loss entry ``spec``, or ``None`` for a loss of its own."""
    component = registry.get_component(spec.name)
    moved = getattr(component, "moved_to_algorithm", None)
    return moved if isinstance(moved, str) else None


def move_settings_to_algorithm(config: MarlplugConfig, registry: Registry) -> None:
    """Take every moved entry out of ``config.losses`` and give its settings to the algorithm.

    Needs validated options (:func:`marlplug.config.validate_components` ran).
    """
    kept: list[ComponentSpec] = []
    algorithm = config.algorithm
    algorithm_fields = set(type(algorithm.options).model_fields)
    for index, spec in enumerate(config.losses):
        instead = moved_to_algorithm(registry, spec)
        if instead is None:
            kept.append(spec)
            continue
        where = format_loc(["losses", index])
        fields = type(spec.options).model_fields
        if not set(fields) <= algorithm_fields:
            # The algorithm has no such settings. Alone and at its defaults the entry changes
            # nothing (old MADDPG run folders hold one); otherwise an algorithm that trains with its
            # own losses refuses it with the rest of the list (checks), and any other is told here.
            if len(config.losses) == 1 and spec.options == type(spec.options)():
                continue
            if getattr(algorithm.options, "uses_losses", True):
                raise ConfigError(
                    f"{where}: '{spec.name}' is deprecated and algorithm '{algorithm.name}' has "
                    f"none of its settings; remove it from losses"
                )
            kept.append(spec)
            continue
        given = spec.raw_options
        both = sorted(set(given) & set(algorithm.raw_options))
        if both:
            raise ConfigError(
                f"{where}.{both[0]}: also set as algorithm.{both[0]}; keep only "
                f"algorithm.{both[0]} ('{spec.name}' is deprecated)"
            )
        if given:
            merged: dict[str, Any] = algorithm.options.model_dump() | {
                field: getattr(spec.options, field) for field in given
            }
            algorithm._options = type(algorithm.options).model_validate(merged)
        warn(
            f"{where}: '{spec.name}' is deprecated (removed in marlplug {MOVED_REMOVED_IN}); its "
            f"settings are algorithm options now ({instead}); remove it from losses"
        )
    config.losses = kept
