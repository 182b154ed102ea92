"""The PPO loss terms' settings, declared once: names, defaults, bounds and descriptions.

:class:`PPOLossOptions` is the one declaration. Everything else derives from it: the ``clip_ppo``
config entry (:class:`~marlplug.losses.ClipPPO`), ``JointPPOLoss(defaults="marlplug")``
(:data:`~marlplug.losses.MARLPLUG_DEFAULTS`) and the joint trainer's settings
(:class:`JointTrainerConfig`, which adds the ``train:`` section's fields and the seed).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, ValidationError

from marlplug.config.messages import validation_message
from marlplug.config.train import TrainerSettings, TrainSection
from marlplug.errors import ConfigError
from marlplug.options import Options
from marlplug.seeding import MAX_SEED

CriticLossType = Literal["l2", "l1", "smooth_l1"]


class PPOLossOptions(Options):
    """The clipped-PPO terms of every agent (defaults: the Rust reference's ``JointTrainerConfig``).

    Examples:
        >>> PPOLossOptions(clip_range=0.1).loss_arguments()["clip_epsilon"]
        0.1
    """

    clip_range: float = Field(
        0.2, gt=0.0, lt=1.0, description="PPO ratio clip range; typical values 0.1-0.3."
    )
    clip_range_vf: float | None = Field(
        0.2, gt=0.0, description="Value clip range around the old value; null disables it."
    )
    vf_coef: float = Field(0.5, ge=0.0, description="Weight of the value loss.")
    ent_coef: float = Field(0.01, ge=0.0, description="Weight of the entropy bonus.")
    normalize_advantages: bool = Field(
        True, description="Standardize advantages per agent on each minibatch."
    )
    loss_critic_type: CriticLossType = Field(
        "l2", description="Distance of the value loss: l2, l1 or smooth_l1."
    )

    def loss_arguments(self) -> dict[str, Any]:
        """These settings as :class:`~marlplug.losses.JointPPOLoss` (TorchRL ``ClipPPOLoss``)
        arguments, with marlplug's per-agent advantage statistics and sum over agents."""
        return {
            "clip_epsilon": self.clip_range,
            "clip_value": False if self.clip_range_vf is None else self.clip_range_vf,
            "entropy_coeff": self.ent_coef,
            "critic_coeff": self.vf_coef,
            "loss_critic_type": self.loss_critic_type,
            "normalize_advantage": self.normalize_advantages,
            "normalize_advantage_exclude_dims": (-2,),
            "reduction": "agent_sum",
        }


class JointTrainerConfig(TrainerSettings, PPOLossOptions):
    """Settings of :class:`marlplug.train.JointMultiAgentTrainer`: the ``train:`` section's
    rollout and optimization fields, the PPO loss terms and the seed (defaults: the Rust reference's).

    Built from a config with :meth:`from_sections`; every field is declared once, in
    :class:`~marlplug.config.train.TrainerSettings` or :class:`PPOLossOptions`.

    Examples:
        >>> JointTrainerConfig().rollout_steps, JointTrainerConfig(minibatch_size=64).minibatch_size
        (2048, 64)
        >>> JointTrainerConfig(seed=-1)
        Traceback (most recent call last):
        ...
        marlplug.errors.ConfigError: seed: input should be greater than or equal to 0, got -1
    """

    # The seed reaches numpy, gymnasium and VMAS: refuse here what they would refuse mid-run.
    seed: int = Field(
        0, ge=0, le=MAX_SEED, description="Seed of everything: network init, env, sampling."
    )

    def __init__(self, **settings: Any) -> None:
        try:
            super().__init__(**settings)
        except ValidationError as exc:  # one line naming the field, as for a config file
            raise ConfigError(validation_message(exc, type(self))) from None

    @classmethod
    def from_sections(
        cls,
        train: TrainSection,
        loss: PPOLossOptions | Mapping[str, Any] | None = None,
        *,
        seed: int = 0,
    ) -> JointTrainerConfig:
        """Combine the ``train:`` section, the PPO loss options (a model or its fields) and the seed.

        Examples:
            >>> from marlplug.config import TrainSection
            >>> config = JointTrainerConfig.from_sections(
            ...     TrainSection(lr=1e-3), PPOLossOptions(vf_coef=1.0), seed=3)
            >>> config.lr, config.vf_coef, config.seed
            (0.001, 1.0, 3)
        """
        shared = train.model_dump(include=set(TrainerSettings.model_fields))
        if not isinstance(loss, PPOLossOptions):
            loss = PPOLossOptions.model_validate(dict(loss or {}))
        terms = loss.model_dump(include=set(PPOLossOptions.model_fields))
        return cls(**shared, **terms, seed=seed)
