"""The config file: schema, YAML/TOML loading, ``--set`` overrides and path-aware errors.

A config composes named components (env, algorithm, losses, coding scheme); each component validates
its own options against the ``Options`` pydantic model its plugin declares, so an error names the full
path (``losses[1].coef: expected a number, got 'high'``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from marlplug.config.checks import check_config
from marlplug.config.loading import check_size, parse_yaml_text, read_config_file
from marlplug.config.messages import clip, format_loc, validation_message
from marlplug.config.train import TrainSection
from marlplug.errors import ConfigError
from marlplug.plugins import get_plugin_manager
from marlplug.seeding import MAX_SEED


class Options(BaseModel):
    """Base class for a component's options: unknown fields are errors, values are validated.

    Example:
        >>> class RedundancyOptions(Options):
        ...     coef: float = 0.01
        >>> RedundancyOptions(coef=0.1).coef
        0.1
    """

    # Attribute docstrings become field descriptions, shown in the configuration reference.
    # Floats must be finite everywhere: an infinite learning rate or timeout is never meant.
    model_config = ConfigDict(
        extra="forbid",
        validate_assignment=True,
        use_attribute_docstrings=True,
        allow_inf_nan=False,
    )


def one_word_name(name: str) -> str:
    """``name`` if it can be a component or backend name; names are quoted in messages and looked up
    in registries, so refuse what can be neither (empty, spaces, control characters, huge).

    >>> one_word_name("clip_ppo")
    'clip_ppo'
    """
    if not name or len(name) > 200 or any(c.isspace() or not c.isprintable() for c in name):
        raise PydanticCustomError("component_name", "expected a name such as 'clip_ppo' (one word)")
    return name


class ComponentSpec(BaseModel):
    """``{name: <component>, ...options}``; the options are checked by :func:`validate_components`."""

    model_config = ConfigDict(extra="allow")

    name: str
    _options: BaseModel | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _name_alone(cls, data: Any) -> Any:
        # `scheme: mds` is shorthand for `scheme: {name: mds}`.
        return {"name": data} if isinstance(data, str) else data

    @field_validator("name")
    @classmethod
    def _one_word(cls, name: str) -> str:
        return one_word_name(name)

    @property
    def raw_options(self) -> dict[str, Any]:
        """The fields given next to ``name``, before the component validated them."""
        return dict(self.model_extra or {})

    @property
    def options(self) -> BaseModel:
        """The component's validated ``Options`` instance."""
        if self._options is None:
            raise RuntimeError(f"options of '{self.name}' were not validated; use load_config()")
        return self._options


class EnvSpec(ComponentSpec):
    """``env: {name: <scenario>, backend: mpe, ...options}``."""

    name: str = "cooperative_navigation"
    backend: str = Field("mpe", description="Implementation: 'mpe' (PettingZoo) or 'vmas'.")

    @field_validator("backend")
    @classmethod
    def _one_word_backend(cls, backend: str) -> str:
        return one_word_name(backend)

    @property
    def registry_key(self) -> str:
        return f"{self.backend}/{self.name}"


class AlgorithmSpec(ComponentSpec):
    """``algorithm: {name: ppo, ...options}``: the per-agent update rule."""

    name: str = "ppo"


#: Upper bound of every wait and delay in a config (seconds): one day. Longer is a typo, and an
#: unbounded wait would hang a run whose learners never answer.
MAX_WAIT_S = 24 * 3600.0
#: Upper bound of every network width (hidden layers, features): 16384 units.
MAX_WIDTH = 16384
#: Upper bound of ``coding.learners`` (and of stragglers per round).
MAX_LEARNERS = 1024


class StragglerSection(Options):
    """Which learners answer late, per round."""

    model: Literal["fixed", "random"] = Field(
        "fixed",
        description="'fixed': `count` random learners each round; 'random': each "
        "learner independently with `probability`.",
    )
    count: int = Field(
        0, ge=0, le=MAX_LEARNERS, description="Stragglers per round (model 'fixed')."
    )
    probability: float = Field(0.0, ge=0.0, le=1.0, description="Per learner (model 'random').")
    delay_s: float = Field(
        0.0, ge=0.0, le=MAX_WAIT_S, description="How long a straggler delays its answer (seconds)."
    )


class CodingSection(Options):
    """``coding:``: run training on N coded learners instead of in one process."""

    scheme: ComponentSpec = Field(description="Coding scheme: a name or {name: ..., options}.")
    learners: int = Field(
        ge=1, le=MAX_LEARNERS, description="Number of learners N (N >= number of agents M)."
    )
    backend: Literal["local", "ray"] = "local"
    ray_address: str | None = Field(None, description="Existing Ray cluster; None starts one.")
    clock: Literal["wall", "simulated"] = "wall"
    round_timeout_s: float = Field(
        60.0, gt=0, le=MAX_WAIT_S, description="Re-dispatch after this long (seconds)."
    )
    stragglers: StragglerSection = Field(default_factory=StragglerSection)


