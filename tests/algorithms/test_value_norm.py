"""Value normalization (``algorithm.value_norm``): MAPPO's ValueNorm statistics, updated by the loss
from each minibatch's targets, carried in each agent's theta row (pure updates, slices equal to the
joint update, the in-place joint step, checkpoint/resume and coded learners unchanged)."""

from __future__ import annotations

from pathlib import Path

import torch

from marlplug import load_config
from marlplug.algorithms.ppo import PPO
from marlplug.losses import RedundancyLoss
from marlplug.nn import ValueNormalizer, value_normalizer
from marlplug.runs.checkpoint import CHECKPOINT_NAME, load_checkpoint
from marlplug.runs.run_config import load_run_config
from marlplug.train.orchestrator import run
from tests.losses.helpers import make_batch, make_loss, make_model
from tests.torch_threads import one_torch_thread  # noqa: F401  (autouse: one torch thread)

GROUPS = (("agent", 2), ("adversary", 3))


def mappo_value_norm(batches: list[torch.Tensor], beta: float) -> tuple[torch.Tensor, torch.Tensor]:
    """MAPPO's ValueNorm (onpolicy/utils/valuenorm.py), written as it is: debiased running E[x] and
    E[x^2] per output column."""
    running_mean = torch.zeros(batches[0].shape[-1], dtype=torch.float64)
    running_sq = torch.zeros_like(running_mean)
    debias = torch.zeros((), dtype=torch.float64)
    for batch in batches:
        x = batch.double()
        running_mean = running_mean * beta + x.mean(0) * (1 - beta)
        running_sq = running_sq * beta + (x**2).mean(0) * (1 - beta)
        debias = debias * beta + (1 - beta)
    mean = running_mean / debias
    return mean, running_sq / debias - mean**2


def test_the_statistics_are_mappos_value_norm() -> None:
    generator = torch.Generator().manual_seed(0)
    batches = [
        torch.randn(50, 3, generator=generator, dtype=torch.float64) * (i + 1) - 60 + 3 * i
        for i in range(6)
    ]
    for beta in (0.99999, 0.9):
        norm = ValueNormalizer(n_agents=3, beta=beta).double()
        for batch in batches:
            norm.update(batch.unsqueeze(-1))
        mean, var = mappo_value_norm(batches, beta)
        torch.testing.assert_close(norm.stats[:, 0], mean, rtol=1e-9, atol=1e-9)
        torch.testing.assert_close(norm.stats[:, 1], var, rtol=1e-7, atol=1e-7)
    # forward and normalize are inverse affine maps with the clamped std.
    values = torch.randn(7, 3, 1, dtype=torch.float64, generator=generator)
    torch.testing.assert_close(norm.normalize(norm(values)), values)
    fresh = ValueNormalizer(n_agents=3)
    # Before any target: mean 0 and MAPPO's floor std 0.1.
    torch.testing.assert_close(fresh(torch.ones(1, 3, 1)), torch.full((1, 3, 1), 0.1))


def _setup() -> tuple[PPO, object, torch.Tensor, torch.Tensor, object]:
    model = make_model(GROUPS, value_norm=True)
    loss = make_loss(model, aux_losses={"redundancy": RedundancyLoss(coef=0.5)})
    ppo = PPO(value_norm=True)
    program = ppo.program(loss, lr=1e-2, max_grad_norm=0.5)
    theta, opt_state = program.rows()
    return ppo, program, theta, opt_state, make_batch(model)


def _stats_columns(program: object, group: str) -> slice:
    slot = next(
        s for g in program.groups if g.name == group for s in g.slots if s.key[-1] == "stats"
    )  # type: ignore[attr-defined]
    return slice(slot.start, slot.stop)


def test_an_update_folds_the_minibatch_targets_into_the_agents_rows() -> None:
    _, program, theta, opt_state, batch = _setup()
    out = program.update(theta, opt_state, batch, [4, 0], seed=7)
    columns = _stats_columns(program, "agent")
    # Agent 0 (agent 0 of "agent"): first minibatch, so mean/var are the minibatch's own.
    targets = batch["agent", "value_target"][:, 0, 0]
    mean, var, weight = out.theta[1, columns].tolist()
    assert abs(mean - float(targets.mean())) < 1e-5
    assert abs(var - float(targets.var(correction=0))) < 1e-5
    assert weight == 1.0
    adversary = _stats_columns(program, "adversary")
    targets = batch["adversary", "value_target"][:, 2, 0]
    assert abs(out.theta[0, adversary][0] - float(targets.mean())) < 1e-5
    # Adam never moves the statistics: their moments stay zero.
    assert torch.count_nonzero(out.opt_state[1, columns]) == 0
    assert torch.count_nonzero(out.opt_state[0, adversary]) == 0
    # Pure: the input rows are untouched; the same update twice gives the same bits.
    assert torch.count_nonzero(theta[:2, columns]) == 0
    assert torch.count_nonzero(theta[2:, adversary]) == 0
    again = program.update(theta, opt_state, batch, [4, 0], seed=7)
    assert torch.equal(out.theta, again.theta) and torch.equal(out.opt_state, again.opt_state)


