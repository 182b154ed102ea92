"""The training section of a config: rollout, optimization and checkpoint settings.

Defaults follow the Rust ``joint`` reference field for field where it has the field.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class TrainSection(BaseModel):
    """``train:`` in a config file. The PPO loss options live on the ``clip_ppo`` loss entry."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    updates: int = Field(50, ge=1, description="Number of updates (one rollout each).")
    rollout_steps: int = Field(2048, ge=1, description="Environment steps per rollout.")
    num_envs: int = Field(1, ge=1, description="Parallel environment copies in the collector.")
    gamma: float = Field(0.99, ge=0.0, le=1.0, description="Discount factor.")
    gae_lambda: float = Field(0.95, ge=0.0, le=1.0, description="GAE lambda.")
    n_epochs: int = Field(4, ge=1, description="Passes over each rollout.")
    minibatch_size: int = Field(256, ge=1, description="Rows per minibatch.")
    lr: float = Field(3e-4, gt=0.0, description="Adam learning rate.")
    max_grad_norm: float = Field(
        0.5, gt=0.0, description="Per-agent global L2 clip of the gradient slice."
    )
    iterate_all_minibatches: bool = Field(
        False, description="Walk every minibatch of a shuffled rollout (else one per epoch)."
    )
    max_minibatches_per_epoch: int | None = Field(
        None, ge=1, description="Cap on minibatches per epoch when iterating all."
    )
    checkpoint_every: int = Field(10, ge=1, description="Write a checkpoint every K updates.")
