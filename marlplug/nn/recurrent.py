"""Recurrent (GRU) actors with stacked per-agent weights and their hidden state in the tensordict.

Partially observable tasks need memory: the actor's encoder feeds a GRU whose hidden state lives at
``(group, "rnn_hidden")`` (the input of a step) and ``("next", group, "rnn_hidden")`` (its output),
TorchRL's ``GRUModule`` conventions. The env carries the state from step to step through a
``TensorDictPrimer`` (zeros at every reset, :meth:`RecurrentEncoder.make_tensordict_primer`) and
marks episode starts with ``InitTracker``'s ``is_init``
(:func:`~marlplug.envs.transformed.with_policy_transforms`), where the state is reset to zero.
Under TorchRL's ``set_recurrent_mode(True)`` (the PPO loss) the last of two or more batch
dimensions is time: each sequence starts from its first step's stored state and the GRU is
replayed over it, honouring the resets inside it.

TorchRL's ``GRUModule`` holds one ``nn.GRU`` (one weight matrix for every agent); every marlplug
parameter has the agent first (the per-agent rows coded training decodes, per-agent clipping and
Adam), so the cell here is written with stacked weights: one batched matmul for every agent.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from tensordict import NestedKey, TensorDictBase
from tensordict.nn import TensorDictModuleBase
from torch import nn
from torchrl.data import Composite, Unbounded
from torchrl.envs import TensorDictPrimer
from torchrl.modules import recurrent_mode

from marlplug.envs.transformed import IS_INIT
from marlplug.nn.functional import stacked_linear

#: The actor's memory: ``none`` (an MLP encoder) or ``gru`` (MLP encoder -> GRU cell -> head).
Recurrent = Literal["none", "gru"]
#: Key of a group's hidden state inside the group (TorchRL's recurrent-state convention).
HIDDEN = "rnn_hidden"


def _per_agent(inputs: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """``inputs @ weight[i] + bias[i]`` for every agent ``i``: ``inputs`` ``[*batch, A, in]``,
    ``weight`` ``[A, in, out]``, ``bias`` ``[A, out]``; returns ``[*batch, A, out]``."""
    agents, fan_in = weight.shape[0], weight.shape[1]
    batch_shape = inputs.shape[:-2]
    flat = inputs.reshape(-1, agents, fan_in).transpose(0, 1)
    out = stacked_linear(flat, weight, bias.unsqueeze(1))
    return out.transpose(0, 1).reshape(*batch_shape, agents, weight.shape[-1])


def gru_update(
    input_gates: torch.Tensor, hidden_gates: torch.Tensor, hidden: torch.Tensor
) -> torch.Tensor:
    """``torch.nn.GRUCell``'s equations (gates in its order r, z, n) on precomputed gates: the next
    hidden state from the input's and the hidden state's parts of the gates (each ``[..., 3H]``)
    and the current state ``[..., H]``. :class:`StackedGRUCell` and the functional Q-networks
    (:mod:`marlplug.algorithms.q.recurrent`) both step with it.

    Examples:
        >>> gru_update(torch.zeros(2, 6), torch.zeros(2, 6), torch.ones(2, 2))  # z = 1/2, n = 0
        tensor([[0.5000, 0.5000],
                [0.5000, 0.5000]])
    """
    input_r, input_z, input_n = input_gates.chunk(3, dim=-1)
    hidden_r, hidden_z, hidden_n = hidden_gates.chunk(3, dim=-1)
    reset = torch.sigmoid(input_r + hidden_r)
    update = torch.sigmoid(input_z + hidden_z)
    candidate = torch.tanh(input_n + reset * hidden_n)
    return candidate + update * (hidden - candidate)  # (1 - z) * n + z * h


def gru_shapes(prefix: str, input_size: int, hidden_size: int) -> list[tuple[str, tuple[int, ...]]]:
    """Per-agent parameter shapes of one GRU cell, :class:`StackedGRUCell`'s without the agent
    dimension (the functional form's, :func:`init_gru`).

    >>> gru_shapes("q_gru", 4, 2)
    [('q_gru.weight_ih', (4, 6)), ('q_gru.weight_hh', (2, 6)), ('q_gru.bias_ih', (6,)), ('q_gru.bias_hh', (6,))]
    """
    gates = 3 * hidden_size
    return [
        (f"{prefix}.weight_ih", (input_size, gates)),
        (f"{prefix}.weight_hh", (hidden_size, gates)),
        (f"{prefix}.bias_ih", (gates,)),
        (f"{prefix}.bias_hh", (gates,)),
    ]


def init_gru(input_size: int, hidden_size: int, generator: torch.Generator) -> list[torch.Tensor]:
    """One agent's GRU parameters in :func:`gru_shapes`' order, drawn as :class:`StackedGRUCell`
    draws them (``nn.GRUCell``'s ``U(-1/sqrt(H), 1/sqrt(H))``), from ``generator``.

    >>> [tuple(p.shape) for p in init_gru(4, 2, torch.Generator().manual_seed(0))]
    [(4, 6), (2, 6), (6,), (6,)]
    """
    bound = 1.0 / math.sqrt(hidden_size)
    return [
        (torch.rand(shape, generator=generator) * 2 - 1) * bound
        for _, shape in gru_shapes("", input_size, hidden_size)
    ]


class StackedGRUCell(nn.Module):
    """``n_agents`` GRU cells (``torch.nn.GRUCell``'s equations, gates in its order r, z, n) with
    stacked weights, agent first.

    Args:
        n_agents: number of agents in the group.
        input_size: width of one agent's input.
        hidden_size: width of one agent's hidden state.

    Examples:
        >>> cell = StackedGRUCell(n_agents=3, input_size=4, hidden_size=5)
        >>> cell(torch.zeros(10, 3, 4), torch.zeros(10, 3, 5)).shape
        torch.Size([10, 3, 5])
        >>> cell.weight_hh.shape  # agent first, the three gates side by side
        torch.Size([3, 5, 15])
    """

    def __init__(self, *, n_agents: int, input_size: int, hidden_size: int) -> None:
        super().__init__()
        self.n_agents = n_agents
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.weight_ih = nn.Parameter(torch.empty(n_agents, input_size, 3 * hidden_size))
        self.weight_hh = nn.Parameter(torch.empty(n_agents, hidden_size, 3 * hidden_size))
        self.bias_ih = nn.Parameter(torch.empty(n_agents, 3 * hidden_size))
        self.bias_hh = nn.Parameter(torch.empty(n_agents, 3 * hidden_size))
        bound = 1.0 / math.sqrt(hidden_size)  # nn.GRUCell's U(-1/sqrt(H), 1/sqrt(H))
        with torch.no_grad():
            for param in self.parameters():
                param.uniform_(-bound, bound)

    def input_gates(self, inputs: torch.Tensor) -> torch.Tensor:
        """The input's part of the three gates, ``[*batch, A, 3H]``: for a sequence it is computed
        for every step at once, so the loop over time only multiplies the hidden state."""
        return _per_agent(inputs, self.weight_ih, self.bias_ih)

    def step(self, input_gates: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
        """The next hidden state from :meth:`input_gates`' output and the current state."""
        return gru_update(input_gates, _per_agent(hidden, self.weight_hh, self.bias_hh), hidden)

    def forward(self, inputs: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor:
        return self.step(self.input_gates(inputs), hidden)


class RecurrentEncoder(TensorDictModuleBase):
    """A group's encoder with memory: ``network`` (observation -> per-agent inputs) then a
    :class:`StackedGRUCell`, whose output is the group's encoder features.

    Reads ``(group, "observation")``, ``"is_init"`` and ``(group, "rnn_hidden")`` (zeros where
    missing); writes ``(group, "features")`` and ``("next", group, "rnn_hidden")`` (the same
    tensor: the features are the new hidden state). Outside recurrent mode every row is one step
    from its own stored state (acting); under ``set_recurrent_mode(True)`` a tensordict with two
    or more batch dimensions holds sequences, the last dimension being time (the loss's
    ``[sequences, steps]`` minibatches).

    Args:
        network: the per-agent feed-forward part, ``[*, n_agents, obs] -> [*, n_agents, d]``.
        cell: the GRU cell, input width ``d``.
        group: the agent group's name.

    Examples:
        >>> from tensordict import TensorDict
        >>> from torchrl.modules import set_recurrent_mode
        >>> from marlplug.nn.stacked import StackedMLP
        >>> encoder = RecurrentEncoder(
        ...     StackedMLP(n_agents=2, in_features=4, out_features=6, activate_last_layer=True),
        ...     StackedGRUCell(n_agents=2, input_size=6, hidden_size=8), group="agent")
        >>> td = encoder(TensorDict({("agent", "observation"): torch.zeros(5, 2, 4)}, batch_size=[5]))
        >>> td["agent", "features"].shape, td["next", "agent", "rnn_hidden"].shape
        (torch.Size([5, 2, 8]), torch.Size([5, 2, 8]))
        >>> sequences = TensorDict({("agent", "observation"): torch.zeros(3, 7, 2, 4),
        ...                         ("agent", "rnn_hidden"): torch.zeros(3, 7, 2, 8),
        ...                         "is_init": torch.zeros(3, 7, 1, dtype=torch.bool)}, batch_size=[3, 7])
        >>> with set_recurrent_mode(True):
        ...     encoder(sequences)["agent", "features"].shape
        torch.Size([3, 7, 2, 8])
    """

    def __init__(self, network: nn.Module, cell: StackedGRUCell, *, group: str) -> None:
        super().__init__()
        self.network = network
        self.cell = cell
        self.group = group
        self.in_keys: list[NestedKey] = [(group, "observation"), IS_INIT, (group, HIDDEN)]
        self.out_keys: list[NestedKey] = [(group, "features"), ("next", group, HIDDEN)]

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        gates = self.cell.input_gates(self.network(tensordict.get(self.in_keys[0])))
        state_shape = (*gates.shape[:-1], self.cell.hidden_size)
        hidden = tensordict.get(self.in_keys[2], None)
        if hidden is None:
            hidden = gates.new_zeros(state_shape)
        is_init = tensordict.get(IS_INIT, None)
        if is_init is None:
            is_init = torch.zeros(*tensordict.batch_size, 1, dtype=torch.bool)
        # One batch dim is a set of single steps even in recurrent mode (shuffled rows, as a
        # minibatch of steps is): each row then runs from its own stored state.
        if recurrent_mode() and tensordict.batch_dims >= 2:
            features = self._replay(gates, hidden, is_init, time_dim=tensordict.batch_dims - 1)
        else:
            features = self.cell.step(gates, self._reset(hidden, is_init))
        tensordict.set(self.out_keys[0], features)
        tensordict.set(self.out_keys[1], features)
        return tensordict

    @staticmethod
    def _reset(hidden: torch.Tensor, is_init: torch.Tensor) -> torch.Tensor:
        """Zero where an episode starts (``is_init`` ``[*batch, 1]`` over ``[*batch, A, H]``)."""
        return torch.where(is_init.unsqueeze(-1), torch.zeros_like(hidden), hidden)

    def _replay(
        self, gates: torch.Tensor, hidden: torch.Tensor, is_init: torch.Tensor, *, time_dim: int
    ) -> torch.Tensor:
        """Run the cell along ``time_dim`` from the sequence's first stored state, resetting it
        where an episode starts inside the sequence."""
        state = hidden.select(time_dim, 0)
        outputs = []
        for step_gates, step_init in zip(
            gates.unbind(time_dim), is_init.unbind(time_dim), strict=True
        ):
            state = self.cell.step(step_gates, self._reset(state, step_init))
            outputs.append(state)
        return torch.stack(outputs, dim=time_dim)

    def make_tensordict_primer(self) -> TensorDictPrimer:
        """The env transform that gives every reset a zero hidden state (and declares the key in
        the observation spec, so the env carries ``("next", group, "rnn_hidden")`` to the next
        step): TorchRL's ``GRUModule.make_tensordict_primer``."""
        state = Unbounded(shape=(self.cell.n_agents, self.cell.hidden_size))
        return TensorDictPrimer(
            Composite({self.group: Composite({HIDDEN: state}, shape=(self.cell.n_agents,))}),
            expand_specs=True,
            reset_key="_reset",
        )
