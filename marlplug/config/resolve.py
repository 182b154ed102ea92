"""Loading a config: read, override, validate every section and component, check across sections.

:func:`load_config` is the one way in; :func:`resolved_dict` is what ``marlplug config show`` prints
and what a run saves next to its results.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from marlplug.config.checks import check_config, check_unique_losses, warn
from marlplug.config.loading import check_size, read_config_file
from marlplug.config.messages import format_loc, validation_message
from marlplug.config.moved import move_settings_to_algorithm
from marlplug.config.overrides import apply_override, override_path
from marlplug.config.schema import AlgorithmSpec, ComponentSpec, EnvSpec, MarlplugConfig
from marlplug.errors import ConfigError
from marlplug.options import Options
from marlplug.plugins import get_plugin_manager


def validate_options(
    model: type[BaseModel],
    values: Mapping[str, Any],
    prefix: Sequence[str | int] = (),
    *,
    owner: str = "",
) -> BaseModel:
    """Validate ``values`` against ``model``; raise :class:`ConfigError` naming the full path (and
    ``owner``, the component the options belong to, for a field it does not have)."""
    try:
        return model.model_validate(dict(values))
    except ValidationError as exc:
        raise ConfigError(validation_message(exc, model, prefix, owner=owner)) from None


def validate_components(config: MarlplugConfig) -> MarlplugConfig:
    """Look every named component up in the registries and validate its options."""
    registries = get_plugin_manager().registries
    registries["env"].get_env(config.env.name, config.env.backend)  # unknown names raise here
    if config.train.eval_backend is not None:
        registries["env"].get_env(
            config.env.name, config.train.eval_backend, backend_field="train.eval_backend"
        )
    specs: list[tuple[str, ComponentSpec, str, list[str | int]]] = [
        ("env", config.env, config.env.registry_key, ["env"]),
        ("algorithm", config.algorithm, config.algorithm.name, ["algorithm"]),
    ]
    specs += [("loss", spec, spec.name, ["losses", i]) for i, spec in enumerate(config.losses)]
    if config.coding is not None:
        specs.append(
            ("code", config.coding.scheme, config.coding.scheme.name, ["coding", "scheme"])
        )
    for kind, spec, key, loc in specs:
        component = registries[kind].get_component(key, field=format_loc([*loc, "name"]))
        options_model: type[BaseModel] = getattr(component, "Options", Options)
        values = with_run_defaults(options_model, spec.raw_options)
        spec._options = validate_options(options_model, values, loc, owner=f"{kind} '{spec.name}'")
    return config


def with_run_defaults(model: type[BaseModel], values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with the options' :attr:`~marlplug.options.Options.run_defaults` filled in where
    they leave a field out: what a run's config starts from.

    Example:
        >>> class ScenarioOptions(Options):
        ...     agents: int = 3
        ...     entity_order: str = "world"
        >>> ScenarioOptions.run_defaults = {"entity_order": "nearest"}
        >>> with_run_defaults(ScenarioOptions, {"agents": 8})
        {'entity_order': 'nearest', 'agents': 8}
        >>> with_run_defaults(ScenarioOptions, {"entity_order": "world"})
        {'entity_order': 'world'}
    """
    run_defaults: Mapping[str, Any] = getattr(model, "run_defaults", {})
    return {**run_defaults, **values}


#: The sections whose component ``--set <section>.name=...`` can replace, and their specs.
_SWAPPABLE: dict[str, type[ComponentSpec]] = {"env": EnvSpec, "algorithm": AlgorithmSpec}


