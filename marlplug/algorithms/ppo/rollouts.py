"""Joint PPO's :class:`~marlplug.algorithms.protocol.RolloutSource`: on-policy rollouts, per-agent GAE,
epochs of shuffled minibatches.

Every iteration is a function of (weights, seed, iteration index): the env, the sampling and the
minibatch permutation are reseeded from ``(seed, iteration)``, so a run resumed from a checkpoint
continues bit-identically. The program's loss holds the networks the collector acts with and the
critic GAE reads; :meth:`PpoRollouts.sync` writes the latest state into them. The joint trainer
(:class:`marlplug.train.JointMultiAgentTrainer`) runs :meth:`PpoRollouts.collect` and
:meth:`PpoRollouts.minibatches` itself.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from tensordict import TensorDictBase
from torchrl.collectors import Collector
from torchrl.envs import EnvBase

from marlplug.algorithms.ppo.iteration import PpoSchedule, attach
from marlplug.envs.layout import read_layout
from marlplug.envs.transformed import with_policy_transforms
from marlplug.errors import UserError
from marlplug.losses.joint_ppo import JointPPOLoss
from marlplug.losses.ppo_keys import in_group
from marlplug.nn.actor_critic import OBSERVATION
from marlplug.nn.obs_norm import ObservationNormalizer, observation_normalizers
from marlplug.seeding import derive_seed


@dataclass(frozen=True)
class MinibatchPlan:
    """How an iteration's rollout is cut into minibatches (``train:`` fields)."""

    n_epochs: int = 4
    minibatch_size: int = 64
    iterate_all_minibatches: bool = True
    max_minibatches_per_epoch: int | None = None
    #: A recurrent policy's sequences: minibatches of whole ``[sequences, sequence_length]``
    #: chunks of the rollout (``minibatch_size // sequence_length`` of them, at least one)
    #: instead of single steps; ``None``: single steps.
    sequence_length: int | None = None


def episode_returns(rollout: TensorDictBase, groups: list[str]) -> torch.Tensor:
    """Returns of the episodes that finished inside ``rollout`` (mean over agents of their returns).

    Batched over env copies (no Python loop over envs or episodes): a running sum along time per
    copy, read at every ``done`` step, minus the copy's previous read. Episodes come env-major,
    then in time order; the last dimension of the rollout must be time.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> reward = torch.arange(1.0, 7.0).reshape(2, 3, 1, 1)  # 2 envs, 3 steps, 1 agent
        >>> done = torch.tensor([[False, True, True], [False, False, False]]).unsqueeze(-1)
        >>> rollout = TensorDict({("next", "agent", "reward"): reward, ("next", "done"): done},
        ...                      batch_size=[2, 3])
        >>> episode_returns(rollout, ["agent"]).tolist()
        [3.0, 3.0]
    """
    rewards = torch.cat(
        [
            rollout.get(("next", group, "reward")).flatten(len(rollout.batch_size))
            for group in groups
        ],
        dim=-1,
    ).mean(-1)
    done = rollout.get(("next", "done")).reshape(rewards.shape)
    rewards = rewards.reshape(-1, rewards.shape[-1])  # [envs, T]
    done = done.reshape(-1, done.shape[-1])
    running = torch.cumsum(rewards, dim=1)
    env_index, step = torch.nonzero(done, as_tuple=True)  # row-major: env, then time
    at_end = running[env_index, step]
    previous = torch.zeros_like(at_end)
    if at_end.numel() > 1:
        same_env = env_index[1:] == env_index[:-1]
        previous[1:] = torch.where(same_env, at_end[:-1], previous[1:])
    return at_end - previous


