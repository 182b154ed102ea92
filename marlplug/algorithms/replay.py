"""The off-policy data side: acting in the env with the current actors, a TorchRL replay buffer of
flat transitions, and seeded minibatch sampling (:class:`ExperienceCollector`);
:class:`ReplayRollouts` serves them as a :class:`~marlplug.algorithms.protocol.RolloutSource` to any
program that can act (:class:`Acting`: MADDPG, plugins such as ``linear_iql``)."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import torch
from tensordict import TensorDict, TensorDictBase
from torchrl.data import LazyTensorStorage, ReplayBuffer
from torchrl.envs import EnvBase, StepCounter, TransformedEnv

from marlplug.algorithms.acting import FlatActing
from marlplug.algorithms.spaces import AgentSpace
from marlplug.envs.flat import MultiAgentEnvAdapter
from marlplug.errors import UserError
from marlplug.seeding import derive_seed
from marlplug.torch_threads import one_thread

if TYPE_CHECKING:
    from marlplug.config import MarlplugConfig

#: The keys of one stored step, and so of every replay minibatch (``[B, M, ...]``; the MADDPG, SAC
#: and Q programs' ``update`` read them), plus ``next_action_mask`` where the env writes action masks.
BATCH_KEYS = ("obs", "action", "reward", "next_obs", "terminated")
#: Separate the env's per-episode seeds and the minibatch sampler from every other stream derived
#: from the run's seed.
_EPISODE_SALT = 11
_SAMPLER_SALT = 12


class ReplayOptions(Protocol):
    """The options the replay side reads (:class:`~marlplug.algorithms.maddpg.options.MaddpgOptions`
    has them, and so does any off-policy algorithm's), and optionally ``updates_per_iteration``
    (absent: one update an iteration, see :meth:`ReplayRollouts.batches`)."""

    @property
    def minibatch_size(self) -> int: ...
    @property
    def buffer_size(self) -> int: ...
    @property
    def episode_length(self) -> int: ...
    @property
    def steps_per_iteration(self) -> int: ...
    @property
    def learning_starts(self) -> int: ...


class Acting(FlatActing, Protocol):
    """What the collector needs of a program: its agents, options and (``act``, ``env_scale``) policy."""

    agents: list[AgentSpace]

    @property
    def options(self) -> ReplayOptions: ...


class ExperienceCollector:
    """Steps an env with the current actors and stores ``obs, action, reward, next_obs, terminated``.

    Episodes are cut at ``program.options.episode_length`` steps (a truncation: targets still
    bootstrap). Finished episodes' returns (summed over agents and steps) are kept for logging.

    Every time all env copies have finished an episode, the env is reseeded from ``(seed, episode)``
    before it resets, so the env's state is a function of that seed and the actions taken since. That
    is what makes :meth:`state_dict` small: it keeps those actions instead of the env's internals, and
    :meth:`load_state_dict` replays them.

    Args:
        env: the TorchRL multi-agent env (unbatched or with a batch of parallel copies).
        program: the bound MADDPG program (its agents must match the env's).
        seed: seeds the env and the exploration noise.

    Examples:
        >>> from mpe2 import simple_spread_v3
        >>> from torchrl.envs.libs.pettingzoo import PettingZooWrapper
        >>> from marlplug.algorithms.maddpg import MADDPG
        >>> env = PettingZooWrapper(simple_spread_v3.parallel_env(N=2), categorical_actions=True)
        >>> adapter = MultiAgentEnvAdapter(env)
        >>> program = MADDPG(minibatch_size=4).bind(env)
        >>> collector = ExperienceCollector(env, program, seed=0)
        >>> collector.collect(program.init_state(0)[0], steps=5)
        >>> len(collector.buffer)
        5
    """

    def __init__(self, env: EnvBase, program: Acting, *, seed: int) -> None:
        self.adapter = MultiAgentEnvAdapter(env)
        if [a.name for a in self.adapter.agents] != [a.name for a in program.agents]:
            raise ValueError("the program was bound to different agents than the env has")
        # auto_unwrap as TorchRL does by default (the counter joins a transformed env's own
        # transforms), said explicitly: left unsaid, TorchRL warns at every run on vmas.
        self.env = TransformedEnv(
            env, StepCounter(max_steps=program.options.episode_length), auto_unwrap=True
        )
        self.seed = seed
        self.program = program
        self.generator = torch.Generator().manual_seed(seed)
        self.buffer = ReplayBuffer(
            storage=LazyTensorStorage(program.options.buffer_size),
            batch_size=program.options.minibatch_size,
        )
        self.episode_returns: list[float] = []
        self._running_return = torch.zeros(self.adapter.num_envs)
        self._episode = 0
        self._actions_since_reset: list[torch.Tensor] = []
        self._td = self._seeded_reset()
        # A program that reads the env's action masks (the Q-learners) acts among the valid actions
        # and stores the next step's mask (``next_action_mask``) for its TD target.
        self.masked = getattr(program, "reads_action_mask", False) and self.adapter.has_action_mask

    def _seeded_reset(self) -> TensorDictBase:
        """Reset every env copy from the seed of ``(seed, episode)``; forget the replay log."""
        episode_seed = derive_seed(self.seed, _EPISODE_SALT, self._episode)
        self.env.set_seed(episode_seed)
        self._actions_since_reset = []
        return self.env.reset()

    def _step(self, env_actions: torch.Tensor) -> tuple[TensorDictBase, torch.Tensor]:
        """One env step with env-scaled actions ``[E, M, A]``: the step's ``next`` and its done mask."""
        self.adapter.write_actions(self._td, env_actions)
        stepped, self._td = self.env.step_and_maybe_reset(self._td)
        self._actions_since_reset.append(env_actions)
        following = stepped["next"]
        done = following["done"].reshape(self.adapter.num_envs, -1).any(-1)
        if bool(done.all()):
            self._episode += 1
            self._td = self._seeded_reset()
        return following, done

    def collect(self, theta_all: torch.Tensor, steps: int) -> None:
        """Take ``steps`` env steps (each over every parallel copy) with exploring actors."""
        # Acting works on tensors of a few dozen numbers: a second thread only adds synchronization
        # (measured on the loaded 2-core machine: 13-17 ms per mpe step with one thread, 61-65 with
        # two). The update sets its own single thread (MaddpgProgram.update_seeded).
        with one_thread():
            self._collect(theta_all, steps)

    def _collect(self, theta_all: torch.Tensor, steps: int) -> None:
        adapter = self.adapter
        transitions = []
        for _ in range(steps):
            obs = adapter.observations(self._td)
            masks = {"action_mask": adapter.action_masks(self._td)} if self.masked else {}
            actions = self.program.act(
                theta_all, obs, generator=self.generator, explore=True, **masks
            )
            following, done = self._step(self.program.env_scale(actions))
            reward = adapter.rewards(following)
            transition = [
                obs,
                actions,
                reward,
                adapter.observations(following),
                adapter.terminated(following),
            ]
            if self.masked:
                transition.append(adapter.action_masks(following))
            transitions.append(transition)
            self._running_return += reward.sum(-1)
            for env_index in torch.nonzero(done).flatten().tolist():
                self.episode_returns.append(float(self._running_return[env_index]))
                self._running_return[env_index] = 0.0
        if transitions:
            # One write per call: the buffer's per-call overhead is larger than an MPE step.
            columns = [torch.cat(parts) for parts in zip(*transitions, strict=True)]
            self.buffer.extend(
                TensorDict(
                    dict(
                        zip(
                            BATCH_KEYS + (("next_action_mask",) if self.masked else ()),
                            columns,
                            strict=True,
                        )
                    ),
                    batch_size=[columns[0].shape[0]],
                )
            )

    def learning_gate(self) -> tuple[int, str]:
        """The transitions the buffer must hold before learning starts, and the option that sets
        that number (``learning_starts`` or, when larger, ``minibatch_size``)."""
        options = self.program.options
        if options.learning_starts >= options.minibatch_size:
            return options.learning_starts, "learning_starts"
        return options.minibatch_size, "minibatch_size"

    def first_learning_iteration(self) -> int | None:
        """The iteration (1-based) whose collection fills the buffer enough to learn, if any
        (``None``: the buffer is smaller than the gate); each iteration adds
        ``steps_per_iteration`` transitions per env copy."""
        needed, _ = self.learning_gate()
        if self.program.options.buffer_size < needed:
            return None
        per_iteration = self.program.options.steps_per_iteration * self.adapter.num_envs
        return -(-needed // per_iteration)

    def ready(self) -> bool:
        """Whether the buffer holds enough transitions to start learning."""
        return len(self.buffer) >= self.learning_gate()[0]

    def sample(self, generator: torch.Generator) -> TensorDict:
        """A minibatch of ``minibatch_size`` transitions, drawn uniformly with ``generator``."""
        size = self.program.options.minibatch_size
        indices = torch.randint(len(self.buffer), (size,), generator=generator)
        batch = self.buffer.storage[indices]
        assert isinstance(batch, TensorDict)
        return batch

    # ------------------------------------------------------------------ checkpoints

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue collecting bit-identically: the stored transitions (only the
        filled rows, not the buffer's full capacity), the writer's cursor, the exploration generator,
        the episode counter, the actions since the last seeded reset and the running returns."""
        filled = len(self.buffer)
        rows = self.buffer.storage[torch.arange(filled)] if filled else None
        return {
            # Plain tensors, not a TensorDict: checkpoints hold plain data only (weights_only load).
            "transitions": None if rows is None else rows.to_dict(),
            "writer": self.buffer.writer.state_dict(),
            "generator": self.generator.get_state(),
            "episode": self._episode,
            "actions_since_reset": list(self._actions_since_reset),
            "running_return": self._running_return.clone(),
            "episode_returns": list(self.episode_returns),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`'s output: refill the buffer and replay the env to where it was."""
        if state["transitions"] is not None:
            columns = dict(state["transitions"])
            rows = len(next(iter(columns.values())))
            self.buffer.extend(TensorDict(columns, batch_size=[rows]))
        self.buffer.writer.load_state_dict(state["writer"])
        self._episode = int(state["episode"])
        self._td = self._seeded_reset()
        for env_actions in state["actions_since_reset"]:
            self._step(env_actions)
        self.generator.set_state(state["generator"])
        self._running_return = state["running_return"].clone()
        self.episode_returns = list(state["episode_returns"])


class ReplayRollouts:
    """Off-policy minibatches: per iteration, ``steps_per_iteration`` env steps with the current
    actors into the replay buffer, then ``updates_per_iteration`` seeded minibatches (each one
    update round: one update of every agent) once the buffer holds enough transitions.

    Each minibatch is drawn when the loop asks for it, after the previous round: the sampler's
    stream is the same whatever the rounds do, and a checkpoint (between iterations) holds it.

    Args:
        env: the env (batched over ``train.num_envs`` copies, or a single one).
        program: the bound program (its agents must match the env's).
        config: the run's config (``seed``; ``train.num_envs``).

    Examples:
        >>> from marlplug import load_config
        >>> from marlplug.algorithms.maddpg import MADDPG
        >>> from marlplug.envs import make_env
        >>> config = load_config(data={"algorithm": {"name": "maddpg", "minibatch_size": 4,
        ...                                          "learning_starts": 8, "steps_per_iteration": 5}})
        >>> env = make_env("cooperative_navigation", agents=2, seed=0)
        >>> algorithm = MADDPG(**config.algorithm.options.model_dump())
        >>> program = algorithm.bind(env, config)
        >>> source = algorithm.rollouts(env, program, config)
        >>> theta, _ = program.init_state(0)
        >>> [len(list(source.batches(theta, i))) for i in range(3)]
        [0, 1, 1]
        >>> algorithm = MADDPG(**{**config.algorithm.options.model_dump(), "updates_per_iteration": 3})
        >>> source = algorithm.rollouts(env, algorithm.bind(env, config), config)
        >>> [len(list(source.batches(theta, i))) for i in range(3)]
        [0, 3, 3]
    """

    #: What collects and samples (a subclass may store other items, e.g. sequences).
    collector_class: type[ExperienceCollector] = ExperienceCollector

    def __init__(self, env: EnvBase, program: Acting, config: MarlplugConfig) -> None:
        copies = MultiAgentEnvAdapter(env).num_envs
        wanted = config.train.num_envs
        if wanted > 1 and copies != wanted:
            raise UserError(
                f"train.num_envs: {wanted} env copies asked, but the env '{config.env.name}' runs "
                f"{copies}; use a batched env backend (env.backend: vmas) or train.num_envs: 1"
            )
        self.env = env
        self.program = program
        self.collector = self.collector_class(env, program, seed=config.seed)
        self.sampler = torch.Generator().manual_seed(derive_seed(config.seed, _SAMPLER_SALT))
        self.env_steps = 0
        self._stats: dict[str, Any] = {}

    def batches(self, theta_all: torch.Tensor, iteration: int) -> Iterator[TensorDictBase]:
        """Collect this iteration's steps with ``theta_all``'s actors; yield
        ``updates_per_iteration`` minibatches once the buffer is ready (``learning_starts``)."""
        del iteration  # the collector and the sampler carry their own streams
        # A plugin's options written before the option (the example linear_iql's) update once an
        # iteration, as every replay-based algorithm did then.
        updates = getattr(self.program.options, "updates_per_iteration", 1)
        seen = len(self.collector.episode_returns)
        start = time.perf_counter()
        self.collector.collect(theta_all, self.program.options.steps_per_iteration)
        self.env_steps += self.program.options.steps_per_iteration * self.collector.adapter.num_envs
        finished = self.collector.episode_returns[seen:]
        self._stats = {
            "env_steps": self.env_steps,
            "episode_return": sum(finished) / len(finished) if finished else math.nan,
            "collect_s": time.perf_counter() - start,
        }
        if self.collector.ready():
            for _ in range(updates):
                yield self.collector.sample(self.sampler)

    def sync(self, theta_all: torch.Tensor) -> None:
        """Nothing to do: the next :meth:`batches` acts with the state it is given."""
        del theta_all

    def iteration_stats(self) -> Mapping[str, Any]:
        """``env_steps`` so far, the mean ``episode_return`` (summed over agents) of the episodes
        that ended in the last iteration (NaN when none did) and its ``collect_s``."""
        return self._stats or {"env_steps": self.env_steps, "episode_return": math.nan}

    def waiting_note(self, iterations_done: int, *, coded: bool) -> str | None:
        """Why the next iteration only collects (no minibatch yet), or ``None`` when it learns."""
        first = self.collector.first_learning_iteration()
        if first is not None and first <= iterations_done + 1:
            return None
        return learning_gate_note(self.collector, coded=coded)

    def never_learned_note(self, *, coded: bool) -> str:
        """What a run that ended before its first round is told."""
        return learning_gate_note(self.collector, coded=coded)

    def state_dict(self) -> dict[str, Any]:
        """The replay buffer, exploration and env position, the sampler and the step count."""
        return {
            "collector": self.collector.state_dict(),
            "sampler": self.sampler.get_state(),
            "env_steps": self.env_steps,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue from :meth:`state_dict`'s output."""
        self.collector.load_state_dict(dict(state["collector"]))
        self.sampler.set_state(state["sampler"])
        self.env_steps = int(state["env_steps"])

    def close(self) -> None:
        """Close the env."""
        self.env.close()


def learning_gate_note(collector: ExperienceCollector, *, coded: bool) -> str:
    """Why an off-policy run has had no update round yet, and when the first comes: until the
    replay buffer holds ``max(learning_starts, minibatch_size)`` transitions, an iteration only
    collects.

    Examples:
        >>> from marlplug.algorithms.maddpg import MADDPG
        >>> from marlplug.envs import make_env
        >>> env = make_env("cooperative_navigation", seed=0)
        >>> program = MADDPG(learning_starts=5000).bind(env)
        >>> learning_gate_note(ExperienceCollector(env, program, seed=0), coded=True)
        'no coded round yet: learning starts after 5000 steps (algorithm.learning_starts), at iteration 50'
    """
    needed, option = collector.learning_gate()
    first = collector.first_learning_iteration()
    when = (
        f"at iteration {first}"
        if first is not None
        else f"never: algorithm.buffer_size is {collector.program.options.buffer_size}"
    )
    what = "coded round" if coded else "update"
    return f"no {what} yet: learning starts after {needed} steps (algorithm.{option}), {when}"