def leave_out_options_of_replaced_components(
    raw: dict[str, Any], before: Mapping[str, Mapping[str, Any]], overrides: Sequence[str]
) -> None:
    """Where ``--set env.name=...`` (or ``algorithm.name``) replaced the file's component, drop
    the options that came with the file's component and the new one does not take (with a
    warning), instead of refusing the config: ``marlplug train --set env.name=formation`` on the
    packaged default, whose ``env.entity_order`` a plugin's scenario may not have. Options given
    with ``--set`` are never dropped.

    Example:
        >>> import warnings
        >>> file_algorithm = {"name": "ppo", "activation": "relu", "gamma": 0.9}
        >>> raw = {"algorithm": dict(file_algorithm)}
        >>> apply_override(raw, "algorithm.name=maddpg")
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     leave_out_options_of_replaced_components(
        ...         raw, {"algorithm": file_algorithm}, ["algorithm.name=maddpg"])
        >>> raw["algorithm"]  # MADDPG has a gamma too, and no activation
        {'name': 'maddpg', 'gamma': 0.9}
        >>> print(caught[0].message)
        algorithm.activation: left out: algorithm 'maddpg' does not take it (it came with the config file's algorithm 'ppo')
    """
    given = {tuple(override_path(assignment)[:2]) for assignment in overrides}
    registries = get_plugin_manager().registries
    for section, old in before.items():
        new = raw.get(section)
        default_name = _SWAPPABLE[section].model_fields["name"].default
        if not isinstance(new, dict) or (section,) in given:
            continue  # a whole section given with --set is the user's
        old_name, new_name = old.get("name", default_name), new.get("name", default_name)
        if new_name == old_name:
            continue
        try:
            if section == "env":
                backend = new.get("backend", EnvSpec.model_fields["backend"].default)
                component = registries["env"].get_env(str(new_name), str(backend)).obj
            else:
                component = registries[section].get_component(str(new_name))
        except ConfigError:
            continue  # validation names the unknown component
        accepted = set(getattr(component, "Options", Options).model_fields) | set(
            _SWAPPABLE[section].model_fields
        )
        left_out = [
            key for key in new if key in old and key not in accepted and (section, key) not in given
        ]
        for key in left_out:
            del new[key]
        if left_out:
            it, came = ("it", "it came") if len(left_out) == 1 else ("them", "they came")
            warn(
                f"{', '.join(f'{section}.{key}' for key in left_out)}: left out: {section} "
                f"'{new_name}' does not take {it} ({came} with the config file's {section} "
                f"'{old_name}')"
            )


def load_config(
    path: str | Path | None = None,
    overrides: Sequence[str] = (),
    *,
    data: Mapping[str, Any] | None = None,
) -> MarlplugConfig:
    """Read, override, validate and resolve a config.

    Args:
        path: a YAML or TOML file; ``None`` starts from the defaults (or ``data``).
        overrides: ``"key.path=value"`` strings, applied in order (``--set`` on the command line).
        data: a dict to use instead of a file.

    Example:
        >>> cfg = load_config(overrides=["train.updates=2", "seed=3"])
        >>> cfg.seed, cfg.env.name
        (3, 'cooperative_navigation')
    """
    raw: dict[str, Any] = dict(data or {}) if path is None else read_config_file(path)
    before = {
        section: dict(raw[section]) for section in _SWAPPABLE if isinstance(raw.get(section), dict)
    }
    for assignment in overrides:
        apply_override(raw, assignment)
    leave_out_options_of_replaced_components(raw, before, overrides)
    if overrides or path is None:
        check_size(raw, source="--set" if overrides else "config")
    config = validate_options(MarlplugConfig, raw)
    assert isinstance(config, MarlplugConfig)
    validate_components(config)
    check_unique_losses(config)
    move_settings_to_algorithm(config, get_plugin_manager().registry("loss"))
    check_config(config)
    return config


def resolved_dict(config: MarlplugConfig) -> dict[str, Any]:
    """The config as plain data, every component's options filled in with their defaults."""

    def component(spec: ComponentSpec, **fixed: Any) -> dict[str, Any]:
        return {"name": spec.name, **fixed, **spec.options.model_dump(mode="json")}

    # Settings the algorithm ignores are left out, so that what is shown (and saved with a run) is
    # what the run uses, and reloading it gives no "does nothing" warning.
    algorithm_options = config.algorithm.options
    ignored: frozenset[str] = getattr(algorithm_options, "ignored_train_fields", frozenset())
    exclude: Any = {"env": True, "algorithm": True, "losses": True, "coding": True}
    exclude["train"] = set(ignored)
    data = config.model_dump(mode="json", exclude=exclude)
    out: dict[str, Any] = {"seed": data.pop("seed")}
    out["env"] = component(config.env, backend=config.env.backend, copies=config.env.copies)
    out["algorithm"] = component(config.algorithm)
    if getattr(algorithm_options, "uses_losses", True):
        out["losses"] = [component(spec) for spec in config.losses]
    out.update(data)
    if config.coding is not None:
        coding = config.coding.model_dump(mode="json", exclude={"scheme"})
        out["coding"] = {"scheme": component(config.coding.scheme), **coding}
    return out
