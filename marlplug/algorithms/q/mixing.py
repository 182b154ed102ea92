"""A mixer with parameters (QMIX's ``QMixer``) inside the per-agent rows (:class:`MixerRows`).

The update is a pure function of ``(theta_all, opt_state, batch)`` whose state is one row per
agent, but a mixer's parameters belong to no agent. They are replicated: every agent's ``theta``
row holds the same copy of the mixer and its target, every ``opt_state`` row the same Adam moments
and step count. The update reads agent 0's copy (a mixer forwards every agent, so agent 0 is always
there), steps it once on the team's loss and writes the stepped copy into every row it returns, so
the copies never diverge. Why not an extra row: every caller (the trainer, checkpoints, the coded
decoder) counts one row per agent; a replicated copy costs a few thousand floats per agent.

The mixer's state: where the scenario declares a global state (``ScenarioOptions.state_columns``,
:mod:`marlplug.envs.state`), the state is by definition entries of the agents' observations, so it
is gathered from the minibatch's observations with :func:`state_index`, the same numbers the env's
``GlobalState`` transform writes, without a replay column of its own; otherwise it is every agent's
(padded) observation concatenated.

The mixer reads that state squashed by ``tanh`` (:func:`bounded_state`). QMIX's hypernetworks are
linear in the state, and their absolute values are the mixing weights, so each agent's Q reaches
the team's Q through a factor that grows with the state's size (quadratically: two weight layers).
Positions in cooperative navigation are unbounded: fed raw, a trained mixer's factor grew from 2.6
to 52 as greedy agents drifted from the landmarks (mean distance from the origin 0.8 to 3.9 in one
episode) and its team Q rose from -6 to +98 where every reward is negative; the target's max over
each agent's noisy Q-values, amplified that much, made leaving the arena look best, and QMIX's
greedy policy ended below random actions. ``tanh`` keeps the arena (``|x| < 1``) nearly linear and
caps the factor (``tests/algorithms/test_qmix.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch.func import functional_call

from marlplug.algorithms.spaces import AgentSpace
from marlplug.algorithms.state_codec import Shapes, target_and_adam_layout
from marlplug.envs.state import StateColumns

__all__ = ["MixerRows", "bounded_state", "state_index"]


def state_index(
    agents: Sequence[AgentSpace], obs_dim: int, columns: StateColumns | None
) -> torch.Tensor:
    """Flat indices into the minibatch's observations ``[B, M * obs_dim]`` (agents in flat order,
    each padded to ``obs_dim``) of the global state ``columns`` declares; every column when
    ``None`` (all agents' observations concatenated).

    Examples:
        >>> agents = [AgentSpace(f"agent_{i}", "agent", obs_dim=3, action_dim=2, discrete=True)
        ...           for i in range(2)]
        >>> state_index(agents, 3, {"agent": [(0, 0), (1, 0), (0, 2)]}).tolist()
        [0, 3, 2]
        >>> state_index(agents, 3, None).tolist()
        [0, 1, 2, 3, 4, 5]
    """
    if columns is None:
        return torch.arange(len(agents) * obs_dim)
    flat = []
    for group, entries in columns.items():
        members = [i for i, agent in enumerate(agents) if agent.group == group]
        flat += [members[agent] * obs_dim + column for agent, column in entries]
    return torch.tensor(flat, dtype=torch.long)


def bounded_state(state: torch.Tensor) -> torch.Tensor:
    """The state as the mixer reads it: every entry squashed into ``(-1, 1)`` by ``tanh``, so the
    hypernetworks' weights stay bounded however far the agents go (the module docstring says why).

    Examples:
        >>> [round(x, 3) for x in bounded_state(torch.tensor([0.1, -0.5, 40.0])).tolist()]
        [0.1, -0.462, 1.0]
    """
    return torch.tanh(state)


class MixerRows:
    """A parametrized TorchRL mixer's columns in every agent's row, and its functional forward.

    Args:
        mixer: a TorchRL ``Mixer`` whose parameters all live in ``torch.nn.Linear`` layers.
        state_index: what the mixer reads as its state (:func:`state_index`); unused when the
            mixer needs none.

    Examples:
        >>> from torchrl.modules.models.multiagent import QMixer
        >>> rows = MixerRows(QMixer((4,), 8, 2, "cpu"), torch.arange(4))
        >>> [name for name, _ in rows.theta_layout][:2]
        ['mixer.hyper_w_1.weight', 'mixer.hyper_w_1.bias']
        >>> rows.opt_layout[-1]
        ('mixer_adam_step', ())
    """

    def __init__(self, mixer: torch.nn.Module, state_index: torch.Tensor) -> None:
        self.mixer = mixer
        self.state_index = state_index
        #: The mixer's own parameter names, in layout order.
        self.names = [name for name, _ in mixer.named_parameters()]
        network = [(f"mixer.{n}", tuple(p.shape)) for n, p in mixer.named_parameters()]
        theta, moments = target_and_adam_layout(network)
        self.theta_layout: Shapes = theta
        # Its own step count: the Q-networks' is each agent's ``adam_step``.
        self.opt_layout: Shapes = [
            ("mixer_adam_step", shape) if name == "adam_step" else (name, shape)
            for name, shape in moments
        ]

    def fresh(self, generator: torch.Generator) -> dict[str, torch.Tensor]:
        """Freshly drawn mixer parameters (``mixer.``-prefixed, no agent dimension), each
        ``Linear`` layer as torch initializes one (uniform in ``±1/sqrt(fan_in)``), from
        ``generator`` alone."""
        drawn: dict[str, torch.Tensor] = {}
        for prefix, module in self.mixer.named_modules():
            if not isinstance(module, torch.nn.Linear):
                continue
            bound = 1.0 / math.sqrt(module.in_features)
            for name, param in module.named_parameters(recurse=False):
                value = torch.rand(param.shape, generator=generator) * (2 * bound) - bound
                drawn[f"mixer.{prefix}.{name}" if prefix else f"mixer.{name}"] = value
        missing = [n for n in self.names if f"mixer.{n}" not in drawn]
        if missing:
            raise ValueError(f"MixerRows: parameters outside Linear layers: {missing}")
        return {f"mixer.{n}": drawn[f"mixer.{n}"] for n in self.names}

    def mix(
        self, params: Sequence[torch.Tensor], chosen: torch.Tensor, obs: torch.Tensor
    ) -> torch.Tensor:
        """The team's value ``[B]`` of the agents' values ``chosen`` ``[B, M]`` with the mixer's
        ``params`` (in :attr:`names` order), reading its state from ``obs`` ``[B, M, O]``
        (:func:`bounded_state`)."""
        inputs: tuple[torch.Tensor, ...] = (chosen.unsqueeze(-1),)
        if getattr(self.mixer, "needs_state", False):
            inputs += (bounded_state(obs.flatten(1).index_select(1, self.state_index)),)
        values = dict(zip(self.names, params, strict=True))
        return functional_call(self.mixer, values, inputs).squeeze(-1)
