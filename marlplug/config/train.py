"""The training section of a config: rollout, optimization and checkpoint settings.

The rollout and optimization fields are declared once (name, type, bounds, description), in
:class:`TrainerSettings`: the ``train:`` section extends it, and so does the joint trainer's
:class:`~marlplug.losses.JointTrainerConfig` (with the PPO loss terms and the seed). The two differ
only in defaults: the joint trainer's follow the Rust ``joint`` reference field for field; the
``train:`` section's are the best measured settings of ``marlplug train`` (cooperative navigation,
3 agents), so that no file, an empty file and a file that sets only what differs all start from
the same run.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from marlplug.options import Options

#: How the learning rate changes over a run: ``constant`` or ``linear`` (annealed to
#: ``train.lr_final`` over ``train.updates`` updates).
LrSchedule = Literal["constant", "linear"]
#: ``train.torch_threads``: ``auto`` (:mod:`marlplug.train.threads` chooses), a number, or ``None``
#: (torch's own default).
TorchThreads = Literal["auto"] | int | None
#: The fewest rows of a float32 matrix product that MKL computes bit for bit the same on any thread
#: count: 5 to 11 rows differ between 1 and 2 threads (2-core AMD EPYC Zen 4, MKL 2024.2). An
#: algorithm's ``thread_invariant`` checks its batches against it (:mod:`marlplug.train.threads`).
SMALL_GEMM_ROWS = 12

# The fields whose defaults differ between the joint trainer and the ``train:`` section: declared
# once here, each class gives its own default. Upper bounds are far beyond any real run; they stop
# a typo (an extra digit or three) before it allocates terabytes. A memory estimate
# (marlplug.config.checks) catches the combinations.
RolloutSteps = Annotated[
    int,
    Field(
        ge=1,
        le=10**7,
        description="Environment steps per rollout (per env copy). PPO starts every rollout from a "
        "reset: at least the episode length (env.max_steps), or training never sees later steps.",
    ),
]
Gamma = Annotated[float, Field(ge=0.0, le=1.0, description="Discount factor.")]
Epochs = Annotated[int, Field(ge=1, le=10**4, description="Passes over each rollout.")]
MinibatchSize = Annotated[int, Field(ge=1, le=10**7, description="Rows per minibatch.")]
LearningRate = Annotated[float, Field(gt=0.0, description="Adam learning rate.")]
IterateAllMinibatches = Annotated[
    bool, Field(description="Walk every minibatch of a shuffled rollout (else one per epoch).")
]


class TrainerSettings(Options):
    """Rollout and optimization settings: the fields the ``train:`` section shares with the joint
    trainer's settings (:class:`~marlplug.losses.JointTrainerConfig`).

    Examples:
        >>> TrainerSettings().minibatch_size, TrainerSettings(gamma=0.95).gamma
        (256, 0.95)
    """

    rollout_steps: RolloutSteps = 2048
    num_envs: int = Field(
        1, ge=1, le=4096, description="Parallel environment copies in the collector."
    )
    gamma: Gamma = 0.99
    gae_lambda: float = Field(0.95, ge=0.0, le=1.0, description="GAE lambda.")
    n_epochs: Epochs = 4
    minibatch_size: MinibatchSize = 256
    lr: LearningRate = 3e-4
    max_grad_norm: float = Field(
        0.5, gt=0.0, description="Per-agent global L2 clip of the gradient slice."
    )
    iterate_all_minibatches: IterateAllMinibatches = False
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
    checkpoint and how many threads torch uses. The PPO loss terms are ``algorithm:`` options.

    The defaults are the best measured for ``marlplug train`` (issue 14's tuning of cooperative
    navigation, 3 agents, at 144 updates x 1000 frames; greedy evaluation on 100 mpe episodes,
    seeds 0-2, one thread each on a 2-core Intel Xeon): median team return -48.1 (-51.6 / -46.6 /
    -48.1) against -55.6 for a tuned plain TorchRL MAPPO on the same seeds and machine. Each field
    says what it was measured against.

    Examples:
        >>> TrainSection().lr, TrainerSettings().lr
        (0.001, 0.0003)
    """

    # 40 whole 25-step episodes per update (not re-measured).
    rollout_steps: RolloutSteps = 1000
    # 25-step episodes: 0.95 beat 0.99 with value_norm (-56.7 against -58.0 at 144k frames, -60.3
    # against -61.7 at 48k, seed 0) and kept the policy's entropy higher (1.23 against 0.90).
    gamma: Gamma = 0.95
    # 10 epochs beat 4 on every seed (-52.3/-54.7/-54.9 against -56.8/-55.6/-55.8, seeds 0-2 at
    # 144k frames) for about 1.4x the wall time; 10 epochs of 500-step rollouts (288 updates) did
    # not (-57.1, seed 0).
    n_epochs: Epochs = 10
    # 125-row minibatches (8 per epoch, 80 Adam steps per update) against 250: median -48.1 against
    # -54.2 (-51.6/-46.6/-48.1 against -50.9/-54.8/-54.2, seeds 0-2 at 144k frames, same machine);
    # 50 rows did worse (-55.6, seed 1).
    minibatch_size: MinibatchSize = 125
    # 3e-3 was worse with value_norm (-64.5 against -61.7 at 48k frames, seed 0).
    lr: LearningRate = 1e-3
    iterate_all_minibatches: IterateAllMinibatches = True

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
    # 144 updates x 1000 frames = 144k frames: 259 s of training on an idle 2-core Intel Xeon
    # (`marlplug bench learn --frames 144000 --seeds 0,1,2`; the whole `marlplug train`: 4 min 34 s).
    updates: int = Field(
        144,
        ge=1,
        le=10**9,
        description="Training iterations: PPO, one rollout and its epochs each; replay-based "
        "algorithms, algorithm.steps_per_iteration env steps then algorithm.updates_per_iteration "
        "updates each.",
    )
    # Comparing frameworks "at equal wall time" (issue 45: 20-minute runs against BenchMARL) needs
    # a run that ends on the clock; train.updates stays the upper bound. The clock is the run's
    # own, across resumes: each checkpoint stores the wall time spent up to it
    # (marlplug.train.budget), so a run stopped and resumed gets the budget once, not per part.
    max_minutes: float | None = Field(
        None,
        gt=0.0,
        le=10**7,
        description="Wall-time budget in minutes: stop at the first update (iteration) boundary "
        "after this much wall time, counted from the start of training (after the env, "
        "networks and learners are built; periodic evaluations included) and, for a resumed run, including "
        "its earlier parts up to their last checkpoint; then end as after the last update "
        "(checkpoint, final evaluation, summary), with train.updates still the upper bound. "
        "null: no budget.",
    )
    checkpoint_every: int = Field(
        10, ge=1, le=10**9, description="Write a checkpoint every K train.updates (iterations)."
    )
    # checkpoint.pt is replaced at every write, so a run's earlier selves (self-play opponents,
    # issue 45's battle against its own earlier checkpoints) were gone unless copied by hand.
    # A kept checkpoint is a hard link to the file just written: no bytes copied.
    keep_checkpoint_every: int | None = Field(
        None,
        ge=0,
        le=10**9,
        description="Also keep the checkpoint of every K-th update as "
        "checkpoints/update-NNNNNN.pt in the run folder (e.g. for marlplug evaluate --opponent); "
        "0 or null: keep only the latest, checkpoint.pt.",
    )
    # auto by default: every core on an idle machine is the fastest measured for the VMAS PPO
    # configs, and a core another process keeps busy stalls every parallel op (issue 47;
    # docs/results/speed.md "On a busy machine"). auto gives several threads only to runs whose
    # algorithm declares them thread-invariant, so a seed gives the same run on any load
    # (marlplug.train.threads; tests/train/test_threads.py); every other run gets one.
    torch_threads: TorchThreads = Field(
        "auto",
        description="torch intra-op threads: auto (the CPUs no other process keeps busy, divided "
        "among a sweep's runs, chosen again every update, for runs that train the same on any "
        "count, e.g. PPO with minibatches and env copies of 12 rows or more; one thread for the "
        "others), a number, or null (torch's default).",
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
    # One copy steps each evaluation episode alone. On vmas, whose step costs about the same for
    # one copy as for dozens, a 20-episode evaluation of sampling took ~50 s on one copy and 2.6 s
    # on 20 (docs/results/benchmarl.md, "Sampling, equal wall time").
    eval_envs: int = Field(
        1,
        ge=1,
        le=10**4,
        description="Env copies an evaluation steps at once (train.eval_every, and marlplug "
        "evaluate of the run): its episodes run in rounds of this many. More is faster on a "
        "batched backend (vmas); the episodes differ from those of another count.",
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

    @field_validator("torch_threads", mode="before")
    @classmethod
    def _threads(cls, value: object) -> object:
        # One message for the three spellings instead of one per member of the union.
        if value is None or value == "auto" or (type(value) is int and 1 <= value <= 1024):
            return value
        raise PydanticCustomError(
            "torch_threads", "must be auto, a whole number from 1 to 1024, or null"
        )
