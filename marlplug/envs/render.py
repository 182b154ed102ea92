"""Rendering: RGB frames of an env built by ``make_env``, or of a whole episode, for GIFs.

mpe envs are drawn from their world's state with matplotlib: a title (the scenario), the step, the
running return (per agent and for the team), every agent and landmark labelled, and one view for the
whole episode that holds every position it visits. Other envs (VMAS) use their own renderer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from tensordict import TensorDictBase
from torchrl.envs import EnvBase, PettingZooWrapper, SerialEnv, TransformedEnv
from torchrl.envs.utils import step_mdp

from marlplug.envs.policies import Policy
from marlplug.errors import UserError

#: Side of a drawn frame in pixels (FRAME_INCHES x FRAME_DPI).
FRAME_INCHES, FRAME_DPI = 5.0, 100
#: Least half-width of the view: the mpe scenarios spawn everything in [-1, 1]².
MIN_VIEW_HALF_WIDTH = 1.0


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


@dataclass(frozen=True)
class Body:
    """One entity of an mpe world at one moment: where it is, how big, its colour and whether it is
    an agent (agents are labelled in bold, landmarks in grey)."""

    name: str
    x: float
    y: float
    radius: float
    color: tuple[float, float, float]
    agent: bool


def world_bodies(env: EnvBase) -> list[Body] | None:
    """Every entity of ``env``'s mpe world (its first copy when batched); ``None`` for an env that
    is not an mpe env (it renders natively)."""
    inner = _innermost(env)
    if not isinstance(inner, PettingZooWrapper):
        return None
    world = getattr(inner._env.unwrapped, "world", None)
    if world is None:
        return None
    agents = {id(agent) for agent in world.agents}
    return [
        Body(
            name=entity.name,
            x=float(entity.state.p_pos[0]),
            y=float(entity.state.p_pos[1]),
            radius=float(entity.size),
            color=tuple(float(c) for c in np.clip(entity.color[:3], 0.0, 1.0)),  # type: ignore[arg-type]
            agent=id(entity) in agents,
        )
        for entity in world.entities
    ]


def scenario_title(env: EnvBase) -> str:
    """The scenario's name as the env reports it (``cooperative_navigation``), else the class name."""
    inner = _innermost(env)
    name = getattr(getattr(inner, "_env", None), "metadata", {}).get("name")
    return str(name).removeprefix("marlplug_") if name else type(inner).__name__


def view_around(snapshots: Sequence[Sequence[Body]]) -> tuple[float, float, float]:
    """``(center_x, center_y, half_width)`` of one square view that holds every body of every
    snapshot with a margin (at least :data:`MIN_VIEW_HALF_WIDTH` wide, centred on the origin
    while that suffices).

    Examples:
        >>> view_around([[Body("a", 3.0, 0.0, 0.1, (0, 0, 0), True)]])
        (1.05, 0.0, 2.255)
    """
    bodies = [body for snapshot in snapshots for body in snapshot]
    low_x = min([-MIN_VIEW_HALF_WIDTH, *(b.x - b.radius for b in bodies)])
    high_x = max([MIN_VIEW_HALF_WIDTH, *(b.x + b.radius for b in bodies)])
    low_y = min([-MIN_VIEW_HALF_WIDTH, *(b.y - b.radius for b in bodies)])
    high_y = max([MIN_VIEW_HALF_WIDTH, *(b.y + b.radius for b in bodies)])
    half = 1.1 * max(high_x - low_x, high_y - low_y) / 2
    return (low_x + high_x) / 2, (low_y + high_y) / 2, round(half, 6)


