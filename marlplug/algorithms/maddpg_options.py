"""MADDPG's hyperparameters (:class:`MaddpgOptions`, their one declaration), apart from the plugin
(:mod:`marlplug.algorithms.maddpg`) and the update rule that both read them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from marlplug.algorithms.maddpg_critic import CriticInput
from marlplug.algorithms.replay_options import REPLAY_IGNORED_TRAIN_FIELDS
from marlplug.config import MAX_WIDTH, Options

if TYPE_CHECKING:
    from marlplug.config.train import TrainSection

__all__ = ["MaddpgOptions"]


class MaddpgOptions(Options):
    """MADDPG hyperparameters; the defaults are the paper authors' settings."""

    #: MADDPG trains with its own actor and critic losses: a config's ``losses`` list is refused.
    uses_losses: ClassVar[bool] = False
    #: ``train:`` fields MADDPG does not read (its own are here); setting one gives a warning.
    ignored_train_fields: ClassVar[frozenset[str]] = REPLAY_IGNORED_TRAIN_FIELDS

    lr: float = Field(1e-2, gt=0, description="Adam learning rate (actor and critic).")
    gamma: float = Field(0.95, ge=0, le=1, description="Discount factor.")
    hidden_sizes: list[int] = Field(
        default_factory=lambda: [64, 64],
        max_length=16,
        description="Hidden layer widths (ReLU), each 1 to 16384.",
    )
    max_grad_norm: float = Field(0.5, gt=0, description="Per-agent, per-network L2 gradient clip.")
    tau: float = Field(0.01, gt=0, le=1, description="Polyak factor of the target networks.")
    minibatch_size: int = Field(1024, ge=1, le=10**7, description="Transitions per update.")
    buffer_size: int = Field(
        1_000_000, ge=1, le=10**9, description="Replay buffer capacity (transitions)."
    )
    episode_length: int = Field(25, ge=1, le=10**6, description="Steps per episode.")
    steps_per_iteration: int = Field(
        100, ge=1, le=10**7, description="Environment steps between two updates (one update each)."
    )
    learning_starts: int = Field(
        1024 * 25, ge=1, le=10**12, description="Transitions in the buffer before the first update."
    )
    actor_regularization: float = Field(
        1e-3, ge=0, description="Weight of the mean squared actor output (the authors' 1e-3)."
    )
    hard_actions: bool = Field(
        True,
        description=(
            "Discrete agents: the critic sees one-hot Gumbel samples for the target and the actor's "
            "own action (straight-through gradient), as the env and the replay buffer see them; "
            "false: the authors' soft Gumbel-softmax vectors."
        ),
    )
    exploration_std: float = Field(
        0.1, ge=0, description="Gaussian exploration noise for continuous actions."
    )
    critic: CriticInput = Field(
        "joint",
        description=(
            "What each agent's critic reads: every agent's observation and action (joint, "
            "MADDPG's centralized critic) or its own agent's only (local: independent DDPG critics)."
        ),
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

    def min_memory_bytes(
        self, *, agents: int, observation_floats: int, train: TrainSection
    ) -> tuple[int, str, str]:
        """A lower bound of the largest allocation: the replay buffer (allocated whole at the
        first transition) or the agents' state (networks, targets and Adam moments; a joint
        critic reads every agent's observation and action)."""
        del train  # MADDPG sizes its run with its own options
        buffer = 4 * self.buffer_size * agents * (2 * observation_floats + 3)
        first_width = self.hidden_sizes[0] if self.hidden_sizes else 1
        critic_inputs = agents if self.critic == "joint" else 1
        state = 4 * 4 * agents * critic_inputs * (observation_floats + 1) * first_width
        if buffer >= state:
            return (
                buffer,
                f"the replay buffer ({self.buffer_size} transitions)",
                "algorithm.buffer_size",
            )
        return state, f"the networks of {agents} agents", "env.agents"
