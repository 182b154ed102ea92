"""A process whose env copies run in worker processes and that ends one way or another, for
tests/envs/test_copies_shutdown.py: ``python tests/envs/copies_shutdown.py MODE``.

It prints the workers' process ids on its first line; MODE says how it ends: ``close`` (steps, then
closes the env), ``exit`` (returns without closing it), ``crash`` (an exception while stepping),
``wait`` (steps until a signal comes: Ctrl-C or SIGKILL; it prints ``stepping`` first).
"""

from __future__ import annotations

import sys
import time

#: ``wait`` gives up after this long, so a test that fails to signal leaves nothing running.
WAIT_LIMIT_S = 300.0


def main(mode: str) -> int:
    from marlplug.envs import make_env

    env = make_env("cooperative_navigation", num_envs=2, seed=0, copies="processes", agents=2)
    print(" ".join(str(worker.pid) for worker in env._workers), flush=True)
    if mode == "exit":
        return 0
    start = time.monotonic()
    try:
        state = env.reset()
        for step in range(10**9):
            _, state = env.step_and_maybe_reset(env.rand_action(state))
            if step == 5 and mode == "close":
                return 0
            if step == 5 and mode == "crash":
                raise RuntimeError("a crash while stepping")
            if step == 5:
                print("stepping", flush=True)
            if time.monotonic() - start > WAIT_LIMIT_S:
                return 3
        return 0
    finally:
        env.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
