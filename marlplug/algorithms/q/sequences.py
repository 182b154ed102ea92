"""Replay of sequences for the recurrent Q-learners (``algorithm.recurrent: gru``), the DRQN/R2D2
way in its simplest correct form: :class:`SequenceCollector` acts with the GRU's state carried from
step to step (zero where an episode starts) and stores each env copy's steps as fixed-length chunks
of ``sequence_length`` consecutive steps, with the state the policy held at the chunk's first step
(R2D2's stored state) and ``is_init`` where an episode starts inside the chunk.

Why chunks, not whole episodes: an episode ends at ``episode_length`` or earlier (LBF's episodes
end when the food is gone), and a chunk does not care: an episode start inside a chunk zeroes the
replayed state there, so every stored step is a valid transition and nothing is masked or padded.
With ``sequence_length`` equal to ``episode_length`` (both 25 by default) a chunk is one whole
MPE episode and its stored state is zero. The update replays each chunk from its stored state with
the online and the target network alike (:meth:`~marlplug.algorithms.q.program.QProgram.update`).
"""

from __future__ import annotations

from typing import Any, Protocol

import torch
from tensordict import TensorDict
from torchrl.data import LazyTensorStorage, ReplayBuffer
from torchrl.envs import EnvBase

from marlplug.algorithms.replay import BATCH_KEYS, Acting, ExperienceCollector


class RecurrentActing(Acting, Protocol):
    """A recurrent program's acting (:class:`~marlplug.algorithms.q.program.QProgram`'s)."""

    def act_recurrent(
        self,
        theta_all: torch.Tensor,
        obs: torch.Tensor,
        hidden: torch.Tensor,
        *,
        generator: torch.Generator | None = None,
        explore: bool = True,
        action_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]: ...


