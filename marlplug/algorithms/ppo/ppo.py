"""The joint PPO learner algorithm (plugin name ``ppo``): networks and its update program (its
``algorithm:`` options: :class:`~marlplug.algorithms.ppo.options.PpoOptions`).

:meth:`PPO.bind` gives the :class:`~marlplug.algorithms.ppo.program.PpoProgram` (the pure update ``U``
over agent rows, one forward and one backward for any set of agents); :meth:`PPO.rollouts` the
on-policy source of its minibatches (:class:`~marlplug.algorithms.ppo.rollouts.PpoRollouts`).
:meth:`PPO.update_step` runs the same update in place on a loss and its
:class:`~marlplug.optim.adam.AgentAdam` (the joint trainer's form).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from tensordict import TensorDictBase
from torch import nn
from torchrl.envs import EnvBase

from marlplug.algorithms.ppo.iteration import PpoSchedule
from marlplug.algorithms.ppo.options import PpoOptions
from marlplug.algorithms.ppo.params import loss_parameter_groups
from marlplug.algorithms.ppo.program import PpoProgram, seeded
from marlplug.algorithms.ppo.step import UpdateStepResult, step_modules
from marlplug.errors import UserError
from marlplug.losses.clip_ppo import ClipPPO
from marlplug.losses.joint_ppo import JointPPOLoss
from marlplug.losses.ppo_options import PPOLossOptions
from marlplug.nn.actor_critic import Activation, JointActorCritic, WeightInit
from marlplug.nn.critic_input import CriticInput, critic_from_centralized
from marlplug.nn.recurrent import Recurrent
from marlplug.optim.adam import AdamSettings, AgentAdam

if TYPE_CHECKING:
    from marlplug.algorithms.ppo.rollouts import PpoRollouts
    from marlplug.config import MarlplugConfig
    from marlplug.config.train import TrainSection

__all__ = ["PPO", "UpdateStepResult", "loss_parameter_groups", "seeded"]


class PPO:
    """Joint multi-agent PPO: model, optimizer and the per-agent update rule.

    Args:
        hidden_size: hidden width of encoders and critics.
        feature_dim: width of each agent's encoder features.
        critic: what each agent's critic reads (:data:`~marlplug.nn.critic_input.CriticInput`):
            every agent's observation (``joint``), the env's global state (``state``) or its own
            observation (``local``, IPPO).
        adam_eps: Adam's ε.
        value_norm: critics predict standardized returns
            (:class:`~marlplug.nn.value_norm.ValueNormalizer`).
        obs_norm: actors and critics read observations standardized by per-agent running
            statistics, updated from every rollout (:class:`~marlplug.nn.obs_norm.ObservationNormalizer`).
        ent_coef_final: anneal the entropy coefficient linearly from ``ent_coef`` at the first
            update to this over the run's updates (``None``: constant ``ent_coef``).
        init: how the networks' weights are drawn (:data:`~marlplug.nn.actor_critic.WeightInit`).
        activation: the hidden layers' nonlinearity (:data:`~marlplug.nn.actor_critic.Activation`).
        share_params: one policy and one critic per group (every agent's rows start equal and
            step with the group's mean gradient).
        recurrent: the actor's memory (:data:`~marlplug.nn.recurrent.Recurrent`).
        recurrent_hidden_size: the GRU's state width.
        sequence_length: steps per training sequence with a recurrent actor.
        centralized_critic: deprecated, removed in 0.3.0: the spelling of ``critic`` before 0.1.0
            (``True``: ``"joint"``, ``False``: ``"local"``); warns with a ``DeprecationWarning``.

    Examples:
        >>> PPO(hidden_size=32).hidden_size
        32
    """

    #: The ``algorithm:`` section's fields (declared once, in :mod:`marlplug.algorithms.ppo.options`).
    Options = PpoOptions

    def __init__(
        self,
        *,
        hidden_size: int = 64,
        feature_dim: int = 64,
        critic: CriticInput = "joint",
        adam_eps: float = 1e-8,
        value_norm: bool = False,
        obs_norm: bool = False,
        ent_coef_final: float | None = None,
        init: WeightInit = "torch",
        activation: Activation = "tanh",
        share_params: bool = False,
        recurrent: Recurrent = "none",
        recurrent_hidden_size: int = 64,
        sequence_length: int = 25,
        centralized_critic: bool | None = None,
        **loss_settings: Any,
    ) -> None:
        #: The PPO loss terms (``clip_range``, ``vf_coef``, ...): a :class:`PPOLossOptions`.
        self.loss_options = PPOLossOptions(**loss_settings)
        self.hidden_size = hidden_size
        self.feature_dim = feature_dim
        self.critic = critic_from_centralized(centralized_critic, critic, where="PPO")
        self.adam_eps = adam_eps
        self.value_norm = value_norm
        self.obs_norm = obs_norm
        self.ent_coef_final = ent_coef_final
        self.init = init
        self.activation = activation
        self.share_params = share_params
        self.recurrent = recurrent
        self.recurrent_hidden_size = recurrent_hidden_size
        self.sequence_length = sequence_length

    @property
    def training_sequence_length(self) -> int | None:
        """Steps per training sequence (``None``: minibatches of single steps); the joint trainer
        and :meth:`rollouts` cut minibatches by it."""
        return self.sequence_length if self.recurrent != "none" else None

    def build_model(self, env: EnvBase) -> JointActorCritic:
        """Actor/critic networks for ``env``'s agent groups (initialized from torch's global RNG)."""
        return JointActorCritic.from_env(
            env,
            hidden_size=self.hidden_size,
            feature_dim=self.feature_dim,
            critic=self.critic,
            value_norm=self.value_norm,
            obs_norm=self.obs_norm,
            init=self.init,
            activation=self.activation,
            share_params=self.share_params,
            recurrent=self.recurrent,
            recurrent_hidden_size=self.recurrent_hidden_size,
        )

    def make_optimizer(self, loss: JointPPOLoss, *, lr: float) -> AgentAdam:
        """One :class:`AgentAdam` over every group's stacked weights."""
        return AgentAdam(loss_parameter_groups(loss), lr=lr, eps=self.adam_eps)

    def program(
        self,
        loss: JointPPOLoss,
        *,
        lr: float,
        max_grad_norm: float,
        env: EnvBase | None = None,
        policy: Any = None,
    ) -> PpoProgram:
        """The update program over ``loss``'s structure (``env``: where ``init_state`` draws fresh
        networks from, as :meth:`build_model` does; ``policy``: what acts with the loss's actors)."""

        def networks() -> tuple[Any, Any]:
            assert env is not None
            model = self.build_model(env)
            return model.actors, model.critics

        return PpoProgram(
            loss,
            max_grad_norm=max_grad_norm,
            adam=AdamSettings(lr=lr, eps=self.adam_eps),
            networks=None if env is None else networks,
            policy=policy,
            share_params=self.share_params,
        )

    def build_loss(
        self,
        model: JointActorCritic,
        config: MarlplugConfig,
        *,
        aux_losses: dict[str, nn.Module] | None = None,
    ) -> JointPPOLoss:
        """The joint loss over ``model``: this algorithm's PPO terms (:attr:`loss_options`) and the
        aux losses of ``config.losses``, with GAE's ``gamma``/``lambda`` from ``config.train``."""
        from marlplug.plugins import get_component

        aux = dict(aux_losses or {})
        for index, spec in enumerate(config.losses):
            if spec.name not in aux:
                loss_cls = get_component("loss", spec.name, field=f"losses[{index}].name")
                aux[spec.name] = loss_cls(**spec.options.model_dump())
        settings = self.loss_options.model_dump()
        loss = ClipPPO(**settings).build(model.actors, model.critics, aux_losses=aux)
        loss.make_value_estimator(gamma=config.train.gamma, lmbda=config.train.gae_lambda)
        return loss

    def bind(self, env: EnvBase, config: MarlplugConfig) -> PpoProgram:
        """The update program for ``env``'s agents under ``config`` (networks drawn after
        ``torch.manual_seed(config.seed)``, as the joint trainer draws them)."""
        with seeded(config.seed):
            model = self.build_model(env)
            loss = self.build_loss(model, config)
        return self.program(
            loss,
            lr=config.train.lr,
            max_grad_norm=config.train.max_grad_norm,
            env=env,
            policy=model.policy,
        )

    def rollouts(self, env: EnvBase, program: PpoProgram, config: MarlplugConfig) -> PpoRollouts:
        """On-policy rollouts of ``env`` with per-agent GAE and epochs of shuffled minibatches."""
        from marlplug.algorithms.ppo.rollouts import MinibatchPlan, PpoRollouts

        if program.policy is None:
            raise UserError("PPO.rollouts: the program has no policy to act with (use PPO.bind)")
        train = config.train
        return PpoRollouts(
            env,
            program.loss,
            program.policy,
            seed=config.seed,
            rollout_steps=train.rollout_steps,
            plan=MinibatchPlan(
                n_epochs=train.n_epochs,
                minibatch_size=train.minibatch_size,
                iterate_all_minibatches=train.iterate_all_minibatches,
                max_minibatches_per_epoch=train.max_minibatches_per_epoch,
                sequence_length=self.training_sequence_length,
            ),
            load=program.load,
            schedule=self.schedule(train),
        )

    def schedule(self, train: TrainSection) -> PpoSchedule | None:
        """The learning-rate and entropy-coefficient schedules of a run with ``train``'s settings
        (``None``: both constant)."""
        return PpoSchedule.from_sections(
            train, ent_coef=self.loss_options.ent_coef, ent_coef_final=self.ent_coef_final
        )

    def update_step(
        self,
        loss: JointPPOLoss,
        optimizer: AgentAdam,
        batch: TensorDictBase,
        *,
        max_grad_norm: float,
        frozen: Collection[int] = (),
        seed: int | None = None,
    ) -> UpdateStepResult:
        """Every agent's update at once, in place on ``loss`` and ``optimizer``
        (:func:`~marlplug.algorithms.ppo.program.step_modules`: one backward of L_total, per-agent
        clip, masked per-agent Adam step).

        Args:
            loss: the joint loss.
            optimizer: its :class:`AgentAdam`.
            batch: one minibatch with advantages and value targets.
            max_grad_norm: per-agent global L2 clip.
            frozen: global indices of agents that must not move this step (their losses stay in
                the graph).
            seed: seeds torch's RNG for the loss computation (stochastic aux losses).
        """
        return step_modules(
            loss,
            optimizer,
            batch,
            max_grad_norm=max_grad_norm,
            frozen=frozen,
            seed=seed,
            share_params=self.share_params,
        )
