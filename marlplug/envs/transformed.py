"""Adding TorchRL transforms to a marlplug env without losing its ``group_map``: one transform, or
what a recurrent policy needs to keep its state in the tensordict."""

from __future__ import annotations

from torch import nn
from torchrl.envs import Compose, EnvBase, InitTracker, Transform, TransformedEnv
from torchrl.modules.utils import get_primers_from_module


def with_transform(env: EnvBase, transform: Transform) -> EnvBase:
    """``env`` with ``transform`` appended to its transforms, or wrapping it in a
    ``TransformedEnv``; ``env.group_map`` (which TorchRL's wrapper does not carry) is kept.

    Example:
        >>> from torchrl.envs import StepCounter
        >>> from marlplug.envs import make_env
        >>> env = with_transform(make_env("cooperative_navigation", agents=2), StepCounter())
        >>> env.group_map["agent"], "step_count" in env.reset().keys()
        (['agent_0', 'agent_1'], True)
    """
    if isinstance(env, TransformedEnv):
        env.append_transform(transform)
        return env
    group_map = env.group_map
    wrapped = TransformedEnv(env, transform)
    wrapped.group_map = group_map
    return wrapped


#: ``InitTracker``'s key: true at the first step of every episode (where a recurrent policy's
#: hidden state starts from zero).
IS_INIT = "is_init"


def with_policy_transforms(env: EnvBase, policy: object) -> EnvBase:
    """``env`` able to run ``policy``'s recurrent modules (their state in the tensordict): a new
    ``TransformedEnv`` with ``InitTracker`` (``is_init``) and the primers of the policy's modules
    (TorchRL's ``make_tensordict_primer``: a zero state at every reset, carried from step to step);
    ``env`` itself, untouched, for a policy without such modules (or not a module).

    Example:
        >>> from torch import nn
        >>> from marlplug.envs import make_env
        >>> env = make_env("cooperative_navigation", agents=2)
        >>> with_policy_transforms(env, nn.Linear(2, 2)) is env
        True
    """
    primers = get_primers_from_module(policy, warn=False) if isinstance(policy, nn.Module) else None
    if primers is None:
        return env
    # Nested, not unwrapped: the inner env keeps its own transforms, uncopied.
    transforms = Compose(InitTracker(init_key=IS_INIT), primers)
    wrapped = TransformedEnv(env, transforms, auto_unwrap=False)
    wrapped.group_map = env.group_map
    return wrapped
