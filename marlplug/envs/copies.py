"""Where a non-vectorized env's ``num_envs`` copies run (``env.copies``): one after the other in this
process (TorchRL's ``SerialEnv``, ``serial``), one worker process per copy (TorchRL's
``ParallelEnv``, ``processes``) or one Ray actor per copy, anywhere on a Ray cluster (``ray``,
:mod:`marlplug.envs.ray_copies`).

All seed copy k with the seed TorchRL chains on from copy k - 1, so the choice changes the speed,
never the transitions. ``serial`` is the default: on the idle 2-core AMD EPYC, ``marlplug bench
envs --copies serial --copies processes`` measured processes at 0.82x serial on mpe cooperative
navigation and 0.72x on LBF with 2 copies (docs/results/speed.md, "Env copies in worker
processes"). A vectorized backend (vmas) already steps its copies as one batch.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Mapping, Sequence
from typing import get_args

import torch
from torchrl.envs import EnvBase, ParallelEnv, SerialEnv

from marlplug.config.schema import EnvCopies as Copies
from marlplug.torch_threads import kept_thread_count

#: The valid ``env.copies`` values, for messages and CLI choices.
COPIES: tuple[str, ...] = get_args(Copies)


class _SerialCopies(SerialEnv):
    """TorchRL's ``SerialEnv`` whose ``close`` keeps this process's torch thread count.

    TorchRL's batched envs raise the count when they close, by one per worker they free (up to
    the count when torchrl was imported), even ``SerialEnv``, which has none. The count is the
    run's setting and can change a run's last bits: two runs of one seed in one process, the
    first one's envs closed before the second starts, ended apart on a loaded CI machine.
    """

    def close(self, *, raise_if_closed: bool = True) -> None:
        with kept_thread_count():
            super().close(raise_if_closed=raise_if_closed)


class _ProcessCopies(ParallelEnv):
    """TorchRL's ``ParallelEnv`` whose ``close`` keeps this process's torch thread count (see
    :class:`_SerialCopies`)."""

    def close(self, *, raise_if_closed: bool = True) -> None:
        with kept_thread_count():
            super().close(raise_if_closed=raise_if_closed)


def serial_copies(
    make_one: Callable[[], EnvBase], *, num_envs: int, seed: int | None, device: str
) -> EnvBase:
    """``make_one()`` itself for one copy, else ``num_envs`` copies in a started ``SerialEnv`` with
    the first copy's ``group_map``; seeded when ``seed`` is given.

    Examples:
        >>> from mpe2 import simple_spread_v3
        >>> from torchrl.envs import PettingZooWrapper
        >>> def make_one():
        ...     return PettingZooWrapper(simple_spread_v3.parallel_env(), categorical_actions=True)
        >>> env = serial_copies(make_one, num_envs=2, seed=0, device="cpu")
        >>> env.batch_size, list(env.group_map)
        (torch.Size([2]), ['agent'])
    """
    env: EnvBase
    if num_envs == 1:
        env = make_one()
    else:
        env = _SerialCopies(num_envs, make_one, device=device)
        env.start()
        # SerialEnv forwards attributes as one value per copy; consumers expect one dict.
        env.group_map = dict(env._envs[0].group_map)
    if seed is not None:
        env.set_seed(seed)
    return env


class InWorker:
    """``make_one`` for a worker process: there it first ignores Ctrl-C (SIGINT).

    A terminal sends Ctrl-C to every process of the foreground group; the workers leave it to the
    main process, which closes them (``env.close()``) on its way out, instead of each printing a
    ``KeyboardInterrupt`` traceback and leaving the main process to write to dead pipes. Called in
    the process that built it (TorchRL may read specs there), it changes nothing.

    Example:
        >>> make = InWorker(dict)
        >>> make(), signal.getsignal(signal.SIGINT) is signal.default_int_handler
        ({}, True)
    """

    def __init__(self, make_one: Callable[[], EnvBase]) -> None:
        self.make_one = make_one
        self.main_pid = os.getpid()

    def __call__(self) -> EnvBase:
        if os.getpid() != self.main_pid:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        return self.make_one()


def process_copies(
    make_one: Callable[[], EnvBase],
    *,
    num_envs: int,
    seed: int | None,
    device: str,
    group_map: Mapping[str, Sequence[str]],
) -> ParallelEnv:
    """``num_envs`` copies of ``make_one()`` (an unbatched env), each in its own worker process, in
    a started ``ParallelEnv`` with ``group_map``; seeded like :func:`serial_copies`.

    ``make_one`` is sent to the workers with cloudpickle (they start fresh: ``spawn``). The workers
    are daemons, so they end with the main process even when it exits without closing the env, and
    a worker whose main process was killed ends on its closed pipe. Close the env when done.

    Examples:
        >>> from marlplug.envs import get_scenario
        >>> scenario = get_scenario("cooperative_navigation")(agents=2)
        >>> one = scenario.make(num_envs=1)
        >>> env = process_copies(lambda: scenario.make(num_envs=1), num_envs=2, seed=0,
        ...                      device="cpu", group_map=one.group_map)
        >>> env.rollout(3)["next", "agent", "reward"].shape
        torch.Size([2, 3, 2, 1])
        >>> env.close()
    """
    env = _ProcessCopies(
        num_envs,
        InWorker(make_one),
        device=device,
        daemon=True,
        # ParallelEnv would lower this process's torch threads by one per worker; the thread count
        # is the run's setting (train.torch_threads) and can change a run's last bits.
        num_threads=torch.get_num_threads(),
    )
    env.start()
    # ParallelEnv forwards attribute reads to its workers; consumers expect one dict.
    env.group_map = {group: list(agents) for group, agents in group_map.items()}
    if seed is not None:
        env.set_seed(seed)
    return env


__all__ = ["COPIES", "Copies", "InWorker", "process_copies", "serial_copies"]
