"""Every config shipped in ``marlplug/configs`` loads as it is, without a warning."""

from __future__ import annotations

import warnings
from importlib import resources
from pathlib import Path

import pytest

from marlplug import load_config

PACKAGED = sorted(
    Path(str(entry))
    for entry in resources.files("marlplug.configs").iterdir()
    if entry.name.endswith(".yaml")
)


@pytest.mark.parametrize("path", PACKAGED, ids=[path.name for path in PACKAGED])
def test_packaged_config_loads_without_warnings(path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        config = load_config(path)
    assert config.train.updates >= 1


def test_the_many_agent_config_reads_the_global_state() -> None:
    config = load_config(next(path for path in PACKAGED if path.name == "spread_vmas_m8.yaml"))
    assert config.env.options.agents == 8
    assert config.algorithm.uses_global_state
    assert config.algorithm.share_params and config.algorithm.value_norm
