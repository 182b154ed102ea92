"""MPE's action and physics conventions on VMAS, so both backends take the same actions.

MPE agents take Discrete(5) (no-op, -x, +x, -y, +y) or a 5-vector in [0, 1] whose differences
(a2 - a1, a4 - a3) are the force; VMAS defaults differ (3x3 discrete grid, 2-d force).
"""

from __future__ import annotations

from typing import Any

import torch
from vmas.simulator.core import Agent, Landmark, Sphere, World
from vmas.simulator.dynamics.common import Dynamics

#: MPE's default force multiplier ("sensitivity") when an agent has no ``accel``.
DEFAULT_ACCEL = 5.0
#: mpe2's contact force and margin, so scripted collisions push like they do there.
CONTACT_FORCE = 100.0
CONTACT_MARGIN = 1e-3

# Discrete action index -> unit force direction, as in mpe2's SimpleEnv._set_action.
_DIRECTIONS = torch.tensor([[0.0, 0.0], [-1.0, 0.0], [1.0, 0.0], [0.0, -1.0], [0.0, 1.0]])


class MpeDynamics(Dynamics):
    """Turns an MPE action into a force.

    Discrete: VMAS maps action ``a`` of ``discrete_action_nvec=[5]`` to one scalar
    (0 -> 0, 1 -> -1, 2 -> -0.5, 3 -> 0.5, 4 -> 1); this undoes that mapping and applies the MPE
    direction. Continuous: ``(a[2] - a[1], a[4] - a[3])`` as in mpe2. Both scaled by ``accel``.
    """

    def __init__(self, *, continuous: bool, accel: float) -> None:
        super().__init__()
        self.continuous = continuous
        self.accel = accel

    @property
    def needed_action_size(self) -> int:
        return 5 if self.continuous else 1

    def process_action(self) -> None:
        u = self.agent.action.u
        if self.continuous:
            u = u.clamp(0.0, 1.0)  # mpe2 clips continuous actions to its Box(0, 1)
            force = torch.stack([u[:, 2] - u[:, 1], u[:, 4] - u[:, 3]], dim=-1)
        else:
            position = torch.round((u[:, 0] + 1.0) * 2.0).long()  # -1..1 -> 0..4
            index = torch.where(position == 2, 0, torch.where(position < 2, position + 1, position))
            force = _DIRECTIONS.to(u.device)[index]
        self.agent.state.force = force * self.accel


class MpeWorld(World):
    """A VMAS world that integrates like mpe2: position from the old velocity, then velocity.

    VMAS updates the velocity first (semi-implicit Euler); mpe2 moves with the velocity of the
    previous step. Keeping mpe2's order makes the two backends agree step for step.
    """

    def _integrate_state(self, entity: Any, substep: int) -> None:
        if not entity.movable:
            return
        drag = entity.drag if entity.drag is not None else self._drag
        entity.state.pos = entity.state.pos + entity.state.vel * self._sub_dt
        velocity = (
            entity.state.vel * (1 - drag) + self.forces_dict[entity] / entity.mass * self._sub_dt
        )
        if entity.max_speed is not None:
            speed = torch.linalg.vector_norm(velocity, dim=-1, keepdim=True)
            velocity = torch.where(
                speed > entity.max_speed, velocity / speed * entity.max_speed, velocity
            )
        entity.state.vel = velocity


def mpe_world(batch_dim: int, device: Any) -> World:
    """A VMAS world with mpe2's time step, damping, contact parameters and integration order."""
    return MpeWorld(
        batch_dim,
        device,
        dt=0.1,
        drag=0.25,
        collision_force=CONTACT_FORCE,
        contact_margin=CONTACT_MARGIN,
    )


def mpe_agent(
    name: str,
    *,
    continuous: bool,
    size: float,
    color: Any,
    collide: bool = True,
    accel: float | None = None,
    max_speed: float | None = None,
    adversary: bool = False,
) -> Agent:
    """A VMAS agent that moves like an mpe2 agent and takes mpe2's actions."""
    return Agent(
        name=name,
        shape=Sphere(radius=size),
        collide=collide,
        rotatable=False,
        color=color,
        max_speed=max_speed,
        adversary=adversary,
        u_range=1.0,
        dynamics=MpeDynamics(
            continuous=continuous, accel=DEFAULT_ACCEL if accel is None else accel
        ),
        action_size=5 if continuous else 1,
        discrete_action_nvec=None if continuous else [5],
    )


def mpe_landmark(name: str, *, size: float, color: Any, collide: bool = False) -> Landmark:
    """A static VMAS landmark (an obstacle when ``collide``)."""
    return Landmark(
        name=name, shape=Sphere(radius=size), collide=collide, movable=False, color=color
    )


def distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Euclidean distance over the last dim (``[batch, 2]`` -> ``[batch]``)."""
    return torch.linalg.vector_norm(a - b, dim=-1)


def uniform_positions(world: World, env_index: int | None, low: float, high: float) -> torch.Tensor:
    """Random positions for one env (``[1, 2]``) or all of them (``[batch, 2]``), like mpe2."""
    rows = 1 if env_index is not None else world.batch_dim
    return torch.empty((rows, world.dim_p), device=world.device).uniform_(low, high)


def pairwise_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Euclidean distances between point sets: ``[batch, P, 2]`` x ``[batch, Q, 2]`` -> ``[batch, P, Q]``.

    Computed coordinate by coordinate (exact, unlike ``torch.cdist``'s matrix-product mode for
    large sets, and faster than a norm over a length-2 last dim).
    """
    dx = a[..., :, None, 0] - b[..., None, :, 0]
    dy = a[..., :, None, 1] - b[..., None, :, 1]
    return torch.hypot(dx, dy)