class LoggingSection(Options):
    """Where metrics, checkpoints and plots go."""

    dir: Path = Field(Path("runs"), description="Parent folder for run folders.")
    run_name: str | None = Field(None, description="Run folder name; default: a timestamp.")
    backend: Literal["csv", "tensorboard"] = "csv"
    progress: bool = Field(True, description="Show a progress bar.")


def _default_losses() -> list[ComponentSpec]:
    return [ComponentSpec(name="clip_ppo")]


class MarlplugConfig(Options):
    """A whole run. Every section has defaults, so an empty file trains the default setup."""

    seed: int = Field(
        0,
        ge=0,
        le=MAX_SEED,
        strict=True,  # `seed: true` is not seed 1
        description="Seed for everything; the same seed gives the same run.",
    )
    env: EnvSpec = Field(
        default_factory=EnvSpec,
        description="`{name, backend, ...options}`; default cooperative_navigation on mpe.",
    )
    algorithm: AlgorithmSpec = Field(
        default_factory=AlgorithmSpec, description="`{name, ...options}`; default ppo."
    )
    losses: list[ComponentSpec] = Field(
        default_factory=_default_losses,
        description="Main loss then auxiliary losses, each `{name, ...options}`; default [clip_ppo].",
    )
    train: TrainSection = Field(default_factory=TrainSection, description="See `train` below.")
    coding: CodingSection | None = Field(
        None, description="Coded distributed training; absent: train in one process."
    )
    logging: LoggingSection = Field(
        default_factory=LoggingSection, description="See `logging` below."
    )


def validate_options(
    model: type[BaseModel], values: Mapping[str, Any], prefix: Sequence[str | int] = ()
) -> BaseModel:
    """Validate ``values`` against ``model``; raise :class:`ConfigError` naming the full path."""
    try:
        return model.model_validate(dict(values))
    except ValidationError as exc:
        raise ConfigError(validation_message(exc, model, prefix)) from None


# --------------------------------------------------------------------------- loading


_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _parse_path(path: str) -> list[str | int]:
    tokens: list[str | int] = []
    position = 0
    for match in _TOKEN.finditer(path):
        gap = path[position : match.start()]
        if gap not in {"", "."}:
            break
        name, index = match.groups()
        tokens.append(int(index) if index is not None else (int(name) if name.isdigit() else name))
        position = match.end()
    if not tokens or position != len(path):
        raise ConfigError(f"--set: malformed key '{clip(path)}'; expected a.b.c or losses[1].coef")
    return tokens


def apply_override(data: dict[str, Any], assignment: str) -> None:
    """Apply one ``key.path=value`` (value parsed as YAML) to ``data`` in place.

    >>> cfg = {"losses": [{"name": "clip_ppo"}]}
    >>> apply_override(cfg, "losses[0].clip_range=0.1")
    >>> cfg["losses"][0]["clip_range"]
    0.1
    """
    key, sep, raw_value = assignment.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set '{clip(assignment)}': expected KEY=VALUE, e.g. train.updates=10")
    tokens = _parse_path(key.strip())
    key = clip(key)  # as shown in messages
    value = (
        parse_yaml_text(raw_value, source=f"--set {key}", malformed_as_string=True)
        if raw_value.strip()
        else ""
    )
    node: Any = data
    for depth, token in enumerate(tokens):
        last = depth == len(tokens) - 1
        where = clip(format_loc(tokens[: depth + 1]))
        if isinstance(token, int):
            if not isinstance(node, list):
                parent = clip(format_loc(tokens[:depth]))
                raise ConfigError(f"--set {key}: {parent} is not a list in this config file")
            if not -len(node) <= token < len(node):
                raise ConfigError(
                    f"--set {key}: {where} does not exist (the list has {len(node)} items)"
                )
        elif not isinstance(node, dict):
            raise ConfigError(
                f"--set {key}: {clip(format_loc(tokens[:depth])) or 'config'} is not a mapping"
            )
        if last:
            node[token] = value
        else:
            if isinstance(node, dict) and not isinstance(node.get(token), (dict, list)):
                node[token] = {}
            node = node[token]


def validate_components(config: MarlplugConfig) -> MarlplugConfig:
    """Look every named component up in the registries and validate its options."""
    registries = get_plugin_manager().registries
    registries["env"].get_env(config.env.name, config.env.backend)  # unknown names raise here
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
        spec._options = validate_options(options_model, spec.raw_options, loc)
    return config


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
    for assignment in overrides:
        apply_override(raw, assignment)
    if overrides or path is None:
        check_size(raw, source="--set" if overrides else "config")
    config = validate_options(MarlplugConfig, raw)
    assert isinstance(config, MarlplugConfig)
    validate_components(config)
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
    out["env"] = component(config.env, backend=config.env.backend)
    out["algorithm"] = component(config.algorithm)
    if getattr(algorithm_options, "uses_losses", True):
        out["losses"] = [component(spec) for spec in config.losses]
    out.update(data)
    if config.coding is not None:
        coding = config.coding.model_dump(mode="json", exclude={"scheme"})
        out["coding"] = {"scheme": component(config.coding.scheme), **coding}
    return out
