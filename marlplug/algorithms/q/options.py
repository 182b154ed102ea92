"""The value-based family's hyperparameters (:class:`QOptions`, their one declaration): IQL reads
them as they are, VDN and QMIX add their mixer's (:mod:`marlplug.algorithms.q.vdn`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from marlplug.algorithms.replay_options import REPLAY_IGNORED_TRAIN_FIELDS
from marlplug.config import MAX_WIDTH, Options

if TYPE_CHECKING:
    from marlplug.config.train import TrainSection

__all__ = ["QMixOptions", "QOptions"]


class QOptions(Options):
    """Hyperparameters of Q-learning with per-agent Q-networks, replay and target networks.

    The defaults are BenchMARL's off-policy settings scaled to a short MPE run: a 25-step episode
    per iteration, one minibatch update each, epsilon decaying over the first 50,000 env steps.
    """

    #: Q-learning trains with its own TD loss: a config's ``losses`` list is refused.
    uses_losses: ClassVar[bool] = False
    #: ``train:`` fields the algorithm does not read (its own are here); setting one gives a warning.
    ignored_train_fields: ClassVar[frozenset[str]] = REPLAY_IGNORED_TRAIN_FIELDS

    lr: float = Field(5e-4, gt=0, description="Adam learning rate of the Q-networks.")
    gamma: float = Field(0.95, ge=0, le=1, description="Discount factor.")
    hidden_sizes: list[int] = Field(
        default_factory=lambda: [64, 64],
        max_length=16,
        description="Hidden layer widths (ReLU) of each agent's Q-network, each 1 to 16384.",
    )
    max_grad_norm: float = Field(10.0, gt=0, description="Per-agent L2 gradient clip.")
    share_params: bool = Field(
        False,
        description=(
            "Every agent of a group starts from the group's first agent's Q-network and steps with "
            "the group's mean gradient: one Q-network per group, each agent still in its own row."
        ),
    )
    target_update: Literal["polyak", "hard"] = Field(
        "polyak",
        description=(
            "How the target networks follow: polyak (move by tau every update) or hard (copy every "
            "target_update_interval updates)."
        ),
    )
    tau: float = Field(0.01, gt=0, le=1, description="Polyak factor (target_update: polyak).")
    target_update_interval: int = Field(
        200, ge=1, le=10**9, description="Updates between two copies (target_update: hard)."
    )
    epsilon_start: float = Field(
        1.0, ge=0, le=1, description="Random-action probability at the first env step."
    )
    epsilon_end: float = Field(
        0.05,
        ge=0,
        le=1,
        description="Random-action probability after epsilon_decay_steps (and while acting "
        "outside training with exploration on).",
    )
    epsilon_decay_steps: int = Field(
        50_000,
        ge=1,
        le=10**12,
        description="Env steps (over every env copy) of the linear decay from epsilon_start to "
        "epsilon_end; each iteration acts with the value at its start.",
    )
    minibatch_size: int = Field(256, ge=1, le=10**7, description="Transitions per update.")
    buffer_size: int = Field(
        100_000, ge=1, le=10**9, description="Replay buffer capacity (transitions)."
    )
    episode_length: int = Field(25, ge=1, le=10**6, description="Steps per episode.")
    steps_per_iteration: int = Field(
        25, ge=1, le=10**7, description="Environment steps between two updates (one update each)."
    )
    learning_starts: int = Field(
        1000, ge=1, le=10**12, description="Transitions in the buffer before the first update."
    )

    @field_validator("hidden_sizes")
    @classmethod
    def _widths_in_range(cls, widths: list[int]) -> list[int]:
        for layer, width in enumerate(widths):
            if not 1 <= width <= MAX_WIDTH:
                raise PydanticCustomError(
                    "width_out_of_range",
                    "layer {layer} has {width} units; each layer needs 1 to {maximum}",
                    {"layer": layer, "width": width, "maximum": MAX_WIDTH},
                )
        return widths

    def epsilon(self, env_steps: int) -> float:
        """The random-action probability after ``env_steps`` env steps (linear, then constant).

        >>> options = QOptions(epsilon_start=1.0, epsilon_end=0.1, epsilon_decay_steps=100)
        >>> [round(options.epsilon(steps), 3) for steps in (0, 50, 100, 1000)]
        [1.0, 0.55, 0.1, 0.1]
        """
        if env_steps >= self.epsilon_decay_steps:
            return self.epsilon_end
        progress = env_steps / self.epsilon_decay_steps
        return self.epsilon_start + progress * (self.epsilon_end - self.epsilon_start)

    def min_memory_bytes(
        self, *, agents: int, observation_floats: int, train: TrainSection
    ) -> tuple[int, str, str]:
        """A lower bound of the largest allocation: the replay buffer (allocated whole at the
        first transition) or the agents' state (Q-networks, targets and Adam moments)."""
        del train  # sized by its own options
        buffer = 4 * self.buffer_size * agents * (2 * observation_floats + 3)
        first_width = self.hidden_sizes[0] if self.hidden_sizes else 1
        state = 4 * 4 * agents * observation_floats * first_width
        if buffer >= state:
            return (
                buffer,
                f"the replay buffer ({self.buffer_size} transitions)",
                "algorithm.buffer_size",
            )
        return state, f"the networks of {agents} agents", "env.agents"


class QMixOptions(QOptions):
    """QMIX's options: :class:`QOptions` and the width of its mixing network."""

    mixing_embed_dim: int = Field(
        32,
        ge=1,
        le=MAX_WIDTH,
        description="Width of QMIX's mixing network (TorchRL's QMixer mixing_embed_dim).",
    )
