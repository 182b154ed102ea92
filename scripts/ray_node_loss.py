"""What losing a node costs a coded run (the table in docs/how-to/ray-cluster.md).

A 3-node Ray cluster on this machine (``ray.cluster_utils.Cluster``, 2 CPUs per node) runs coded
MADDPG updates (M = 3) on N = 5 ``mds`` learners with one 0.05 s straggler per round. Before round
20 the raylet of the worker node holding the most learners is killed, and rounds go on for 60 s after that. The script prints
when Ray declared the node dead (the lost learner re-created), how many rounds decoded without it,
when the re-created learner's answer was used again, and whether the end state equals the
centralized run's. Run from the repository root: ``python scripts/ray_node_loss.py``.
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ray
import torch
from ray.cluster_utils import Cluster

from marlplug.algorithms.protocol import AgentUpdate
from marlplug.coding import MDSCode
from marlplug.coding.stragglers import StragglerModel
from marlplug.distributed.backends.ray import RayBackend
from marlplug.distributed.controller import CodedController
from marlplug.seeding import derive_seed
from tests.distributed.helpers import centralized, maddpg_program

AGENTS, LEARNERS, KILL_ROUND, AFTER_S = 3, 5, 20, 60.0


@dataclass
class Round:
    index: int
    since_kill_s: float | None
    seconds: float
    used: list[int]
    restarted: list[int]
    redispatched: list[int]


def main() -> None:
    nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 2})
    workers = [nodes.add_node(num_cpus=2) for _ in range(2)]
    nodes.wait_for_nodes()
    program, batch = maddpg_program(AGENTS)
    scheme = MDSCode()
    backend = RayBackend(LEARNERS, address=nodes.address)
    state = reference = AgentUpdate(*program.init_state(0))
    rounds: list[Round] = []
    with CodedController(
        program,
        scheme.assignment_matrix(AGENTS, LEARNERS, 0),
        backend,
        scheme=scheme,
        stragglers=StragglerModel(count=1, delay_s=0.05, seed=0),
        round_timeout_s=20,
    ) as controller:
        before = backend.placement()
        # The worker node holding the most learners (the head holds the controller).
        victim = max(workers, key=lambda node: list(before.values()).count(node.node_id))
        lost = victim.node_id
        on_lost = sorted(learner for learner, node in before.items() if node == lost)
        per_node = sorted(list(before.values()).count(node) for node in set(before.values()))
        print(f"learners per node: {per_node}; on the node to be lost: {on_lost}")
        killed_at: float | None = None
        index = 0
        while killed_at is None or time.monotonic() - killed_at < AFTER_S:
            if index == KILL_ROUND:
                nodes.remove_node(victim, allow_graceful=False)
                killed_at = time.monotonic()
            seed = derive_seed(0, index)
            start = time.monotonic()
            state, log = controller.update(state.theta, state.opt_state, batch, index, seed=seed)
            reference = centralized(program, reference.theta, reference.opt_state, batch, seed)
            since = None if killed_at is None else start - killed_at
            rounds.append(
                Round(
                    index,
                    since,
                    time.monotonic() - start,
                    log.learners_used,
                    log.restarted,
                    log.redispatched_agents,
                )
            )
            index += 1
        after = backend.placement()
    ray.shutdown()
    nodes.shutdown()

    before_kill = statistics.median(r.seconds for r in rounds if r.since_kill_s is None)
    after_kill = [r for r in rounds if r.since_kill_s is not None]
    first = next((r for r in after_kill if r.restarted), None)
    print(f"rounds before the kill: median {before_kill:.3f} s")
    print(f"round in progress at the kill: {after_kill[0].seconds:.3f} s")
    if first is None:
        print("the lost learners were not re-created within the run")
    else:
        assert first.since_kill_s is not None
        waited = [r for r in after_kill if r.index < first.index]
        print(
            f"re-created at +{first.since_kill_s:.1f} s (round {first.index}); rounds decoded "
            f"before that: {len(waited)}, median "
            f"{statistics.median(r.seconds for r in waited):.3f} s"
        )
        used = next(
            (r for r in after_kill if r.index > first.index and set(r.used) & set(on_lost)), None
        )
        if used is not None and used.since_kill_s is not None:
            print(f"re-created learner's answer first used at +{used.since_kill_s:.1f} s")
    print(f"re-dispatched agents: {sorted({a for r in after_kill for a in r.redispatched})}")
    print(f"nodes used after: {len(set(after.values()))}; lost node used: {lost in after.values()}")
    print(
        "end state equals the centralized run's: "
        f"{torch.equal(state.theta, reference.theta) and torch.equal(state.opt_state, reference.opt_state)}"
    )


if __name__ == "__main__":
    main()
