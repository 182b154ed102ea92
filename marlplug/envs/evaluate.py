"""Evaluate a policy: N whole episodes on fixed evaluation seeds; mean, std, per-group returns.

An episode's return is its reward summed over steps and over every agent (the team's return), the
figure the learning benchmarks compare (``marlplug bench learn``, ``marlplug evaluate``). Where
agents die (a group with TorchRL's ``mask``: MAgent2 battle), each episode also counts every
group's survivors, and a group *wins* an episode when more of its agents are alive at the end than
of any other group's.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any

import torch
from tensordict import TensorDictBase
from torchrl.envs import EnvBase
from torchrl.envs.utils import ExplorationType, set_exploration_type

from marlplug.config import MarlplugConfig
from marlplug.envs.factory import make_env
from marlplug.envs.policies import SCRIPTED_SCENARIOS, Policy, reference_policy
from marlplug.envs.transformed import with_policy_transforms
from marlplug.errors import UserError
from marlplug.seeding import derive_seed

#: Mixed into every evaluation seed, so evaluation episodes never replay a training rollout (the
#: trainer derives its rollout seeds from ``(seed, update)``); "eval" in ASCII.
EVALUATION_SALT = 0x6576616C
#: The evaluation seed when none is given (``marlplug evaluate``, ``train.eval_every``): every run is
#: evaluated on the same episodes, whatever its training seed.
DEFAULT_EVALUATION_SEED = 0
#: Steps after which an episode that has not ended is an error (no marlplug scenario is that long).
MAX_EPISODE_STEPS = 100_000


@dataclass(frozen=True)
class EvaluationResult:
    """Returns of evaluation episodes, in episode order.

    Example:
        >>> result = EvaluationResult(returns=[-2.0, -4.0], group_returns={"agent": [-2.0, -4.0]})
        >>> result.mean, result.std, result.group_means
        (-3.0, 1.0, {'agent': -3.0})
    """

    returns: list[float]
    """Per episode: reward summed over steps and all agents."""
    group_returns: dict[str, list[float]]
    """Per group, per episode: reward summed over steps and the group's agents."""
    seed: int = 0
    """The evaluation seed the episodes were derived from."""
    deterministic: bool = True
    """Greedy / mean actions (``True``) or samples."""
    frames: int = field(default=0)
    """Env steps run (every copy counted)."""
    group_survivors: dict[str, list[int]] = field(default_factory=dict)
    """Per group with a ``mask`` (agents that die), per episode: its agents alive at the end."""

    @property
    def episodes(self) -> int:
        return len(self.returns)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.returns)

    @property
    def std(self) -> float:
        """Population standard deviation over episodes (0 for one episode)."""
        return statistics.pstdev(self.returns)

    @property
    def group_means(self) -> dict[str, float]:
        return {group: statistics.fmean(values) for group, values in self.group_returns.items()}

    @property
    def win_rates(self) -> dict[str, float]:
        """Per group with survivors counted: the share of episodes it won, ending with more agents
        alive than every other group (a tie is nobody's win); empty without ``group_survivors``.

        Example:
            >>> result = EvaluationResult(returns=[0.0] * 3, group_returns={},
            ...     group_survivors={"red": [5, 2, 3], "blue": [1, 4, 3]})
            >>> result.win_rates
            {'red': 0.3333333333333333, 'blue': 0.3333333333333333}
        """
        rates = {}
        for group, alive in self.group_survivors.items():
            others = [v for name, v in self.group_survivors.items() if name != group]
            wins = [
                all(count > other[episode] for other in others)
                for episode, count in enumerate(alive)
            ]
            rates[group] = statistics.fmean(wins) if wins else math.nan
        return rates

    def as_dict(self) -> dict[str, Any]:
        """Plain data for ``--json``: the summary and every episode's return (and, where agents
        die, every episode's survivors and each group's win rate)."""
        out = {
            "episodes": self.episodes,
            "mean": self.mean,
            "std": self.std,
            "group_means": self.group_means,
            "seed": self.seed,
            "deterministic": self.deterministic,
            "returns": self.returns,
            "group_returns": self.group_returns,
        }
        if self.group_survivors:
            out.update(win_rates=self.win_rates, group_survivors=self.group_survivors)
        return out


def normalized_score(value: float, *, random: float, scripted: float) -> float:
    """The oracle-normalized score ``(value - random) / (scripted - random)``: 0 = random, 1 = oracle.

    Example:
        >>> normalized_score(-50.0, random=-80.0, scripted=-20.0)
        0.5
    """
    if scripted == random:
        raise ValueError("normalized_score: the scripted and random returns are equal")
    return (value - random) / (scripted - random)


@dataclass(frozen=True)
class ReferenceReturns:
    """Mean team returns of the ``random`` and ``scripted`` reference policies on the same
    evaluation episodes, to state a return as an oracle-normalized score.

    Example:
        >>> ReferenceReturns(random=-80.0, scripted=-20.0).score(-50.0)
        0.5
    """

    random: float
    scripted: float

    def score(self, value: float) -> float:
        """``(value - random) / (scripted - random)``: 0 = random, 1 = the scripted oracle."""
        return normalized_score(value, random=self.random, scripted=self.scripted)


