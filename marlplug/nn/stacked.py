"""Stacked per-agent layers: one tensor holds every agent's weights, one matmul call runs them all.

Every parameter has the agent as its leading dimension, so agent ``i``'s parameters are ``p[i]`` for
every parameter ``p``; the per-agent optimizer and gradient clipping rely on that convention. The
modules are thin wrappers over :mod:`marlplug.nn.functional`'s ops (one implementation).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import torch
from torch import nn

from marlplug.nn.functional import (
    first_agent_linear,
    stacked_linear,
    stacked_linear_shared_input,
)


class StackedLinear(nn.Module):
    """``n_agents`` independent linear layers evaluated as one batched matmul (or, when every agent
    reads the same input, one wide matmul with the agents' weights side by side).

    Input ``[*batch, n_agents, in_features]`` (or ``[*batch, in_features]`` with ``shared_input=True``,
    which every agent reads, e.g. a centralized critic); output ``[*batch, n_agents, out_features]``.
    Weights are initialized like :class:`torch.nn.Linear`, agent by agent.

    Args:
        n_agents: number of agents in the group.
        in_features: input width of one agent.
        out_features: output width of one agent.
        shared_input: every agent reads the same input vector instead of its own slice.

    Examples:
        >>> layer = StackedLinear(n_agents=3, in_features=4, out_features=2)
        >>> layer(torch.zeros(10, 3, 4)).shape
        torch.Size([10, 3, 2])
        >>> layer.weight.shape  # agent first
        torch.Size([3, 4, 2])
    """

    def __init__(
        self, *, n_agents: int, in_features: int, out_features: int, shared_input: bool = False
    ) -> None:
        super().__init__()
        self.n_agents = n_agents
        self.in_features = in_features
        self.out_features = out_features
        self.shared_input = shared_input
        self.weight = nn.Parameter(torch.empty(n_agents, in_features, out_features))
        self.bias = nn.Parameter(torch.empty(n_agents, out_features))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # Same distribution as nn.Linear: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias.
        bound = 1.0 / math.sqrt(self.in_features) if self.in_features > 0 else 0.0
        with torch.no_grad():
            self.weight.uniform_(-bound, bound)
            self.bias.uniform_(-bound, bound)

    def orthogonal_(self, gain: float) -> None:
        """Re-draw every agent's weight as a (semi-)orthogonal matrix scaled by ``gain`` and zero the
        biases: the initialization of the MAPPO and PPO reference implementations."""
        with torch.no_grad():
            for agent_weight in self.weight:
                nn.init.orthogonal_(agent_weight, gain=gain)
            self.bias.zero_()

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        if self.shared_input:
            return stacked_linear_shared_input(inputs, self.weight, self.bias)
        if inputs.shape[-2] != self.n_agents:
            raise ValueError(
                f"StackedLinear expected {self.n_agents} agents at dim -2, got {tuple(inputs.shape)}"
            )
        batch_shape = inputs.shape[:-2]
        flat = inputs.reshape(-1, self.n_agents, self.in_features).transpose(0, 1)
        out = stacked_linear(flat, self.weight, self.bias.unsqueeze(1))
        return out.transpose(0, 1).reshape(*batch_shape, self.n_agents, self.out_features)


class StackedMLP(nn.Module):
    """An MLP per agent with stacked weights (like ``MultiAgentMLP(share_params=False)``, but bmm).

    Args:
        n_agents: number of agents in the group.
        in_features: input width of one agent (with ``centralized=True``: of one agent's slice;
            each agent then reads all agents' inputs concatenated).
        out_features: output width of one agent.
        num_cells: hidden widths, one per hidden layer.
        activation: activation class between layers.
        activate_last_layer: apply the activation to the output too (for encoders).
        centralized: every agent sees the inputs of all agents (a MAPPO critic).
        shared_input: every agent reads one input ``[*batch, in_features]`` (a global state);
            the output is still ``[*batch, n_agents, out_features]``.
        shared_weights: every agent's rows hold the same weights (parameter sharing; the trainer
            keeps them equal). With one input for every agent (``centralized`` or
            ``shared_input``) every agent's output is then the same: the MLP runs once, with agent
            0's rows, and each agent gets that output, so its cost does not grow with the number of
            agents. Agent 0's rows receive the whole gradient and the others none; their mean over
            the agents, which a shared step applies to every row, is the same as when each agent
            ran its own copy.

    Examples:
        >>> mlp = StackedMLP(n_agents=3, in_features=4, out_features=1, num_cells=[8, 8])
        >>> mlp(torch.zeros(5, 3, 4)).shape
        torch.Size([5, 3, 1])
        >>> StackedMLP(n_agents=3, in_features=6, out_features=1, shared_input=True)(
        ...     torch.zeros(5, 6)).shape
        torch.Size([5, 3, 1])
        >>> once = StackedMLP(n_agents=3, in_features=6, out_features=1, shared_input=True,
        ...                   shared_weights=True)
        >>> with torch.no_grad():  # rows equal, as parameter sharing keeps them
        ...     for param in once.parameters():
        ...         _ = param.copy_(param[:1].expand_as(param))
        >>> values = once(torch.randn(5, 6))
        >>> values.shape, bool((values == values[:, :1]).all())
        (torch.Size([5, 3, 1]), True)
    """

    def __init__(
        self,
        *,
        n_agents: int,
        in_features: int,
        out_features: int,
        num_cells: Sequence[int] = (64,),
        activation: type[nn.Module] = nn.Tanh,
        activate_last_layer: bool = False,
        centralized: bool = False,
        shared_input: bool = False,
        shared_weights: bool = False,
    ) -> None:
        super().__init__()
        if centralized and shared_input:
            raise ValueError("StackedMLP: centralized and shared_input are exclusive")
        self.n_agents = n_agents
        self.centralized = centralized
        self.runs_once = shared_weights and (centralized or shared_input)
        widths = [in_features * n_agents if centralized else in_features, *num_cells, out_features]
        layers: list[nn.Module] = []
        for index, (width_in, width_out) in enumerate(itertools.pairwise(widths)):
            layers.append(
                StackedLinear(
                    n_agents=n_agents,
                    in_features=width_in,
                    out_features=width_out,
                    shared_input=(centralized or shared_input) and index == 0,
                )
            )
            if index < len(widths) - 2 or activate_last_layer:
                layers.append(activation())
        self.layers = nn.Sequential(*layers)

    def orthogonal_(self, gain: float, *, last_gain: float = 1.0) -> None:
        """Orthogonal initialization (:meth:`StackedLinear.orthogonal_`): ``gain`` for the hidden
        layers, ``last_gain`` for the output layer.

        Examples:
            >>> mlp = StackedMLP(n_agents=2, in_features=4, out_features=3, num_cells=[8])
            >>> mlp.orthogonal_(5 / 3, last_gain=0.01)
            >>> w = mlp.layers[0].weight[0]  # [4, 8]: orthogonal rows, each of norm 5/3
            >>> torch.allclose(w @ w.T, (5 / 3) ** 2 * torch.eye(4), atol=1e-5)
            True
        """
        linears = [layer for layer in self.layers if isinstance(layer, StackedLinear)]
        for index, layer in enumerate(linears):
            layer.orthogonal_(last_gain if index == len(linears) - 1 else gain)

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        if self.centralized:
            inputs = inputs.flatten(-2, -1)
        if self.runs_once:
            return self._first_agent(inputs)
        return self.layers(inputs)

    def _first_agent(self, inputs: torch.Tensor) -> torch.Tensor:
        """Agent 0's MLP on the input every agent reads, given to every agent (``shared_weights``)."""
        out = inputs
        for layer in self.layers:
            if isinstance(layer, StackedLinear):
                out = first_agent_linear(out, layer.weight, layer.bias)
            else:
                out = layer(out)
        return out.unsqueeze(-2).expand(*out.shape[:-1], self.n_agents, out.shape[-1])
