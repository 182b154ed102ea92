"""The contract every env scenario must meet, as a pytest base class and as one function.

Plugin authors subclass :class:`EnvScenarioContract` in a test module (or call
:func:`check_env_scenario`); marlplug runs the same suite on its built-in scenarios and on
marlplug-vmas.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pytest
import torch
from tensordict import TensorDictBase
from torchrl.envs import EnvBase
from torchrl.envs.utils import check_env_specs

from marlplug.envs.entity_order import with_nearest_first
from marlplug.envs.options import EntityOrderOptions, ScenarioOptions
from marlplug.envs.render import render_frame
from marlplug.envs.scenario import EnvScenario
from marlplug.envs.state import with_global_state
from marlplug.errors import UserError

#: Every agent group carries these entries (observation spec, action spec, reward spec, done spec).
GROUP_KEYS: tuple[tuple[str, str], ...] = (
    ("observation", "observation_spec"),
    ("action", "full_action_spec"),
    ("reward", "full_reward_spec"),
    ("done", "full_done_spec"),
    ("terminated", "full_done_spec"),
    ("truncated", "full_done_spec"),
)


def build_scenario(scenario_class: type[EnvScenario], options: Mapping[str, Any]) -> EnvScenario:
    """The scenario built from ``options`` the way a config builds it."""
    return scenario_class(**dict(options))


def check_options(scenario_class: type[EnvScenario], options: Mapping[str, Any]) -> None:
    """``Options`` subclasses :class:`ScenarioOptions` and an unknown option is a one-line error."""
    options_model = getattr(scenario_class, "Options", None)
    assert isinstance(options_model, type) and issubclass(options_model, ScenarioOptions), (
        f"{scenario_class.__name__}.Options must subclass marlplug.envs.ScenarioOptions "
        "(it provides agents, continuous_actions and max_steps)"
    )
    assert scenario_class.scenario and scenario_class.backend, (
        f"{scenario_class.__name__} must set the class attributes `scenario` and `backend`"
    )
    build_scenario(scenario_class, options)
    with pytest.raises(UserError, match="no_such_option_xyz"):
        build_scenario(scenario_class, {**options, "no_such_option_xyz": 1})


def check_group_map(env: EnvBase, num_agents: int) -> dict[str, list[str]]:
    """``env.group_map`` is a plain dict of group -> agent names, ``num_agents`` names in all."""
    group_map = env.group_map
    assert isinstance(group_map, dict), (
        f"env.group_map must be a dict, got {type(group_map).__name__} (a batched SerialEnv "
        "forwards attributes per copy: set env.group_map = dict(env._envs[0].group_map))"
    )
    assert group_map, "env.group_map is empty"
    for group, names in group_map.items():
        assert isinstance(group, str) and isinstance(names, list) and names, (
            f"group_map[{group!r}] must be a non-empty list of agent names, got {names!r}"
        )
        assert all(isinstance(name, str) for name in names), f"group_map[{group!r}]: {names!r}"
    total = sum(len(names) for names in group_map.values())
    assert total == num_agents, f"group_map has {total} agents, options.agents is {num_agents}"
    return group_map


def check_batch_size(env: EnvBase, num_envs: int) -> None:
    """``num_envs`` copies give batch size ``[num_envs]`` (one copy may also be unbatched)."""
    allowed = [torch.Size([num_envs])] + ([torch.Size([])] if num_envs == 1 else [])
    assert env.batch_size in allowed, f"num_envs={num_envs} gave batch size {env.batch_size}"


def check_group_specs(env: EnvBase) -> None:
    """Each group has observation/action/reward/done/terminated/truncated specs, ``[*batch, n_i, ...]``."""
    for group, names in env.group_map.items():
        leading = (*env.batch_size, len(names))
        for key, spec_name in GROUP_KEYS:
            spec = getattr(env, spec_name)
            assert (group, key) in spec.keys(True, True), f"{spec_name} has no ({group!r}, {key!r})"
            shape = tuple(spec[group, key].shape)
            assert shape[: len(leading)] == leading, (
                f"({group!r}, {key!r}) has shape {shape}; expected it to start with {leading}"
            )


def _rollout(env: EnvBase, steps: int, action_seed: int) -> TensorDictBase:
    """``steps`` random actions drawn from ``action_seed`` (the global RNG is left as it was)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(action_seed)
        return env.rollout(steps, break_when_any_done=False)


