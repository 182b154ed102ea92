"""Rendering: one RGB frame of an env built by ``make_env``, or the frames of a whole episode."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from tensordict import TensorDictBase
from torchrl.envs import EnvBase, PettingZooWrapper, SerialEnv, TransformedEnv
from torchrl.envs.utils import step_mdp

from marlplug.errors import UserError


def _innermost(env: EnvBase) -> EnvBase:
    while True:
        if isinstance(env, TransformedEnv):
            env = env.base_env
        elif isinstance(env, SerialEnv):
            if not env._envs:  # sub-envs are created on first use
                env.start()
            env = env._envs[0]
        else:
            return env


def render_frame(env: EnvBase) -> np.ndarray:
    """The current state of ``env`` (its first copy when batched) as an ``[H, W, 3]`` uint8 array.

    Args:
        env: an env from :func:`marlplug.envs.make_env` (mpe, or vmas with a display library).

    Example:
        >>> from marlplug.envs import make_env
        >>> env = make_env("cooperative_navigation", seed=0)
        >>> _ = env.reset()
        >>> render_frame(env).shape
        (700, 700, 3)
    """
    inner = _innermost(env)
    if isinstance(inner, PettingZooWrapper):
        frame = inner._env.render()
    elif hasattr(getattr(inner, "_env", None), "render"):
        # VMAS: renders the first sub-environment.
        try:
            frame = inner._env.render(mode="rgb_array", env_index=0)
        except Exception as exc:
            raise UserError(f"cannot render {type(inner).__name__}: {exc}") from None
    else:
        raise UserError(f"cannot render {type(inner).__name__}: only mpe and vmas envs render")
    if frame is None:
        raise UserError("the env was built without render_mode='rgb_array'")
    return np.ascontiguousarray(np.asarray(frame, dtype=np.uint8))


Policy = Callable[[TensorDictBase], TensorDictBase]


def rollout_frames(
    env: EnvBase, *, policy: Policy | None = None, max_steps: int | None = None
) -> list[np.ndarray]:
    """Play one episode and return its frames (the reset state, then one per step).

    Args:
        env: an unbatched env from :func:`marlplug.envs.make_env`.
        policy: writes the actions into the tensordict; random actions when ``None``.
        max_steps: stop after this many steps even if the episode has not ended.
    """
    tensordict = env.reset()
    frames = [render_frame(env)]
    step = 0
    with torch.no_grad():
        while max_steps is None or step < max_steps:
            tensordict = env.rand_action(tensordict) if policy is None else policy(tensordict)
            tensordict = env.step(tensordict)
            frames.append(render_frame(env))
            step += 1
            if bool(tensordict["next", "done"].any()):
                break
            tensordict = step_mdp(tensordict)
    return frames
