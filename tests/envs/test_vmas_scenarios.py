"""Every VMAS scenario by name (``env: {backend: vmas, name: balance}``): options read from the
scenario's source, VMAS's native actions and groups, and one-line errors for bad input."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from torchrl.data import Bounded, Categorical

pytest.importorskip("marlplug_vmas")

import marlplug_vmas
from marlplug_vmas.keywords import scenario_keywords, scenario_names
from marlplug_vmas.native import native_scenario

from marlplug.envs import available_envs, make_env
from marlplug.errors import ConfigError


def test_every_vmas_scenario_is_registered_by_its_name() -> None:
    import vmas

    registered = set(available_envs()["vmas"])
    assert set(vmas.scenarios) | set(vmas.mpe_scenarios) <= registered
    # The paper's ports keep their names beside VMAS's own scenarios.
    assert {"cooperative_navigation", "predator_prey", "keep_away"} <= registered
    assert set(scenario_names()) == set(vmas.scenarios) | set(vmas.mpe_scenarios)


def test_a_paper_port_wins_a_name_clash(monkeypatch: pytest.MonkeyPatch) -> None:
    clashing = {"keep_away": "vmas.scenarios.keep_away", "balance": "vmas.scenarios.balance"}
    monkeypatch.setattr(marlplug_vmas, "scenario_names", lambda: clashing)
    envs = marlplug_vmas.marlplug_envs()
    assert envs["vmas/keep_away"] == "marlplug_vmas.envs:KeepAway"
    assert envs["vmas/balance"] == "marlplug_vmas.native:Balance"


def test_without_vmas_the_paper_ports_stay_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> dict[str, str]:
        raise ModuleNotFoundError("No module named 'vmas'")

    monkeypatch.setattr(marlplug_vmas, "scenario_names", missing)
    assert marlplug_vmas.marlplug_envs() == marlplug_vmas.PAPER_SCENARIOS


def test_options_are_the_keywords_make_world_reads() -> None:
    fields = native_scenario("balance").Options.model_fields
    assert list(fields) == [
        "agents",
        "continuous_actions",
        "max_steps",
        "package_mass",
        "random_package_pos_on_line",
    ]
    assert fields["package_mass"].default == 5 and fields["agents"].default == 3
    # A default VMAS computes (n_food = n_agents) stays VMAS's while unset.
    dispersion = native_scenario("dispersion").Options(agents=3)
    assert scenario_keywords("dispersion")["n_food"].literal is False
    assert "n_food" not in dispersion.world_arguments()
    assert dispersion.world_arguments()["n_agents"] == 3
    assert (
        native_scenario("dispersion")
        .Options.model_validate({"n_food": 2})
        .world_arguments()["n_food"]
        == 2
    )


def test_agents_fixed_by_other_options_are_filled_in() -> None:
    football = native_scenario("football")
    assert football.Options().agents == 3
    assert football.Options.model_validate({"n_blue_agents": 2}).agents == 2
    env = make_env("football", backend="vmas", n_blue_agents=2, num_envs=2, seed=0)
    assert env.group_map == {"agent_blue": ["agent_blue_0", "agent_blue_1"]}


def test_native_continuous_actions_by_default_and_discrete_when_asked() -> None:
    env = make_env("give_way", backend="vmas", num_envs=3, seed=0)
    spec = env.full_action_spec["agents", "action"]
    assert isinstance(spec, Bounded)
    # give_way's agents take velocities in [-v_range, v_range] (VMAS's u_range), not [0, 1].
    assert torch.equal(spec.space.high[0, 0], torch.tensor([0.5, 0.5]))
    discrete = make_env("give_way", backend="vmas", num_envs=3, seed=0, continuous_actions=False)
    spec = discrete.full_action_spec["agents", "action"]
    assert isinstance(spec, Categorical) and spec.shape == (3, 2) and spec.space.n == 9
    assert make_env("balance", backend="vmas", num_envs=2).rollout(3).batch_size == (2, 3)


def test_heterogeneous_teams_are_separate_groups() -> None:
    env = make_env("simple_world_comm", backend="vmas", num_envs=2, seed=0)
    assert list(env.group_map) == ["lead_adversary", "adversary", "agent"]
    assert env.observation_spec["agent", "observation"].shape == (2, 2, 56)


def test_checking_options_leaves_the_random_streams_alone() -> None:
    torch.manual_seed(0)
    before = torch.random.get_rng_state()
    native_scenario("discovery").Options.model_validate({"agents": 3, "n_targets": 4})
    assert torch.equal(before, torch.random.get_rng_state())


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"package_mas": 2},
            "env.package_mas: unknown field 'package_mas' in env 'balance' (did you mean "
            "'package_mass'?); available: agents, continuous_actions, max_steps, package_mass, "
            "random_package_pos_on_line",
        ),
        ({"n_agents": 2}, "env.n_agents: unknown field 'n_agents' in env 'balance' (did you mean 'agents'?)"),
        ({"package_mass": "heavy"}, "env.package_mass: expected a number, got 'heavy'"),
        ({"package_mass": True}, "env.package_mass: expected a number, got a boolean (true)"),
        ({"random_package_pos_on_line": 1}, "env.random_package_pos_on_line: expected true or false, got 1"),
    ],
)  # fmt: skip
def test_bad_options_are_one_line_errors(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        make_env("balance", backend="vmas", **options)
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


def test_a_value_vmas_refuses_and_a_wrong_team_size_are_config_errors() -> None:
    with pytest.raises(ConfigError, match=r"^env: vmas/dispersion refused its options \(agents=2, "
                       r"n_food='x'\): TypeError: "):  # fmt: skip
        make_env("dispersion", backend="vmas", agents=2, n_food="x")
    with pytest.raises(ConfigError, match=r"^env\.agents: vmas/give_way has 2 agents with these"):
        make_env("give_way", backend="vmas", agents=3)


def _config(tmp_path: Path, env: str) -> str:
    path = tmp_path / "run.yaml"
    path.write_text(f"env: {env}\ntrain: {{updates: 1}}\nlogging: {{dir: {tmp_path}}}\n")
    return str(path)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ("{backend: vmas, name: balanse}", "error: env.name: unknown vmas scenario 'balanse' (did you mean 'balance'?)"),
        ("{backend: vmas, name: balance, package_mass: heavy}", "error: env.package_mass: expected a number, got 'heavy'"),
        ("{backend: vmas, name: wheel, line_lenght: 2}", "error: env.line_lenght: unknown field 'line_lenght' in env 'wheel' (did you mean 'line_length'?)"),
        ("{backend: vmas, name: give_way, agents: 4}", "error: env.agents: vmas/give_way has 2 agents"),
    ],
)  # fmt: skip
def test_train_refuses_bad_vmas_input_in_one_line(
    run_cli: Callable[..., Any], tmp_path: Path, env: str, message: str
) -> None:
    result = run_cli("train", _config(tmp_path, env))
    assert result.exit_code == 2
    assert result.err.startswith(message), result.err
    assert len(result.err.strip().splitlines()) == 1 and "Traceback" not in result.err