def check_rollout_matches_specs(env: EnvBase, steps: int) -> None:
    """Reset and step values lie in their specs (TorchRL's ``check_env_specs``) and have the shapes
    ``[*batch, steps, n_i, ...]``."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        check_env_specs(env)
    rollout = _rollout(env, steps, action_seed=0)
    for group, names in env.group_map.items():
        reward = rollout["next", group, "reward"]
        leading = (*env.batch_size, steps, len(names))
        assert tuple(reward.shape[: len(leading)]) == leading, (
            f"({group!r}, 'reward') of a {steps}-step rollout has shape {tuple(reward.shape)}"
        )
        assert torch.isfinite(reward).all(), f"({group!r}, 'reward') has non-finite values"


def check_global_state(scenario: EnvScenario, *, num_envs: int, seed: int, steps: int) -> None:
    """A declared global state (``Options.state_columns``) names existing observation entries, and
    the env that writes it (``make_env(..., global_state=True)``) still matches its specs."""
    columns = scenario.options.state_columns()
    if columns is None:
        return
    env = scenario.make(num_envs=num_envs, seed=seed)
    sizes = {group: len(names) for group, names in env.group_map.items()}
    for group, entries in columns.items():
        assert group in sizes, f"state_columns names group {group!r}; groups: {sorted(sizes)}"
        width = env.observation_spec[group, "observation"].shape[-1]
        for agent, column in entries:
            assert 0 <= agent < sizes[group] and 0 <= column < width, (
                f"state_columns: ({agent}, {column}) of group {group!r} is outside its "
                f"{sizes[group]} agents x {width} observation columns"
            )
    check_rollout_matches_specs(with_global_state(env, columns), steps)
    env.close()


def check_entity_lists(scenario: EnvScenario, *, num_envs: int, seed: int, steps: int) -> None:
    """Declared entity lists (``Options.entity_lists``) are whole 2-float positions inside the
    observation, none overlapping, and the env that sorts them (``entity_order: nearest``) still
    matches its specs."""
    lists = scenario.options.entity_lists()
    if lists is None:
        assert not isinstance(scenario.options, EntityOrderOptions), (
            "the options take entity_order (EntityOrderOptions) but declare no entity_lists"
        )
        return
    if not lists:  # nothing to sort at this size
        return
    env = scenario.make(num_envs=num_envs, seed=seed)
    for group, spans in lists.items():
        assert group in env.group_map, (
            f"entity_lists names group {group!r}; groups: {sorted(env.group_map)}"
        )
        width = env.observation_spec[group, "observation"].shape[-1]
        columns = [
            column for first, entries in spans for column in range(first, first + 2 * entries)
        ]
        assert all(0 <= column < width for column in columns), (
            f"entity_lists of group {group!r} reach outside its {width} observation columns"
        )
        assert len(set(columns)) == len(columns), f"entity_lists of group {group!r} overlap"
    check_rollout_matches_specs(with_nearest_first(env, lists), steps)
    env.close()


def check_seeding(
    scenario: EnvScenario, *, num_envs: int, seed: int, steps: int, seeds_differ: bool
) -> None:
    """The same seed and actions give bit-identical episodes; another seed another start."""
    first = _rollout(scenario.make(num_envs=num_envs, seed=seed), steps, action_seed=seed)
    again = _rollout(scenario.make(num_envs=num_envs, seed=seed), steps, action_seed=seed)
    for key in first.keys(True, True):
        assert torch.equal(first[key], again[key]), f"seed {seed} twice: {key!r} differs"
    if seeds_differ:
        env = scenario.make(num_envs=num_envs, seed=seed)
        start = env.reset()
        other = scenario.make(num_envs=num_envs, seed=seed + 1).reset()
        assert any(
            not torch.equal(start[group, "observation"], other[group, "observation"])
            for group in env.group_map
        ), f"seeds {seed} and {seed + 1} gave the same first observation"


def check_render(env: EnvBase) -> np.ndarray:
    """After a reset, :func:`marlplug.envs.render_frame` gives a non-blank ``[H, W, 3]`` uint8 frame
    (mpe envs are drawn from their world; other PettingZoo envs need ``render_mode="rgb_array"``)."""
    env.reset()
    frame = render_frame(env)
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3, (
        f"render_frame gave {frame.dtype} {frame.shape}; expected uint8 [H, W, 3]"
    )
    assert frame.min() != frame.max(), "render_frame gave a blank frame"
    return frame


def check_env_scenario(
    scenario_class: type[EnvScenario],
    *,
    options: Mapping[str, Any] | None = None,
    num_envs: tuple[int, ...] = (1, 2),
    seed: int = 0,
    steps: int = 4,
    renders: bool = True,
    seeds_differ: bool = True,
) -> None:
    """Run the whole contract on ``scenario_class``; raises ``AssertionError`` naming what failed.

    Args:
        scenario_class: the :class:`~marlplug.envs.EnvScenario` subclass a plugin registers.
        options: options to build it with (small teams keep the suite fast).
        num_envs: batch sizes to build.
        seed: the seed to build and act with.
        steps: rollout length.
        renders: check :func:`~marlplug.envs.render_frame` (False for envs without rendering).
        seeds_differ: another seed must give another first observation.

    Examples:
        >>> from marlplug.envs.mpe import CooperativeNavigation
        >>> check_env_scenario(CooperativeNavigation, options={"agents": 2}, num_envs=(1,), steps=2)
    """
    options = dict(options or {})
    check_options(scenario_class, options)
    scenario = build_scenario(scenario_class, options)
    num_agents = scenario.options.agents
    for copies in num_envs:
        env = scenario.make(num_envs=copies, seed=seed)
        check_group_map(env, num_agents)
        check_batch_size(env, copies)
        check_group_specs(env)
        check_rollout_matches_specs(env, steps)
        if renders:
            check_render(env)
        env.close()
        check_global_state(scenario, num_envs=copies, seed=seed, steps=steps)
        check_entity_lists(scenario, num_envs=copies, seed=seed, steps=steps)
        check_seeding(scenario, num_envs=copies, seed=seed, steps=steps, seeds_differ=seeds_differ)


class EnvScenarioContract:
    """Pytest base class: subclass it as ``Test...`` and set ``scenario_class`` to run the contract.

    Examples:
        A plugin's ``tests/test_contract.py``::

            from marlplug.testing import EnvScenarioContract
            from marlplug_vmas import KeepAway

            class TestKeepAway(EnvScenarioContract):
                scenario_class = KeepAway
                options = {"agents": 4, "adversaries": 2}
                registered_name = "vmas/keep_away"
    """

    #: The scenario class under test.
    scenario_class: ClassVar[type[EnvScenario]]
    #: Options to build it with.
    options: ClassVar[Mapping[str, Any]] = {}
    num_envs: ClassVar[tuple[int, ...]] = (1, 2)
    seed: ClassVar[int] = 0
    steps: ClassVar[int] = 4
    #: False for envs that cannot render.
    renders: ClassVar[bool] = True
    #: False for envs whose start does not depend on the seed.
    seeds_differ: ClassVar[bool] = True
    #: If set, the ``"<backend>/<scenario>"`` key the installed plugin registers the class under.
    registered_name: ClassVar[str | None] = None

    def _scenario(self) -> EnvScenario:
        return build_scenario(self.scenario_class, self.options)

    def test_options(self) -> None:
        check_options(self.scenario_class, self.options)

    def test_specs_and_rollout(self) -> None:
        scenario = self._scenario()
        for copies in self.num_envs:
            env = scenario.make(num_envs=copies, seed=self.seed)
            check_group_map(env, scenario.options.agents)
            check_batch_size(env, copies)
            check_group_specs(env)
            check_rollout_matches_specs(env, self.steps)

    def test_seeding(self) -> None:
        for copies in self.num_envs:
            check_seeding(
                self._scenario(),
                num_envs=copies,
                seed=self.seed,
                steps=self.steps,
                seeds_differ=self.seeds_differ,
            )

    def test_global_state(self) -> None:
        for copies in self.num_envs:
            check_global_state(self._scenario(), num_envs=copies, seed=self.seed, steps=self.steps)

    def test_entity_lists(self) -> None:
        for copies in self.num_envs:
            check_entity_lists(self._scenario(), num_envs=copies, seed=self.seed, steps=self.steps)

    def test_render(self) -> None:
        if not self.renders:
            pytest.skip("renders = False")
        check_render(self._scenario().make(num_envs=self.num_envs[0], seed=self.seed))

    def test_registered(self) -> None:
        if self.registered_name is None:
            pytest.skip("registered_name not set")
        from marlplug.plugins import get_component

        assert get_component("env", self.registered_name) is self.scenario_class


__all__ = ["EnvScenarioContract", "check_env_scenario"]