def reference_returns(
    env: EnvBase, scenario: str, *, episodes: int, seed: int
) -> ReferenceReturns | None:
    """The reference policies' mean returns on ``env``'s evaluation episodes ``(episodes, seed)``;
    ``None`` when ``scenario`` has no scripted policy or ``env`` does not fit it (e.g. continuous
    actions), so no score can be stated.

    Example:
        >>> from marlplug.envs import make_env
        >>> env = make_env("cooperative_navigation", agents=2)
        >>> references = reference_returns(env, "cooperative_navigation", episodes=2, seed=0)
        >>> references.scripted > references.random
        True
        >>> reference_returns(make_env("keep_away"), "keep_away", episodes=2, seed=0) is None
        True
    """
    returns = reference_episode_returns(env, scenario, episodes=episodes, seed=seed)
    return None if returns is None else references_of_first(returns, episodes)


def reference_episode_returns(
    env: EnvBase, scenario: str, *, episodes: int, seed: int
) -> dict[str, list[float]] | None:
    """Per reference policy (``random``, ``scripted``), the team return of each evaluation episode
    ``(episodes, seed)`` on ``env`` (``None`` as in :func:`reference_returns`). Episode ``r`` is
    the same whatever the count, so the first ``n`` of them are the references of ``n`` episodes
    (:func:`references_of_first`)."""
    if scenario not in SCRIPTED_SCENARIOS:
        return None
    try:
        scripted = reference_policy("scripted", env, scenario=scenario)
    except UserError:  # the scenario's env in a layout the oracle does not read
        return None
    random = reference_policy("random", env, scenario=scenario)
    return {
        name: evaluate(env, policy, episodes=episodes, seed=seed).returns
        for name, policy in (("random", random), ("scripted", scripted))
    }


def references_of_first(returns: dict[str, list[float]], episodes: int) -> ReferenceReturns:
    """The references of the first ``episodes`` of :func:`reference_episode_returns`' episodes.

    Example:
        >>> references_of_first({"random": [-8.0, -6.0, -1.0], "scripted": [-2.0, -4.0, 0.0]}, 2)
        ReferenceReturns(random=-7.0, scripted=-3.0)
    """
    return ReferenceReturns(
        **{name: statistics.fmean(values[:episodes]) for name, values in returns.items()}
    )


def evaluation_env(config: MarlplugConfig, *, num_envs: int = 1, **changes: Any) -> EnvBase:
    """The env of ``config`` for evaluation; ``changes`` override ``backend`` or scenario options.
    It writes the global state when the run's algorithm reads it (its networks are sized for it).

    Example:
        >>> from marlplug.config import load_config
        >>> env = evaluation_env(load_config(data={"env": {"agents": 2}}))
        >>> env.group_map["agent"]
        ['agent_0', 'agent_1']
    """
    backend = changes.pop("backend", config.env.backend)
    options = {**config.env.options.model_dump(), **changes}
    return make_env(
        config.env.name,
        backend=backend,
        num_envs=num_envs,
        global_state=config.algorithm.uses_global_state,
        **options,
    )


def _drop_nested_step_marks(env: EnvBase, tensordict: TensorDictBase) -> None:
    """A ``rollout`` callback: remove the ``_neg_step`` entries TorchRL leaves beside nested done
    keys.

    With ``break_when_all_done`` TorchRL 0.14 marks the copies that finished with a ``_neg_step``
    entry beside every done key, but takes back only the top-level one; the nested ones it leaves
    (an agent group's) make the next step's keys differ from the last, and the rollout fails
    (``KeyError: 'Key _neg_step not found'``) as soon as the copies end at different steps.
    """
    for key in env.done_keys:
        if isinstance(key, tuple) and len(key) > 1:
            tensordict.pop((*key[:-1], "_neg_step"), None)


def first_episode_returns(rollout: TensorDictBase, groups: list[str]) -> dict[str, torch.Tensor]:
    """Per group, ``[copies]`` each env copy's return over its first episode in ``rollout``.

    ``rollout`` is ``[*copies, T]``; steps after a copy's first ``done`` (auto-reset or repeated
    rows) are left out.
    """
    done = rollout.get(("next", "done")).squeeze(-1)  # [*copies, T]
    if not bool(done.any(-1).all()):
        raise UserError(
            f"evaluate: an episode did not end within {done.shape[-1]} steps; "
            "evaluation needs episodes that end (set the scenario's max_steps)"
        )
    # A step counts while no earlier step of its copy was done.
    earlier = done.long().cumsum(-1) - done.long()
    counted = (earlier == 0).reshape(-1, done.shape[-1])
    returns = {}
    for group in groups:
        reward = rollout.get(("next", group, "reward"))  # [*copies, T, agents, 1]
        reward = reward.reshape(counted.shape[0], counted.shape[1], -1).sum(-1)
        returns[group] = (reward * counted).sum(-1).double()
    return returns


