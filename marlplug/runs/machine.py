"""What machine a figure was measured on: the CPU model, as every results table states it."""

from __future__ import annotations

import platform
from pathlib import Path


def cpu_model() -> str:
    """The CPU's model name (Linux: /proc/cpuinfo), else what :mod:`platform` knows.

    On x86 Linux the family and model numbers follow the name: a virtual machine often names its
    CPU only "AMD EPYC", whatever the generation, and two generations can round differently.

    Examples:
        >>> bool(cpu_model())
        True
    """
    try:
        fields = _first_processor(Path("/proc/cpuinfo").read_text())
    except OSError:
        fields = {}
    if "model name" not in fields:
        return platform.processor() or platform.machine() or "unknown"
    if "cpu family" in fields and "model" in fields:
        return f"{fields['model name']} (family {fields['cpu family']}, model {fields['model']})"
    return fields["model name"]


def _first_processor(cpuinfo: str) -> dict[str, str]:
    r"""The first processor's ``key: value`` lines of /proc/cpuinfo.

    Examples:
        >>> _first_processor("processor\t: 0\ncpu family\t: 25\nmodel\t\t: 17\n"
        ...                  "model name\t: AMD EPYC\n\nprocessor\t: 1\nmodel\t\t: 1\n")
        {'processor': '0', 'cpu family': '25', 'model': '17', 'model name': 'AMD EPYC'}
    """
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return fields