class SequenceCollector(ExperienceCollector):
    """:class:`~marlplug.algorithms.replay.ExperienceCollector` for a recurrent program: the
    buffer holds chunks ``[L]`` of steps (a chunk is stored once its last step is taken, so one may
    span two iterations) (``obs``, ``action``, ``reward``, ``next_obs``,
    ``terminated``, ``is_init``, and ``next_action_mask`` where the env masks actions) and each
    chunk's first ``hidden`` state ``[M, H]``; :meth:`sample` draws ``minibatch_size / L`` chunks.

    Args:
        env: the TorchRL multi-agent env.
        program: the bound recurrent program (:class:`RecurrentActing`).
        seed: seeds the env and the exploration noise.

    Examples:
        >>> from marlplug.algorithms.q import IQL
        >>> from marlplug.envs import make_env
        >>> env = make_env("cooperative_navigation", agents=2, seed=0)
        >>> program = IQL(recurrent="gru", sequence_length=5, steps_per_iteration=10,
        ...               hidden_sizes=[8], recurrent_hidden_size=4).bind(env)
        >>> collector = SequenceCollector(env, program, seed=0)
        >>> collector.collect(program.init_state(0)[0], steps=10)
        >>> len(collector.buffer), collector.buffer.storage[0]["obs"].shape  # 2 chunks of 5 steps
        (2, torch.Size([5, 2, 12]))
    """

    def __init__(self, env: EnvBase, program: RecurrentActing, *, seed: int) -> None:
        super().__init__(env, program, seed=seed)
        self.acting: RecurrentActing = program
        options: Any = program.options
        self.length: int = options.sequence_length
        self.chunks_per_minibatch: int = options.chunks(options.minibatch_size)
        self.buffer = ReplayBuffer(
            storage=LazyTensorStorage(options.chunks(options.buffer_size)),
            batch_size=self.chunks_per_minibatch,
        )
        copies, agents = self.adapter.num_envs, len(program.agents)
        #: The state the policy carries into the next step, per env copy ``[E, M, H]``.
        self.hidden = torch.zeros(copies, agents, options.recurrent_hidden_size)
        #: Which env copies start an episode at the next step (every copy at first).
        self.is_init = torch.ones(copies, dtype=torch.bool)
        #: Per key, the steps (``[E, ...]`` each) not yet in a whole chunk.
        self._pending: dict[str, list[torch.Tensor]] = {}

    def _step(self, env_actions: torch.Tensor) -> tuple[Any, torch.Tensor]:
        following, done = super()._step(env_actions)
        self.is_init = done.clone()  # a copy done now starts its next episode at the next step
        return following, done

    def _collect(self, theta_all: torch.Tensor, steps: int) -> None:
        adapter = self.adapter
        columns = self._pending

        def keep(key: str, value: torch.Tensor) -> None:
            columns.setdefault(key, []).append(value)

        for _ in range(steps):
            obs = adapter.observations(self._td)
            masks = {"action_mask": adapter.action_masks(self._td)} if self.masked else {}
            # The policy's state at this step: zero where an episode starts.
            hidden = self.hidden.masked_fill(self.is_init.reshape(-1, 1, 1), 0.0)
            keep("hidden", hidden)
            keep("is_init", self.is_init)
            actions, self.hidden = self.acting.act_recurrent(
                theta_all, obs, hidden, generator=self.generator, explore=True, **masks
            )
            following, done = self._step(self.program.env_scale(actions))
            reward = adapter.rewards(following)
            for key, value in zip(
                BATCH_KEYS,
                (
                    obs,
                    actions,
                    reward,
                    adapter.observations(following),
                    adapter.terminated(following),
                ),
                strict=True,
            ):
                keep(key, value)
            if self.masked:
                keep("next_action_mask", adapter.action_masks(following))
            self._running_return += reward.sum(-1)
            for env_index in torch.nonzero(done).flatten().tolist():
                self.episode_returns.append(float(self._running_return[env_index]))
                self._running_return[env_index] = 0.0
        # Whole chunks go to the buffer; the steps after the last one wait for the next call.
        whole = len(columns.get("obs", [])) // self.length * self.length
        if whole:
            self.buffer.extend(self._chunks({k: v[:whole] for k, v in columns.items()}))
        self._pending = {k: v[whole:] for k, v in columns.items()}

    def _chunks(self, columns: dict[str, list[torch.Tensor]]) -> TensorDict:
        """The collected steps (per key, one ``[E, ...]`` tensor per step) cut into each env
        copy's chunks: ``[steps / L * E]`` chunks of ``[L, ...]``, the first state ``[M, H]``."""
        chunked = {}
        for key, parts in columns.items():
            stacked = torch.stack(parts)  # [T, E, ...]
            per_chunk = stacked.reshape(-1, self.length, *stacked.shape[1:])  # [T/L, L, E, ...]
            chunked[key] = per_chunk.movedim(2, 1).flatten(0, 1)  # [T/L * E, L, ...]
        chunked["hidden"] = chunked["hidden"][:, 0]  # only the first step's state is replayed
        return TensorDict(chunked, batch_size=[chunked["obs"].shape[0]])

    def ready(self) -> bool:
        """Whether the buffer's chunks hold enough steps to start learning."""
        return len(self.buffer) * self.length >= self.learning_gate()[0]

    def first_learning_iteration(self) -> int | None:
        """The iteration (1-based) after which the buffer's whole chunks hold enough steps (a
        chunk is stored once its last step is taken); ``None`` when they never can."""
        needed, _ = self.learning_gate()
        capacity = self.buffer.storage.max_size * self.length
        if capacity < needed:
            return None
        chunks_per_copy = -(-needed // (self.length * self.adapter.num_envs))
        steps = self.program.options.steps_per_iteration
        return -(-chunks_per_copy * self.length // steps)

    def sample(self, generator: torch.Generator) -> TensorDict:
        """A minibatch of ``minibatch_size / L`` chunks, drawn uniformly with ``generator``."""
        indices = torch.randint(len(self.buffer), (self.chunks_per_minibatch,), generator=generator)
        batch = self.buffer.storage[indices]
        assert isinstance(batch, TensorDict)
        return batch

    def state_dict(self) -> dict[str, Any]:
        """:class:`ExperienceCollector`'s state and the carried hidden state."""
        return {
            **super().state_dict(),
            "hidden": self.hidden.clone(),
            "is_init": self.is_init.clone(),
            "pending": {k: torch.stack(v) for k, v in self._pending.items() if v},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`'s output (the carried state after the env's replay)."""
        super().load_state_dict(state)
        self.hidden = state["hidden"].clone()
        self.is_init = state["is_init"].clone()
        self._pending = {k: list(v.unbind(0)) for k, v in state["pending"].items()}
