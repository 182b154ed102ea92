"""JointPPOLoss's tensordict keys and default settings, as TorchRL's ClipPPOLoss names them.

A key is *absolute* when its first element is one of the loss's agent groups (``("agents",
"state_value")``, what TorchRL's tutorial passes to ``set_keys``) and *relative* otherwise
(``"state_value"``), in which case it is looked up inside every group. Either way the group prefix
is re-applied per group, so one ``set_keys`` call configures every group.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tensordict import NestedKey
from tensordict.nn import composite_lp_aggregate

from marlplug.errors import UserError
from marlplug.losses.ppo_options import PPOLossOptions

#: ``mean``/``sum``/``none`` as in TorchRL (over every row and agent); ``agent_sum``: mean over rows,
#: summed over agents (``L_total = Σ_i L_ppo[i]``, marlplug's trainer).
Reduction = Literal["mean", "sum", "none", "agent_sum"]
REDUCTIONS: tuple[str, ...] = ("mean", "sum", "none", "agent_sum")

#: TorchRL ClipPPOLoss's defaults (torchrl 0.14) for the settings where marlplug's may differ.
TORCHRL_DEFAULTS: dict[str, Any] = {
    "clip_epsilon": 0.2,
    "clip_value": None,
    "entropy_coeff": 0.01,
    "critic_coeff": 1.0,
    "loss_critic_type": "smooth_l1",
    "normalize_advantage": False,
    "normalize_advantage_exclude_dims": (),
    "reduction": "mean",
}

#: marlplug's (the Rust reference's) settings, chosen with ``JointPPOLoss(..., defaults="marlplug")``:
#: the defaults of :class:`~marlplug.losses.ppo_options.PPOLossOptions` under TorchRL's names (value
#: clipping, l2 value loss with weight 0.5, advantages standardized per agent, the PPO terms summed
#: over agents).
MARLPLUG_DEFAULTS: dict[str, Any] = PPOLossOptions().loss_arguments()

DEFAULT_SETS = {"torchrl": TORCHRL_DEFAULTS, "marlplug": MARLPLUG_DEFAULTS}


def resolve_settings(defaults: str, given: Mapping[str, Any]) -> dict[str, Any]:
    """The settings: ``given`` where not ``None``, else the chosen default set.

    Examples:
        >>> resolve_settings("marlplug", {"critic_coeff": None, "clip_value": 0.1})["critic_coeff"]
        0.5
    """
    if defaults not in DEFAULT_SETS:
        raise UserError(f"JointPPOLoss: defaults={defaults!r}; choose torchrl or marlplug")
    settings = dict(DEFAULT_SETS[defaults])
    settings.update({name: value for name, value in given.items() if value is not None})
    return settings


#: ClipPPOLoss arguments JointPPOLoss does not implement: passing a non-default value is an error.
UNSUPPORTED_ARGUMENTS = (
    "advantage_norm",
    "delay_actor",
    "max_importance_ratio",
    "gamma",
    "separate_losses",
)
RENAMED_ARGUMENTS = {"entropy_coef": "entropy_coeff", "critic_coef": "critic_coeff"}


def check_extra_arguments(kwargs: dict[str, Any]) -> None:
    """Reject ClipPPOLoss arguments JointPPOLoss does not implement, removed names and typos.

    Examples:
        >>> check_extra_arguments({"delay_actor": False})  # the default: accepted
        >>> check_extra_arguments({"delay_actor": True})
        Traceback (most recent call last):
        ...
        marlplug.errors.UserError: JointPPOLoss: delay_actor is not supported (see docs/concepts/joint-ppo.md)
    """
    for old, new in RENAMED_ARGUMENTS.items():
        if old in kwargs:
            raise TypeError(f"'{old}' has been removed in torchrl v0.11. Please use '{new}'.")
    for name in UNSUPPORTED_ARGUMENTS:
        if kwargs.pop(name, None) not in (None, False):
            raise UserError(
                f"JointPPOLoss: {name} is not supported (see docs/concepts/joint-ppo.md)"
            )
    if kwargs:
        raise TypeError(f"JointPPOLoss got unexpected keyword arguments {sorted(kwargs)}")


def check_settings(settings: Mapping[str, Any]) -> None:
    """One-line errors for settings out of range."""
    clip_epsilon = settings["clip_epsilon"]
    if isinstance(settings["entropy_coeff"], Mapping):
        raise UserError("JointPPOLoss: entropy_coeff must be a number (per-head maps: no)")
    if not 0.0 < clip_epsilon < 1.0:
        raise UserError(f"clip_epsilon: expected a value in (0, 1), got {clip_epsilon}")
    if settings["loss_critic_type"] not in ("l2", "l1", "smooth_l1"):
        raise UserError(
            f"loss_critic_type: got {settings['loss_critic_type']!r}; choose l2, l1 or smooth_l1"
        )
    if settings["reduction"] not in REDUCTIONS:
        raise UserError(f"reduction: got {settings['reduction']!r}; choose {', '.join(REDUCTIONS)}")


@dataclass
class AcceptedKeys:
    """Tensordict keys of :class:`~marlplug.losses.JointPPOLoss`: TorchRL's ClipPPOLoss keys plus
    ``features``. Each is absolute (``("agents", "advantage")``) or relative to every group.

    Attributes:
        advantage: the advantage. Defaults to ``"advantage"``.
        value_target: the value target. Defaults to ``"value_target"``.
        value: the critic's state value. Defaults to ``"state_value"``.
        sample_log_prob: the behaviour policy's log-probability. Defaults to the actor's
            ``log_prob_keys`` (like ClipPPOLoss), else ``"sample_log_prob"`` or
            ``"action_log_prob"`` depending on ``composite_lp_aggregate()``.
        action: the action. Defaults to the actor's ``dist_sample_keys``, else ``"action"``.
        reward: the reward (value estimator). Defaults to ``"reward"``.
        done: the done flag (value estimator); a group without one uses the env-level flag.
        terminated: the terminated flag (value estimator); same fallback as ``done``.
        features: the encoder features aux losses read. Defaults to ``"features"``; only needed
            when an aux loss is configured.
        mask: which agents were in play when they acted (TorchRL's ``PettingZooWrapper`` with
            ``use_mask``: dead agents' rows are False). Defaults to ``"mask"``; a group without
            it counts every row.
    """

    advantage: NestedKey = "advantage"
    value_target: NestedKey = "value_target"
    value: NestedKey = "state_value"
    sample_log_prob: NestedKey | None = None
    action: NestedKey = "action"
    reward: NestedKey = "reward"
    done: NestedKey = "done"
    terminated: NestedKey = "terminated"
    features: NestedKey = "features"
    mask: NestedKey = "mask"

    def __post_init__(self) -> None:
        if self.sample_log_prob is None:
            aggregate = composite_lp_aggregate(nowarn=True)
            self.sample_log_prob = "sample_log_prob" if aggregate else "action_log_prob"


def relative_key(key: NestedKey, groups: Sequence[str]) -> tuple[str, ...]:
    """``key`` without its group prefix (if it starts with one of ``groups``), as a tuple.

    Examples:
        >>> relative_key(("agents", "state_value"), ["agents"]), relative_key("advantage", ["agents"])
        (('state_value',), ('advantage',))
    """
    parts = (key,) if isinstance(key, str) else tuple(key)
    if len(parts) >= 2 and parts[0] in groups:
        return tuple(parts[1:])
    return tuple(parts)


def in_group(key: NestedKey, group: str, groups: Sequence[str]) -> tuple[str, ...]:
    """The absolute key of ``key`` inside ``group``.

    Examples:
        >>> in_group(("agents", "state_value"), "adversary", ["agents", "adversary"])
        ('adversary', 'state_value')
    """
    return (group, *relative_key(key, groups))


def group_of(module: Any, what: str) -> str:
    """The agent group a network writes to: the first element of its first nested out_key."""
    for key in getattr(module, "out_keys", ()):
        if isinstance(key, tuple) and len(key) >= 2:
            return str(key[0])
    raise UserError(
        f"JointPPOLoss: cannot tell the agent group of the {what} from its out_keys "
        f"{getattr(module, 'out_keys', None)}; pass a mapping {{group: {what}}}"
    )


def as_group_mapping(networks: Any, what: str) -> dict[str, Any]:
    """``{group: network}`` from a mapping or from one network (group read from its out_keys)."""
    if isinstance(networks, Mapping):
        return dict(networks)
    return {group_of(networks, what): networks}
