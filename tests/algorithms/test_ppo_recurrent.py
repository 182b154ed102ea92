"""PPO with a GRU actor (``algorithm.recurrent: gru``): the algorithm contract, minibatches of whole
sequences whose recomputed log-probabilities are the collected ones before the first step, the
loss replaying each sequence from its first stored state, evaluation that carries the state, the
joint trainer training on the same sequences, and one-line errors for bad options."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest
import torch
from torchrl.modules import set_recurrent_mode

from marlplug.algorithms.acting import acting_policy
from marlplug.algorithms.ppo import PPO
from marlplug.config import MarlplugConfig, load_config
from marlplug.envs import make_env
from marlplug.envs.evaluate import evaluate
from marlplug.envs.policies import random_group_policy
from marlplug.losses.ppo_options import JointTrainerConfig
from marlplug.testing import AlgorithmContract
from marlplug.train.run import run_training
from marlplug.train.trainer import JointMultiAgentTrainer
from tests.algorithms.recording import HIDDEN_KEY, Recording
from tests.torch_threads import one_torch_thread  # noqa: F401  (autouse: one torch thread)
from tests.train.helpers import SMALL_RUN

GRU = {
    "name": "ppo",
    "recurrent": "gru",
    "hidden_size": 16,
    "feature_dim": 8,
    "recurrent_hidden_size": 8,
    "sequence_length": 10,
}


class TestPPORecurrent(AlgorithmContract):
    """The contract every algorithm meets, with a GRU actor and 8-step sequences."""

    algorithm_class = PPO
    options: ClassVar[dict[str, Any]] = {**GRU, "sequence_length": 8}
    options.pop("name")


class TestPPORecurrentTwoGroups(AlgorithmContract):
    """Two agent groups, each with its own GRU and hidden state (two primers on one env)."""

    algorithm_class = PPO
    options: ClassVar[dict[str, Any]] = TestPPORecurrent.options
    env = "predator_prey"
    env_options: ClassVar[dict[str, Any]] = {"agents": 3, "adversaries": 1, "obstacles": 1}


def _bound(num_envs: int = 2) -> tuple[Any, Any, MarlplugConfig]:
    config = load_config(
        data={
            "env": {"agents": 2},
            "algorithm": GRU,
            "train": {
                "rollout_steps": 50,
                "minibatch_size": 20,
                "n_epochs": 2,
                "num_envs": num_envs,
            },
        }
    )
    env = make_env("cooperative_navigation", agents=2, seed=0, num_envs=num_envs)
    algorithm = PPO(**config.algorithm.options.model_dump())
    program = algorithm.bind(env, config)
    return program, algorithm.rollouts(env, program, config), config


def test_minibatches_are_sequences_and_the_first_epochs_ratio_is_one() -> None:
    program, source, config = _bound()
    theta, _ = program.init_state(config.seed)
    source.sync(theta)
    source._load_pending()
    rollout = source.collect(0)
    pairs = list(source.minibatches(rollout, 0))
    source.close()
    # 2 envs x 50 steps = 10 sequences of 10 steps; 20-step minibatches hold 2 of them.
    assert [tuple(batch.batch_size) for batch, _ in pairs] == [(2, 10)] * 10
    starts = rollout.get("is_init").squeeze(-1).nonzero().tolist()
    assert starts == [[0, 0], [0, 25], [1, 0], [1, 25]]  # steps 20-29 hold a reset
    first_epoch = [batch for batch, _ in pairs[:5]]
    assert sum(bool(batch.get("is_init")[:, 1:].any()) for batch in first_epoch) == 2
    with torch.no_grad(), set_recurrent_mode(True):
        for batch in first_epoch:
            out = program.loss(batch)
            torch.testing.assert_close(out["max_ratio"], torch.tensor(1.0))
            torch.testing.assert_close(out["mean_ratio"], torch.tensor(1.0))


def test_the_update_replays_each_sequence_from_its_first_stored_state() -> None:
    program, source, config = _bound()
    theta, opt_state = program.init_state(config.seed)
    batch = next(iter(source.batches(theta, 0))).clone()
    source.close()
    moved = program.update(theta, opt_state, batch, [0, 1], seed=3)
    corrupted = batch.clone()
    corrupted.get(HIDDEN_KEY)[:, 1:] = 7.0  # never read: recomputed from step 0's state
    again = program.update(theta, opt_state, corrupted, [0, 1], seed=3)
    assert torch.equal(moved.theta, again.theta)
    corrupted.get(HIDDEN_KEY)[:, 0] = 7.0  # the state each sequence starts from is read
    assert not torch.equal(
        moved.theta, program.update(theta, opt_state, corrupted, [0, 1], 3).theta
    )


def test_evaluation_carries_the_hidden_state_and_repeats() -> None:
    program, source, config = _bound(num_envs=1)
    theta, _ = program.init_state(config.seed)
    source.close()
    env = make_env("cooperative_navigation", agents=2, seed=0)
    policy = Recording(acting_policy(program, env, theta))
    first = evaluate(env, policy, episodes=2, seed=4)
    assert len(policy.seen) == 50  # two 25-step episodes
    for episode_start in (0, 25):
        start, next_step = policy.seen[episode_start], policy.seen[episode_start + 1]
        assert start is not None and bool((start == 0).all())
        assert next_step is not None and bool((next_step != 0).any())
    assert evaluate(env, policy, episodes=2, seed=4).returns == first.returns


def test_a_random_group_beside_a_gru_policy_keeps_its_state_carried() -> None:
    # marlplug evaluate --random-group wraps the policy; the wrapper must still show the env the
    # policy's primers, or the GRU would act from a zero state at every step.
    program, source, config = _bound(num_envs=1)
    theta, _ = program.init_state(config.seed)
    source.close()
    env = make_env("cooperative_navigation", agents=2, seed=0)
    policy = Recording(acting_policy(program, env, theta))
    evaluate(env, random_group_policy(policy, env, "agent"), episodes=1, seed=4)
    start, next_step = policy.seen[0], policy.seen[1]
    assert start is not None and bool((start == 0).all())
    assert next_step is not None and bool((next_step != 0).any())


def test_a_gru_run_trains_and_marlplug_evaluate_runs_it(
    tmp_path: Path, run_cli: Callable[..., Any]
) -> None:
    config = load_config(
        overrides=[
            *SMALL_RUN,
            "algorithm.recurrent=gru",
            "algorithm.recurrent_hidden_size=8",
            "algorithm.sequence_length=25",
            "train.updates=2",
            "train.eval_episodes=2",
            f"logging.dir={tmp_path}",
            "logging.run_name=gru",
        ]
    )
    run_dir = run_training(config).run_dir
    result = run_cli("evaluate", str(run_dir), "--episodes", "2")
    assert result.exit_code == 0, result.err
    assert "return (summed over agents)" in result.out


@pytest.mark.parametrize(
    ("overrides", "expected"),
    [
        (["algorithm.recurrent=lstm"], "algorithm.recurrent"),
        (
            ["algorithm.recurrent=gru", "algorithm.sequence_length=30", "train.rollout_steps=100"],
            "algorithm.sequence_length: 30 does not divide train.rollout_steps (100)",
        ),
    ],
)
def test_bad_recurrent_options_are_one_line(
    run_cli: Callable[..., Any], tmp_path: Path, overrides: list[str], expected: str
) -> None:
    path = tmp_path / "run.yaml"
    path.write_text("algorithm: {name: ppo}\n")
    sets = [arg for item in overrides for arg in ("--set", item)]
    result = run_cli("config", "check", str(path), *sets)
    assert result.exit_code == 2
    assert expected in result.err
    assert len(result.err.strip().splitlines()) <= 2 and "Traceback" not in result.err


def test_coded_training_ends_bit_identical_to_centralized(tmp_path: Path) -> None:
    """Coded PPO runs the GRU's update unchanged: a learner's rows are the joint step's."""
    # 30-step rollouts in 10-step sequences (the third holds a reset at step 25); minibatches of
    # two sequences and one: 2 coded rounds per update.
    options = [
        *SMALL_RUN,
        "algorithm.recurrent=gru",
        "algorithm.recurrent_hidden_size=8",
        "algorithm.sequence_length=10",
        "train.rollout_steps=30",
        "train.minibatch_size=20",
        "train.iterate_all_minibatches=true",
        "train.updates=2",
        f"logging.dir={tmp_path}",
    ]
    coded_options = [
        "coding.scheme=mds",
        "coding.learners=3",
        "coding.clock=simulated",
        "coding.stragglers.count=1",
        "coding.stragglers.delay_s=0.05",
    ]
    centralized = run_training(load_config(overrides=options))
    coded = run_training(load_config(overrides=[*options, *coded_options]))
    assert sum(log.rounds for log in coded.iterations) == 4
    assert torch.equal(coded.theta, centralized.theta)
    assert torch.equal(coded.opt_state, centralized.opt_state)
    first = run_training(load_config(overrides=[*options, "train.updates=1"]))
    assert not torch.equal(first.theta, centralized.theta)  # the second update moved the rows


