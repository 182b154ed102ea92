"""The CLI's glibc heap tuning: on by default on glibc, off on request, and never over the user's own."""

from __future__ import annotations

import platform

import pytest

from marlplug.cli.allocator import keep_freed_memory


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc only")
def test_tunes_glibc_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "MARLPLUG_MALLOC_TUNING",
        "MALLOC_MMAP_THRESHOLD_",
        "MALLOC_TRIM_THRESHOLD_",
        "GLIBC_TUNABLES",
    ):
        monkeypatch.delenv(name, raising=False)
    assert keep_freed_memory() is True


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("MARLPLUG_MALLOC_TUNING", "0"),
        ("MALLOC_MMAP_THRESHOLD_", "65536"),
        ("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=65536"),
    ],
    ids=["opted-out", "user-settings-win", "user-tunables-win"],
)
def test_leaves_the_allocator_alone(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    assert keep_freed_memory() is False
