"""What a results file records about the machine."""

from __future__ import annotations

from pathlib import Path

import pytest

from marlplug.runs.machine import _first_processor, cpu_model


def test_cpu_model_tells_cpu_generations_of_the_same_name_apart() -> None:
    cpuinfo = Path("/proc/cpuinfo")
    if not cpuinfo.exists():
        pytest.skip("no /proc/cpuinfo on this system")
    fields = _first_processor(cpuinfo.read_text())
    if not {"cpu family", "model", "model name"} <= fields.keys():
        pytest.skip("this CPU's /proc/cpuinfo has no family and model numbers (not x86)")
    assert cpu_model() == (
        f"{fields['model name']} (family {fields['cpu family']}, model {fields['model']})"
    )