def draw_bodies(
    bodies: Sequence[Body],
    *,
    view: tuple[float, float, float],
    title: str,
    status: str = "",
) -> np.ndarray:
    """One ``[H, W, 3]`` uint8 frame: ``bodies`` in ``view`` (see :func:`view_around`), labelled,
    under ``title``, with ``status`` (step, return) as a line below the title."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import Circle

    figure = Figure(figsize=(FRAME_INCHES, FRAME_INCHES), dpi=FRAME_DPI)
    canvas = FigureCanvasAgg(figure)
    axes = figure.add_axes((0.02, 0.02, 0.96, 0.86))
    center_x, center_y, half = view
    axes.set_xlim(center_x - half, center_x + half)
    axes.set_ylim(center_y - half, center_y + half)
    axes.set_aspect("equal")
    axes.set_xticks([])
    axes.set_yticks([])
    for body in sorted(bodies, key=lambda b: b.agent):  # agents drawn over landmarks
        axes.add_patch(
            Circle((body.x, body.y), body.radius, facecolor=body.color, edgecolor="black", lw=0.8)
        )
        # Agents are labelled above, landmarks below: an agent on a landmark keeps both readable.
        axes.annotate(
            body.name,
            (body.x, body.y + body.radius if body.agent else body.y - body.radius),
            xytext=(0, 2 if body.agent else -2),
            textcoords="offset points",
            ha="center",
            va="bottom" if body.agent else "top",
            fontsize=8,
            fontweight="bold" if body.agent else "normal",
            color="black" if body.agent else "dimgray",
        )
    figure.text(0.5, 0.965, title, ha="center", va="center", fontsize=12, fontweight="bold")
    figure.text(0.5, 0.915, status, ha="center", va="center", fontsize=9)
    canvas.draw()
    return np.ascontiguousarray(np.asarray(canvas.buffer_rgba())[..., :3])


def _native_frame(env: EnvBase) -> np.ndarray:
    inner = _innermost(env)
    if hasattr(getattr(inner, "_env", None), "render"):
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


def render_frame(env: EnvBase) -> np.ndarray:
    """The current state of ``env`` (its first copy when batched) as an ``[H, W, 3]`` uint8 array.

    Args:
        env: an env from :func:`marlplug.envs.make_env` (mpe, or vmas with a display library).

    Example:
        >>> from marlplug.envs import make_env
        >>> env = make_env("cooperative_navigation", seed=0)
        >>> _ = env.reset()
        >>> render_frame(env).shape
        (500, 500, 3)
    """
    bodies = world_bodies(env)
    if bodies is None:
        return _native_frame(env)
    return draw_bodies(bodies, view=view_around([bodies]), title=scenario_title(env))


def _team_reward(tensordict: TensorDictBase, groups: Sequence[str]) -> tuple[float, int]:
    """The step's reward summed over every agent of the first env copy, and the agent count."""
    total, agents = 0.0, 0
    for group in groups:
        reward = tensordict.get(("next", group, "reward"))
        per_agent = reward.reshape(-1, reward.shape[-2])[0] if reward.dim() > 2 else reward[:, 0]
        total += float(per_agent.sum())
        agents += per_agent.numel()
    return total, agents


@dataclass(frozen=True)
class Moment:
    """One frame's worth of an episode: the world (``None`` for a natively rendered env, then
    ``frame`` holds the picture), the step and the return so far, summed over ``agents`` agents."""

    bodies: list[Body] | None
    frame: np.ndarray | None
    step: int
    team_return: float
    agents: int

    @property
    def status(self) -> str:
        """The line under a frame's title: the step and the running return, both ways."""
        if self.step == 0:
            return "step 0"
        per_agent = self.team_return / max(self.agents, 1)
        return (
            f"step {self.step}   return per agent {per_agent:.2f}   "
            f"team {self.team_return:.2f} ({self.agents} agents)"
        )


def rollout_moments(
    env: EnvBase, *, policy: Policy | None = None, max_steps: int | None = None
) -> list[Moment]:
    """Play one episode and record it (the reset state, then one moment per step); arguments as
    in :func:`rollout_frames`."""
    groups = list(getattr(env, "group_map", {}) or {})
    tensordict = env.reset()
    moments: list[Moment] = []

    def record(step: int, team_return: float, agents: int) -> None:
        bodies = world_bodies(env)
        frame = _native_frame(env) if bodies is None else None
        moments.append(Moment(bodies, frame, step, team_return, agents))

    record(0, 0.0, 0)
    team_return, step = 0.0, 0
    with torch.no_grad():
        while max_steps is None or step < max_steps:
            tensordict = env.rand_action(tensordict) if policy is None else policy(tensordict)
            tensordict = env.step(tensordict)
            step += 1
            reward, agents = _team_reward(tensordict, groups)
            team_return += reward
            record(step, team_return, agents)
            if bool(tensordict["next", "done"].any()):
                break
            tensordict = step_mdp(tensordict)
    return moments


def rollout_frames(
    env: EnvBase,
    *,
    policy: Policy | None = None,
    max_steps: int | None = None,
    title: str | None = None,
) -> list[np.ndarray]:
    """Play one episode and return its frames (the reset state, then one per step).

    An mpe env's frames share one view that holds the whole episode and show the step and the
    running return: per agent and for the team (summed over every agent), as ``marlplug train``
    reports returns.

    Args:
        env: an unbatched env from :func:`marlplug.envs.make_env`.
        policy: writes the actions into the tensordict; random actions when ``None``.
        max_steps: stop after this many steps even if the episode has not ended.
        title: the frames' title (default: the scenario's name).

    Example:
        >>> from marlplug.envs import make_env
        >>> frames = rollout_frames(make_env("keep_away", seed=0), max_steps=2)
        >>> len(frames), frames[0].shape
        (3, (500, 500, 3))
    """
    moments = rollout_moments(env, policy=policy, max_steps=max_steps)
    drawn = [m.bodies for m in moments if m.bodies is not None]
    view = view_around(drawn) if drawn else (0.0, 0.0, MIN_VIEW_HALF_WIDTH)
    heading = title if title is not None else scenario_title(env)
    return [
        moment.frame
        if moment.frame is not None
        else draw_bodies(moment.bodies or [], view=view, title=heading, status=moment.status)
        for moment in moments
    ]
