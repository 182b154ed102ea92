"""A recurrent Q-learner's greedy (or epsilon-greedy) policy as a TorchRL tensordict module, so
evaluation, ``marlplug evaluate`` and ``marlplug render`` carry its hidden state as they carry
PPO's GRU actor's: at ``(group, "rnn_hidden")`` in, ``("next", group, "rnn_hidden")`` out, zero at
every reset (:meth:`RecurrentQPolicy.make_tensordict_primer`) and where ``is_init`` marks an
episode start (:func:`~marlplug.envs.transformed.with_policy_transforms` adds both)."""

from __future__ import annotations

from typing import Any, Protocol

import torch
from tensordict import NestedKey, TensorDictBase
from tensordict.nn import TensorDictModuleBase
from torchrl.data import Composite, Unbounded
from torchrl.envs import TensorDictPrimer
from torchrl.envs.utils import ExplorationType, exploration_type

from marlplug.algorithms.q.recurrent import RecurrentQNetwork
from marlplug.envs.flat import MultiAgentEnvAdapter
from marlplug.envs.transformed import IS_INIT
from marlplug.nn.recurrent import HIDDEN


class RecurrentActing(Protocol):
    """What the policy reads of a recurrent program (:class:`~marlplug.algorithms.q.acting.QActing`
    is one); a protocol, so the acting module that builds the policy is not imported back."""

    num_agents: int
    theta_size: int
    recurrent: RecurrentQNetwork | None

    def act_recurrent(
        self,
        theta_all: torch.Tensor,
        obs: torch.Tensor,
        hidden: torch.Tensor,
        *,
        generator: torch.Generator | None = None,
        explore: bool = True,
        epsilon: float | None = None,
        action_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]: ...

    def env_scale(self, actions: torch.Tensor) -> torch.Tensor: ...


class RecurrentQPolicy(TensorDictModuleBase):
    """A recurrent :class:`~marlplug.algorithms.q.program.QProgram` acting with :attr:`theta`'s
    rows: greedy, or epsilon-greedy (``epsilon_end``) under TorchRL's ``RANDOM`` exploration type.

    Args:
        program: the bound recurrent program.
        adapter: the env's flat view (its groups and action format).

    Examples:
        >>> from marlplug.algorithms.q import IQL
        >>> from marlplug.envs import make_env
        >>> from marlplug.envs.evaluate import evaluate
        >>> env = make_env("cooperative_navigation", agents=2, seed=0)
        >>> program = IQL(recurrent="gru", hidden_sizes=[8], recurrent_hidden_size=4).bind(env)
        >>> program.load(program.init_state(0)[0])
        >>> evaluate(env, program.policy, episodes=2).episodes  # the state carried by the env
        2
    """

    def __init__(self, program: RecurrentActing, adapter: MultiAgentEnvAdapter) -> None:
        super().__init__()
        assert program.recurrent is not None
        self.program = program
        self.adapter = adapter
        self.theta = torch.zeros(program.num_agents, program.theta_size)
        self.hidden_size = program.recurrent.hidden_size
        self.groups = [(group.group, group.n_agents) for group in adapter.layout]
        self.in_keys: list[NestedKey] = [(g, "observation") for g, _ in self.groups]
        self.in_keys += [IS_INIT, *((g, HIDDEN) for g, _ in self.groups)]
        self.out_keys: list[NestedKey] = [(g, "action") for g, _ in self.groups]
        self.out_keys += [("next", g, HIDDEN) for g, _ in self.groups]

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        obs = self.adapter.observations(tensordict)  # [E, M, O]
        copies = obs.shape[0]
        parts = []
        for group, n in self.groups:
            stored = tensordict.get((group, HIDDEN), None)  # absent: no primer, a zero state
            shape = (copies, n, self.hidden_size)
            parts.append(obs.new_zeros(shape) if stored is None else stored.reshape(shape))
        hidden = torch.cat(parts, dim=1)
        is_init = tensordict.get(IS_INIT, None)
        if is_init is not None:
            hidden = hidden.masked_fill(is_init.reshape(copies, 1, 1), 0.0)
        masks: dict[str, Any] = {}
        if self.adapter.has_action_mask:
            masks["action_mask"] = self.adapter.action_masks(tensordict)
        actions, new_hidden = self.program.act_recurrent(
            self.theta,
            obs,
            hidden,
            explore=exploration_type() == ExplorationType.RANDOM,
            **masks,
        )
        self.adapter.write_actions(tensordict, self.program.env_scale(actions))
        start = 0
        for group, n in self.groups:
            part = new_hidden[:, start : start + n]
            start += n
            tensordict.set(("next", group, HIDDEN), part.reshape(*tensordict.batch_size, n, -1))
        return tensordict

    def make_tensordict_primer(self) -> TensorDictPrimer:
        """The env transform that gives every reset a zero state per group (and declares the keys,
        so the env carries ``("next", group, "rnn_hidden")`` to the next step)."""
        spec = Composite(
            {
                group: Composite(
                    {HIDDEN: Unbounded(shape=(n, self.hidden_size))}, shape=torch.Size([n])
                )
                for group, n in self.groups
            }
        )
        return TensorDictPrimer(spec, expand_specs=True, reset_key="_reset")