def test_render_hands_the_policy_its_carried_state() -> None:
    """``marlplug render`` and ``evaluate --gif`` play an episode step by step (``step_mdp``
    carries ``("next", group, "rnn_hidden")`` to the next step)."""
    from marlplug.envs.render import rollout_moments

    program, source, config = _bound(num_envs=1)
    theta, _ = program.init_state(config.seed)
    source.close()
    env = make_env("cooperative_navigation", agents=2, seed=0)
    policy = Recording(acting_policy(program, env, theta))
    assert len(rollout_moments(env, policy=policy, max_steps=5)) == 6
    assert policy.seen[0] is None  # the reset state has none: the encoder starts from zero
    carried = policy.seen[1:]
    assert all(state is not None and bool((state != 0).any()) for state in carried)
    assert not any(torch.equal(a, b) for a, b in itertools.pairwise(carried))  # type: ignore[arg-type]


def test_copies_in_worker_processes_train_the_gru_as_serial_copies_do(tmp_path: Path) -> None:
    """The hidden state's transforms wrap a process-backed env as they wrap a serial one."""
    options = [
        *SMALL_RUN,
        "algorithm.recurrent=gru",
        "algorithm.recurrent_hidden_size=8",
        "algorithm.sequence_length=10",
        "train.rollout_steps=30",
        "train.num_envs=2",
        "train.updates=2",
        f"logging.dir={tmp_path}",
    ]
    serial = run_training(load_config(overrides=options))
    processes = run_training(load_config(overrides=[*options, "env.copies=processes"]))
    assert torch.equal(processes.theta, serial.theta)


