"""The Q-learners with a GRU (``algorithm.recurrent: gru``): the algorithm contract for IQL, VDN and
QMIX, the state carried while acting and reset where an episode starts, chunks replayed from their
stored first state (whose first step's Q is the acting Q), evaluation that carries the state,
training that resumes bit for bit, and one-line errors for bad options."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest
import torch

from marlplug import load_config
from marlplug.algorithms.acting import acting_policy
from marlplug.algorithms.q import IQL, QMIX, VDN, QProgram
from marlplug.algorithms.q.sequences import SequenceCollector
from marlplug.envs import make_env
from marlplug.envs.evaluate import evaluate
from marlplug.testing import AlgorithmContract
from marlplug.train.orchestrator import run
from tests.algorithms.recording import Recording
from tests.torch_threads import one_torch_thread  # noqa: F401  (autouse: one torch thread)

GRU: dict[str, Any] = {
    "recurrent": "gru",
    "hidden_sizes": [16],
    "recurrent_hidden_size": 8,
    "sequence_length": 8,
    "minibatch_size": 16,
    "learning_starts": 32,
    "steps_per_iteration": 16,
}


class TestIQLRecurrent(AlgorithmContract):
    algorithm_class = IQL
    options: ClassVar[dict[str, Any]] = GRU


class TestIQLRecurrentSharedTwoGroups(AlgorithmContract):
    """Two groups (two hidden states, two primers), each sharing its Q-network."""

    algorithm_class = IQL
    options: ClassVar[dict[str, Any]] = {**GRU, "share_params": True}
    env = "predator_prey"
    env_options: ClassVar[dict[str, Any]] = {"agents": 3, "adversaries": 1, "obstacles": 1}


class TestVDNRecurrent(AlgorithmContract):
    algorithm_class = VDN
    options: ClassVar[dict[str, Any]] = GRU


class TestQMIXRecurrent(AlgorithmContract):
    algorithm_class = QMIX
    options: ClassVar[dict[str, Any]] = {**GRU, "mixing_embed_dim": 4}


def _collected(steps: int = 50, **options: Any) -> tuple[QProgram, SequenceCollector, Any]:
    """An IQL GRU program and its collector after ``steps`` steps on two 25-step episodes'
    worth of cooperative navigation, cut into 5-step chunks."""
    env = make_env("cooperative_navigation", agents=2, seed=0)
    settings = {**GRU, "sequence_length": 5, "steps_per_iteration": 25, **options}
    program = IQL(**settings).bind(env)
    theta, _ = program.init_state(0)
    collector = SequenceCollector(env, program, seed=0)
    collector.collect(theta, steps)
    return program, collector, theta


def test_the_state_is_carried_and_reset_where_an_episode_starts() -> None:
    program, collector, theta = _collected()
    chunks = collector.buffer.storage[torch.arange(len(collector.buffer))]
    assert len(collector.buffer) == 10  # 50 steps in 5-step chunks
    starts = chunks["is_init"].reshape(-1).nonzero().flatten().tolist()
    assert starts == [0, 25]  # the first step of each 25-step episode
    first_states = chunks["hidden"]  # [10, M, H]
    assert bool((first_states[0] == 0).all()) and bool((first_states[5] == 0).all())
    assert all(bool((first_states[k] != 0).any()) for k in (1, 2, 3, 4, 6, 7, 8, 9))
    # Each chunk's stored state is the one the policy carried out of the chunk before it.
    state = torch.zeros(1, 2, 8)
    for step in range(50):
        chunk, offset = divmod(step, 5)
        if offset == 0:
            expected = torch.zeros_like(state) if step in (0, 25) else state
            torch.testing.assert_close(first_states[chunk].unsqueeze(0), expected)
        if step in (0, 25):
            state = torch.zeros_like(state)
        obs = chunks["obs"][chunk, offset].unsqueeze(0)
        _, state = program.recurrent_q_values(theta, obs, state)


def test_env_copies_are_chunked_each_in_its_own_time_order() -> None:
    env = make_env("cooperative_navigation", agents=2, seed=0, num_envs=2)
    program = IQL(**{**GRU, "sequence_length": 5, "steps_per_iteration": 10}).bind(env)
    theta, _ = program.init_state(0)
    collector = SequenceCollector(env, program, seed=0)
    collector.collect(theta, 10)
    chunks = collector.buffer.storage[torch.arange(len(collector.buffer))]
    assert len(collector.buffer) == 4  # 2 blocks of 5 steps x 2 copies: [block, copy] order
    assert chunks["is_init"][:, 0].tolist() == [True, True, False, False]
    assert not torch.equal(chunks["obs"][0], chunks["obs"][1])  # two copies, two episodes
    for copy in (0, 1):  # a copy's second chunk starts from the state its first one ended in
        state = chunks["hidden"][copy].unsqueeze(0)
        for step in range(5):
            _, state = program.recurrent_q_values(
                theta, chunks["obs"][copy, step].unsqueeze(0), state
            )
        torch.testing.assert_close(chunks["hidden"][2 + copy].unsqueeze(0), state)


def test_chunks_span_iterations_and_learning_starts_when_they_hold_enough_steps() -> None:
    env = make_env("cooperative_navigation", agents=2, seed=0)
    settings = {**GRU, "sequence_length": 4, "steps_per_iteration": 10}
    program = IQL(**{**settings, "minibatch_size": 20, "learning_starts": 25}).bind(env)
    theta, _ = program.init_state(0)
    collector = SequenceCollector(env, program, seed=0)
    assert collector.first_learning_iteration() == 3  # 7 chunks of 4 steps: 28 >= 25
    stored = []
    for _ in range(3):
        assert not collector.ready()
        collector.collect(theta, 10)
        stored.append(len(collector.buffer))
    assert stored == [2, 5, 7] and collector.ready()  # 10, 20, 30 steps: 2 steps left pending
    chunks = collector.buffer.storage[torch.arange(7)]
    assert chunks["is_init"].reshape(-1).nonzero().flatten().tolist() == [0, 25]


def test_the_replayed_first_step_q_is_the_acting_q() -> None:
    program, collector, theta = _collected()
    chunks = collector.buffer.storage[torch.arange(len(collector.buffer))]
    assert program.recurrent is not None
    state = program.theta_codec.unflatten(theta)
    params = [state[name] for name, _ in program.recurrent.shapes]
    replayed, _ = program.recurrent.replay(
        params, chunks["obs"].movedim(2, 0), chunks["hidden"].transpose(0, 1), chunks["is_init"]
    )  # [M, chunks, L, A]
    for chunk in range(10):  # acting Q: the chunk's first observation from its stored state
        acting, _ = program.recurrent_q_values(
            theta, chunks["obs"][chunk, 0].unsqueeze(0), chunks["hidden"][chunk].unsqueeze(0)
        )
        torch.testing.assert_close(replayed[:, chunk, 0], acting[0], rtol=0, atol=1e-6)


def test_the_update_reads_each_chunks_stored_first_state() -> None:
    program, collector, theta = _collected()
    _, opt_state = program.init_state(0)
    batch = collector.sample(torch.Generator().manual_seed(0)).clone()
    assert tuple(batch["obs"].shape[:2]) == (3, 5)  # minibatch_size 16: three 5-step chunks
    moved = program.update(theta, opt_state, batch, [0, 1], seed=0)
    assert not torch.equal(moved.theta, theta)
    again = program.update(theta, opt_state, batch.clone(), [0, 1], seed=0)
    assert torch.equal(moved.theta, again.theta)  # pure
    corrupted = batch.clone()
    corrupted["hidden"] += 0.5
    assert not torch.equal(
        program.update(theta, opt_state, corrupted, [0, 1], 0).theta, moved.theta
    )


@pytest.mark.parametrize("algorithm_class", [IQL, VDN, QMIX])
def test_evaluation_carries_the_hidden_state_and_repeats(algorithm_class: type) -> None:
    env = make_env("cooperative_navigation", agents=2, seed=0)
    program = algorithm_class(**GRU).bind(env)
    policy = Recording(acting_policy(program, env, program.init_state(0)[0]))
    first = evaluate(env, policy, episodes=2, seed=4)
    assert len(policy.seen) == 50  # two 25-step episodes
    for episode_start in (0, 25):
        start, next_step = policy.seen[episode_start], policy.seen[episode_start + 1]
        assert start is not None and bool((start == 0).all())
        assert next_step is not None and bool((next_step != 0).any())
    assert evaluate(env, policy, episodes=2, seed=4).returns == first.returns


def test_render_hands_the_policy_its_carried_state() -> None:
    """``marlplug render`` plays an episode step by step (``step_mdp`` carries
    ``("next", group, "rnn_hidden")`` to the next step)."""
    from marlplug.envs.render import rollout_moments

    env = make_env("cooperative_navigation", agents=2, seed=0)
    program = QMIX(**GRU).bind(env)
    policy = Recording(acting_policy(program, env, program.init_state(0)[0]))
    assert len(rollout_moments(env, policy=policy, max_steps=5)) == 6
    assert policy.seen[0] is None  # the reset state has none: the policy starts from zero
    carried = policy.seen[1:]
    assert all(state is not None and bool((state != 0).any()) for state in carried)
    assert not any(torch.equal(a, b) for a, b in itertools.pairwise(carried))  # type: ignore[arg-type]


def test_a_mlp_program_still_acts_through_act() -> None:
    env = make_env("cooperative_navigation", agents=2, seed=0)
    program = IQL(hidden_sizes=[8]).bind(env)
    assert program.policy is None and program.recurrent is None
    policy = acting_policy(program, env, program.init_state(0)[0])
    assert type(policy).__name__ == "FlatActorPolicy"


RUN = [
    "algorithm.recurrent=gru",
    "algorithm.minibatch_size=50",
    "algorithm.learning_starts=25",
    "algorithm.hidden_sizes=[16]",
    "algorithm.recurrent_hidden_size=8",
    "algorithm.sequence_length=5",
    "env.agents=2",
    "train.eval_every=0",
    "train.checkpoint_every=2",
    "logging.progress=false",
]


def test_a_gru_run_resumes_bit_identically_and_marlplug_evaluate_runs_it(
    tmp_path: Path, run_cli: Callable[..., Any]
) -> None:
    # 4-step chunks of 10-step iterations: a chunk may span two iterations. The first run stops
    # mid-episode (after step 5 of the second) and mid-chunk (2 steps pending); the resumed run
    # continues both. Two updates an iteration: the resumed sampler draws every chunk as before.
    overrides = [
        *RUN,
        "algorithm.name=vdn",
        "algorithm.sequence_length=4",
        "algorithm.minibatch_size=20",
        "algorithm.steps_per_iteration=10",
        "algorithm.updates_per_iteration=2",
        "train.updates=6",
        "train.checkpoint_every=3",
    ]
    config = load_config(data={}, overrides=overrides)
    whole = run(config, run_dir=tmp_path / "whole")
    run(config, iterations=3, run_dir=tmp_path / "resumed")
    resumed = run(config, run_dir=tmp_path / "resumed", resume_dir=tmp_path / "resumed")
    assert torch.equal(resumed.theta, whole.theta)
    assert torch.equal(resumed.opt_state, whole.opt_state)
    # 25 steps to learn: 7 whole chunks (28 steps) after iteration 3, two updates from then on.
    assert whole.opt_state[:, -1].tolist() == [8.0, 8.0]
    result = run_cli("evaluate", str(tmp_path / "whole"), "--episodes", "2")
    assert result.exit_code == 0, result.err
    assert "return (summed over agents)" in result.out


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (["algorithm.recurrent=lstm"], "algorithm.recurrent: input should be 'none' or 'gru'"),
        (["algorithm.sequence_length=0"], "algorithm.sequence_length"),
        (["algorithm.recurrent_hidden_size=0"], "algorithm.recurrent_hidden_size"),
    ],
)
@pytest.mark.parametrize("name", ["iql", "qmix"])
def test_bad_recurrent_options_are_one_line(
    run_cli: Callable[..., Any], tmp_path: Path, name: str, overrides: list[str], expected: str
) -> None:
    path = tmp_path / "run.yaml"
    path.write_text(f"algorithm: {{name: {name}}}\n")
    sets = [arg for item in overrides for arg in ("--set", item)]
    result = run_cli("config", "check", str(path), *sets)
    assert result.exit_code == 2
    assert expected in result.err
    assert len(result.err.strip().splitlines()) <= 2 and "Traceback" not in result.err
