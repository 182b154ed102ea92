"""PPO's schedules (``train.lr_schedule``/``train.lr_final``, ``algorithm.ent_coef_final``) and
observation normalization (``algorithm.obs_norm``) in whole runs: the values at given updates, carried
by every minibatch to wherever the update runs, off by default (bit-identical to a run that never
heard of them), exact on resume, and coded PPO equal to centralized PPO with them on."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from marlplug import load_config
from marlplug.algorithms.ppo import PPO
from marlplug.algorithms.ppo.iteration import (
    ENT_COEF,
    ITERATION_KEY,
    LR,
    PpoSchedule,
    attach,
    linear_schedule,
)
from marlplug.algorithms.ppo.program import PpoProgram
from marlplug.algorithms.ppo.step import step_modules
from marlplug.config import TrainSection
from marlplug.envs import make_env
from marlplug.errors import ConfigError
from marlplug.optim.adam import AdamSettings
from marlplug.runs.run_config import load_run_config
from marlplug.train.orchestrator import run
from tests.losses.helpers import make_batch, make_loss, make_model
from tests.torch_threads import one_torch_thread  # noqa: F401  (autouse: one torch thread)

# 2 updates' worth of 2 minibatch rounds each, then 2 more: a resume after 2 updates is mid-schedule.
BASE = [
    "env.agents=2",
    "algorithm.hidden_size=8",
    "algorithm.feature_dim=4",
    "train.rollout_steps=30",
    "train.minibatch_size=15",
    "train.n_epochs=2",
    "train.iterate_all_minibatches=false",  # one minibatch per epoch
    "train.lr=3e-4",
    "train.updates=4",
    "train.eval_every=0",
    "logging.progress=false",
]
SCHEDULES = ["train.lr_schedule=linear", "algorithm.ent_coef_final=0.0"]
ALL_ON = [*SCHEDULES, "algorithm.obs_norm=true"]


def test_the_schedules_values_at_given_updates() -> None:
    train = TrainSection(lr=1e-3, lr_schedule="linear", updates=4)
    schedule = PpoSchedule.from_sections(train, ent_coef=0.02, ent_coef_final=0.0)
    assert schedule is not None
    # CleanRL/MAPPO: lr * (1 - u / updates) at 0-based update u; never 0 inside the run.
    assert [schedule.values(u)[LR] for u in range(4)] == [1e-3, 7.5e-4, 5e-4, 2.5e-4]
    assert [schedule.values(u)[ENT_COEF] for u in range(4)] == [0.02, 0.015, 0.01, 0.005]
    final = TrainSection(lr=1e-3, lr_schedule="linear", lr_final=1e-4, updates=10)
    with_final = PpoSchedule.from_sections(final, ent_coef=0.01, ent_coef_final=None)
    assert with_final is not None
    assert with_final.values(0) == {LR: 1e-3}
    assert with_final.values(5)[LR] == pytest.approx(5.5e-4, rel=1e-12)
    assert with_final.values(10)[LR] == with_final.values(50)[LR] == 1e-4  # held past the end
    assert linear_schedule(0.01, 0.03, 1, 2) == pytest.approx(0.02)  # annealing up works too
    # The first update runs exactly at the starting value, whatever the final one.
    assert linear_schedule(0.01, 0.001, 0, 7) == 0.01
    # Nothing scheduled: no schedule at all, so nothing is written into the minibatches.
    assert PpoSchedule.from_sections(TrainSection(), ent_coef=0.01, ent_coef_final=None) is None


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            ["train.lr_schedule=cosine"],
            "train.lr_schedule: input should be 'constant' or 'linear', got 'cosine'",
        ),
        (
            ["train.lr_schedule=linear", "train.lr_final=-1"],
            "train.lr_final: input should be greater than or equal to 0, got -1",
        ),
        (
            ["train.lr_final=0.001"],
            "train.lr_final: only used with lr_schedule: linear (lr_schedule is constant), "
            "got 0.001",
        ),
        (
            ["algorithm.ent_coef_final=-0.1"],
            "algorithm.ent_coef_final: input should be greater than or equal to 0, got -0.1",
        ),
        (["algorithm.obs_norm=maybe"], "algorithm.obs_norm: expected true or false, got 'maybe'"),
    ],
)
def test_bad_values_are_one_line_config_errors(overrides: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as error:
        load_config(data={}, overrides=overrides)
    assert str(error.value) == message


def test_carried_values_replace_the_programs_constants_in_both_update_forms() -> None:
    model = make_model((("agent", 2), ("adversary", 1)))
    program = PpoProgram(make_loss(model), max_grad_norm=0.5, adam=AdamSettings(lr=1e-2))
    theta, opt_state = program.rows()
    batch = make_batch(model)
    # The same update built with the carried values as its constants.
    expected = PpoProgram(
        make_loss(model, entropy_coeff=0.3), max_grad_norm=0.5, adam=AdamSettings(lr=4e-3)
    ).update(theta, opt_state, batch, [0, 1, 2], seed=5)
    carried = attach(batch.clone(), {LR: 4e-3, ENT_COEF: 0.3}, {})
    out = program.update(theta, opt_state, carried, [0, 1, 2], seed=5)
    assert torch.equal(out.theta, expected.theta)
    assert torch.equal(out.opt_state, expected.opt_state)
    assert float(out.stats["lr"]) == 4e-3 and float(out.stats["ent_coef"]) == 0.3
    assert program.loss.entropy_coeff == 0.01  # restored after the forward
    plain = program.update(theta, opt_state, batch, [0, 1, 2], seed=5)
    assert not torch.equal(plain.theta, out.theta)
    assert "lr" not in plain.stats
    # The in-place step (the joint trainer's) reads them too.
    optimizer = PPO().make_optimizer(program.loss, lr=1e-2)
    step_modules(program.loss, optimizer, carried, max_grad_norm=0.5, seed=5)
    assert torch.equal(program.rows(optimizer)[0], out.theta)
    assert all(group["lr"] == 1e-2 for group in optimizer.param_groups)


def test_every_minibatch_carries_its_iterations_values_only_when_scheduled() -> None:
    env = make_env("cooperative_navigation", agents=2, seed=0)
    for overrides, carried in (([], False), (SCHEDULES, True)):
        config = load_config(data={}, overrides=[*BASE, *overrides])
        algorithm = PPO(**config.algorithm.options.model_dump())
        program = algorithm.bind(env, config)
        source = algorithm.rollouts(env, program, config)
        theta, _ = program.init_state(config.seed)
        batches = list(source.batches(theta, 2))
        source.close(close_env=False)
        assert len(batches) == 2
        for batch in batches:
            assert (ITERATION_KEY in batch.keys()) is carried  # noqa: SIM118
            if carried:
                assert batch[ITERATION_KEY, LR].tolist() == [3e-4 * 0.5] * 15
                assert batch[ITERATION_KEY, ENT_COEF].tolist() == [0.01 * 0.5] * 15
    env.close()


def test_off_by_default_and_bit_identical_on_resume_and_coded(tmp_path: Path) -> None:
    default = run(load_config(data={}, overrides=BASE), run_dir=tmp_path / "default")
    explicit_off = [
        "train.lr_schedule=constant",
        "algorithm.ent_coef_final=null",
        "algorithm.obs_norm=false",
    ]
    off = run(load_config(data={}, overrides=[*BASE, *explicit_off]), run_dir=tmp_path / "off")
    assert torch.equal(off.theta, default.theta) and torch.equal(off.opt_state, default.opt_state)
    # Each schedule alone changes the run (same shapes as the default run).
    for option in SCHEDULES:
        changed = run(load_config(data={}, overrides=[*BASE, option]), run_dir=tmp_path / option)
        assert not torch.equal(changed.theta, default.theta)

    config = load_config(data={}, overrides=[*BASE, *ALL_ON])
    straight = run(config, run_dir=tmp_path / "straight")
    # The learners ran the schedule: the logged lr and ent_coef of update u.
    assert [log.stats["lr"] for log in straight.iterations] == pytest.approx(
        [3e-4 * (1 - u / 4) for u in range(4)], rel=1e-6
    )
    assert [log.stats["ent_coef"] for log in straight.iterations] == pytest.approx(
        [0.01 * (1 - u / 4) for u in range(4)], rel=1e-6
    )
    run(config, iterations=2, run_dir=tmp_path / "stopped")
    resumed = run(load_run_config(tmp_path / "stopped"), resume_dir=tmp_path / "stopped")
    assert torch.equal(resumed.theta, straight.theta)
    assert torch.equal(resumed.opt_state, straight.opt_state)
    assert [log.stats["lr"] for log in resumed.iterations] == [
        log.stats["lr"] for log in straight.iterations[2:]
    ]
    coded = run(
        load_config(
            data={},
            overrides=[
                *BASE,
                *ALL_ON,
                "coding.scheme=mds",
                "coding.learners=4",
                "coding.clock=simulated",
            ],
        ),
        run_dir=tmp_path / "coded",
    )
    error = (coded.theta - straight.theta).norm() / straight.theta.norm()
    assert float(error) <= 1e-5


def test_the_joint_trainer_runs_them_too() -> None:
    from marlplug.build import build_trainer
    from marlplug.nn import observation_normalizers

    scheduled = build_trainer(load_config(data={}, overrides=[*BASE, *ALL_ON]))
    constant = build_trainer(load_config(data={}, overrides=[*BASE, "algorithm.obs_norm=true"]))
    for trainer in (scheduled, constant):
        trainer.train_update()
    # Update 0 runs at the schedules' starting values: the same step as constants.
    first = [p.clone() for p in scheduled.loss.parameters()]
    assert all(map(torch.equal, first, constant.loss.parameters()))
    for trainer in (scheduled, constant):
        trainer.train_update()
        (normalizer, *_) = observation_normalizers(trainer.loss)
        assert normalizer.moments()[2].flatten().tolist() == [60.0, 60.0]
        assert all(group["lr"] == 3e-4 for group in trainer.optimizer.param_groups)
        trainer.close()
    assert not all(map(torch.equal, scheduled.loss.parameters(), constant.loss.parameters()))
