"""JointPPOLoss: one batched clipped-PPO loss per agent group plus auxiliary losses on all agents' features.

A drop-in replacement for TorchRL's ``ClipPPOLoss`` in multi-agent pipelines: the same ``loss_*``
outputs (each summed over agents), ``set_keys`` and ``make_value_estimator``, with per-agent
advantage normalization, per-agent diagnostics and pluggable aux losses.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import torch
from tensordict import NestedKey, TensorDict, TensorDictBase
from tensordict.nn import ProbabilisticTensorDictSequential, TensorDictModule
from torch import nn
from torch.distributions import Categorical
from torchrl.objectives import LossModule
from torchrl.objectives.utils import ValueEstimators, default_value_kwargs, distance_loss

from marlplug.errors import UserError
from marlplug.losses.value import JointGAE

CriticLossType = Literal["l2", "l1", "smooth_l1"]


def _group_of(module: TensorDictModule, what: str) -> str:
    for key in module.out_keys:
        if isinstance(key, tuple) and len(key) >= 2:
            return str(key[0])
    raise UserError(
        f"JointPPOLoss: cannot tell the agent group of the {what} from its out_keys "
        f"{module.out_keys}; pass a mapping {{group: {what}}}"
    )


def _as_group_mapping(networks: Any, what: str) -> dict[str, Any]:
    if isinstance(networks, Mapping):
        return dict(networks)
    return {_group_of(networks, what): networks}


def _per_agent_standardize(advantage: torch.Tensor, eps: float) -> torch.Tensor:
    """Standardize ``[rows, n_agents]`` advantages per agent, like TorchRL's ``_standardize``."""
    if advantage.shape[0] < 2:
        return advantage
    mean = advantage.mean(dim=0, keepdim=True)
    std = advantage.std(dim=0, keepdim=True)
    return (advantage - mean) / std.clamp_min(eps)


def _entropy(distribution: Any) -> torch.Tensor:
    """The distribution's entropy; a one-sample estimate ``-log p(x)`` where it has no closed form.

    TanhNormal (continuous actions) has none; TorchRL's ClipPPOLoss estimates it the same way.
    """
    if (
        type(distribution) is Categorical
    ):  # not subclasses (masked, one-hot) with entropies of their own
        # ``Categorical.entropy`` recomputes a softmax of its already-normalized logits; over a few
        # actions that softmax is several times slower than ``exp`` (the same values, to rounding).
        log_p = distribution.logits.clamp(min=torch.finfo(distribution.logits.dtype).min)
        return -(log_p.exp() * log_p).sum(-1)
    try:
        return distribution.entropy()
    except NotImplementedError:
        sample = distribution.rsample()
        return -distribution.log_prob(sample)