def first_episode_survivors(rollout: TensorDictBase, groups: list[str]) -> dict[str, torch.Tensor]:
    """Per group with a ``mask`` (TorchRL's agents in play), ``[copies]`` its agents alive at the
    end of each env copy's first episode in ``rollout``: in play at the last step and not
    terminated by it (an episode's time limit truncates, it kills nobody).

    Example:
        >>> from tensordict import TensorDict
        >>> mask = torch.tensor([[True, True], [True, False]])  # 2 steps, 2 agents
        >>> terminated = torch.tensor([[False, False], [True, False]]).unsqueeze(-1)
        >>> done = torch.tensor([[False], [True]])
        >>> rollout = TensorDict({("red", "mask"): mask, ("next", "done"): done,
        ...     ("next", "red", "terminated"): terminated}, batch_size=[2])
        >>> first_episode_survivors(rollout.unsqueeze(0), ["red", "blue"])
        {'red': tensor([0])}
    """
    done = rollout.get(("next", "done")).squeeze(-1)  # [*copies, T]
    end = done.reshape(-1, done.shape[-1]).long().argmax(-1)  # each copy's first done step
    copies = torch.arange(end.shape[0])
    survivors = {}
    for group in groups:
        mask = rollout.get((group, "mask"), None)
        if mask is None:
            continue
        mask = mask.reshape(end.shape[0], done.shape[-1], -1)[copies, end]
        terminated = rollout.get(("next", group, "terminated"), None)
        if terminated is not None:
            mask = mask & ~terminated.reshape(end.shape[0], done.shape[-1], -1)[copies, end]
        survivors[group] = mask.sum(-1)
    return survivors


def evaluate(
    env_or_config: EnvBase | MarlplugConfig,
    policy: Policy,
    *,
    episodes: int = 100,
    seed: int = 0,
    deterministic: bool = True,
) -> EvaluationResult:
    """Run ``episodes`` whole episodes of ``policy`` and return their returns.

    Episodes run in rounds of as many as the env has copies; round r resets the env from seed
    ``derive_seed(seed, EVALUATION_SALT, r)`` (and seeds torch's RNG with it, for sampled actions),
    so the same ``(seed, env copies)`` gives the same episodes and none replays a training rollout.
    torch's global RNG is left as it was.

    Args:
        env_or_config: a TorchRL env from :func:`marlplug.envs.make_env` (groups as nested keys), or
            a config whose env is built (one copy).
        policy: TensorDict -> TensorDict with each group's ``action`` written; a TorchRL actor
            acts greedily (mode / mean) under ``deterministic``.
        episodes: how many episodes.
        seed: the evaluation seed (a run's seed is fine: the salt keeps the episodes apart).
        deterministic: TorchRL's ``DETERMINISTIC`` exploration type instead of ``RANDOM``.

    Example:
        >>> from marlplug.envs import make_env, random_policy
        >>> env = make_env("cooperative_navigation", agents=3)
        >>> result = evaluate(env, random_policy(env), episodes=2, seed=1)
        >>> result.episodes, result.group_returns["agent"] == result.returns
        (2, True)
    """
    if episodes < 1:
        raise UserError(f"evaluate: episodes must be >= 1, got {episodes}")
    env = (
        evaluation_env(env_or_config)
        if isinstance(env_or_config, MarlplugConfig)
        else env_or_config
    )
    # A recurrent policy's hidden state rides in the tensordict from step to step (zero at resets).
    env = with_policy_transforms(env, policy)
    groups = list(env.group_map)
    copies = max(1, env.batch_size.numel())
    collected: dict[str, list[torch.Tensor]] = {group: [] for group in groups}
    alive: dict[str, list[torch.Tensor]] = {}
    frames = 0
    exploration = ExplorationType.DETERMINISTIC if deterministic else ExplorationType.RANDOM
    with torch.random.fork_rng(devices=[]), set_exploration_type(exploration), torch.no_grad():
        for round_index in range(math.ceil(episodes / copies)):
            round_seed = derive_seed(seed, EVALUATION_SALT, round_index)
            env.set_seed(round_seed)
            torch.manual_seed(round_seed)
            rollout = env.rollout(
                MAX_EPISODE_STEPS,
                policy,
                break_when_any_done=False,
                break_when_all_done=True,
                callback=_drop_nested_step_marks,
            )
            frames += rollout.numel()
            for group, values in first_episode_returns(rollout, groups).items():
                collected[group].append(values)
            for group, values in first_episode_survivors(rollout, groups).items():
                alive.setdefault(group, []).append(values)
    group_returns = {
        group: torch.cat(parts)[:episodes].tolist() for group, parts in collected.items()
    }
    group_survivors = {
        group: torch.cat(parts)[:episodes].tolist() for group, parts in alive.items()
    }
    team = [sum(values) for values in zip(*group_returns.values(), strict=True)]
    return EvaluationResult(
        returns=team,
        group_returns=group_returns,
        seed=seed,
        deterministic=deterministic,
        frames=frames,
        group_survivors=group_survivors,
    )
