"""What the options of every replay-based (off-policy) algorithm share (MADDPG, IDDPG, IQL, VDN,
QMIX, ISAC, MASAC): :class:`ReplayOptions`, their common base, and :func:`schedule_field`, the
constraints of the replay schedule's fields, whose defaults differ by algorithm."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from marlplug.config import MAX_WIDTH, Options

if TYPE_CHECKING:
    from marlplug.config.train import TrainSection

__all__ = [
    "REPLAY_IGNORED_TRAIN_FIELDS",
    "ReplayOptions",
    "schedule_field",
]

#: ``train:`` fields a replay-based algorithm does not read: it collects and updates on its own
#: schedule (its options carry their own ``lr``, ``gamma``, minibatch size, ...), and runs on one
#: torch thread (marlplug.train.threads). Setting one gives a warning (``ignored_train_fields``).
REPLAY_IGNORED_TRAIN_FIELDS: frozenset[str] = frozenset(
    {
        "rollout_steps",
        "gamma",
        "gae_lambda",
        "n_epochs",
        "minibatch_size",
        "lr",
        "lr_schedule",
        "lr_final",
        "max_grad_norm",
        "iterate_all_minibatches",
        "max_minibatches_per_epoch",
        "torch_threads",
    }
)

#: Each replay-schedule field's bounds and description (its default is the algorithm's).
_SCHEDULE_FIELDS: dict[str, dict[str, Any]] = {
    "minibatch_size": {"ge": 1, "le": 10**7, "description": "Transitions per update."},
    "buffer_size": {
        "ge": 1,
        "le": 10**9,
        "description": "Replay buffer capacity (transitions).",
    },
    "steps_per_iteration": {
        "ge": 1,
        "le": 10**7,
        "description": "Environment steps (in each env copy) an iteration collects before its "
        "updates.",
    },
    "updates_per_iteration": {
        "ge": 1,
        "le": 10**6,
        "description": "Updates after each iteration's collection, once learning starts, each on "
        "its own minibatch (BenchMARL's off_policy_n_optimizer_steps). train.updates counts "
        "iterations: a run makes up to train.updates x updates_per_iteration updates.",
    },
    "learning_starts": {
        "ge": 1,
        "le": 10**12,
        "description": "Transitions in the buffer before the first update.",
    },
}


def schedule_field(name: str, default: int) -> Any:
    """The pydantic field ``name`` of the replay schedule with this algorithm's ``default``.

    Examples:
        >>> schedule_field("minibatch_size", 256).description
        'Transitions per update.'
    """
    return Field(default, **_SCHEDULE_FIELDS[name])


class ReplayOptions(Options):
    """The options every replay-based algorithm has: discount, hidden widths, episode length, the
    updates an iteration makes (``updates_per_iteration``), parameter sharing within a group
    (``share_params``), and a memory estimate from the replay buffer and the agents' state
    (:meth:`state_bytes`).

    Subclasses add their own learning rate, clip, target update and replay schedule
    (:func:`schedule_field`).
    """

    #: The algorithm trains with its own losses: a config's ``losses`` list is refused.
    uses_losses: ClassVar[bool] = False
    #: ``train:`` fields it does not read (its own are here); setting one gives a warning.
    ignored_train_fields: ClassVar[frozenset[str]] = REPLAY_IGNORED_TRAIN_FIELDS

    gamma: float = Field(0.95, ge=0, le=1, description="Discount factor.")
    hidden_sizes: list[int] = Field(
        default_factory=lambda: [64, 64],
        max_length=16,
        description="Hidden layer widths (ReLU) of each agent's networks, each 1 to 16384.",
    )
    episode_length: int = Field(25, ge=1, le=10**6, description="Steps per episode.")
    buffer_size: int = schedule_field("buffer_size", 1_000_000)
    share_params: bool = Field(
        False,
        description=(
            "Every agent of a group starts from the group's first agent's networks and steps with "
            "the group's mean gradient: one set of networks per group, each agent still in its own "
            "row."
        ),
    )
    # One update an iteration is every algorithm's default: the same rate as before the option.
    updates_per_iteration: int = schedule_field("updates_per_iteration", 1)

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

    def state_bytes(self, *, agents: int, observation_floats: int) -> int:
        """A lower bound of the agents' state (networks, targets, Adam moments), in bytes."""
        raise NotImplementedError

    def min_memory_bytes(
        self, *, agents: int, observation_floats: int, train: TrainSection
    ) -> tuple[int, str, str]:
        """A lower bound of the largest allocation: the replay buffer (allocated whole at the
        first transition) or the agents' state (:meth:`state_bytes`)."""
        del train  # sized by its own options
        buffer = 4 * self.buffer_size * agents * (2 * observation_floats + 3)
        state = self.state_bytes(agents=agents, observation_floats=observation_floats)
        if buffer >= state:
            return (
                buffer,
                f"the replay buffer ({self.buffer_size} transitions)",
                "algorithm.buffer_size",
            )
        return state, f"the networks of {agents} agents", "env.agents"

    def _first_width(self) -> int:
        """The first hidden layer's width (1 without hidden layers): the state bound's factor."""
        return self.hidden_sizes[0] if self.hidden_sizes else 1
