"""Adding a TorchRL transform to a marlplug env without losing its ``group_map``."""

from __future__ import annotations

from torchrl.envs import EnvBase, Transform, TransformedEnv


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
