"""The Q-learners' TD target options: ``double_q`` (the target network's value of the online
network's greedy next action) and ``standardize_rewards`` (rewards standardized by running
statistics kept in ``opt_state``), each against a hand computation on a small batch, a run with both
that resumes bit for bit, and one-line errors for bad values."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from tensordict import TensorDict

from marlplug import load_config
from marlplug.algorithms.q import IQL, VDN, QProgram
from marlplug.algorithms.q.targets import REWARD_MOMENTS
from marlplug.algorithms.spaces import AgentSpace
from marlplug.train.orchestrator import run
from tests.torch_threads import one_torch_thread  # noqa: F401  (autouse: one torch thread)

AGENTS = [AgentSpace(f"agent_{i}", "agent", 4, 3, True) for i in range(2)]


def program_and_batch(
    algorithm: type[IQL] = IQL, size: int = 16, **options: Any
) -> tuple[QProgram, torch.Tensor, torch.Tensor, TensorDict]:
    program = algorithm(hidden_sizes=[8], **options).program(AGENTS)
    theta, opt_state = program.init_state(0)
    generator = torch.Generator().manual_seed(1)
    # A target network apart from the online one, so the two choose different next actions.
    state = program.theta_codec.unflatten(theta.clone())
    for name in ("q.w0", "q.b0", "q.w1", "q.b1"):
        state["target_" + name] += torch.randn(state[name].shape, generator=generator)
    theta = program.theta_codec.flatten(state)
    batch = TensorDict(
        {
            "obs": torch.randn(size, 2, 4, generator=generator),
            "action": torch.eye(3)[torch.randint(3, (size, 2), generator=generator)],
            "reward": torch.randn(size, 2, generator=generator),
            "next_obs": torch.randn(size, 2, 4, generator=generator),
            "terminated": torch.rand(size, 2, generator=generator) < 0.2,
        },
        batch_size=[size],
    )
    return program, theta, opt_state, batch


def by_hand(
    state: dict[str, torch.Tensor], prefix: str, agent: int, x: torch.Tensor
) -> torch.Tensor:
    """Agent ``agent``'s Q-values of ``x`` ``[B, O]``: one ReLU layer, one linear."""

    def layer(n: int) -> tuple[torch.Tensor, torch.Tensor]:
        return state[f"{prefix}q.w{n}"][agent].double(), state[f"{prefix}q.b{n}"][agent].double()

    (w0, b0), (w1, b1) = layer(0), layer(1)
    return torch.relu(x.double() @ w0 + b0) @ w1 + b1


@pytest.mark.parametrize("double_q", [False, True])
def test_the_td_target_bootstraps_as_a_hand_computation(double_q: bool) -> None:
    program, theta, opt_state, batch = program_and_batch(double_q=double_q)
    state = program.theta_codec.unflatten(theta)
    gamma = program.options.gamma
    chose_apart = 0
    for agent in range(2):
        online_next = by_hand(state, "", agent, batch["next_obs"][:, agent])
        target_next = by_hand(state, "target_", agent, batch["next_obs"][:, agent])
        greedy = online_next.argmax(-1) if double_q else target_next.argmax(-1)
        chose_apart += int((online_next.argmax(-1) != target_next.argmax(-1)).sum())
        value = target_next.gather(-1, greedy.unsqueeze(-1)).squeeze(-1)
        alive = 1.0 - batch["terminated"][:, agent].double()
        td_target = batch["reward"][:, agent].double() + gamma * alive * value
        q = by_hand(state, "", agent, batch["obs"][:, agent])
        taken = (q * batch["action"][:, agent].double()).sum(-1)
        expected = (taken - td_target).pow(2).mean()
        update = program.update(theta, opt_state, batch, [agent], seed=0)
        assert float(update.stats["td_loss"][0]) == pytest.approx(float(expected), rel=1e-5)
    assert chose_apart > 4  # the two networks disagree often: the options' targets differ


def test_double_q_changes_the_target_only_through_the_next_action() -> None:
    program, theta, opt_state, batch = program_and_batch(double_q=True)
    plain, *_ = program_and_batch(double_q=False)
    double = program.update(theta, opt_state, batch, [0, 1], seed=0).stats["td_loss"]
    overestimated = plain.update(theta, opt_state, batch, [0, 1], seed=0).stats["td_loss"]
    assert not torch.equal(double, overestimated)
    # Where the online network's choice is the target's own (fresh rows: the same network), the
    # two targets are one.
    fresh_theta, fresh_opt = program.init_state(0)
    same = program.update(fresh_theta, fresh_opt, batch, [0, 1], seed=0).stats["td_loss"]
    assert torch.equal(
        same, plain.update(fresh_theta, fresh_opt, batch, [0, 1], 0).stats["td_loss"]
    )


