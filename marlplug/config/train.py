"""The training section of a config: rollout, optimization and checkpoint settings.

Defaults follow the Rust ``joint`` reference field for field where it has the field. The rollout and
optimization fields are declared once, in :class:`TrainerSettings`: the ``train:`` section extends
it, and so does the joint trainer's :class:`~marlplug.losses.JointTrainerConfig` (with the PPO loss
terms and the seed).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from marlplug.options import Options

#: How the learning rate changes over a run: ``constant`` or ``linear`` (annealed to
#: ``train.lr_final`` over ``train.updates`` updates).
LrSchedule = Literal["constant", "linear"]


class TrainerSettings(Options):
    """Rollout and optimization settings: the fields the ``train:`` section shares with the joint
    trainer's settings (:class:`~marlplug.losses.JointTrainerConfig`).

    Examples:
        >>> TrainerSettings().minibatch_size, TrainerSettings(gamma=0.95).gamma
        (256, 0.95)
    """

    # Upper bounds are far beyond any real run; they stop a typo (an extra digit or three) before
    # it allocates terabytes. A memory estimate (marlplug.config.checks) catches the combinations.
    rollout_steps: int = Field(
        2048,
        ge=1,
        le=10**7,
        description="Environment steps per rollout (per env copy). PPO starts every rollout from a "
        "reset: at least the episode length (env.max_steps), or training never sees later steps.",
    )
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
    max_nonfinite_steps: int | None = Field(
        10,
        ge=1,
        description="Stop when an agent's steps are skipped this many times in a row for a "
        "non-finite loss or gradient; null: only report.",
    )


class TrainSection(TrainerSettings):
    """``train:`` in a config file: the trainer's settings plus how long to run, how often to
    checkpoint and how many threads torch uses. The PPO loss terms are ``algorithm:`` options."""

    # Here, not in TrainerSettings: a schedule needs the run's length (train.updates), which
    # only this section has (build_trainer hands the joint trainer the schedule itself).
    lr_schedule: LrSchedule = Field(
        "constant",
        description="Learning-rate schedule: constant (train.lr throughout) or linear (PPO: "
        "annealed from train.lr at the first update to train.lr_final over train.updates "
        "updates, as CleanRL and MAPPO do).",
    )
    lr_final: float | None = Field(
        None,
        ge=0.0,
        description="Where the linear schedule ends (null: 0); only with lr_schedule: linear.",
    )
    updates: int = Field(50, ge=1, le=10**9, description="Number of updates (one rollout each).")
    checkpoint_every: int = Field(
        10, ge=1, le=10**9, description="Write a checkpoint every K updates (MADDPG: iterations)."
    )
    torch_threads: int | None = Field(
        1,
        ge=1,
        le=1024,
        description="torch intra-op threads (small networks run fastest on one); null: torch's default.",
    )
    # Evaluating every 10 updates costs little for PPO (20 episodes of 25 steps are ~500 frames,
    # against thousands per update) and draws the deterministic curve beside the noisy training
    # return. A MADDPG iteration is a few to a hundred env steps: its configs evaluate less often.
    eval_every: int | None = Field(
        10,
        ge=0,
        le=10**9,
        description="Evaluate the policy (deterministic actions, fixed evaluation seeds) every K "
        "updates and after the last; 0 or null: never.",
    )
    eval_episodes: int = Field(
        20, ge=1, le=10**5, description="Episodes per evaluation (train.eval_every)."
    )
    # The last evaluation is the run's result (the summary's line); 20 episodes of cooperative
    # navigation put ~±0.05 of noise on its oracle-normalized score, 100 ~±0.02.
    final_eval_episodes: int | None = Field(
        None,
        ge=1,
        le=10**5,
        description="Episodes of the evaluation after the last update, the run's result "
        "(null: train.eval_episodes).",
    )
    # A run trained on the fast vmas backend is judged on the reference mpe episodes, as
    # `marlplug evaluate RUN --backend mpe` does: the two backends give the same observations.
    eval_backend: str | None = Field(
        None,
        description="Backend of the evaluation env (train.eval_every), e.g. mpe for a run trained "
        "on vmas; null: the run's own backend.",
    )

    @field_validator("lr_final")
    @classmethod
    def _final_needs_linear(cls, lr_final: float | None, info: ValidationInfo) -> float | None:
        # A final learning rate the constant schedule never reaches would be silently ignored.
        if lr_final is not None and info.data.get("lr_schedule", "linear") != "linear":
            raise PydanticCustomError(
                "lr_final_without_schedule",
                "only used with lr_schedule: linear (lr_schedule is {schedule})",
                {"schedule": info.data.get("lr_schedule")},
            )
        return lr_final
