"""The config file's schema: its sections, component specs and the bounds of their fields.

Each component's own options are validated by the ``Options`` model its plugin declares (see
:func:`marlplug.config.validate_components`); this module holds what is the same for every run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator
from pydantic_core import PydanticCustomError

from marlplug.config.train import TrainSection
from marlplug.options import Options
from marlplug.seeding import MAX_SEED


def one_word_name(name: str) -> str:
    """``name`` if it can be a component or backend name; names are quoted in messages and looked up
    in registries, so refuse what can be neither (empty, spaces, control characters, huge).

    >>> one_word_name("redundancy")
    'redundancy'
    """
    if not name or len(name) > 200 or any(c.isspace() or not c.isprintable() for c in name):
        raise PydanticCustomError(
            "component_name", "expected a name such as 'redundancy' (one word)"
        )
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


#: ``env.copies``: how a non-vectorized env's copies run (:mod:`marlplug.envs.copies`).
EnvCopies = Literal["serial", "processes", "ray"]


class EnvSpec(ComponentSpec):
    """``env: {name: <scenario>, backend: mpe, copies: serial, ...options}``."""

    name: str = Field(
        "cooperative_navigation",
        description="Scenario name on env.backend (`marlplug envs` lists them); its options go "
        "beside it (environment options).",
    )
    backend: str = Field("mpe", description="Implementation: 'mpe' (PettingZoo) or 'vmas'.")
    # serial: processes measured slower on 2 cores (marlplug.envs.copies says how much).
    copies: EnvCopies = Field(
        "serial",
        description="How the train.num_envs copies of a non-vectorized env (mpe, pettingzoo, "
        "gymnasium) run: 'serial' one after the other in the training process, 'processes' each "
        "in its own worker process (TorchRL's ParallelEnv), 'ray' each in a Ray actor (on the "
        "cluster at RAY_ADDRESS, else a local Ray). The same transitions every way; measure with "
        "`marlplug bench envs --copies serial --copies processes --copies ray`. vmas batches its "
        "copies and takes only 'serial'; evaluation envs run in the training process.",
    )

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

    @property
    def uses_global_state(self) -> bool:
        """Whether the algorithm reads the env's global state (its options say so with a
        ``uses_global_state`` attribute, e.g. PPO's ``critic: state``): every env it is bound to
        must be made with ``make_env(..., global_state=True)``."""
        return bool(getattr(self.options, "uses_global_state", False))


#: Upper bound of every wait and delay in a config (seconds): one day. Longer is a typo, and an
#: unbounded wait would hang a run whose learners never answer.
MAX_WAIT_S = 24 * 3600.0
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
    # 120 s covers a learner's start here (a fork server's imports, or a Ray actor on a warm node);
    # a loaded CI machine or a cluster whose nodes pull images or start cold can take longer.
    start_timeout_s: float = Field(
        120.0,
        gt=0,
        le=MAX_WAIT_S,
        description="How long the first round waits for enough learners to be ready (seconds); "
        "raise it on a busy machine or a cluster whose nodes start slowly. Start-up does not "
        "count against round_timeout_s.",
    )
    stragglers: StragglerSection = Field(default_factory=StragglerSection)


class WandbSection(Options):
    """``logging.wandb``: where a run logged with ``backend: wandb`` goes (Weights & Biases).

    The run is named after the run folder and keeps its files in ``RUN_DIR/wandb``; offline (the
    default) nothing leaves this machine until ``wandb sync``.
    """

    project: str = Field("marlplug", min_length=1, description="W&B project of the run.")
    entity: str | None = Field(
        None, min_length=1, description="W&B user or team; null: your default entity."
    )
    mode: Literal["offline", "online"] = Field(
        "offline",
        description="'offline': write RUN_DIR/wandb only (upload later with `wandb sync`); "
        "'online': stream to the W&B server (needs `wandb login`).",
    )


class MLflowSection(Options):
    """``logging.mlflow``: where a run logged with ``backend: mlflow`` goes."""

    tracking_uri: str | None = Field(
        None,
        min_length=1,
        description="MLflow tracking URI (`sqlite:///runs/mlflow.db` to share one store, "
        "`http://host:5000` for a server); null: `sqlite:///RUN_DIR/mlflow.db`, artifacts in "
        "RUN_DIR/mlartifacts.",
    )
    experiment: str = Field(
        "marlplug", min_length=1, max_length=500, description="MLflow experiment of the run."
    )


#: ``logging.backend``: which of TorchRL's loggers a run writes its metrics with.
LoggingBackend = Literal["csv", "tensorboard", "wandb", "mlflow"]


class LoggingSection(Options):
    """Where metrics, checkpoints and plots go."""

    dir: Path = Field(Path("runs"), description="Parent folder for run folders.")
    run_name: str | None = Field(None, description="Run folder name; default: a timestamp.")
    backend: LoggingBackend = Field(
        "csv",
        description="Metrics logger: 'csv' or 'tensorboard' (RUN_DIR/metrics), 'wandb' "
        "(logging.wandb) or 'mlflow' (logging.mlflow).",
    )
    progress: bool = Field(True, description="Show a progress bar.")
    wandb: WandbSection = Field(
        default_factory=WandbSection, description="Used by backend 'wandb'; see below."
    )
    mlflow: MLflowSection = Field(
        default_factory=MLflowSection, description="Used by backend 'mlflow'; see below."
    )


class MarlplugConfig(Options):
    """A whole run. Every section has defaults, the best measured ones, so an empty file, no file
    and ``marlplug train`` without a CONFIG (``marlplug/configs/default.yaml``) train the same run.

    Example:
        >>> from marlplug.config import load_config
        >>> config = load_config(data={})
        >>> config.train.lr, config.algorithm.options.activation, config.env.options.entity_order
        (0.001, 'relu', 'nearest')
    """

    seed: int = Field(
        0,
        ge=0,
        le=MAX_SEED,
        strict=True,  # `seed: true` is not seed 1
        description="Seed for everything; the same seed gives the same run.",
    )
    env: EnvSpec = Field(
        default_factory=EnvSpec,
        description="`{name, backend, copies, ...options}`; default cooperative_navigation on mpe.",
    )
    algorithm: AlgorithmSpec = Field(
        default_factory=AlgorithmSpec, description="`{name, ...options}`; default ppo."
    )
    # No aux loss by default: the cross-agent redundancy penalty (`{name: redundancy, coef: 0.01}`,
    # the first default) lowered the agents' feature correlation (feature_abs_corr 0.12-0.14
    # against 0.16-0.17) but not the return (-57.2 with it, -55.8 without: medians of seeds 0-2 at
    # 144k frames), so it is left to configs that study it.
    losses: list[ComponentSpec] = Field(
        default_factory=list,
        description="Auxiliary losses, each `{name, ...options}`, added to the algorithm's own "
        "(PPO's loss terms are `algorithm` options); default none.",
    )
    train: TrainSection = Field(default_factory=TrainSection, description="See `train` below.")
    coding: CodingSection | None = Field(
        None, description="Coded distributed training; absent: train in one process."
    )
    logging: LoggingSection = Field(
        default_factory=LoggingSection, description="See `logging` below."
    )
