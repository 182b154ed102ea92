"""The training section of a config: rollout, optimization and checkpoint settings.

Defaults follow the Rust ``joint`` reference field for field where it has the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from marlplug.errors import ConfigError
from marlplug.seeding import MAX_SEED


class TrainSection(BaseModel):
    """``train:`` in a config file. The PPO loss options live on the ``clip_ppo`` loss entry."""

    # allow_inf_nan: floats must be finite (``lr: .inf`` is a typo, never a setting).
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)

    # Upper bounds are far beyond any real run; they stop a typo (an extra digit or three) before
    # it allocates terabytes. A memory estimate (marlplug.config.checks) catches the combinations.
    updates: int = Field(50, ge=1, le=10**9, description="Number of updates (one rollout each).")
    rollout_steps: int = Field(2048, ge=1, le=10**7, description="Environment steps per rollout.")
    num_envs: int = Field(
        1, ge=1, le=4096, description="Parallel environment copies in the collector."
    )
    gamma: float = Field(0.99, ge=0.0, le=1.0, description="Discount factor.")
    gae_lambda: float = Field(0.95, ge=0.0, le=1.0, description="GAE lambda.")
    n_epochs: int = Field(4, ge=1, le=10**4, description="Passes over each rollout.")
    minibatch_size: int = Field(256, ge=1, le=10**7, description="Rows per minibatch.")
    lr: float = Field(3e-4, gt=0.0, description="Adam learning rate.")
    max_grad_norm: float = Field(
        0.5, gt=0.0, description="Per-agent global L2 clip of the gradient slice."
    )
    iterate_all_minibatches: bool = Field(
        False, description="Walk every minibatch of a shuffled rollout (else one per epoch)."
    )
    max_minibatches_per_epoch: int | None = Field(
        None, ge=1, le=10**7, description="Cap on minibatches per epoch when iterating all."
    )
    checkpoint_every: int = Field(
        10, ge=1, le=10**9, description="Write a checkpoint every K updates (MADDPG: iterations)."
    )
    max_nonfinite_steps: int | None = Field(
        10,
        ge=1,
        description="Stop when an agent's steps are skipped this many times in a row for a "
        "non-finite loss or gradient; null: only report.",
    )
    torch_threads: int | None = Field(
        1,
        ge=1,
        le=1024,
        description="torch intra-op threads (small networks run fastest on one); null: torch's default.",
    )


@dataclass
class JointTrainerConfig:
    """Settings of :class:`marlplug.train.JointMultiAgentTrainer`; defaults are the Rust reference's.

    Examples:
        >>> JointTrainerConfig().rollout_steps, JointTrainerConfig().minibatch_size
        (2048, 256)
    """

    rollout_steps: int = 2048
    """Environment steps per rollout (per env copy)."""
    gamma: float = 0.99
    """Discount factor."""
    gae_lambda: float = 0.95
    """GAE λ."""
    clip_range: float = 0.2
    """PPO ratio clip range."""
    clip_range_vf: float | None = 0.2
    """Value clip range; None disables value clipping."""
    vf_coef: float = 0.5
    """Weight of the value loss."""
    ent_coef: float = 0.01
    """Weight of the entropy bonus."""
    n_epochs: int = 4
    """Passes over each rollout."""
    minibatch_size: int = 256
    """Rows per minibatch."""
    max_grad_norm: float = 0.5
    """Per-agent global L2 clip."""
    normalize_advantages: bool = True
    """Standardize advantages per agent on each minibatch."""
    iterate_all_minibatches: bool = False
    """Walk every minibatch of a shuffled rollout instead of one per epoch."""
    max_minibatches_per_epoch: int | None = None
    """Cap on minibatches per epoch when iterating all."""
    seed: int = 0
    """Seed of everything: network init, env, sampling, minibatches."""
    lr: float = 3e-4
    """Adam learning rate."""
    num_envs: int = 1
    """Parallel env copies."""
    max_nonfinite_steps: int | None = 10
    """Stop when an agent's steps are skipped this many times in a row (None: only report)."""

    def __post_init__(self) -> None:
        # The seed reaches numpy, gymnasium and VMAS: refuse here what they would refuse mid-run.
        if not 0 <= self.seed <= MAX_SEED:
            raise ConfigError(f"seed: must be between 0 and {MAX_SEED}, got {self.seed}")

    @classmethod
    def from_sections(
        cls, train: TrainSection, clip_ppo: Mapping[str, Any] | None = None, *, seed: int = 0
    ) -> JointTrainerConfig:
        """Combine the ``train:`` section, the ``clip_ppo`` loss options and the seed."""
        ppo = dict(clip_ppo or {})
        return cls(
            rollout_steps=train.rollout_steps,
            gamma=train.gamma,
            gae_lambda=train.gae_lambda,
            clip_range=ppo.get("clip_range", 0.2),
            clip_range_vf=ppo.get("clip_range_vf", 0.2),
            vf_coef=ppo.get("vf_coef", 0.5),
            ent_coef=ppo.get("ent_coef", 0.01),
            n_epochs=train.n_epochs,
            minibatch_size=train.minibatch_size,
            max_grad_norm=train.max_grad_norm,
            normalize_advantages=ppo.get("normalize_advantages", True),
            iterate_all_minibatches=train.iterate_all_minibatches,
            max_minibatches_per_epoch=train.max_minibatches_per_epoch,
            seed=seed,
            lr=train.lr,
            num_envs=train.num_envs,
            max_nonfinite_steps=train.max_nonfinite_steps,
        )
