"""How a Q-learner acts (:class:`QActing`, :class:`~marlplug.algorithms.q.program.QProgram`'s
acting half): Q-values of an MLP or a GRU Q-network (:mod:`~marlplug.algorithms.q.recurrent`) from
``theta`` rows, epsilon-greedy among the valid actions, and a recurrent program's tensordict policy
(:mod:`~marlplug.algorithms.q.recurrent_policy`) for evaluation."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from marlplug.algorithms.q.recurrent import RecurrentQNetwork
from marlplug.algorithms.q.recurrent_policy import RecurrentQPolicy
from marlplug.envs.flat import MultiAgentEnvAdapter
from marlplug.nn.functional import stacked_mlp

if TYPE_CHECKING:
    from marlplug.algorithms.q.options import QOptions
    from marlplug.algorithms.state_codec import StateCodec


class QActing:
    """The acting methods of :class:`~marlplug.algorithms.q.program.QProgram`, over the
    attributes it sets up (declared here)."""

    #: The replay collector and evaluation pass the env's ``action_mask`` to :meth:`act`.
    reads_action_mask = True

    options: QOptions
    num_agents: int
    theta_codec: StateCodec
    theta_size: int
    action_dim: int
    #: ``[M, A]`` which (padded) actions each agent has.
    action_mask: torch.Tensor
    #: The GRU Q-network (``algorithm.recurrent: gru``), ``None`` for the MLP.
    recurrent: RecurrentQNetwork | None
    #: A recurrent program's tensordict policy (its state carried by the env), set by
    #: :meth:`attach_policy`; ``None``: the program acts through :meth:`act`.
    policy: RecurrentQPolicy | None
    _names: list[str]

    def q_values(self, theta_all: torch.Tensor, obs: torch.Tensor) -> torch.Tensor:
        """Every agent's Q-values ``[E, M, A]`` for observations ``[E, M, O]`` (padded actions
        included; ``theta_all`` columns after ``P`` are ignored). MLP Q-networks only: a
        recurrent one reads its state too (:meth:`recurrent_q_values`)."""
        if self.recurrent is not None:
            raise ValueError("a recurrent Q-network acts from its state: use act_recurrent")
        state = self.theta_codec.unflatten(theta_all[:, : self.theta_size])
        return stacked_mlp(obs.transpose(0, 1), [state[n] for n in self._names]).transpose(0, 1)

    def recurrent_q_values(
        self, theta_all: torch.Tensor, obs: torch.Tensor, hidden: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """A recurrent program's Q-values ``[E, M, A]`` and next state ``[E, M, H]`` for
        observations ``[E, M, O]`` from the state ``hidden`` ``[E, M, H]`` (zero at an episode's
        first step: the caller resets it)."""
        assert self.recurrent is not None
        state = self.theta_codec.unflatten(theta_all[:, : self.theta_size])
        q, new_hidden = self.recurrent.step(
            [state[n] for n in self._names], obs.transpose(0, 1), hidden.transpose(0, 1)
        )
        return q.transpose(0, 1), new_hidden.transpose(0, 1)

    def act(
        self,
        theta_all: torch.Tensor,
        obs: torch.Tensor,
        *,
        generator: torch.Generator | None = None,
        explore: bool = True,
        epsilon: float | None = None,
        action_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """One-hot actions ``[E, M, A]``: greedy in the Q-values, or with probability ``epsilon``
        (default ``epsilon_end``; each agent and env copy on its own) a uniformly random valid one;
        valid: not padding, and allowed by the env's ``action_mask`` ``[E, M, A]`` where given.

        Exploring always draws the same amount of random numbers, so the stream does not depend
        on ``epsilon``."""
        with torch.no_grad():
            q = self.q_values(theta_all, obs)
        return self._choose(q, generator, explore, epsilon, action_mask)

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
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`act` for a recurrent program: the actions and the next state ``[E, M, H]``, from
        the state ``hidden`` (see :meth:`recurrent_q_values`)."""
        with torch.no_grad():
            q, new_hidden = self.recurrent_q_values(theta_all, obs, hidden)
        return self._choose(q, generator, explore, epsilon, action_mask), new_hidden

    def _choose(
        self,
        q: torch.Tensor,
        generator: torch.Generator | None,
        explore: bool,
        epsilon: float | None,
        action_mask: torch.Tensor | None,
    ) -> torch.Tensor:
        """One-hot epsilon-greedy actions among the valid ones, from Q-values ``[E, M, A]``."""
        mask = self.action_mask.unsqueeze(0)
        if action_mask is not None:
            mask = mask & action_mask.to(torch.bool)
        choice = q.masked_fill(~mask, -torch.inf).argmax(-1)
        if explore:
            rate = self.options.epsilon_end if epsilon is None else epsilon
            noise = torch.rand((*choice.shape, self.action_dim), generator=generator)
            coin = torch.rand(choice.shape, generator=generator) < rate
            random_choice = noise.masked_fill(~mask, -1.0).argmax(-1)
            choice = torch.where(coin, random_choice, choice)
        return torch.nn.functional.one_hot(choice, self.action_dim).to(q.dtype)

    def attach_policy(self, adapter: MultiAgentEnvAdapter) -> None:
        """Give a recurrent program its tensordict policy for ``adapter``'s env (what evaluation
        acts with: its state carried in the tensordict); nothing for an MLP program."""
        if self.recurrent is not None:
            self.policy = RecurrentQPolicy(self, adapter)

    def load(self, theta: torch.Tensor) -> None:
        """Act with ``theta``'s rows through :attr:`policy` (a recurrent program's)."""
        if self.policy is not None:
            self.policy.theta = theta

    def env_scale(self, actions: torch.Tensor) -> torch.Tensor:
        """The env's actions: the one-hot actions as they are (discrete only)."""
        return actions