def test_the_joint_update_is_the_in_place_step_and_slices_match_it() -> None:
    ppo, program, theta, opt_state, batch = _setup()
    joint = program.update(theta, opt_state, batch, list(range(5)), seed=7)
    optimizer = ppo.make_optimizer(program.loss, lr=1e-2)
    ppo.update_step(program.loss, optimizer, batch, max_grad_norm=0.5, seed=7)
    expected_theta, _ = program.rows(optimizer)
    assert torch.equal(joint.theta, expected_theta)
    part = program.update(theta, opt_state, batch, [3, 1], seed=7)
    for position, agent in enumerate([3, 1]):
        error = (part.theta[position] - joint.theta[agent]).norm() / joint.theta[agent].norm()
        assert float(error) <= 1e-6


def test_a_loss_evaluated_without_gradients_leaves_the_statistics() -> None:
    model = make_model(GROUPS, value_norm=True)
    loss = make_loss(model)
    batch = make_batch(model)
    normalizer = value_normalizer(model.critics["agent"])
    assert normalizer is not None
    with torch.no_grad():
        loss(batch)
    assert torch.count_nonzero(normalizer.stats) == 0
    out = loss(batch)
    assert normalizer.stats[:, 2].tolist() == [1.0, 1.0]
    # The value loss is in standardized units: the targets have unit variance per agent.
    assert float(out["agent", "value_loss"].mean()) < 10.0


BASE = [
    "env.agents=2",
    "algorithm.hidden_size=8",
    "algorithm.feature_dim=4",
    "algorithm.value_norm=true",
    "train.rollout_steps=30",
    "train.minibatch_size=15",
    "train.n_epochs=2",
    "train.updates=4",
    "logging.progress=false",
]


def test_resume_is_bit_identical_and_coded_equals_centralized(tmp_path: Path) -> None:
    config = load_config(data={}, overrides=BASE)
    straight = run(config, run_dir=tmp_path / "straight")
    columns = _stats_columns(learner_program(config), "agent")
    assert bool((straight.theta[:, columns][:, 2] > 1.0).all())  # updated every minibatch
    run(config, iterations=2, run_dir=tmp_path / "stopped")
    assert load_checkpoint(tmp_path / "stopped" / CHECKPOINT_NAME)
    resumed = run(load_run_config(tmp_path / "stopped"), resume_dir=tmp_path / "stopped")
    assert torch.equal(resumed.theta, straight.theta)
    assert torch.equal(resumed.opt_state, straight.opt_state)
    coded = run(
        load_config(
            data={},
            overrides=[*BASE, "coding.scheme=mds", "coding.learners=4", "coding.clock=simulated"],
        ),
        run_dir=tmp_path / "coded",
    )
    error = (coded.theta - straight.theta).norm() / straight.theta.norm()
    assert float(error) <= 1e-5


def learner_program(config: object) -> object:
    from marlplug.envs import make_env
    from marlplug.train.components import learner_algorithm

    env = make_env("cooperative_navigation", agents=2, seed=0)
    return learner_algorithm(config).bind(env, config)  # type: ignore[arg-type]


def test_a_one_agent_group_updates_and_leaves_the_input_rows_untouched() -> None:
    # One agent's column slices of its row are contiguous views; the update must still copy them
    # (physical deception's lone adversary: the statistics' in-place update broke the backward).
    model = make_model((("agent", 2), ("adversary", 1)), value_norm=True)
    program = PPO(value_norm=True).program(make_loss(model), lr=1e-2, max_grad_norm=0.5)
    theta, opt_state = program.rows()
    before = theta.clone(), opt_state.clone()
    out = program.update(theta, opt_state, make_batch(model), [0, 1, 2], seed=7)
    assert torch.equal(theta, before[0]) and torch.equal(opt_state, before[1])
    adversary = _stats_columns(program, "adversary")
    assert out.theta[2, adversary][2] == 1.0  # its statistics took the minibatch
    assert bool(out.stats["stepped"].all())
