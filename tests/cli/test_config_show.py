"""`marlplug config show` without a PATH shows what `marlplug train` without a CONFIG trains, and a
config file starts from the same defaults (issue 44: one set of defaults)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from marlplug.configs import default_config_path


def test_config_show_without_path_is_the_packaged_default(run_cli: Callable[..., Any]) -> None:
    bare = run_cli("config", "show")
    packaged = run_cli("config", "show", str(default_config_path()))
    assert bare.exit_code == 0 and packaged.exit_code == 0, bare.err + packaged.err
    assert bare.out == packaged.out
    # The best measured settings (issue 14, "ReLU with nearest first"), not the Rust reference's.
    assert "value_norm: true" in bare.out and "n_epochs: 10" in bare.out


def test_an_empty_file_resolves_to_the_defaults(
    run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    bare = run_cli("config", "show")
    for name, text in [("empty.yaml", ""), ("braces.yaml", "{}\n"), ("empty.toml", "")]:
        (tmp_path / name).write_text(text)
        shown = run_cli("config", "show", str(tmp_path / name))
        assert shown.exit_code == 0, shown.err
        assert shown.out == bare.out, name


def test_a_file_that_sets_one_value_changes_only_that_value(
    run_cli: Callable[..., Any], tmp_path: Path
) -> None:
    """The README's promise: a file sets only what differs from the defaults. A file holding
    `seed: 0` once resolved to tanh, world order, lr 3e-4, 2048-step rollouts, 4 epochs and 50
    updates, while no file gave the packaged default's ReLU, nearest first, lr 1e-3, ..."""
    bare = yaml.safe_load(run_cli("config", "show").out)
    (tmp_path / "seed.yaml").write_text("seed: 7\nenv: {agents: 4}\n")
    given = yaml.safe_load(run_cli("config", "show", str(tmp_path / "seed.yaml")).out)
    assert given["seed"] == 7 and given["env"]["agents"] == 4
    given["seed"], given["env"]["agents"] = bare["seed"], bare["env"]["agents"]
    assert given == bare
    overridden = yaml.safe_load(run_cli("config", "show", "--set", "seed=7").out)
    assert overridden == {**bare, "seed": 7}
    assert bare["env"]["entity_order"] == "nearest" and bare["algorithm"]["activation"] == "relu"
    assert (bare["train"]["lr"], bare["train"]["rollout_steps"]) == (0.001, 1000)
