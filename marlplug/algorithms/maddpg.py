"""MADDPG as in the coded-MARL paper: a deterministic actor and a centralized critic per agent.

This module holds the hyperparameters (:class:`MaddpgOptions`, their one declaration) and the
algorithm plugin (:class:`MADDPG`); the update rule is :class:`~marlplug.algorithms.maddpg_program.
MaddpgProgram`, the replay buffer :mod:`marlplug.algorithms.maddpg_data`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError
from torchrl.envs import EnvBase

from marlplug.algorithms.maddpg_program import BATCH_KEYS, MaddpgProgram
from marlplug.algorithms.spaces import AgentSpace
from marlplug.config import MAX_WIDTH, Options
from marlplug.envs.flat import MultiAgentEnvAdapter

if TYPE_CHECKING:
    from marlplug.algorithms.maddpg_data import ReplayRollouts
    from marlplug.config import MarlplugConfig
    from marlplug.config.train import TrainSection

__all__ = ["BATCH_KEYS", "MADDPG", "MaddpgOptions", "MaddpgProgram"]


class MaddpgOptions(Options):
    """MADDPG hyperparameters; the defaults are the paper authors' settings."""

    #: MADDPG trains with its own actor and critic losses: a config's ``losses`` list is refused.
    uses_losses: ClassVar[bool] = False
    #: ``train:`` fields MADDPG does not read (its own are here); setting one gives a warning.
    ignored_train_fields: ClassVar[frozenset[str]] = frozenset(
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
        first transition) or the agents' state (networks, targets and Adam moments; each critic
        reads every agent's observation and action)."""
        del train  # MADDPG sizes its run with its own options
        buffer = 4 * self.buffer_size * agents * (2 * observation_floats + 3)
        first_width = self.hidden_sizes[0] if self.hidden_sizes else 1
        state = 4 * 4 * agents * agents * (observation_floats + 1) * first_width
        if buffer >= state:
            return (
                buffer,
                f"the replay buffer ({self.buffer_size} transitions)",
                "algorithm.buffer_size",
            )
        return state, f"the networks of {agents} agents", "env.agents"


class MADDPG:
    """The MADDPG learner algorithm (plugin name ``maddpg``).

    Built from its :class:`MaddpgOptions` (their one declaration). :meth:`bind` fixes the agents and returns the :class:`MaddpgProgram` that holds the pure
    per-agent update; :meth:`rollouts` the replay buffer it learns from.

    Examples:
        >>> algo = MADDPG(**MaddpgOptions(minibatch_size=8).model_dump())
        >>> agents = [AgentSpace(f"agent_{i}", "agent", obs_dim=6, action_dim=5, discrete=True)
        ...           for i in range(3)]
        >>> program = algo.program(agents)
        >>> theta, opt_state = program.init_state(seed=0)
        >>> theta.shape == (3, program.theta_size), opt_state.shape == (3, program.opt_state_size)
        (True, True)
    """

    Options = MaddpgOptions

    def __init__(self, **options: Any) -> None:
        # Every hyperparameter is declared once, in MaddpgOptions (validated here too).
        self.options = MaddpgOptions(**options)

    def program(self, agents: Sequence[AgentSpace]) -> MaddpgProgram:
        """The update program for these agents (in this order)."""
        return MaddpgProgram(self.options, agents)

    def bind(self, env: EnvBase, config: MarlplugConfig | None = None) -> MaddpgProgram:
        """The update program for ``env``'s agents (MADDPG reads its own options, not ``config``)."""
        del config
        return self.program(MultiAgentEnvAdapter(env).agents)

    def rollouts(
        self, env: EnvBase, program: MaddpgProgram, config: MarlplugConfig
    ) -> ReplayRollouts:
        """The replay buffer filled by acting in ``env`` with the current actors."""
        from marlplug.algorithms.maddpg_data import ReplayRollouts

        return ReplayRollouts(env, program, config)
