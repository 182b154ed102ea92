"""Loading configs: formats, overrides, defaults and component options."""

from __future__ import annotations

from pathlib import Path

import pytest

from marlplug.config import apply_override, format_loc, load_config, resolved_dict
from marlplug.errors import ConfigError

YAML = """
seed: 7
env: {name: cooperative_navigation, backend: mpe}
losses:
  - name: clip_ppo
  - name: cka
    coef: 0.05
train: {updates: 3}
"""

TOML = """
seed = 7
[env]
name = "cooperative_navigation"
backend = "mpe"
[[losses]]
name = "clip_ppo"
[[losses]]
name = "cka"
coef = 0.05
[train]
updates = 3
"""


def test_yaml_and_toml_give_the_same_config(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(YAML)
    (tmp_path / "a.toml").write_text(TOML)
    from_yaml = resolved_dict(load_config(tmp_path / "a.yaml"))
    from_toml = resolved_dict(load_config(tmp_path / "a.toml"))
    assert from_yaml == from_toml
    assert from_yaml["losses"][1] == {"name": "cka", "coef": 0.05, "eps": 1e-8}


def test_plugin_options_are_validated_objects(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(YAML)
    config = load_config(tmp_path / "a.yaml", ["losses[1].coef=0.5"])
    options = config.losses[1].options
    assert type(options).__name__ == "CKAOptions"
    assert options.coef == 0.5  # type: ignore[attr-defined]


def test_overrides_parse_values_as_yaml() -> None:
    data: dict[str, object] = {}
    apply_override(data, "train.updates=5")
    apply_override(data, "logging.progress=false")
    apply_override(data, "losses=[clip_ppo, {name: cka, coef: 0.2}]")
    assert data == {
        "train": {"updates": 5},
        "logging": {"progress": False},
        "losses": ["clip_ppo", {"name": "cka", "coef": 0.2}],
    }


def test_name_alone_is_shorthand_for_a_component() -> None:
    config = load_config(
        data={"losses": ["clip_ppo", "cka"], "coding": {"scheme": "mds", "learners": 5}}
    )
    assert [spec.name for spec in config.losses] == ["clip_ppo", "cka"]
    assert config.coding is not None and config.coding.scheme.name == "mds"


def test_empty_config_is_the_defaults() -> None:
    config = load_config(data={})
    assert config.env.registry_key == "mpe/cooperative_navigation"
    assert [spec.name for spec in config.losses] == ["clip_ppo"]


@pytest.mark.parametrize(
    ("loc", "text"),
    [(("losses", 1, "coef"), "losses[1].coef"), (("train",), "train"), ((), "")],
)
def test_format_loc(loc: tuple[str | int, ...], text: str) -> None:
    assert format_loc(loc) == text


def test_error_carries_only_first_problem_and_a_count() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(data={"train": {"updates": "x", "n_epochs": "y", "gamma": "z"}})
    lines = str(info.value).splitlines()
    assert lines[0] == "train.updates: expected an integer, got 'x'"
    assert lines[1] == "(and 2 more problems)"
