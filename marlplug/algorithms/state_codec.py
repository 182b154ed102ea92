"""The state codec: an agent's whole learning state (parameters, target parameters, optimizer state) as
one float vector, and back. Coded learners combine these vectors linearly; the controller decodes them.

Layout: the named tensors are laid out one after another, in the order given, each flattened in
row-major (C) order; vector element ``offset[name] + k`` is element ``k`` of ``tensor[name].flatten()``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import torch

from marlplug.optim.adam import AdamSettings, adam
from marlplug.optim.clip import clip_per_agent


class StateCodec:
    """Flatten a per-agent named state (leading agent dimension) to ``[A, D]`` and back.

    Args:
        shapes: ``(name, per-agent shape)`` pairs, in layout order. Names must be unique.

    Examples:
        >>> codec = StateCodec([("weight", (2, 3)), ("bias", (3,)), ("step", ())])
        >>> codec.size
        10
        >>> state = {"weight": torch.ones(4, 2, 3), "bias": torch.zeros(4, 3), "step": torch.ones(4)}
        >>> flat = codec.flatten(state)
        >>> flat.shape
        torch.Size([4, 10])
        >>> torch.equal(codec.unflatten(flat)["weight"], state["weight"])
        True
    """

    def __init__(self, shapes: Sequence[tuple[str, tuple[int, ...]]]) -> None:
        names = [name for name, _ in shapes]
        if len(set(names)) != len(names):
            duplicates = sorted({n for n in names if names.count(n) > 1})
            raise ValueError(f"StateCodec: duplicate tensor names {duplicates}")
        self.shapes: dict[str, tuple[int, ...]] = {name: tuple(shape) for name, shape in shapes}
        self.offsets: dict[str, tuple[int, int]] = {}
        offset = 0
        for name, shape in self.shapes.items():
            numel = math.prod(shape)
            self.offsets[name] = (offset, offset + numel)
            offset += numel
        self.size = offset

    @property
    def names(self) -> list[str]:
        """Tensor names in layout order."""
        return list(self.shapes)

    def flatten(self, state: Mapping[str, torch.Tensor]) -> torch.Tensor:
        """``{name: [A, *shape]}`` -> ``[A, D]`` (a new tensor, the dtype of the first entry)."""
        missing = [name for name in self.shapes if name not in state]
        extra = [name for name in state if name not in self.shapes]
        if missing or extra:
            raise KeyError(f"StateCodec.flatten: missing {missing}, unexpected {extra}")
        parts = []
        for name, shape in self.shapes.items():
            tensor = state[name]
            if tuple(tensor.shape[1:]) != shape:
                raise ValueError(
                    f"StateCodec.flatten: '{name}' has per-agent shape {tuple(tensor.shape[1:])}, "
                    f"expected {shape}"
                )
            parts.append(tensor.reshape(tensor.shape[0], -1))
        return torch.cat(parts, dim=1)

    def unflatten(self, flat: torch.Tensor) -> dict[str, torch.Tensor]:
        """``[A, D]`` -> ``{name: [A, *shape]}`` (views into ``flat`` where possible)."""
        if flat.dim() != 2 or flat.shape[1] != self.size:
            raise ValueError(
                f"StateCodec.unflatten: expected shape [agents, {self.size}], got {tuple(flat.shape)}"
            )
        return {
            name: flat[:, start:stop].reshape(flat.shape[0], *self.shapes[name])
            for name, (start, stop) in self.offsets.items()
        }


Shapes = list[tuple[str, tuple[int, ...]]]


class AgentRows:
    """An agent's learning state as rows: :attr:`theta_codec` lays out its ``theta`` row,
    :attr:`opt_codec` its ``opt_state`` row and :attr:`codec` the two side by side (the whole state
    an update works on); :meth:`split` cuts whole-state rows back. The replay-based programs
    (MADDPG, SAC, the Q-learners) are built on it.

    Args:
        theta: the ``theta`` row's ``(name, per-agent shape)`` pairs, in layout order.
        opt_state: the ``opt_state`` row's.

    Examples:
        >>> rows = AgentRows(*target_and_adam_layout([("q.w0", (4, 2))]))
        >>> rows.theta_size, rows.opt_state_size  # weights and target; moments and step count
        (16, 17)
        >>> [tuple(part.shape) for part in rows.split(torch.zeros(3, 33))]
        [(3, 16), (3, 17)]
    """

    def __init__(self, theta: Shapes, opt_state: Shapes) -> None:
        self.theta_codec = StateCodec(theta)
        self.opt_codec = StateCodec(opt_state)
        #: One agent's whole state, ``theta`` then ``opt_state`` (what the update works on).
        self.codec = StateCodec(theta + opt_state)
        self.theta_size = self.theta_codec.size
        self.opt_state_size = self.opt_codec.size

    def split(self, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(theta, opt_state)`` of whole-state rows ``[·, P + O]`` (see :attr:`codec`)."""
        return rows[:, : self.theta_size], rows[:, self.theta_size :]