@pytest.mark.parametrize("algorithm", [IQL, VDN])
def test_standardized_rewards_are_a_hand_computation_and_their_statistics_are_kept(
    algorithm: type[IQL],
) -> None:
    program, theta, opt_state, batch = program_and_batch(algorithm, standardize_rewards=True)
    batch["terminated"] = torch.ones(16, 2, dtype=torch.bool)  # no bootstrap: the target is r
    state = program.theta_codec.unflatten(theta)
    taken = torch.stack(
        [
            (by_hand(state, "", i, batch["obs"][:, i]) * batch["action"][:, i]).sum(-1)
            for i in (0, 1)
        ]
    )  # [M, B]
    rewards = batch["reward"].double().T  # [M, B]
    if algorithm is VDN:
        rewards, taken = rewards.sum(0, keepdim=True), taken.sum(0, keepdim=True)
    mean, var = rewards.mean(1, keepdim=True), rewards.var(1, keepdim=True, correction=0)
    expected = (taken - (rewards - mean) / (var + 1e-8).sqrt()).pow(2).mean(1)
    first = program.update(theta, opt_state, batch, [0, 1], seed=0)
    assert first.stats["td_loss"].double().flatten() == pytest.approx(expected.tolist(), rel=1e-5)
    moments = program.opt_codec.unflatten(first.opt_state)[REWARD_MOMENTS]  # [M, 3]
    expected_moments = torch.cat([mean, var, torch.full_like(mean, 16.0)], 1).float()
    assert torch.allclose(moments, expected_moments.expand(2, 3), rtol=1e-6)
    # A second minibatch folds into the first's statistics: 32 rewards seen.
    second = program.update(first.theta, first.opt_state, batch, [0, 1], seed=0)
    counts = program.opt_codec.unflatten(second.opt_state)[REWARD_MOMENTS][:, 2]
    assert counts.tolist() == [32.0, 32.0]


RUN = [
    "algorithm.minibatch_size=16",
    "algorithm.learning_starts=25",
    "algorithm.hidden_sizes=[16]",
    "algorithm.double_q=true",
    "algorithm.standardize_rewards=true",
    "env.agents=2",
    "train.eval_every=0",
    "train.checkpoint_every=2",
    "logging.progress=false",
    "train.updates=4",
]
GRU = ["algorithm.recurrent=gru", "algorithm.recurrent_hidden_size=8"]
GRU += ["algorithm.sequence_length=5", "algorithm.steps_per_iteration=10"]


@pytest.mark.parametrize(
    "extra", [["algorithm.name=iql"], ["algorithm.name=qmix", *GRU]], ids=["iql", "qmix-gru"]
)
def test_a_run_with_both_options_resumes_bit_identically(tmp_path: Path, extra: list[str]) -> None:
    config = load_config(data={}, overrides=[*RUN, *extra])
    whole = run(config, run_dir=tmp_path / "whole")
    run(config, iterations=2, run_dir=tmp_path / "resumed")
    resumed = run(config, run_dir=tmp_path / "resumed", resume_dir=tmp_path / "resumed")
    assert torch.equal(resumed.theta, whole.theta)
    assert torch.equal(resumed.opt_state, whole.opt_state)
    program_rows = whole.opt_state.shape[1]
    moments = whole.opt_state[:, program_rows - 3 :]  # the reward statistics come last
    assert bool((moments[:, 2] > 0).all())  # they did fold rewards in


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("algorithm.double_q=maybe", "algorithm.double_q: expected true or false, got 'maybe'"),
        ("algorithm.standardize_rewards=2", "algorithm.standardize_rewards"),
        ("algorithm.standardise_rewards=true", "did you mean 'standardize_rewards'?"),
    ],
)
@pytest.mark.parametrize("name", ["iql", "vdn", "qmix"])
def test_bad_values_are_one_line(
    run_cli: Callable[..., Any], tmp_path: Path, name: str, override: str, expected: str
) -> None:
    path = tmp_path / "run.yaml"
    path.write_text(f"algorithm: {{name: {name}}}\n")
    result = run_cli("config", "check", str(path), "--set", override)
    assert result.exit_code == 2
    assert expected in result.err
    assert len(result.err.strip().splitlines()) <= 2 and "Traceback" not in result.err
