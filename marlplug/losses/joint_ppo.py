"""JointPPOLoss: TorchRL's clipped PPO for every agent of every group, plus aux losses on all features.

A drop-in for ``ClipPPOLoss``/``MAPPOLoss`` in multi-agent pipelines (same arguments, defaults, keys,
outputs and value-estimator calls), with per-agent diagnostics and pluggable aux losses. What
differs, and why, is listed in docs/concepts/joint-ppo.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from tensordict import NestedKey, TensorDict, TensorDictBase
from tensordict.nn import ProbabilisticTensorDictSequential, TensorDictModule
from torch import nn
from torchrl.objectives import LossModule
from torchrl.objectives.utils import ValueEstimators

from marlplug.errors import UserError
from marlplug.losses.aux import AuxBackwardCheck, agents_alive, call_aux_loss, call_with_alive
from marlplug.losses.ppo_keys import (
    AcceptedKeys,
    as_group_mapping,
    check_extra_arguments,
    check_settings,
    relative_key,
    resolve_settings,
)
from marlplug.losses.ppo_options import CriticLossType
from marlplug.losses.ppo_terms import PpoSettings, group_terms, masked_mean
from marlplug.losses.redundancy import mean_abs_correlation
from marlplug.losses.torchrl_api import TorchRLConventions
from marlplug.nn.value_norm import value_normalizer
from marlplug.optim.agent_layout import agent_count

__all__ = ["CriticLossType", "JointPPOLoss", "sum_losses"]


class JointPPOLoss(TorchRLConventions, LossModule):
    """Clipped PPO for every agent of every group, plus auxiliary losses on every agent's features.

    Takes the arguments of TorchRL's ``ClipPPOLoss``/``MAPPOLoss`` with the same meanings and, by
    default, the same defaults (``defaults="marlplug"`` switches to marlplug's: value clipping 0.2,
    l2 value loss × 0.5, advantages standardized per agent, terms summed over agents). One actor and
    critic per group hold every agent (``MultiAgentMLP``, shared or not, or marlplug's stacked nets),
    so one forward gives ``[rows, n_agents]`` log-probabilities and values.

    Output: ``loss_objective``, ``loss_critic`` (× ``critic_coeff``), ``loss_entropy``
    (× ``-entropy_coeff``) reduced by ``reduction`` over rows and agents; one ``loss_<name>`` per aux
    loss (**add it to your total**: :func:`sum_losses` sums every ``loss_*``; where a group has a
    dead-agent ``mask`` the aux losses also get each agent's alive rows, :mod:`marlplug.losses.aux`),
    detached diagnostics
    ``clip_fraction``, ``kl_approx``, ``entropy``, ``explained_variance``, ``ESS``, ``max_ratio``,
    ``mean_ratio`` (+ ``value_clip_fraction``), ``feature_abs_corr`` (mean ``|corr|`` between two
    agents' encoder features, :func:`~marlplug.losses.redundancy.mean_abs_correlation`), per agent under ``<group>`` and aux statistics under
    ``("aux_stats", <name>)``.

    Keys (:meth:`set_keys`, TorchRL's names plus ``features``) are absolute (``("agents",
    "state_value")``) or relative to every group (``"state_value"``).

    Args:
        actor_network: the group's probabilistic actor, or a mapping group -> actor (``actor=`` is
            accepted too). With aux losses it must write ``(group, features)``.
        critic_network: the group's critic, or a mapping group -> critic (or ``critic=``).
        aux_losses: name -> aux loss module; each adds ``loss_<name>``.
        defaults: ``"torchrl"`` (ClipPPOLoss's defaults) or ``"marlplug"``.
        clip_epsilon: the PPO clip range (default 0.2); typical values 0.1-0.3.
        entropy_bonus: add the entropy bonus term.
        samples_mc_entropy: samples of the entropy estimate when it has no closed form.
        entropy_coeff: weight of the entropy bonus (default 0.01).
        critic_coeff: weight of the value loss (default 1.0; 0 drops ``loss_critic``).
        loss_critic_type: ``"l2"``, ``"l1"`` or ``"smooth_l1"`` (default ``"smooth_l1"``).
        normalize_advantage: standardize advantages on each minibatch (default False).
        normalize_advantage_exclude_dims: dims kept out of the statistics (``(-2,)``: per agent).
        reduction: ``"mean"`` (default), ``"sum"`` or ``"none"`` over rows and agents, like
            TorchRL; ``"agent_sum"``: mean over rows, sum over agents.
        clip_value: clip the value prediction to ``old ± clip_value`` (``True``: ``clip_epsilon``).
        advantage_eps: lower bound of the advantage std when standardizing.

    Examples:
        >>> from marlplug.nn import GroupSpec, JointActorCritic
        >>> from marlplug.losses import RedundancyLoss
        >>> model = JointActorCritic(
        ...     [GroupSpec(group="agent", agent_names=("a", "b"), observation_dim=4, n_actions=3)],
        ...     hidden_size=8, feature_dim=8)
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

    _AcceptedKeys = AcceptedKeys
    default_keys = AcceptedKeys
    tensor_keys: AcceptedKeys
    default_value_estimator = ValueEstimators.GAE
    SUPPORTED_VALUE_ESTIMATORS = (ValueEstimators.GAE, ValueEstimators.MAGAE)

    def __init__(
        self,
        actor_network: ProbabilisticTensorDictSequential
        | Mapping[str, ProbabilisticTensorDictSequential]
        | None = None,
        critic_network: TensorDictModule | Mapping[str, TensorDictModule] | None = None,
        *,
        aux_losses: Mapping[str, nn.Module] | None = None,
        defaults: str = "torchrl",
        clip_epsilon: float | None = None,
        entropy_bonus: bool = True,
        samples_mc_entropy: int = 1,
        entropy_coeff: float | None = None,
        critic_coeff: float | None = None,
        loss_critic_type: CriticLossType | None = None,
        normalize_advantage: bool | None = None,
        normalize_advantage_exclude_dims: tuple[int, ...] | None = None,
        reduction: str | None = None,
        clip_value: bool | float | None = None,
        log_explained_variance: bool = True,
        advantage_eps: float = 1e-6,
        functional: bool | None = None,
        actor: Any = None,
        critic: Any = None,
        device: Any = None,
        **kwargs: Any,
    ) -> None:
        check_extra_arguments(kwargs)
        if functional:
            raise UserError(
                "JointPPOLoss: functional=True is not supported; the networks keep their own "
                "parameters (loss.critic_network_params still works for value estimators)"
            )
        del device  # parameters stay where the networks put them
        actor_network = actor_network if actor is None else actor
        critic_network = critic_network if critic is None else critic
        if actor_network is None or critic_network is None:
            raise TypeError("JointPPOLoss needs actor_network and critic_network")
        settings = resolve_settings(
            defaults,
            {
                "clip_epsilon": clip_epsilon,
                "clip_value": None if isinstance(clip_value, bool) else clip_value,
                "entropy_coeff": entropy_coeff,
                "critic_coeff": critic_coeff,
                "loss_critic_type": loss_critic_type,
                "normalize_advantage": normalize_advantage,
                "normalize_advantage_exclude_dims": normalize_advantage_exclude_dims,
                "reduction": reduction,
            },
        )
        if isinstance(clip_value, bool):  # True: clip values by clip_epsilon; False: do not clip
            settings["clip_value"] = settings["clip_epsilon"] if clip_value else None
        super().__init__()
        actors = as_group_mapping(actor_network, "actor")
        critics = as_group_mapping(critic_network, "critic")
        if set(actors) != set(critics):
            raise UserError(
                f"JointPPOLoss: actor groups {sorted(actors)} differ from critic groups {sorted(critics)}"
            )
        check_settings(settings)
        self.groups: list[str] = list(actors)
        self.actor_networks = nn.ModuleDict(actors)
        self.critic_networks = nn.ModuleDict({group: critics[group] for group in self.groups})
        self.aux_losses = nn.ModuleDict(dict(aux_losses or {}))
        for name in self.aux_losses:
            if not name.isidentifier():
                raise UserError(f"aux loss name {name!r} must be a valid identifier (loss_{name})")
        self.clip_epsilon = float(settings["clip_epsilon"])
        self.clip_value: float | None = settings["clip_value"] or None
        self.entropy_bonus = entropy_bonus
        self.samples_mc_entropy = samples_mc_entropy
        self.entropy_coeff = float(settings["entropy_coeff"])
        self.critic_coeff = float(settings["critic_coeff"])
        self.loss_critic_type: CriticLossType = settings["loss_critic_type"]
        self.normalize_advantage = bool(settings["normalize_advantage"])
        self.normalize_advantage_exclude_dims = tuple(settings["normalize_advantage_exclude_dims"])
        self.reduction: str = settings["reduction"]
        self.log_explained_variance = log_explained_variance
        self.advantage_eps = advantage_eps
        self._value_hyperparams: dict[str, Any] = {}
        self._out_keys: list[NestedKey] | None = None
        self._aux_check = AuxBackwardCheck()
        self._keys_from_actor(actors[self.groups[0]])

    # ------------------------------------------------------------------ the loss

    def _entry(self, tensordict: TensorDictBase, name: str, group: str) -> torch.Tensor | None:
        """A group's entry; a single group also finds it at the relative key from the root (where
        TorchRL's own GAE writes advantage and value_target)."""
        value = tensordict.get(self._key(name, group), None)
        if value is None and len(self.groups) == 1:
            value = tensordict.get(relative_key(getattr(self.tensor_keys, name), self.groups), None)
        return value

    def _terms(self, tensordict: TensorDictBase) -> dict[str, dict[str, Any]]:
        tensordict = tensordict.clone(False)
        if any(self._entry(tensordict, "advantage", group) is None for group in self.groups):
            self.value_estimator(tensordict)
        return {group: self._group_terms(tensordict, group) for group in self.groups}

    def _group_terms(self, tensordict: TensorDictBase, group: str) -> dict[str, Any]:
        actor, critic = self.actor_networks[group], self.critic_networks[group]
        assert isinstance(actor, ProbabilisticTensorDictSequential)
        assert isinstance(critic, TensorDictModule)
        actor_input = tensordict.select(*actor.in_keys)
        distribution = actor.get_dist(actor_input)
        action = tensordict.get(self._key("action", group))
        n_agents = action.shape[len(tensordict.batch_size)]
        settings = PpoSettings(
            clip_epsilon=self.clip_epsilon,
            clip_value=self.clip_value,
            loss_critic_type=self.loss_critic_type,
            normalize_advantage=self.normalize_advantage,
            normalize_advantage_exclude_dims=self.normalize_advantage_exclude_dims,
            advantage_eps=self.advantage_eps,
            samples_mc_entropy=self.samples_mc_entropy,
        )
        value_target = _require(
            self._entry(tensordict, "value_target", group), self._key("value_target", group)
        )
        old_value = tensordict.get(self._key("value", group), None) if self.clip_value else None
        alive = tensordict.get(self._key("mask", group), None)
        normalizer = value_normalizer(critic)
        if normalizer is not None and normalizer.training and torch.is_grad_enabled():
            # MAPPO's ValueNorm: fold this minibatch's targets into the statistics first (a
            # training step; a loss evaluated under no_grad leaves them alone).
            normalizer.update(value_target, alive)
        value = critic(tensordict.select(*critic.in_keys)).get(self._key("value", group))
        if normalizer is not None:
            # The value loss, its clipping and explained variance in standardized units: the
            # critic's network is trained on targets of unit scale whatever the returns' scale.
            value, value_target = normalizer.normalize(value), normalizer.normalize(value_target)
            old_value = None if old_value is None else normalizer.normalize(old_value)
        terms: dict[str, Any] = dict(
            group_terms(
                settings,
                distribution,
                action,
                _require(
                    self._entry(tensordict, "sample_log_prob", group),
                    self._key("sample_log_prob", group),
                ),
                _require(
                    self._entry(tensordict, "advantage", group), self._key("advantage", group)
                ),
                value_target,
                value,
                old_value,
                n_agents,
                alive,
            )
        )
        features = actor_input.get(self._key("features", group), None)
        if self.aux_losses and features is None:
            raise UserError(
                f"JointPPOLoss: aux loss {next(iter(self.aux_losses))!r} needs encoder features, but "
                f"the actor of group '{group}' wrote no {self._key('features', group)}; make a "
                f"module of the actor write it or set_keys(features=<a key the actor writes>)"
            )
        terms["features"] = (
            None if features is None else features.reshape(-1, n_agents, features.shape[-1])
        )
        return terms

    def _reduce(self, elementwise: torch.Tensor, weight: torch.Tensor | None) -> torch.Tensor:
        """``reduction`` of ``[rows, agents]`` terms; with ``weight`` (dead agents' rows 0, their
        terms already zero) means run over the alive rows only: the loss of the alive rows alone."""
        if weight is None:
            if self.reduction == "mean":
                return elementwise.mean()
            if self.reduction == "sum":
                return elementwise.sum()
            if self.reduction == "agent_sum":
                return elementwise.mean(dim=0).sum()
            return elementwise
        if self.reduction == "mean":
            return elementwise.sum() / weight.sum().clamp(min=1.0)
        if self.reduction == "sum":
            return elementwise.sum()
        if self.reduction == "agent_sum":
            return masked_mean(elementwise, weight).sum()
        return elementwise

    def _weights(self, terms: Mapping[str, Mapping[str, Any]]) -> torch.Tensor | None:
        """Every group's row weights joined along agents (1 where a group has no mask); ``None``
        when no group has one (the unmasked reductions, unchanged)."""
        if all("weight" not in terms[group] for group in self.groups):
            return None
        return torch.cat(
            [
                terms[group].get("weight", torch.ones_like(terms[group]["objective"]))
                for group in self.groups
            ],
            dim=-1,
        )

    def agent_losses(self, tensordict: TensorDictBase) -> torch.Tensor:
        """L_ppo[i] for every agent (differentiable, ``[total agents]``, documented agent order).

        ``L_ppo[i] = objective_i + critic_coeff·value_loss_i − entropy_coeff·entropy_i`` (means over
        rows, over the rows where agent i was alive when a group has a ``mask``); aux losses are
        not included.
        """
        terms = self._terms(tensordict)
        losses = []
        for group in self.groups:
            weight = terms[group].get("weight")
            losses.append(
                masked_mean(terms[group]["objective"], weight)
                + self.critic_coeff * masked_mean(terms[group]["value_loss"], weight)
                - self.entropy_coeff
                * masked_mean(terms[group]["entropy"], weight)
                * float(self.entropy_bonus)
            )
        return torch.cat(losses)

    def forward(self, tensordict: TensorDictBase) -> TensorDict:
        terms = self._terms(tensordict)

        def joined(name: str) -> torch.Tensor:
            return torch.cat([terms[group][name] for group in self.groups], dim=-1)

        def diagnostic(name: str) -> torch.Tensor:
            return joined(f"diag/{name}")

        weight = self._weights(terms)
        out = TensorDict(
            {"loss_objective": self._reduce(joined("objective"), weight)}, batch_size=[]
        )
        out.set("clip_fraction", diagnostic("clip_fraction").mean())
        if self.entropy_bonus:
            out.set("entropy", diagnostic("entropy").mean())
            out.set("loss_entropy", -self.entropy_coeff * self._reduce(joined("entropy"), weight))
        if self.critic_coeff:
            out.set("loss_critic", self.critic_coeff * self._reduce(joined("value_loss"), weight))
        if self.clip_value is not None and "diag/value_clip_fraction" in terms[self.groups[0]]:
            out.set("value_clip_fraction", diagnostic("value_clip_fraction").mean())
        if self.log_explained_variance:
            out.set("explained_variance", diagnostic("explained_variance").unsqueeze(-1))
        ratio = joined("ratio")
        out.set("ESS", diagnostic("ess"))
        out.set("kl_approx", diagnostic("kl_approx").mean())
        out.set("max_ratio", ratio.max() if weight is None else _alive_max(ratio, weight))
        out.set(
            "mean_ratio",
            ratio.mean()
            if weight is None
            else (ratio * weight).sum() / weight.sum().clamp(min=1.0),
        )
        featured = [g for g in self.groups if terms[g]["features"] is not None]
        group_features = [terms[g]["features"] for g in featured]
        features = [z for f in group_features for z in f.unbind(-2)]
        # Each agent's alive rows, where agents die: aux losses read features on those alone.
        alive = agents_alive(
            [(terms[g]["features"].shape[-2], terms[g].get("weight")) for g in featured]
        )
        if len(features) >= 2:
            # What the redundancy penalty acts on, logged with or without it (docs/concepts/joint-ppo.md).
            out.set("feature_abs_corr", mean_abs_correlation(group_features, alive=alive))
        self._add_aux(out, features, alive)
        for group in self.groups:
            stats = {
                name.removeprefix("diag/"): value
                for name, value in terms[group].items()
                if name.startswith("diag/") and name not in ("diag/ess", "diag/kl_approx")
            }
            out.set(group, TensorDict(stats, batch_size=[terms[group]["objective"].shape[-1]]))
        return out

    def _add_aux(
        self, out: TensorDict, features: list[torch.Tensor], alive: list[torch.Tensor] | None
    ) -> None:
        aux_values: dict[str, torch.Tensor] = {}
        for name, aux in self.aux_losses.items():
            aux_values[f"loss_{name}"] = call_aux_loss(name, aux, features, alive)
            out.set(f"loss_{name}", aux_values[f"loss_{name}"])
            report = getattr(aux, "diagnostics", None)
            if callable(report):
                for stat, value in call_with_alive(name, report, features, alive).items():
                    out.set(("aux_stats", name, stat), torch.as_tensor(value).detach())
        self._aux_check.arm(out.get("loss_objective"), aux_values)

    def agent_slices(self) -> list[tuple[str, int]]:
        """``(group, index in group)`` for every agent, in the documented agent order.

        The number of agents comes from the networks (``MultiAgentMLP.n_agents``, marlplug's
        stacked layers), so shared-parameter networks count their agents too.
        """
        slices: list[tuple[str, int]] = []
        for group in self.groups:
            modules = [self.critic_networks[group], self.actor_networks[group]]
            n_agents = agent_count(modules)
            if n_agents is None:  # no declared count: the leading dim of the stacked weights
                params = [p for module in modules for p in module.parameters() if p.ndim > 0]
                if not params:
                    raise UserError(f"group '{group}': cannot tell the number of agents")
                n_agents = int(params[0].shape[0])
            slices.extend((group, index) for index in range(n_agents))
        return slices


def _alive_max(ratio: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """The largest ratio of an alive row (a dead row's reads 1 and is no sample); 1 when no row is
    alive.

    Examples:
        >>> _alive_max(torch.tensor([[0.5, 1.0]]), torch.tensor([[1.0, 0.0]]))
        tensor(0.5000)
    """
    alive = weight > 0
    # Ratios are positive: 0 on the dead rows leaves the alive rows' maximum.
    return torch.where(alive.any(), ratio.masked_fill(~alive, 0.0).max(), 1.0)


def _require(value: torch.Tensor | None, key: NestedKey) -> torch.Tensor:
    if value is None:
        raise KeyError(f"JointPPOLoss: the input tensordict has no {key}")
    return value


def sum_losses(losses: TensorDictBase, names: Sequence[str] | None = None) -> torch.Tensor:
    """L_total: the sum of the top-level ``loss_*`` entries (or of ``names``), aux losses included.

    Use it in place of ``loss_objective + loss_critic + loss_entropy`` in a TorchRL loop.

    Examples:
        >>> sum_losses(TensorDict({"loss_a": torch.tensor(1.0), "loss_b": torch.tensor(2.0),
        ...                        "entropy": torch.tensor(5.0)}))
        tensor(3.)
    """
    # TensorDict iterates over its batch dimension, not its keys: .keys() is needed.
    loss_keys = [key for key in losses.keys() if isinstance(key, str)]  # noqa: SIM118
    keys = names or [key for key in loss_keys if key.startswith("loss_")]
    return torch.stack([losses.get(key) for key in keys]).sum()
