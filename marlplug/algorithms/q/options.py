"""The value-based family's hyperparameters (:class:`QOptions`, their one declaration): IQL reads
them as they are, VDN and QMIX add their mixer's (:mod:`marlplug.algorithms.q.vdn`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from marlplug.algorithms.recurrent_options import (
    recurrent_field,
    recurrent_hidden_size_field,
    sequence_length_field,
)
from marlplug.algorithms.replay_options import ReplayOptions, schedule_field
from marlplug.config import MAX_WIDTH
from marlplug.nn.recurrent import Recurrent

__all__ = ["QMixOptions", "QOptions"]


class QOptions(ReplayOptions):
    """Hyperparameters of Q-learning with per-agent Q-networks, replay and target networks.

    The defaults are BenchMARL's off-policy settings scaled to a short MPE run: a 25-step episode
    per iteration, one minibatch update each (``updates_per_iteration``), epsilon decaying over
    the first 50,000 env steps.
    """

    lr: float = Field(5e-4, gt=0, description="Adam learning rate of the Q-networks.")
    max_grad_norm: float = Field(10.0, gt=0, description="Per-agent L2 gradient clip.")
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
    double_q: bool = Field(
        False,
        description=(
            "Double Q-learning (van Hasselt et al. 2016; TorchRL's DQNLoss double_dqn, EPyMARL's "
            "double_q): the TD target takes the target network's value of the action the online "
            "network would choose, instead of the target network's maximum, which overestimates."
        ),
    )
    standardize_rewards: bool = Field(
        False,
        description=(
            "Standardize the rewards of the TD target (EPyMARL's standardise_rewards): each "
            "minibatch's rewards are folded into running statistics (per agent; the team's with a "
            "mixer), then replaced by (reward - mean) / std. The statistics travel in opt_state."
        ),
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
    minibatch_size: int = schedule_field("minibatch_size", 256)
    buffer_size: int = schedule_field("buffer_size", 100_000)
    steps_per_iteration: int = schedule_field("steps_per_iteration", 25)
    learning_starts: int = schedule_field("learning_starts", 1000)
    recurrent: Recurrent = recurrent_field(
        "Each agent's Q-network's memory: none (an MLP) or gru (MLP encoder -> GRU cell -> Q "
        "head, its hidden state carried from step to step and reset when an episode starts; the "
        "replay buffer then holds chunks of sequence_length steps, each replayed from its first "
        "step's stored hidden state)."
    )
    recurrent_hidden_size: int = recurrent_hidden_size_field()
    sequence_length: int = sequence_length_field(
        "Steps per replayed chunk with recurrent: gru (each env copy's steps, cut in order). A "
        "minibatch holds minibatch_size / sequence_length chunks, buffer_size / sequence_length "
        "fit in the buffer."
    )

    def chunks(self, transitions: int) -> int:
        """How many ``sequence_length`` chunks hold ``transitions`` steps (at least one).

        >>> QOptions(recurrent="gru", sequence_length=25).chunks(256)
        10
        """
        return max(1, transitions // self.sequence_length)

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

    def state_bytes(self, *, agents: int, observation_floats: int) -> int:
        """Q-networks, targets and Adam moments."""
        return 4 * 4 * agents * observation_floats * self._first_width()


class QMixOptions(QOptions):
    """QMIX's options: :class:`QOptions` and the width of its mixing network."""

    mixing_embed_dim: int = Field(
        32,
        ge=1,
        le=MAX_WIDTH,
        description="Width of QMIX's mixing network (TorchRL's QMixer mixing_embed_dim).",
    )