class JointPPOLoss(LossModule):
    """Clipped PPO for every agent of every group, plus auxiliary losses on all encoder features.

    For each group the actor and critic hold every agent in stacked weights, so one forward pass
    gives ``[rows, n_agents]`` log-probabilities and values; the clipped surrogate, value loss
    (optionally clipped) and entropy are averaged over rows per agent and summed over agents. Every
    aux loss is called with the list of every agent's encoder features (``[rows, d_i]`` each, groups
    in order, agents in group order) read from ``(group, features)``, which the actor writes on the way.

    Output (a TensorDict): ``loss_objective``, ``loss_critic`` (× ``critic_coeff``), ``loss_entropy``
    (× ``-entropy_coeff``), one ``loss_<name>`` per aux loss; summing the top-level ``loss_*``
    entries gives L_total. Detached diagnostics: ``clip_fraction``, ``kl_approx``, ``entropy``,
    ``explained_variance`` (means over agents), per agent under ``<group>`` (``policy_loss``,
    ``value_loss``, ``entropy``, ``clip_fraction``, ``approx_kl``, ``explained_variance``, each of
    shape ``[n_agents]``), and aux statistics under ``("aux_stats", <name>)``.

    Keys set with :meth:`set_keys` are names *inside* each group (``advantage`` -> ``(group,
    "advantage")``), so one call configures every group.

    Args:
        actor_network: the group's probabilistic actor, or a mapping group -> actor. It must write
            the encoder features to ``(group, features)`` before its distribution head.
        critic_network: the group's critic, or a mapping group -> critic, writing ``(group, value)``.
        aux_losses: name -> aux loss module; each adds ``loss_<name>``.
        clip_epsilon: the PPO clip range; typical values 0.1-0.3.
        clip_value: clip the value prediction to ``old ± clip_value`` (``None``: no clipping).
        entropy_coeff: weight of the entropy bonus.
        critic_coeff: weight of the value loss.
        normalize_advantage: standardize advantages per agent on each minibatch.
        loss_critic_type: ``"l2"``, ``"l1"`` or ``"smooth_l1"``.
        advantage_eps: lower bound of the advantage std when normalizing.

    Examples:
        >>> from marlplug.models import GroupSpec, JointActorCritic
        >>> model = JointActorCritic(
        ...     [GroupSpec(group="agent", agent_names=("a", "b"), observation_dim=4, n_actions=3)],
        ...     hidden_size=8, feature_dim=8)
        >>> from marlplug.losses import RedundancyLoss
        >>> loss = JointPPOLoss(actor_network=model.actors, critic_network=model.critics,
        ...                     aux_losses={"redundancy": RedundancyLoss(coef=0.1)})
        >>> td = TensorDict({("agent", "observation"): torch.randn(16, 2, 4)}, batch_size=[16])
        >>> with torch.no_grad():
        ...     _ = model.policy(td); _ = model.critics["agent"](td)
        >>> td["agent", "advantage"] = torch.randn(16, 2, 1)
        >>> td["agent", "value_target"] = torch.randn(16, 2, 1)
        >>> out = loss(td)
        >>> sorted(k for k in out.keys() if k.startswith("loss_"))
        ['loss_critic', 'loss_entropy', 'loss_objective', 'loss_redundancy']
        >>> out["agent", "clip_fraction"].shape
        torch.Size([2])
    """

    @dataclass
    class _AcceptedKeys:
        """Tensordict key names inside each agent group.

        Attributes:
            advantage: the advantage, ``[..., n_agents, 1]``. Defaults to ``"advantage"``.
            value_target: the value target. Defaults to ``"value_target"``.
            value: the critic's state value (old values for value clipping). Defaults to
                ``"state_value"``.
            sample_log_prob: log-probability of the action under the behaviour policy.
                Defaults to ``"action_log_prob"``.
            action: the action. Defaults to ``"action"``.
            reward: the reward (for the value estimator). Defaults to ``"reward"``.
            done: per-agent done flag (for the value estimator). Defaults to ``"done"``.
            terminated: per-agent terminated flag. Defaults to ``"terminated"``.
            features: the encoder features the aux losses read. Defaults to ``"features"``.
        """

        advantage: NestedKey = "advantage"
        value_target: NestedKey = "value_target"
        value: NestedKey = "state_value"
        sample_log_prob: NestedKey = "action_log_prob"
        action: NestedKey = "action"
        reward: NestedKey = "reward"
        done: NestedKey = "done"
        terminated: NestedKey = "terminated"
        features: NestedKey = "features"

    default_keys = _AcceptedKeys
    tensor_keys: _AcceptedKeys
    default_value_estimator = ValueEstimators.GAE

    def __init__(
        self,
        actor_network: ProbabilisticTensorDictSequential
        | Mapping[str, ProbabilisticTensorDictSequential],
        critic_network: TensorDictModule | Mapping[str, TensorDictModule],
        *,
        aux_losses: Mapping[str, nn.Module] | None = None,
        clip_epsilon: float = 0.2,
        clip_value: float | None = 0.2,
        entropy_coeff: float = 0.01,
        critic_coeff: float = 0.5,
        normalize_advantage: bool = True,
        loss_critic_type: CriticLossType = "l2",
        advantage_eps: float = 1e-6,
    ) -> None:
        super().__init__()
        actors = _as_group_mapping(actor_network, "actor")
        critics = _as_group_mapping(critic_network, "critic")
        if set(actors) != set(critics):
            raise UserError(
                f"JointPPOLoss: actor groups {sorted(actors)} differ from critic groups {sorted(critics)}"
            )
        if not 0.0 < clip_epsilon < 1.0:
            raise UserError(f"clip_epsilon: expected a value in (0, 1), got {clip_epsilon}")
        if loss_critic_type not in ("l2", "l1", "smooth_l1"):
            raise UserError(
                f"loss_critic_type: got {loss_critic_type!r}; choose l2, l1 or smooth_l1"
            )
        self.groups: list[str] = list(actors)
        self.actor_networks = nn.ModuleDict(actors)
        self.critic_networks = nn.ModuleDict({group: critics[group] for group in self.groups})
        self.aux_losses = nn.ModuleDict(dict(aux_losses or {}))
        for name in self.aux_losses:
            if not name.isidentifier():
                raise UserError(f"aux loss name {name!r} must be a valid identifier (loss_{name})")
        self.clip_epsilon = clip_epsilon
        self.clip_value = clip_value
        self.entropy_coeff = entropy_coeff
        self.critic_coeff = critic_coeff
        self.normalize_advantage = normalize_advantage
        self.loss_critic_type: CriticLossType = loss_critic_type
        self.advantage_eps = advantage_eps
        self._value_hyperparams: dict[str, Any] = {}

    @property
    def functional(self) -> bool:
        # The networks are used with their own parameters; no functional copies, no target nets.
        return False

    # ------------------------------------------------------------------ TorchRL conventions

    def _forward_value_estimator_keys(self, **kwargs: Any) -> None:
        if self._value_estimator is not None:
            self.make_value_estimator(self.value_type, **self._value_hyperparams)

    def make_value_estimator(
        self, value_type: ValueEstimators | None = None, **hyperparams: Any
    ) -> JointPPOLoss:
        """Build the per-agent value estimator (GAE, the only supported type).

        Args:
            value_type: ``ValueEstimators.GAE`` (default).
            **hyperparams: ``gamma``, ``lmbda`` and any other :class:`torchrl.objectives.value.GAE`
                keyword argument.
        """
        value_type = value_type or self.default_value_estimator
        if value_type != ValueEstimators.GAE:
            raise UserError(
                f"JointPPOLoss: value estimator {value_type} is not supported; available: GAE"
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

    @property
    def in_keys(self) -> list[NestedKey]:
        keys: list[NestedKey] = []
        for group in self.groups:
            keys += [
                (group, self.tensor_keys.action),
                (group, self.tensor_keys.sample_log_prob),
                (group, self.tensor_keys.advantage),
                (group, self.tensor_keys.value_target),
            ]
            keys += list(getattr(self.actor_networks[group], "in_keys"))  # noqa: B009
            keys += list(getattr(self.critic_networks[group], "in_keys"))  # noqa: B009
        return list(dict.fromkeys(keys))

    # ------------------------------------------------------------------ the loss

    def _terms(self, tensordict: TensorDictBase) -> dict[str, dict[str, torch.Tensor]]:
        tensordict = tensordict.clone(False)
        if any(
            (group, self.tensor_keys.advantage) not in tensordict.keys(True)
            for group in self.groups
        ):
            self.value_estimator(tensordict)
        return {group: self._group_terms(tensordict, group) for group in self.groups}

    def agent_losses(self, tensordict: TensorDictBase) -> torch.Tensor:
        """L_ppo[i] for every agent (differentiable, ``[total agents]``, documented agent order).

        ``L_ppo[i] = objective_i + critic_coeff·value_loss_i − entropy_coeff·entropy_i``; aux losses
        are not included.
        """
        terms = self._terms(tensordict)
        return torch.cat(
            [
                terms[group]["policy_loss"]
                + self.critic_coeff * terms[group]["value_loss"]
                - self.entropy_coeff * terms[group]["entropy"]
                for group in self.groups
            ]
        )

    def forward(self, tensordict: TensorDictBase) -> TensorDict:
        objective: list[torch.Tensor] = []
        critic: list[torch.Tensor] = []
        entropy: list[torch.Tensor] = []
        features: list[torch.Tensor] = []
        diagnostics: dict[str, TensorDict] = {}
        for group, terms in self._terms(tensordict).items():
            objective.append(terms["policy_loss"])
            critic.append(terms["value_loss"])
            entropy.append(terms["entropy"])
            features.extend(terms.pop("features").unbind(-2))
            diagnostics[group] = TensorDict(
                {name: value.detach() for name, value in terms.items()},
                batch_size=[terms["policy_loss"].shape[0]],
            )

        all_entropy = torch.cat(entropy)
        out = TensorDict(
            {
                "loss_objective": torch.cat(objective).sum(),
                "loss_critic": self.critic_coeff * torch.cat(critic).sum(),
                "loss_entropy": -self.entropy_coeff * all_entropy.sum(),
            },
            batch_size=[],
        )
        for name, aux in self.aux_losses.items():
            out.set(f"loss_{name}", aux(features))
            report = getattr(aux, "diagnostics", None)
            if callable(report):
                for stat, value in report(features).items():
                    out.set(("aux_stats", name, stat), torch.as_tensor(value).detach())
        per_agent = {
            stat: torch.cat([diagnostics[group][stat] for group in self.groups])
            for stat in ("clip_fraction", "approx_kl", "explained_variance")
        }
        out.set("clip_fraction", per_agent["clip_fraction"].mean())
        out.set("kl_approx", per_agent["approx_kl"].mean())
        out.set("explained_variance", per_agent["explained_variance"].mean())
        out.set("entropy", all_entropy.detach().mean())
        for group, stats in diagnostics.items():
            out.set(group, stats)
        return out

    def _group_terms(self, tensordict: TensorDictBase, group: str) -> dict[str, torch.Tensor]:
        """Per-agent PPO terms of one group, each ``[n_agents]``, plus its ``[rows, n, d]`` features."""
        keys = self.tensor_keys
        actor = self.actor_networks[group]
        critic = self.critic_networks[group]
        assert isinstance(actor, ProbabilisticTensorDictSequential)
        assert isinstance(critic, TensorDictModule)

        actor_input = tensordict.select(*actor.in_keys)
        distribution = actor.get_dist(actor_input)
        group_features = actor_input.get((group, keys.features))

        action = tensordict.get((group, keys.action))
        n_agents = action.shape[len(tensordict.batch_size)]
        log_prob = distribution.log_prob(action).reshape(-1, n_agents)
        old_log_prob = tensordict.get((group, keys.sample_log_prob)).reshape(-1, n_agents)
        advantage = tensordict.get((group, keys.advantage)).reshape(-1, n_agents)
        if self.normalize_advantage:
            advantage = _per_agent_standardize(advantage, self.advantage_eps)

        log_ratio = log_prob - old_log_prob
        ratio = log_ratio.exp()
        low, high = math.log1p(-self.clip_epsilon), math.log1p(self.clip_epsilon)
        clipped_log_ratio = log_ratio.clamp(low, high)
        surrogate = torch.minimum(ratio * advantage, clipped_log_ratio.exp() * advantage)
        policy_loss = -surrogate.mean(dim=0)
        entropy = _entropy(distribution).reshape(-1, n_agents).mean(dim=0)

        target = tensordict.get((group, keys.value_target)).reshape(-1, n_agents)
        value = critic(tensordict.select(*critic.in_keys)).get((group, keys.value))
        value = value.reshape(-1, n_agents)
        value_loss = distance_loss(target, value, loss_function=self.loss_critic_type)
        if self.clip_value is not None:
            old_value = tensordict.get((group, keys.value)).reshape(-1, n_agents)
            clipped_value = old_value + (value - old_value).clamp(-self.clip_value, self.clip_value)
            clipped_loss = distance_loss(target, clipped_value, loss_function=self.loss_critic_type)
            value_loss = torch.maximum(value_loss, clipped_loss)
        value_loss = value_loss.mean(dim=0)

        with torch.no_grad():
            clip_fraction = (clipped_log_ratio != log_ratio).to(ratio.dtype).mean(dim=0)
            approx_kl = ((ratio - 1.0) - log_ratio).mean(dim=0)
            eps = torch.finfo(target.dtype).eps
            residual = torch.var(target - value, dim=0, correction=0)
            explained_variance = 1.0 - residual / (torch.var(target, dim=0, correction=0) + eps)
        rows = log_prob.shape[0]
        return {
            "policy_loss": policy_loss,
            "value_loss": value_loss,
            "entropy": entropy,
            "clip_fraction": clip_fraction,
            "approx_kl": approx_kl,
            "explained_variance": explained_variance,
            "features": group_features.reshape(rows, n_agents, -1),
        }

    def agent_slices(self) -> list[tuple[str, int]]:
        """``(group, index in group)`` for every agent, in the documented agent order."""
        slices: list[tuple[str, int]] = []
        for group in self.groups:
            critic = self.critic_networks[group]
            n_agents = next(iter(critic.parameters())).shape[0]
            slices.extend((group, index) for index in range(n_agents))
        return slices


def sum_losses(losses: TensorDictBase, names: Sequence[str] | None = None) -> torch.Tensor:
    """L_total: the sum of the top-level ``loss_*`` entries (or of ``names``)."""
    # TensorDict iterates over its batch dimension, not its keys: .keys() is needed.
    loss_keys = [key for key in losses.keys() if isinstance(key, str)]  # noqa: SIM118
    keys = names or [key for key in loss_keys if key.startswith("loss_")]
    return torch.stack([losses.get(key) for key in keys]).sum()
