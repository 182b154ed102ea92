"""Kill `marlplug train` with SIGKILL again and again, resuming after each kill (run by
test_crash_safety.py in a subprocess: ``python crash_driver.py SPEC_JSON``).

The driver imports marlplug once, then forks one child per attempt; each child runs the real CLI
(``main(["train", ...])``). A "timer" attempt is killed after a random delay (or once it logged a few updates), wherever
it is; a
"mid-write" attempt kills itself with SIGKILL halfway through writing its first checkpoint (half the
bytes are in the temporary file). The run is then resumed once more, unkilled, to the end. Prints
one JSON object: every attempt's mode, delay, how it ended and the temporary files it left.
"""

from __future__ import annotations

import io
import json
import os
import random
import signal
import sys
import time
from pathlib import Path
from typing import Any


def _child(args: list[str], log: Path, die_mid_write: bool) -> None:
    """In a forked child: run ``marlplug ARGS`` and exit with its status (never returns)."""
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    if die_mid_write:
        import torch

        real_save = torch.save

        def save_half_then_die(obj: Any, stream: Any, *rest: Any, **options: Any) -> None:
            buffer = io.BytesIO()
            real_save(obj, buffer, *rest, **options)
            data = buffer.getvalue()
            stream.write(data[: len(data) // 2])
            stream.flush()
            os.kill(os.getpid(), signal.SIGKILL)

        torch.save = save_half_then_die
    from marlplug.cli.main import main

    try:
        code = main(args)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 99
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _fork(args: list[str], log: Path, die_mid_write: bool = False) -> int:
    pid = os.fork()
    if pid == 0:
        _child(args, log, die_mid_write)
    return pid


def _wait(pid: int, timeout_s: float) -> int:
    """Wait for ``pid``; its exit status, or -signal when a signal ended it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    raise TimeoutError(f"child {pid} ran over {timeout_s} s")


def _temporaries(run_dir: Path) -> list[str]:
    return sorted(path.name for path in run_dir.rglob(".*-*") if path.name != ".lock")


def _logged_updates(run_dir: Path) -> int:
    """Rows of one metric: how far the run got (rows past the checkpoint included)."""
    path = run_dir / "metrics" / "scalars" / "total_loss.csv"
    return len(path.read_text().splitlines()) if path.exists() else 0


def main(spec: dict[str, Any]) -> dict[str, Any]:
    # Import (not run) everything the children need once, so each child starts in a fraction of a
    # second; no torch op runs here, so no thread pool exists when forking.
    import marlplug.cli.train
    import marlplug.train.orchestrator
    import marlplug.train.run  # noqa: F401
    from marlplug.plugins import get_plugin_manager

    failed = [(info.name, info.error) for info in get_plugin_manager().report() if info.error]
    if failed:  # every child would inherit the broken registry: say why instead
        raise SystemExit(f"plugins failed to load: {failed}")
    rng = random.Random(spec["seed"])
    parent = Path(spec["logging_dir"])
    logs = parent / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    base = ["train", *spec["config"], "--no-progress"]
    for override in spec["overrides"]:
        base += ["--set", override]
    # The run never stopped trains beside the killed one (the test compares the two).
    straight = _fork(
        [*base, "--set", f"logging.dir={parent}", "--set", "logging.run_name=straight"],
        logs / "straight.log",
    )
    report: dict[str, Any] = {"attempts": []}
    run_dir = parent / "crashed"
    fresh = [*base, "--set", f"logging.dir={parent}", "--set", "logging.run_name=crashed"]
    resume = ["train", "--resume", str(run_dir), "--no-progress"]
    finished = False
    for attempt in range(spec["kills"]):
        args = fresh if attempt == 0 else resume
        mid_write = attempt % spec["mid_write_every"] == spec["mid_write_every"] - 1
        before = _temporaries(run_dir) if run_dir.exists() else []
        pid = _fork(args, logs / f"attempt-{attempt}.log", die_mid_write=mid_write)
        delay = None
        if mid_write:
            status = _wait(pid, spec["timeout_s"])
        else:
            if attempt == 0:  # kill only once the run folder and its config exist
                while not (run_dir / "config.yaml").exists() and not os.waitpid(pid, os.WNOHANG)[0]:
                    time.sleep(0.01)
            delay = rng.uniform(*spec["delay_s"])
            # Killed after the delay, or once it logged `max_progress` more updates: on a fast
            # machine the run must not end before every kill is done.
            cap = _logged_updates(run_dir) + spec["max_progress"]
            deadline = time.monotonic() + delay
            while time.monotonic() < deadline and _logged_updates(run_dir) < cap:
                time.sleep(0.005)
            os.kill(pid, signal.SIGKILL)
            status = _wait(pid, spec["timeout_s"])
        report["attempts"].append(
            {
                "mode": "mid-write" if mid_write else "timer",
                "delay_s": delay,
                "status": status,
                "temporaries_before": before,
                "temporaries_after": _temporaries(run_dir),
                "logged_updates": _logged_updates(run_dir),
            }
        )
        if status == 0:  # the run ended before the kill came
            finished = True
            break
    if not finished:
        report["final"] = _wait(_fork(resume, logs / "final.log"), spec["timeout_s"])
    report["temporaries_at_end"] = _temporaries(run_dir)
    report["straight"] = _wait(straight, spec["timeout_s"])
    return report


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
