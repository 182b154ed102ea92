"""How many torch threads a run uses: ``train.torch_threads``, a number (1 by default), or ``auto``
(the packaged VMAS PPO configs): the CPUs this process may use that no other process keeps busy,
divided among the runs that share them, chosen again before every update.

Why not simply every core: a torch thread that shares its core with another process stalls every
parallel operation of the run, because the other threads wait for it at the operation's end. On a
2-core AMD EPYC with a busy loop on one core, the M = 32 config ran at 1,036 frames/s on 2 threads
against 1,950 on one (issue 47; ``marlplug bench load`` measures it on any machine). ``auto`` counts
a CPU as free when other processes used less than :data:`BUSY_SHARE` of it since the last choice
(``/proc/stat`` less this process's own CPU time), so a neighbour that starts mid-run takes a
thread away at the next update and one that ends gives it back.

The thread count can change a run's last bits: the packaged VMAS PPO configs train the same run
bit for bit on 1 and 2 threads (``tests/train/test_threads.py`` holds it for such a run), but
continuous PPO on mpe ends 1.5e-8 apart after 2 updates. ``auto``'s count follows the machine's
load, so it is not the default: with it, a seed gives the same run only where the count does not
matter.

A sweep (``marlplug sweep --jobs N``) tells its runs how many share the machine through
:data:`CPU_SHARE_ENV`; so can a user who starts runs side by side by hand.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from marlplug.config.train import TorchThreads

#: Runs sharing this process's CPUs (an integer >= 1), set by ``marlplug sweep`` for its runs.
CPU_SHARE_ENV = "MARLPLUG_CPU_SHARE"
#: A CPU other processes used more than this share of (0 to 1) is not counted as free.
BUSY_SHARE = 0.3
#: The shortest interval ``auto`` measures other processes over (a first choice: any).
MIN_INTERVAL_S = 0.2


def usable_cpus() -> list[int]:
    """The CPUs this process may run on (its affinity mask; every CPU where there is none).

    Examples:
        >>> len(usable_cpus()) >= 1
        True
    """
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


def cpu_share() -> int:
    """How many runs share this process's CPUs: :data:`CPU_SHARE_ENV`, else 1.

    Examples:
        >>> os.environ[CPU_SHARE_ENV] = "2"
        >>> cpu_share()
        2
        >>> del os.environ[CPU_SHARE_ENV]
        >>> cpu_share()
        1
    """
    value = os.environ.get(CPU_SHARE_ENV, "").strip()
    if not value:
        return 1
    try:
        share = int(value)
    except ValueError:
        share = 0
    if share < 1:
        from marlplug.errors import UserError

        raise UserError(
            f"{CPU_SHARE_ENV}: {value!r} is not a whole number >= 1 (runs sharing CPUs)"
        )
    return share


@dataclass(frozen=True)
class CpuClock:
    """A reading of the CPUs' busy time (``/proc/stat``), this process's CPU time and the wall clock.

    ``busy_s`` is ``None`` where ``/proc/stat`` cannot be read (not Linux): then nothing is known
    about other processes and every usable CPU counts as free.
    """

    wall_s: float
    own_s: float
    busy_s: float | None

    @classmethod
    def now(cls, cpus: Sequence[int]) -> CpuClock:
        """Read the clocks for ``cpus``."""
        times = os.times()
        return cls(time.monotonic(), times.user + times.system, _busy_seconds(cpus))


def _busy_seconds(cpus: Sequence[int]) -> float | None:
    """Seconds ``cpus`` spent not idle since boot (every process's), from ``/proc/stat``."""
    try:
        with open("/proc/stat") as stat:
            lines = stat.read().splitlines()
    except OSError:
        return None
    wanted = {f"cpu{cpu}" for cpu in cpus}
    ticks = 0
    for line in lines:
        name, *fields = line.split()
        if name in wanted:
            # user nice system idle iowait irq softirq steal ...: idle and iowait are not busy.
            values = [int(field) for field in fields[:8]]
            ticks += sum(values) - values[3] - values[4]
    return ticks / os.sysconf("SC_CLK_TCK")


def other_processes_cores(before: CpuClock, after: CpuClock) -> float:
    """Cores' worth of CPU time other processes used between two readings (0 when unknown).

    Examples:
        >>> before = CpuClock(wall_s=0.0, own_s=0.0, busy_s=0.0)
        >>> other_processes_cores(before, CpuClock(wall_s=2.0, own_s=2.0, busy_s=4.0))
        1.0
    """
    elapsed = after.wall_s - before.wall_s
    if before.busy_s is None or after.busy_s is None or elapsed <= 0:
        return 0.0
    others = (after.busy_s - before.busy_s) - (after.own_s - before.own_s)
    return max(0.0, others / elapsed)


def threads_for(cpus: int, others: float, share: int) -> int:
    """The threads ``auto`` picks: the CPUs left free by ``others`` cores of other processes' work
    (a CPU they used less than :data:`BUSY_SHARE` of counts as free), at most this run's share of
    ``cpus``, and at least one.

    Examples:
        >>> threads_for(2, others=0.05, share=1)  # an idle 2-core machine
        2
        >>> threads_for(2, others=1.0, share=1)  # a busy loop on one core
        1
        >>> threads_for(2, others=0.0, share=2)  # two runs of a sweep
        1
        >>> threads_for(16, others=3.5, share=2)
        8
    """
    free = int(cpus - others + (1 - BUSY_SHARE))
    return max(1, min(free, cpus // share))


class AutoThreads:
    """``train.torch_threads: auto``: :meth:`choose` sets torch's thread count before each update,
    from the CPUs other processes left free since the last choice (the first: since this object
    was made) and from what the run measured itself (:meth:`timed`).

    More threads only pay where the tensors are large: ``spread_vmas.yaml`` (600 copies) trains
    ~1.35x faster on 2 threads than on one, but ``marlplug train`` with no config (mpe, small
    minibatches) ~1.3x slower. So while more than one CPU is free, the first update warms up, the
    second runs on every free CPU and the third on one, and the run keeps the faster (the result is
    the same bit for bit either way).

    Examples:
        >>> auto = AutoThreads()
        >>> 1 <= auto.choose() <= len(usable_cpus())
        True
    """

    def __init__(self, share: int | None = None) -> None:
        self.cpus = usable_cpus()
        self.share = share if share is not None else cpu_share()
        self._last = CpuClock.now(self.cpus)
        self.threads = torch.get_num_threads()
        #: Whether one thread beat every free CPU in the trials (``None``: not tried yet).
        self.one_is_faster: bool | None = None
        self._trials: list[str] = ["warm-up", "many", "one"]
        self._trial: str | None = None
        self._seconds: dict[str, float] = {}
        self._free: int | None = None

    def choose(self) -> int:
        """Pick and set the thread count for the update that follows; return it."""
        # Updates shorter than MIN_INTERVAL_S keep the last count: too short to tell a busy CPU
        # from noise (the interval goes on growing until it is long enough).
        if self._free is None or time.monotonic() - self._last.wall_s >= MIN_INTERVAL_S:
            now = CpuClock.now(self.cpus)
            others = other_processes_cores(self._last, now)
            self._free = threads_for(len(self.cpus), others, self.share)
            self._last = now
        free = self._free
        # A trial only while more than one CPU is free: else there is nothing to compare.
        self._trial = self._trials.pop(0) if free > 1 and self._trials else None
        self.threads = 1 if self._trial == "one" or self.one_is_faster else free
        if torch.get_num_threads() != self.threads:
            torch.set_num_threads(self.threads)
        return self.threads

    def timed(self, seconds: float) -> None:
        """How long the update after the last :meth:`choose` took (a trial's time is kept)."""
        if self._trial in ("many", "one"):
            self._seconds[self._trial] = seconds
        if len(self._seconds) == 2 and self.one_is_faster is None:
            self.one_is_faster = self._seconds["one"] < self._seconds["many"]


def set_torch_threads(setting: TorchThreads) -> AutoThreads | None:
    """Apply ``train.torch_threads`` once (code that does not run updates one by one): a number
    sets it, ``None`` leaves torch's default, ``auto`` chooses from the CPUs free now (measured
    over :data:`MIN_INTERVAL_S`) and returns the :class:`AutoThreads` that did.

    Examples:
        >>> previous = torch.get_num_threads()
        >>> set_torch_threads(1), torch.get_num_threads()
        (None, 1)
        >>> torch.set_num_threads(previous)
    """
    if setting is None:
        return None
    if setting != "auto":
        torch.set_num_threads(setting)
        return None
    auto = AutoThreads()
    time.sleep(MIN_INTERVAL_S)  # once: what other processes do now
    auto.choose()
    return auto
