"""The TorchRL loss conventions of :class:`~marlplug.losses.JointPPOLoss`, kept apart from its math.

``actor_network``/``critic_network`` and their ``*_params`` (what ``GAE(data, params=...,
target_params=...)`` takes), ``make_value_estimator``, ``in_keys``/``out_keys`` (so
``select_out_keys`` and ``print(loss)`` work) and a readable repr.
"""

from __future__ import annotations

from typing import Any

from tensordict import NestedKey, TensorDict, TensorDictBase
from torch import nn
from torchrl.objectives.utils import ValueEstimators, default_value_kwargs

from marlplug.errors import UserError
from marlplug.losses.ppo_keys import AcceptedKeys, in_group, relative_key
from marlplug.losses.value import JointGAE


class TorchRLConventions:
    """Mixin for :class:`~marlplug.losses.JointPPOLoss` (an ``nn.Module`` with one actor and
    critic per group)."""

    groups: list[str]
    actor_networks: nn.ModuleDict
    critic_networks: nn.ModuleDict
    aux_losses: nn.ModuleDict
    tensor_keys: AcceptedKeys
    default_value_estimator: ValueEstimators
    SUPPORTED_VALUE_ESTIMATORS: tuple[ValueEstimators, ...]
    value_type: ValueEstimators
    _value_estimator: Any
    _value_hyperparams: dict[str, Any]
    _out_keys: list[NestedKey] | None
    entropy_bonus: bool
    critic_coeff: float
    clip_value: float | None
    log_explained_variance: bool
    clip_epsilon: float
    entropy_coeff: float
    loss_critic_type: str
    normalize_advantage: bool
    reduction: str

    def _keys_from_actor(self, actor: Any) -> None:
        """Read the log-prob and action keys off the actor, as ClipPPOLoss does."""
        try:
            log_prob_keys, action_keys = actor.log_prob_keys, actor.dist_sample_keys
        except AttributeError:
            return
        if log_prob_keys and action_keys:
            self.tensor_keys.sample_log_prob = relative_key(log_prob_keys[0], self.groups)
            self.tensor_keys.action = relative_key(action_keys[0], self.groups)

    @property
    def functional(self) -> bool:
        # The networks are used with their own parameters; no functional copies, no target nets.
        return False

    @property
    def actor_network(self) -> nn.Module:
        """The actor (the ModuleDict of actors when there are several groups)."""
        return self.actor_networks[self.groups[0]] if len(self.groups) == 1 else self.actor_networks

    @property
    def critic_network(self) -> nn.Module:
        """The critic (the ModuleDict of critics when there are several groups)."""
        if len(self.groups) == 1:
            return self.critic_networks[self.groups[0]]
        return self.critic_networks

    @property
    def actor_network_params(self) -> TensorDictBase:
        """Every group's actor parameters, ``{group: ...}`` (``target_actor_network_params``:
        their detached data)."""
        return TensorDict.from_module(self.actor_networks)

    @property
    def critic_network_params(self) -> TensorDictBase:
        """Every group's critic parameters, ``{group: ...}``, as the value estimator takes them
        (``GAE(data, params=loss.critic_network_params, target_params=...)``)."""
        return TensorDict.from_module(self.critic_networks)

    def _forward_value_estimator_keys(self, **kwargs: Any) -> None:
        # Nothing to forward: the estimator holds this loss's tensor_keys and reads them per call.
        del kwargs

    def make_value_estimator(
        self, value_type: ValueEstimators | None = None, **hyperparams: Any
    ) -> Any:
        """Build the per-agent value estimator: TorchRL's ``MultiAgentGAE`` for every group.

        Args:
            value_type: ``ValueEstimators.GAE`` (default) or ``ValueEstimators.MAGAE`` (the same
                estimator: team-level rewards and done flags are broadcast over the agents).
            **hyperparams: ``gamma``, ``lmbda`` and any other :class:`~torchrl.objectives.value.GAE`
                keyword argument.
        """
        value_type = value_type or self.default_value_estimator
        if value_type not in self.SUPPORTED_VALUE_ESTIMATORS:
            raise UserError(
                f"JointPPOLoss: value estimator {value_type} is not supported; available: GAE, MAGAE"
            )
        settings = {**default_value_kwargs(value_type), **hyperparams}
        settings.pop("device", None)
        self._value_hyperparams = dict(hyperparams)
        self.value_type = value_type
        self._value_estimator = JointGAE(
            {group: self.critic_networks[group] for group in self.groups},
            keys=self.tensor_keys,
            **settings,
        )
        return self

    def _key(self, name: str, group: str) -> tuple[str, ...]:
        return in_group(getattr(self.tensor_keys, name), group, self.groups)

    @property
    def in_keys(self) -> list[NestedKey]:
        keys: list[NestedKey] = []
        for group in self.groups:
            actor_keys = list(getattr(self.actor_networks[group], "in_keys"))  # noqa: B009
            keys += actor_keys + [("next", *_tuple(key)) for key in actor_keys]
            keys += list(getattr(self.critic_networks[group], "in_keys"))  # noqa: B009
            keys += [self._key(name, group) for name in ("action", "sample_log_prob")]
            # done/terminated may be env-level flags (broadcast by the estimator): not required.
            keys.append(("next", *self._key("reward", group)))
        return list(dict.fromkeys(keys))

    @property
    def out_keys(self) -> list[NestedKey]:
        """What :meth:`forward` writes (narrow it with :meth:`select_out_keys`)."""
        if self._out_keys is None:
            keys: list[NestedKey] = ["loss_objective", "clip_fraction"]
            if self.entropy_bonus:
                keys += ["entropy", "loss_entropy"]
            if self.critic_coeff:
                keys.append("loss_critic")
            if self.clip_value is not None:
                keys.append("value_clip_fraction")
            if self.log_explained_variance:
                keys.append("explained_variance")
            keys += ["ESS", "kl_approx", "max_ratio", "mean_ratio"]
            keys += [f"loss_{name}" for name in self.aux_losses]
            if self.aux_losses:
                keys.append("aux_stats")
            keys += list(self.groups)
            self._out_keys = keys
        return self._out_keys

    @out_keys.setter
    def out_keys(self, values: list[NestedKey]) -> None:
        self._out_keys = values

    def __repr__(self) -> str:
        # TensorDictModuleBase's repr lists keys only; nn.Module's shows the settings and networks.
        return nn.Module.__repr__(self)  # type: ignore[arg-type]

    def extra_repr(self) -> str:
        return (
            f"groups={self.groups}, clip_epsilon={self.clip_epsilon}, "
            f"entropy_coeff={self.entropy_coeff}, critic_coeff={self.critic_coeff}, "
            f"loss_critic_type={self.loss_critic_type!r}, clip_value={self.clip_value}, "
            f"normalize_advantage={self.normalize_advantage}, reduction={self.reduction!r}"
        )


def _tuple(key: NestedKey) -> tuple[str, ...]:
    return (key,) if isinstance(key, str) else tuple(key)