class PpoRollouts:
    """Collects ``rollout_steps`` steps (per env copy) with the program's policy, computes per-agent
    GAE with its critics, and yields ``n_epochs`` of shuffled minibatches.

    Args:
        env: the TorchRL multi-agent env (batched over ``num_envs`` copies or not).
        loss: the joint loss (with its value estimator); its critics give GAE.
        policy: the policy module the collector runs (sharing the loss's actor weights).
        seed: the run's seed.
        rollout_steps: env steps per copy in one rollout.
        plan: how the rollout is cut into minibatches.
        load: writes ``theta`` rows into the loss's networks (:meth:`PpoProgram.load`), for
            :meth:`sync`.
        schedule: the learning-rate and entropy-coefficient schedules, written into every
            minibatch (:mod:`marlplug.algorithms.ppo.iteration`); ``None``: constants.

    Examples:
        >>> from marlplug import load_config
        >>> from marlplug.algorithms.ppo import PPO
        >>> from marlplug.envs import make_env
        >>> config = load_config(data={"env": {"name": "cooperative_navigation", "agents": 2},
        ...     "algorithm": {"name": "ppo", "hidden_size": 8, "feature_dim": 4},
        ...     "losses": [{"name": "clip_ppo"}],
        ...     "train": {"rollout_steps": 20, "minibatch_size": 10, "n_epochs": 1,
        ...               "iterate_all_minibatches": True}})
        >>> env = make_env("cooperative_navigation", agents=2, seed=0)
        >>> algorithm = PPO(hidden_size=8, feature_dim=4)
        >>> program = algorithm.bind(env, config)
        >>> source = algorithm.rollouts(env, program, config)
        >>> theta, _ = program.init_state(config.seed)
        >>> [batch.batch_size[0] for batch in source.batches(theta, 0)]
        [10, 10]
        >>> source.close()
    """

    def __init__(
        self,
        env: EnvBase,
        loss: JointPPOLoss,
        policy: Any,
        *,
        seed: int,
        rollout_steps: int,
        plan: MinibatchPlan,
        load: Callable[[torch.Tensor], None] | None = None,
        schedule: PpoSchedule | None = None,
    ) -> None:
        self.env = env
        self.loss = loss
        self.schedule = schedule
        #: group -> the observation normalizers of its actor and critic (empty without obs_norm).
        self._normalizers: dict[str, list[ObservationNormalizer]] = {
            group: observation_normalizers(loss.actor_networks[group])
            + observation_normalizers(loss.critic_networks[group])
            for group in loss.groups
        }
        self._load = load
        self.seed = seed
        self.plan = plan
        self.frames = 0
        self.last_rollout: TensorDictBase | None = None
        self.collect_s = 0.0
        self._pending: torch.Tensor | None = None
        copies = max(1, env.batch_size.numel())
        self.num_agents = read_layout(env).num_agents
        # A recurrent policy's hidden state travels in the tensordict: the env carries it from
        # step to step, zeroes it at every reset and marks episode starts (is_init).
        env = with_policy_transforms(env, policy)
        self.collector = Collector(
            env,
            policy,
            frames_per_batch=rollout_steps * copies,
            total_frames=-1,
            auto_register_policy_transforms=False,
        )
        self._batches = iter(self.collector)

    # ------------------------------------------------------------------ the two halves

    def collect(self, iteration: int) -> TensorDictBase:
        """One rollout from a freshly seeded env reset (seeded from ``(seed, iteration)``)."""
        start = time.perf_counter()
        rollout_seed = derive_seed(self.seed, iteration)
        self.env.set_seed(rollout_seed)
        torch.manual_seed(rollout_seed)
        self.collector.reset()
        rollout = next(self._batches)
        self.frames += rollout.numel()
        self.last_rollout = rollout
        self.collect_s = time.perf_counter() - start
        return rollout

    def minibatches(
        self, rollout: TensorDictBase, iteration: int
    ) -> Iterator[tuple[TensorDictBase, int]]:
        """Per-agent GAE on ``rollout`` (critics at the loss's current weights), then ``(minibatch,
        loss seed)`` for every step of ``n_epochs`` epochs, both drawn from ``(seed, iteration)``.

        With observation normalization the rollout's observations are first folded into the
        statistics (so GAE and every round of the iteration read the same ones); each minibatch
        carries them and the schedules' values for ``iteration``
        (:mod:`marlplug.algorithms.ppo.iteration`).
        """
        stats = self._fold_observations(rollout)
        scalars = {} if self.schedule is None else self.schedule.values(iteration)
        with torch.no_grad():
            self.loss.value_estimator(rollout)
        # The loss reads only the step's own entries (GAE has written advantages and value
        # targets): gathering "next" and the collector's bookkeeping into every minibatch would
        # roughly double the copy per minibatch for nothing.
        rows = self._rows(rollout.exclude("next", "collector"))
        generator = torch.Generator().manual_seed(derive_seed(self.seed, iteration, 1))
        for epoch in range(self.plan.n_epochs):
            for step, indices in enumerate(self._indices(rows.shape[0], generator)):
                minibatch = attach(rows[indices], scalars, stats)
                yield minibatch, derive_seed(self.seed, iteration, 2, epoch, step)

    def _fold_observations(self, rollout: TensorDictBase) -> dict[str, torch.Tensor]:
        """Fold ``rollout``'s observations into every normalizer of the loss (the actor's and the
        critic's of a group get the same statistics); group -> the new statistics. Where a group
        has the loss's dead-agent ``mask``, only the rows of agents in play count."""
        stats = {}
        for group, normalizers in self._normalizers.items():
            if not normalizers:
                continue
            observations = rollout.get((group, OBSERVATION))
            alive = rollout.get(in_group(self.loss.tensor_keys.mask, group, self.loss.groups), None)
            for normalizer in normalizers:
                normalizer.update(observations, alive)
            stats[group] = normalizers[0].stats.detach().clone()
        return stats

    def _rows(self, rollout: TensorDictBase) -> TensorDictBase:
        """What minibatches are drawn from: ``[steps]`` single steps, or with a
        ``sequence_length`` ``[sequences, sequence_length]`` chunks of each env copy's time axis
        (in time order, each with the hidden state stored at its first step)."""
        length = self.plan.sequence_length
        if length is None:
            return rollout.reshape(-1)
        steps = rollout.batch_size[-1]
        if steps % length:
            raise UserError(
                f"algorithm.sequence_length: {length} does not divide the rollout's {steps} "
                f"steps (train.rollout_steps); choose a divisor of {steps}"
            )
        return rollout.reshape(-1, steps // length, length).reshape(-1, length)

    def _indices(self, rows: int, generator: torch.Generator) -> list[torch.Tensor]:
        if self.plan.sequence_length is not None:  # rows are sequences: a minibatch of steps
            size = min(max(1, self.plan.minibatch_size // self.plan.sequence_length), rows)
        else:
            size = min(self.plan.minibatch_size, rows)
        order = torch.randperm(rows, generator=generator)
        if not self.plan.iterate_all_minibatches:
            return [order[:size]]
        chunks = list(order.split(size))
        if self.plan.max_minibatches_per_epoch is not None:
            chunks = chunks[: self.plan.max_minibatches_per_epoch]
        return chunks

    # ------------------------------------------------------------------ RolloutSource

    def batches(self, theta_all: torch.Tensor, iteration: int) -> Iterator[TensorDictBase]:
        """Act with ``theta_all``'s policies for one rollout and yield its minibatches."""
        self.sync(theta_all)
        self._load_pending()
        for minibatch, _ in self.minibatches(self.collect(iteration), iteration):
            yield minibatch

    def sync(self, theta_all: torch.Tensor) -> None:
        """Take the state after a round; the networks read it when the next rollout starts (they
        are not used between two minibatches, so nothing is copied per round)."""
        if self._load is None:
            raise UserError("PpoRollouts.sync: built without a program to load rows with")
        self._pending = theta_all

    def _load_pending(self) -> None:
        if self._pending is not None and self._load is not None:
            self._load(self._pending)
            self._pending = None

    def iteration_stats(self) -> Mapping[str, Any]:
        """``env_steps`` (frames) so far, the mean team return (summed over agents) of the episodes
        that ended in the last rollout (NaN: none did) and the rollout's ``collect_s``."""
        episode_return = math.nan
        if self.last_rollout is not None:
            returns = episode_returns(self.last_rollout, list(self.loss.groups))
            if returns.numel():
                episode_return = float(returns.mean()) * self.num_agents
        return {
            "env_steps": self.frames,
            "episode_return": episode_return,
            "collect_s": self.collect_s,
        }

    def state_dict(self) -> dict[str, Any]:
        """The frame count: every rollout is reseeded from ``(seed, iteration)``."""
        return {"frames": self.frames}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from :meth:`state_dict`'s output."""
        self.frames = int(state["frames"])

    def close(self, *, close_env: bool = True) -> None:
        """Stop the collector (and the env with it, unless ``close_env`` is false)."""
        self.collector.shutdown(close_env=close_env)
