"""A real multi-node Ray cluster on this machine, started with the commands of
docs/how-to/ray-cluster.md.

``ray start --head`` and ``ray start --address`` start one raylet (a Ray node) each; on one machine
they share its CPUs but are separate nodes to Ray's scheduler, its object store and its failure
handling, so killing one node's raylet is what losing a machine looks like to the driver. The
cluster uses Ray's token authentication with a token of its own (``RAY_AUTH_TOKEN``), and is torn
down by killing exactly the processes that belong to it (never ``ray stop``, which would stop every
Ray on the machine).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:  # exited meanwhile
        return ""


def _pids_mentioning(text: str) -> list[int]:
    return [
        int(entry.name)
        for entry in Path("/proc").iterdir()
        if entry.name.isdigit() and text in _command_line(int(entry.name))
    ]


@dataclass
class RayCluster:
    """A running cluster: its address (``host:port`` of the head's GCS), the environment a driver
    (``marlplug train``) needs to join it (the cluster's auth token), and its worker nodes' raylet
    ports (a driver on this machine attaches to the head node, so killing a worker node never
    kills the driver's own raylet)."""

    address: str
    env: dict[str, str]
    gcs_port: int
    worker_ports: list[int]

    def kill_worker_node(self, index: int) -> int:
        """SIGKILL worker node ``index``'s raylet, as if its machine were lost; returns the pid."""
        port = self.worker_ports[index]
        raylets = [
            pid
            for pid in _pids_mentioning(f"--node_manager_port={port}")
            if _command_line(pid).split(" ", 1)[0].endswith("raylet")
        ]
        assert len(raylets) == 1, f"raylet of worker node {index} (port {port}): {raylets}"
        os.kill(raylets[0], signal.SIGKILL)
        return raylets[0]

    def stop(self) -> None:
        """Kill every process of this cluster (each names its GCS port: ``--gcs_server_port=P``
        or an address ``host:P``), and forget it as this machine's latest cluster."""
        for _ in range(3):
            pids = {
                pid
                for text in (f":{self.gcs_port}", f"_port={self.gcs_port}")
                for pid in _pids_mentioning(text)
                if pid != os.getpid()
            }
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(1.0)
        latest = Path(tempfile.gettempdir()) / "ray" / "ray_current_cluster"
        with contextlib.suppress(OSError):
            if latest.read_text().strip().endswith(f":{self.gcs_port}"):
                latest.unlink()


def ray_executable() -> str:
    """The ``ray`` command of this Python's environment (the venv's, even if it is not on PATH)."""
    beside = Path(sys.executable).with_name("ray")
    found = str(beside) if beside.is_file() else shutil.which("ray")
    assert found is not None, "the `ray` command is not installed"
    return found


@contextmanager
def ray_cluster(nodes: int = 3, *, cpus_per_node: int = 2) -> Iterator[RayCluster]:
    """Start a head and ``nodes - 1`` worker nodes; yield the cluster; kill it on exit."""
    port = free_port()
    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)}
    env = {**os.environ, **auth, "RAY_USAGE_STATS_ENABLED": "0"}
    cluster = RayCluster(address=f"127.0.0.1:{port}", env=auth, gcs_port=port, worker_ports=[])
    ray = ray_executable()
    common = [f"--num-cpus={cpus_per_node}", "--disable-usage-stats"]
    try:
        head = [ray, "start", "--head", f"--port={port}", "--include-dashboard=false", *common]
        started = _ray_start(head, env)
        if started.returncode != 0:
            raise RuntimeError(_failed(head, started))
        for _ in range(nodes - 1):
            cluster.worker_ports.append(_start_worker(ray, cluster.address, common, env))
        yield cluster
    finally:
        cluster.stop()


def _ray_start(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)


def _start_worker(ray: str, address: str, common: list[str], env: dict[str, str]) -> int:
    """Start a worker node on a free port; its raylet's port. A port found free can be taken
    before the raylet binds it (the head's own processes pick ports meanwhile), so a failed
    start is tried once more on another port; a second failure shows what ``ray start`` said."""
    for _ in range(2):
        port = free_port()
        command = [ray, "start", f"--address={address}", f"--node-manager-port={port}", *common]
        result = _ray_start(command, env)
        if result.returncode == 0:
            return port
    raise RuntimeError("twice: " + _failed(command, result))


def _failed(command: list[str], result: subprocess.CompletedProcess[str]) -> str:
    return (
        f"`{' '.join(command)}` exited {result.returncode}:\n"
        f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    )
