"""From a config to a ready trainer, or to the env, policy and loss for your own TorchRL loop.

:func:`build_trainer` gives what ``marlplug train`` runs; :func:`build_loss` gives the pieces a
TorchRL loop needs (a collector policy, a :class:`~marlplug.losses.JointPPOLoss` with its value
estimator, and the per-agent optimizer), built exactly as the trainer builds them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from marlplug.config import MarlplugConfig, load_config

if TYPE_CHECKING:
    from tensordict.nn import TensorDictModuleBase
    from torchrl.envs import EnvBase

    from marlplug.losses import JointPPOLoss
    from marlplug.nn import JointActorCritic
    from marlplug.optim.adam import AgentAdam
    from marlplug.train import JointMultiAgentTrainer, JointTrainerConfig

#: A config: a loaded :class:`MarlplugConfig`, a YAML/TOML file, or a dict of config sections.
ConfigLike = MarlplugConfig | str | Path | Mapping[str, Any]


def as_config(config: ConfigLike, overrides: Sequence[str] = ()) -> MarlplugConfig:
    """Validate ``config`` (a file, a dict or a config) and apply ``"key.path=value"`` overrides.

    Examples:
        >>> as_config({"seed": 3}, ["train.updates=2"]).train.updates
        2
    """
    if isinstance(config, MarlplugConfig):
        if not overrides:
            return config
        config = config.model_dump(mode="json")
    if isinstance(config, (str, Path)):
        return load_config(config, overrides)
    return load_config(overrides=overrides, data=config)


def build_trainer(config: ConfigLike, overrides: Sequence[str] = ()) -> JointMultiAgentTrainer:
    """The joint trainer a config describes (env, model, losses, optimizer, collector).

    Unknown component names and bad values raise :class:`marlplug.errors.UserError`, naming the
    field and the valid choices.

    Examples:
        >>> trainer = build_trainer({"env": {"name": "cooperative_navigation", "agents": 2},
        ...                          "train": {"rollout_steps": 20, "minibatch_size": 10}})
        >>> stats = trainer.train_update()
        >>> len(stats.per_agent["grad_norm"])
        2
        >>> trainer.close()
    """
    from marlplug.train.run import build_trainer as build_joint_trainer

    return build_joint_trainer(as_config(config, overrides))


@dataclass
class LossSetup:
    """What a TorchRL loop needs from a config.

    Attributes:
        env: the TorchRL env (agent groups as nested keys).
        policy: the policy to hand to a ``Collector`` (it writes actions and their log-probs).
        loss: the :class:`~marlplug.losses.JointPPOLoss`, value estimator already made
            (``loss.value_estimator(rollout)`` writes advantages).
        optimizer: per-agent Adam over the loss's parameters (``optimizer.step()``); any torch
            optimizer over ``loss.parameters()`` works too.
        model: the actor/critic networks.
        settings: the trainer settings (lr, max_grad_norm, epochs, minibatch size, ...).
    """

    env: EnvBase
    policy: TensorDictModuleBase
    loss: JointPPOLoss
    optimizer: AgentAdam
    model: JointActorCritic
    settings: JointTrainerConfig


def build_loss(config: ConfigLike, overrides: Sequence[str] = ()) -> LossSetup:
    """The env, collector policy, loss and optimizer a config describes, for your own loop.

    Examples:
        >>> setup = build_loss({"env": {"name": "cooperative_navigation", "agents": 2},
        ...                     "losses": [{"name": "clip_ppo"}, {"name": "redundancy", "coef": 0.1}]})
        >>> sorted(k for k in setup.loss.out_keys if str(k).startswith("loss_"))
        ['loss_critic', 'loss_entropy', 'loss_objective', 'loss_redundancy']
    """
    trainer = build_trainer(config, overrides)
    # The trainer's collector is never iterated: stop it and keep the env for the caller's own.
    trainer.rollouts.close(close_env=False)
    return LossSetup(
        env=trainer.env,
        policy=trainer.model.policy,
        loss=trainer.loss,
        optimizer=trainer.optimizer,
        model=trainer.model,
        settings=trainer.config,
    )
