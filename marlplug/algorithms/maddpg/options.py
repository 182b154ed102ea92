"""MADDPG's hyperparameters (:class:`MaddpgOptions`, their one declaration), apart from the plugin
(:mod:`marlplug.algorithms.maddpg`) and the update rule that both read them.
"""

from __future__ import annotations

from pydantic import Field

from marlplug.algorithms.maddpg.critic import CriticInput
from marlplug.algorithms.replay_options import ReplayOptions, schedule_field

__all__ = ["MaddpgOptions"]


class MaddpgOptions(ReplayOptions):
    """MADDPG hyperparameters; the defaults are the paper authors' settings."""

    lr: float = Field(1e-2, gt=0, description="Adam learning rate (actor and critic).")
    max_grad_norm: float = Field(0.5, gt=0, description="Per-agent, per-network L2 gradient clip.")
    tau: float = Field(0.01, gt=0, le=1, description="Polyak factor of the target networks.")
    minibatch_size: int = schedule_field("minibatch_size", 1024)
    steps_per_iteration: int = schedule_field("steps_per_iteration", 100)
    learning_starts: int = schedule_field("learning_starts", 1024 * 25)
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

    def state_bytes(self, *, agents: int, observation_floats: int) -> int:
        """Networks, targets and Adam moments; a joint critic reads every agent's observation
        and action."""
        critic_inputs = agents if self.critic == "joint" else 1
        return 4 * 4 * agents * critic_inputs * (observation_floats + 1) * self._first_width()