def test_the_joint_trainer_trains_a_gru_as_ppos_own_loop_does() -> None:
    """JointMultiAgentTrainer (build_trainer's) draws whole sequences too: its first update ends
    bit for bit where the program's update over PPO's own minibatches ends."""
    program, source, config = _bound()
    theta, opt_state = program.init_state(config.seed)
    source.sync(theta)
    source._load_pending()
    rollout = source.collect(0)
    shapes = []
    for batch, seed in source.minibatches(rollout, 0):
        shapes.append(tuple(batch.batch_size))
        out = program.update(theta, opt_state, batch, [0, 1], seed)
        theta, opt_state = out.theta, out.opt_state
    source.close()
    assert shapes == [(2, 10)] * 10

    algorithm = PPO(**config.algorithm.options.model_dump())
    trainer = JointMultiAgentTrainer(
        make_env("cooperative_navigation", agents=2, seed=0, num_envs=2),  # _bound's env
        config=JointTrainerConfig.from_sections(
            config.train, algorithm.loss_options, seed=config.seed
        ),
        algorithm=algorithm,
        schedule=algorithm.schedule(config.train),
    )
    stats = trainer.train_update()
    trainer.close()
    assert stats.minibatch_steps == 10
    trainer_program = trainer.algorithm.program(
        trainer.loss, lr=config.train.lr, max_grad_norm=config.train.max_grad_norm
    )
    trainer_theta, trainer_opt_state = trainer_program.rows(trainer.optimizer)
    assert torch.equal(trainer_theta, theta)
    assert torch.equal(trainer_opt_state, opt_state)
