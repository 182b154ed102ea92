"""`marlplug config show` without a PATH shows what `marlplug train` without a CONFIG trains."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from marlplug.configs import default_config_path


def test_config_show_without_path_is_the_packaged_default(run_cli: Callable[..., Any]) -> None:
    bare = run_cli("config", "show")
    packaged = run_cli("config", "show", str(default_config_path()))
    assert bare.exit_code == 0 and packaged.exit_code == 0, bare.err + packaged.err
    assert bare.out == packaged.out
    # The packaged default's own values, not the schema's bare defaults.
    assert "value_norm: true" in bare.out and "n_epochs: 10" in bare.out
