"""SAC's hyperparameters (:class:`SacOptions`, their one declaration): ISAC reads them as they are,
MASAC with joint critics by default (:class:`MasacOptions`)."""

from __future__ import annotations

from pydantic import Field

from marlplug.algorithms.maddpg.critic import CriticInput
from marlplug.algorithms.replay_options import ReplayOptions, schedule_field

__all__ = ["MasacOptions", "SacOptions"]


class SacOptions(ReplayOptions):
    """Soft actor-critic with per-agent twin critics, a TanhNormal actor and a learned temperature.

    The defaults suit a short MPE/VMAS run: a 25-step episode per iteration, one minibatch update
    each (``updates_per_iteration``), learning after 1,000 transitions.
    """

    lr: float = Field(1e-3, gt=0, description="Adam learning rate (actor, critics, temperature).")
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
    critic: CriticInput = Field(
        "local",
        description=(
            "What each agent's critics read: its own agent's observation and action (local, "
            "ISAC) or every agent's (joint: MASAC's centralized critics)."
        ),
    )
    minibatch_size: int = schedule_field("minibatch_size", 256)
    steps_per_iteration: int = schedule_field("steps_per_iteration", 25)
    learning_starts: int = schedule_field("learning_starts", 1000)

    def state_bytes(self, *, agents: int, observation_floats: int) -> int:
        """Two critics, their targets and Adam moments; joint critics read every agent's
        observation and action."""
        critic_inputs = agents if self.critic == "joint" else 1
        return 4 * 2 * 4 * agents * critic_inputs * (observation_floats + 1) * self._first_width()


class MasacOptions(SacOptions):
    """SAC's hyperparameters with centralized (``joint``) critics by default."""

    critic: CriticInput = Field(
        "joint",
        description=(
            "What each agent's critics read: every agent's observation and action (joint, "
            "MASAC's default) or its own agent's only (local: then it is ISAC)."
        ),
    )
