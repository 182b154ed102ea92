"""SAC's hyperparameters (:class:`SacOptions`, their one declaration): ISAC reads them as they are,
MASAC with joint critics by default (:class:`MasacOptions`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from marlplug.algorithms.maddpg_critic import CriticInput
from marlplug.algorithms.replay_options import REPLAY_IGNORED_TRAIN_FIELDS
from marlplug.config import MAX_WIDTH, Options

if TYPE_CHECKING:
    from marlplug.config.train import TrainSection

__all__ = ["MasacOptions", "SacOptions"]


class SacOptions(Options):
    """Soft actor-critic with per-agent twin critics, a TanhNormal actor and a learned temperature.

    The defaults suit a short MPE/VMAS run: a 25-step episode per iteration, one minibatch update
    each, learning after 1,000 transitions.
    """

    #: SAC trains with its own actor, critic and temperature losses: ``losses`` is refused.
    uses_losses: ClassVar[bool] = False
    #: ``train:`` fields SAC does not read (its own are here); setting one gives a warning.
    ignored_train_fields: ClassVar[frozenset[str]] = REPLAY_IGNORED_TRAIN_FIELDS

    lr: float = Field(1e-3, gt=0, description="Adam learning rate (actor, critics, temperature).")
    gamma: float = Field(0.95, ge=0, le=1, description="Discount factor.")
    hidden_sizes: list[int] = Field(
        default_factory=lambda: [64, 64],
        max_length=16,
        description="Hidden layer widths (ReLU) of actor and critics, each 1 to 16384.",
    )
    max_grad_norm: float = Field(1.0, gt=0, description="Per-agent, per-network L2 gradient clip.")
    tau: float = Field(0.01, gt=0, le=1, description="Polyak factor of the target critics.")
    alpha: float | None = Field(
        None,
        gt=0,
        description=(
            "A fixed entropy temperature; unset (the default): each agent learns its own, "
            "starting at alpha_init, towards an entropy of -(its action dimensions)."
        ),
    )
    alpha_init: float = Field(
        1.0, gt=0, description="The learned temperature's starting value (alpha unset)."
    )
    share_params: bool = Field(
        False,
        description=(
            "Every agent of a group starts from the group's first agent's networks and steps with "
            "the group's mean gradient: one actor and critic pair per group, each agent still in "
            "its own row."
        ),
    )
    critic: CriticInput = Field(
        "local",
        description=(
            "What each agent's critics read: its own agent's observation and action (local, "
            "ISAC) or every agent's (joint: MASAC's centralized critics)."
        ),
    )
    minibatch_size: int = Field(256, ge=1, le=10**7, description="Transitions per update.")
    buffer_size: int = Field(
        1_000_000, ge=1, le=10**9, description="Replay buffer capacity (transitions)."
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

    def min_memory_bytes(
        self, *, agents: int, observation_floats: int, train: TrainSection
    ) -> tuple[int, str, str]:
        """A lower bound of the largest allocation: the replay buffer (allocated whole at the
        first transition) or the agents' state (two critics, their targets and Adam moments; a
        joint critic reads every agent's observation and action)."""
        del train  # SAC sizes its run with its own options
        buffer = 4 * self.buffer_size * agents * (2 * observation_floats + 3)
        first_width = self.hidden_sizes[0] if self.hidden_sizes else 1
        critic_inputs = agents if self.critic == "joint" else 1
        state = 4 * 2 * 4 * agents * critic_inputs * (observation_floats + 1) * first_width
        if buffer >= state:
            return (
                buffer,
                f"the replay buffer ({self.buffer_size} transitions)",
                "algorithm.buffer_size",
            )
        return state, f"the networks of {agents} agents", "env.agents"


class MasacOptions(SacOptions):
    """SAC's hyperparameters with centralized (``joint``) critics by default."""

    critic: CriticInput = Field(
        "joint",
        description=(
            "What each agent's critics read: every agent's observation and action (joint, "
            "MASAC's default) or its own agent's only (local: then it is ISAC)."
        ),
    )
