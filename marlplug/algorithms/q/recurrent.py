"""The recurrent Q-network of ``algorithm.recurrent: gru`` as pure functions over per-agent rows:
MLP encoder (ReLU after every layer) -> GRU cell (:func:`marlplug.nn.recurrent.gru_update`, the
equations of the project's :class:`~marlplug.nn.recurrent.StackedGRUCell`) -> linear Q head, every
tensor with the agent first, so coded training decodes each agent's rows as it does the MLP's.

Acting runs one step from the carried state (:meth:`RecurrentQNetwork.step`); training replays a
chunk of steps from its first step's stored state, zeroing the state where an episode starts inside
the chunk (:meth:`RecurrentQNetwork.replay`), and the target network continues each step's state
with that step's next observation (:meth:`RecurrentQNetwork.next_step`), so the bootstrap of an
episode's last step reads its terminal observation, not the next episode's first.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from marlplug.nn.functional import init_mlp, mlp_shapes, stacked_linear, stacked_mlp
from marlplug.nn.recurrent import gru_shapes, gru_update, init_gru

#: Parameter names' prefixes: the encoder, the cell and the head.
ENCODER, CELL, HEAD = "q", "q_gru", "q_head"


class RecurrentQNetwork:
    """One agent's recurrent Q-network: its parameter layout, initialization and forward passes,
    over stacked parameters ``[F, ...]`` (``F`` agents) in :attr:`shapes` order.

    Args:
        obs_dim: the (padded) observation width.
        hidden_sizes: the encoder's layer widths (none: the cell reads the observation).
        hidden_size: the GRU's state width.
        action_dim: the (padded) number of actions.

    Examples:
        >>> network = RecurrentQNetwork(obs_dim=6, hidden_sizes=[8], hidden_size=4, action_dim=5)
        >>> params = [p.expand(3, *p.shape) for p in network.init(torch.Generator().manual_seed(0))]
        >>> q, hidden = network.step(params, torch.zeros(3, 2, 6), torch.zeros(3, 2, 4))
        >>> q.shape, hidden.shape  # [agents, batch, actions], [agents, batch, state]
        (torch.Size([3, 2, 5]), torch.Size([3, 2, 4]))
    """

    def __init__(
        self, *, obs_dim: int, hidden_sizes: Sequence[int], hidden_size: int, action_dim: int
    ) -> None:
        self.encoder_sizes = [obs_dim, *hidden_sizes]
        self.hidden_size = hidden_size
        self.head_sizes = [hidden_size, action_dim]
        encoder = mlp_shapes(ENCODER, self.encoder_sizes)
        self._encoder_layers = len(encoder)
        cell_input = self.encoder_sizes[-1]
        #: Every parameter's per-agent shape: encoder, cell (:func:`gru_shapes`), head.
        self.shapes = encoder + gru_shapes(CELL, cell_input, hidden_size)
        self.shapes += mlp_shapes(HEAD, self.head_sizes)

    def init(self, generator: torch.Generator) -> list[torch.Tensor]:
        """One agent's parameters in :attr:`shapes` order, drawn from ``generator``."""
        return [
            *init_mlp(self.encoder_sizes, generator),
            *init_gru(self.encoder_sizes[-1], self.hidden_size, generator),
            *init_mlp(self.head_sizes, generator),
        ]

    def _split(
        self, params: Sequence[torch.Tensor]
    ) -> tuple[Sequence[torch.Tensor], Sequence[torch.Tensor], Sequence[torch.Tensor]]:
        encoder = params[: self._encoder_layers]
        cell = params[self._encoder_layers : self._encoder_layers + 4]
        return encoder, cell, params[self._encoder_layers + 4 :]

    def _input_gates(self, params: Sequence[torch.Tensor], obs: torch.Tensor) -> torch.Tensor:
        """The input's part of the cell's gates, ``[F, N, 3H]``, of observations ``[F, N, O]``."""
        encoder, (weight_ih, _, bias_ih, _), _ = self._split(params)
        features = obs
        if encoder:
            # The encoder feeds the cell, so its last layer is activated too.
            features = torch.relu(stacked_mlp(obs, encoder))
        return stacked_linear(features, weight_ih, bias_ih.unsqueeze(1))

    def _cell(
        self, params: Sequence[torch.Tensor], input_gates: torch.Tensor, hidden: torch.Tensor
    ) -> torch.Tensor:
        _, (_, weight_hh, _, bias_hh), _ = self._split(params)
        hidden_gates = stacked_linear(hidden, weight_hh, bias_hh.unsqueeze(1))
        return gru_update(input_gates, hidden_gates, hidden)

    def _head(self, params: Sequence[torch.Tensor], hidden: torch.Tensor) -> torch.Tensor:
        return stacked_mlp(hidden, self._split(params)[2])

    def step(
        self, params: Sequence[torch.Tensor], obs: torch.Tensor, hidden: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One step: Q-values ``[F, N, A]`` and the next state ``[F, N, H]`` of observations
        ``[F, N, O]`` from the state ``hidden`` ``[F, N, H]`` (already reset where due)."""
        new_hidden = self._cell(params, self._input_gates(params, obs), hidden)
        return self._head(params, new_hidden), new_hidden

    def replay(
        self,
        params: Sequence[torch.Tensor],
        obs: torch.Tensor,
        first_hidden: torch.Tensor,
        is_init: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Chunks of steps: observations ``[F, B, L, O]`` from each chunk's first state
        ``[F, B, H]``, zeroed before every step where ``is_init`` ``[B, L]`` is set. Returns the
        Q-values ``[F, B, L, A]`` and the state after each step ``[F, B, L, H]``."""
        agents, chunks, length, _ = obs.shape
        gates = self._input_gates(params, obs.reshape(agents, chunks * length, -1))
        gates = gates.reshape(agents, chunks, length, -1)
        state = first_hidden
        states = []
        for step in range(length):
            starts = is_init[:, step].reshape(1, chunks, 1)
            state = self._cell(params, gates[:, :, step], state.masked_fill(starts, 0.0))
            states.append(state)
        after = torch.stack(states, dim=2)  # [F, B, L, H]
        q = self._head(params, after.reshape(agents, chunks * length, -1))
        return q.reshape(agents, chunks, length, -1), after

    def next_step(
        self, params: Sequence[torch.Tensor], next_obs: torch.Tensor, after: torch.Tensor
    ) -> torch.Tensor:
        """The Q-values ``[F, B, L, A]`` of each step's next observation ``[F, B, L, O]``, one
        more step from the state after that step (:meth:`replay`'s second output)."""
        agents, chunks, length, _ = next_obs.shape
        flat = chunks * length
        gates = self._input_gates(params, next_obs.reshape(agents, flat, -1))
        q = self._head(params, self._cell(params, gates, after.reshape(agents, flat, -1)))
        return q.reshape(agents, chunks, length, -1)
