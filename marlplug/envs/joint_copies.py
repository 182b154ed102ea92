"""Copies of a :class:`~marlplug.envs.JointEnv` as one batched TorchRL env, stepped one after the
other in this process: the episodes of TorchRL's ``SerialEnv`` over :class:`JointEnvWrapper` copies,
at a fraction of its cost.

For a small simulator TorchRL's per-step bookkeeping is most of the time: on LBF 8x8, one copy's
``step_and_maybe_reset`` took about 0.55 ms against 0.08 ms for LBF's own step (2-core Intel Xeon,
family 6, model 167). ``SerialEnv`` pays it once per copy and once more for the batch;
:class:`JointEnvCopies` pays it once for the batch and only steps the joint envs one by one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import torch
from tensordict import TensorDict, TensorDictBase
from torchrl.envs import EnvBase

from marlplug.envs.joint import JointEnvWrapper, Observed, Stepped, episode_flags


class JointEnvCopies(EnvBase):
    """``len(copies)`` :class:`JointEnvWrapper` copies as one env of batch size ``[len(copies)]``.

    The keys and specs are the copies' with a leading copy dimension. ``set_seed(s)`` seeds copy
    ``k`` as ``SerialEnv`` does (with the seed copy ``k - 1``'s ``set_seed`` returned), and a reset
    with a ``_reset`` mask (TorchRL's partial reset, as ``step_and_maybe_reset`` sends) resets only
    the copies it marks: for the same seed and actions the two give the same transitions.

    Args:
        copies: the copies, all of one env's layout (the first one's specs are used).

    Examples:
        >>> from marlplug.envs.joint import JointEnvWrapper, JointStepResult
        >>> class Parrot:
        ...     '''Reward 1 for repeating the number you are shown (0, 1 or 2).'''
        ...     num_agents = 2
        ...     def reset(self, seed=None):
        ...         return [torch.zeros(1), torch.full((1,), 2.0)]
        ...     def step(self, actions):
        ...         rewards = [float(a == s) for a, s in zip(actions, (0, 2))]
        ...         return JointStepResult(rewards, done=True, observations=self.reset())
        >>> env = JointEnvCopies([JointEnvWrapper(Parrot(), n_actions=3) for _ in range(3)])
        >>> td = env.reset()
        >>> td["agent", "action"] = torch.tensor([[0, 2], [1, 2], [0, 0]])
        >>> env.step(td)["next", "agent", "reward"].squeeze(-1).tolist()
        [[1.0, 1.0], [0.0, 1.0], [1.0, 0.0]]
    """

    def __init__(self, copies: Sequence[JointEnvWrapper]) -> None:
        if not copies:
            raise ValueError("JointEnvCopies needs at least one copy")
        first = copies[0]
        super().__init__(batch_size=torch.Size([len(copies)]), device=first.device)
        self.copies = list(copies)
        self._last: list[Stepped | None] = [None] * len(copies)
        self.group_map = {group: list(agents) for group, agents in first.group_map.items()}
        (self._group,) = self.group_map
        self._n_agents = len(self.group_map[self._group])
        n = len(copies)
        self.observation_spec = first.observation_spec.expand(n)
        self.action_spec = first.action_spec.expand(n)
        self.reward_spec = first.reward_spec.expand(n)
        self.done_spec = first.done_spec.expand(n)

    def set_seed(self, seed: int | None = None, static_seed: bool = False) -> int | None:
        """Seed copy ``k`` with the seed copy ``k - 1``'s ``set_seed`` returns (``SerialEnv``'s
        chain); returns the last copy's."""
        for copy in self.copies:
            seed = copy.set_seed(seed, static_seed=static_seed)
        return seed

    def _set_seed(self, seed: int | None) -> None:
        self.set_seed(seed)

    def _copies_to_reset(self, tensordict: TensorDictBase | None) -> list[bool]:
        """Which copies a reset resets: those its ``_reset`` entries mark, else all of them."""
        if tensordict is None:
            return [True] * len(self.copies)
        marks = [tensordict.get(key, None) for key in self.reset_keys]
        present = [mark.reshape(len(self.copies), -1) for mark in marks if mark is not None]
        if not present:
            return [True] * len(self.copies)
        return torch.cat(present, dim=-1).any(-1).tolist()

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: object) -> TensorDictBase:
        # Copies left alone keep zeros here: TorchRL keeps their current entries (the reset mask).
        out = self.full_observation_spec.zero()
        out.update(self.full_done_spec.zero())
        observations = out.get((self._group, "observation"))
        masks = out.get((self._group, "action_mask"), None)
        for k, (copy, reset) in enumerate(
            zip(self.copies, self._copies_to_reset(tensordict), strict=True)
        ):
            if reset:
                observed = copy.reset_joint()
                observations[k] = observed.observations
                if masks is not None and observed.action_mask is not None:
                    masks[k] = observed.action_mask
        return out

    def _step(self, tensordict: TensorDictBase) -> TensorDict:
        actions = tensordict.get((self._group, "action")).unbind(0)
        # A rollout that waits for every copy to finish steps only the unfinished ones (``_step``);
        # the others repeat their last step, as ``SerialEnv``'s buffers do.
        marks = tensordict.get("_step", None)
        stepping = [True] * len(self.copies) if marks is None else marks.reshape(-1).tolist()
        for k, (copy, action, step) in enumerate(zip(self.copies, actions, stepping, strict=True)):
            if step or self._last[k] is None:
                self._last[k] = copy.step_joint(action)
        stepped = cast(list[Stepped], self._last)
        out = self._batch(
            [s.observed for s in stepped],
            done=torch.tensor([s.done for s in stepped]),
            truncated=torch.tensor([s.truncated for s in stepped]),
        )
        out.set((self._group, "reward"), torch.stack([s.rewards for s in stepped]))
        return out

    def _batch(
        self, observed: list[Observed], *, done: torch.Tensor, truncated: torch.Tensor
    ) -> TensorDict:
        """The copies' entries stacked, with their episodes' done flags."""
        n_copies, n_agents = len(self.copies), self._n_agents
        group: dict[str, torch.Tensor] = {
            "observation": torch.stack([o.observations for o in observed])
        }
        if observed[0].action_mask is not None:
            group["action_mask"] = torch.stack([o.action_mask for o in observed])  # type: ignore[misc]
        flags = episode_flags(done, truncated)
        out = TensorDict(
            {key: value.reshape(n_copies, 1) for key, value in flags.items()},
            batch_size=[n_copies],
        )
        for key, value in flags.items():
            group[key] = value.reshape(n_copies, 1, 1).expand(n_copies, n_agents, 1).clone()
        out.set(self._group, TensorDict(group, batch_size=[n_copies, n_agents]))
        return out


__all__ = ["JointEnvCopies"]