_Tensors = list[torch.Tensor]
#: What :func:`clipped_adam_step` returns for one network: the new parameters, first and second
#: moments (one tensor per name each), the step counts, the gradient norms before clipping and which
#: agents stepped.
AdamStep = tuple[_Tensors, _Tensors, _Tensors, torch.Tensor, torch.Tensor, torch.Tensor]


def target_and_adam_layout(
    networks: Shapes, untargeted: Shapes | None = None
) -> tuple[Shapes, Shapes]:
    """The rows of an agent trained with target networks and Adam (MADDPG, the Q-learners, SAC).

    ``theta`` holds the networks, then the ``untargeted`` tensors (trained without a target copy,
    e.g. SAC's actor and temperature), then a ``target_`` copy of each network; ``opt_state`` holds
    Adam's first and second moments of every trained tensor, then the step count.

    Examples:
        >>> theta, opt_state = target_and_adam_layout([("q.w0", (4, 2))])
        >>> [name for name, _ in theta], [name for name, _ in opt_state]
        (['q.w0', 'target_q.w0'], ['adam_m.q.w0', 'adam_v.q.w0', 'adam_step'])
        >>> [name for name, _ in target_and_adam_layout([("q.w0", (4, 2))], [("pi.w0", (4,))])[0]]
        ['q.w0', 'pi.w0', 'target_q.w0']
    """
    trained = networks + list(untargeted or [])
    theta = trained + [("target_" + name, shape) for name, shape in networks]
    moments = [(f"adam_m.{name}", shape) for name, shape in trained]
    moments += [(f"adam_v.{name}", shape) for name, shape in trained]
    moments.append(("adam_step", ()))
    return theta, moments


def fresh_target_and_adam_state(
    networks: Mapping[str, torch.Tensor], untargeted: Mapping[str, torch.Tensor] | None = None
) -> dict[str, torch.Tensor]:
    """The starting values of :func:`target_and_adam_layout`'s tensors: the networks (and the
    ``untargeted`` tensors), target copies of the networks equal to them, Adam's moments and step
    count at zero.

    Examples:
        >>> state = fresh_target_and_adam_state({"q.w0": torch.ones(4, 2)})
        >>> list(state), bool(state["target_q.w0"].eq(1).all()), float(state["adam_step"])
        (['q.w0', 'target_q.w0', 'adam_m.q.w0', 'adam_v.q.w0', 'adam_step'], True, 0.0)
    """
    trained = {**networks, **(untargeted or {})}
    state = {**trained, **{"target_" + k: v.clone() for k, v in networks.items()}}
    state.update({f"adam_m.{k}": torch.zeros_like(v) for k, v in trained.items()})
    state.update({f"adam_v.{k}": torch.zeros_like(v) for k, v in trained.items()})
    state["adam_step"] = torch.zeros(())
    return state


def clipped_adam_step(
    state: Mapping[str, torch.Tensor],
    names: Sequence[str],
    grads: Sequence[torch.Tensor],
    *,
    max_grad_norm: float,
    settings: AdamSettings,
    agents_ok: torch.Tensor | None = None,
    step_key: str = "adam_step",
) -> AdamStep:
    """One network's per-agent clip and Adam step on :func:`target_and_adam_layout` rows.

    ``state`` holds the agents' unflattened rows, ``names`` the network's tensors and ``grads`` their
    gradients (``[S, ...]`` each); ``agents_ok`` ``[S]`` (bool) may hold back agents for another
    reason than their own norm (a team's loss), and ``step_key`` names the step count where a row
    holds a second one (QMIX's mixer). Returns the new parameters, first and second moments, the
    step counts, the gradient norms before clipping and which agents stepped (a finite norm).

    Examples:
        >>> state = fresh_target_and_adam_state({"q.w0": torch.ones(2, 3)})
        >>> state = {k: v.unsqueeze(0) for k, v in state.items()}  # one agent
        >>> params, _, _, steps, norms, stepped = clipped_adam_step(
        ...     state, ["q.w0"], [torch.ones(1, 2, 3)], max_grad_norm=1.0,
        ...     settings=AdamSettings(lr=0.1))
        >>> round(float(params[0][0, 0, 0]), 4), steps.tolist(), bool(stepped[0])
        (0.9, [1.0], True)
    """
    clipped, norms, finite = clip_per_agent(grads, max_grad_norm, agents_ok)
    # A decoded state carries round-off: a step count of 2.9999999, a second moment of -1e-20.
    params, avgs, sqs, steps = adam(
        [state[n] for n in names],
        clipped,
        [state["adam_m." + n] for n in names],
        [state["adam_v." + n].clamp(min=0.0) for n in names],
        state[step_key].round(),
        finite,
        settings=settings,
    )
    return params, avgs, sqs, steps, norms, finite
