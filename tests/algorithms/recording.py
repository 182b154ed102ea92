"""A policy wrapper for tests of recurrent policies: it records the hidden state it is handed."""

from __future__ import annotations

import torch
from tensordict import NestedKey, TensorDictBase
from tensordict.nn import TensorDictModuleBase

#: Where one group's ("agent") recurrent state lives in a step's tensordict.
HIDDEN_KEY = ("agent", "rnn_hidden")


class Recording(TensorDictModuleBase):
    """The policy, recording the hidden state it is handed at every step (a module, so the env
    is given the policy's primers through it)."""

    def __init__(self, policy: TensorDictModuleBase) -> None:
        super().__init__()
        self.policy = policy
        self.in_keys: list[NestedKey] = list(policy.in_keys)
        self.out_keys: list[NestedKey] = list(policy.out_keys)
        self.seen: list[torch.Tensor | None] = []

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        hidden = tensordict.get(HIDDEN_KEY, None)
        self.seen.append(None if hidden is None else hidden.clone())
        return self.policy(tensordict)
