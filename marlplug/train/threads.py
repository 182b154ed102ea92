"""How many torch threads a run uses: ``train.torch_threads``, ``auto`` (the default), a number, or
``None`` (torch's own). ``auto`` takes the CPUs this process may use that no other process keeps
busy, divided among the runs that share them, chosen again before every update, and only for a run
whose result cannot depend on the count (:func:`thread_invariant`); every other run gets one thread.

Why not simply every core: a torch thread that shares its core with another process stalls every
parallel operation of the run, because the other threads wait for it at the operation's end. On a
2-core AMD EPYC with a busy loop on one core, the M = 32 config ran at 1,036 frames/s on 2 threads
against 1,950 on one (issue 47; ``marlplug bench load`` measures it on any machine). ``auto`` counts
a CPU as free when other processes used less than :data:`BUSY_SHARE` of it since the last choice
(``/proc/stat`` less this process's own CPU time), so a neighbour that starts mid-run takes a
thread away at the next update and one that ends gives it back.

Why only some runs: the same seed must give the same run, and ``auto``'s count follows the
machine's load. Two kinds of torch operation give other last bits on another thread count (every
aten op of every built-in algorithm compared on 1 and 2 threads, issue 47):

- a float32 matrix product (``mm``/``addmm``: MKL's sgemm) of 5 to 11 rows on 2, 5, 6 or 8
  threads against one (not on 3 or 4; 2-core AMD EPYC Zen 4, MKL 2024.2). On 12 threads and more
  MKL splits bigger products differently too (17 to 27 rows on 16 threads, up to 171 rows on 64,
  and batched products of ~100 rows), so ``auto`` gives an invariant run at most
  :data:`MAX_INVARIANT_THREADS`. It is inside MKL: ``MKL_CBWR=AUTO,STRICT`` set before the
  process's first product removes it, and cannot be switched on later (``mkl_cbwr_set`` fails).
  On a 2-core Intel Xeon (family 6, model 167) MKL split bigger products differently too, and a
  VMAS PPO run ended with other weights on 2 threads than on 1; so ``import marlplug`` sets
  ``MKL_CBWR=AUTO,STRICT`` unless it is set (about 3% slower there, docs/results/speed.md).
- a reduction of more than 32,768 elements to ONE number (``x.sum()``, ``x.mean()``): torch adds
  per-thread partial sums. Reductions with several outputs (``x.sum(0)`` of ``[B, agents]``) add
  each output on one thread and agree; marlplug's losses reduce per agent.

So an algorithm declares which of its runs are invariant (``thread_invariant(train)`` on its
Options; PPO: the runs whose every multiplied batch has at least
:data:`~marlplug.config.train.SMALL_GEMM_ROWS` rows), and ``tests/train/test_threads.py`` trains
every built-in algorithm on 1 and 2 threads and holds the results bit for bit. An algorithm that
declares nothing (a plugin's) runs on one thread. The replay-based algorithms (MADDPG, IDDPG, IQL,
VDN, QMIX, ISAC, MASAC) set one thread for their own collection and updates and ignore
``train.torch_threads``, and their runs do the rest on one thread too (a second one left a torch
worker spinning between parallel regions: ``marlplug.train.orchestrator.run``); evaluations run on
one thread (:func:`~marlplug.torch_threads.one_thread`).

A sweep (``marlplug sweep --jobs N``) tells its runs how many share the machine through
:data:`CPU_SHARE_ENV`; so can a user who starts runs side by side by hand.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from marlplug.config.train import TorchThreads

# Re-exported: evaluations import it from here; it lives below the algorithms, which use it too.
from marlplug.torch_threads import one_thread as one_thread

if TYPE_CHECKING:
    from marlplug.config import MarlplugConfig

#: Runs sharing this process's CPUs (an integer >= 1), set by ``marlplug sweep`` for its runs.
CPU_SHARE_ENV = "MARLPLUG_CPU_SHARE"
#: A CPU other processes used more than this share of (0 to 1) is not counted as free.
BUSY_SHARE = 0.3
#: The shortest interval ``auto`` measures other processes over (a first choice: any).
MIN_INTERVAL_S = 0.2
#: The most threads ``auto`` gives an invariant run. Up to 8, products of 12 rows and more, plain
#: (``mm``) and batched over 3 or 8 agents (``bmm``), agree with one thread (12 to 400 rows and
#: 600 to 3,000); on 12 to 64 threads MKL splits products of 17 to 171 rows, and batched
#: products of ~100 rows, differently (2-core AMD EPYC Zen 4, MKL 2024.2, threads oversubscribed).
MAX_INVARIANT_THREADS = 8


def thread_invariant(config: MarlplugConfig) -> bool:
    """Whether ``config``'s run ends bit for bit the same on any thread count, so ``auto`` may give
    it more than one: what its algorithm declares (``thread_invariant(train)`` on its Options;
    ``False`` where it declares nothing).

    Examples:
        >>> from marlplug.config import load_config
        >>> vmas = {"env": {"backend": "vmas"}, "train": {"num_envs": 600, "minibatch_size": 3000}}
        >>> thread_invariant(load_config(data=vmas))
        True
        >>> thread_invariant(load_config(data={}))  # one mpe copy: batches of fewer than 12 rows
        False
    """
    declared = getattr(config.algorithm.options, "thread_invariant", None)
    return bool(declared(config.train)) if callable(declared) else False


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
    the same bit for bit either way). A run that is not ``invariant`` (:func:`thread_invariant`)
    always gets one thread, an invariant one at most :data:`MAX_INVARIANT_THREADS`.

    Examples:
        >>> auto = AutoThreads(invariant=True)
        >>> 1 <= auto.choose() <= len(usable_cpus())
        True
        >>> AutoThreads(invariant=False).choose()
        1
    """

    def __init__(self, share: int | None = None, *, invariant: bool = False) -> None:
        self.invariant = invariant
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
        if not self.invariant:  # another count could change the run's last bits
            if torch.get_num_threads() != 1:
                torch.set_num_threads(1)
            self.threads = 1
            return 1
        # Updates shorter than MIN_INTERVAL_S keep the last count: too short to tell a busy CPU
        # from noise (the interval goes on growing until it is long enough).
        if self._free is None or time.monotonic() - self._last.wall_s >= MIN_INTERVAL_S:
            now = CpuClock.now(self.cpus)
            others = other_processes_cores(self._last, now)
            self._free = threads_for(len(self.cpus), others, self.share)
            self._last = now
        free = min(self._free, MAX_INVARIANT_THREADS)
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


def set_torch_threads(setting: TorchThreads, *, invariant: bool = False) -> AutoThreads | None:
    """Apply ``train.torch_threads`` once (code that does not run updates one by one): a number
    sets it, ``None`` leaves torch's default, ``auto`` chooses from the CPUs free now (measured
    over :data:`MIN_INTERVAL_S`; one thread unless the caller knows the work is ``invariant``, see
    :func:`thread_invariant`) and returns the :class:`AutoThreads` that did.

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
    auto = AutoThreads(invariant=invariant)
    if invariant:
        time.sleep(MIN_INTERVAL_S)  # once: what other processes do now
    auto.choose()
    return auto
