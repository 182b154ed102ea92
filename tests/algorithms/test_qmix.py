"""QMIX: the algorithm contract, TorchRL's QMixer trained with the Q-networks (one mixer copy in
every agent's row), the state it reads, the one-line refusal of coded training and a seeded run."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
import torch

from marlplug import load_config
from marlplug.algorithms.q import QMIX, VDN
from marlplug.algorithms.q.qmix import CODING_REFUSAL
from marlplug.envs import make_env
from marlplug.errors import UserError
from marlplug.testing import AlgorithmContract
from marlplug.train.orchestrator import run
from tests.algorithms.test_iql import SMALL, make_batch, make_program


class TestQMIX(AlgorithmContract):
    algorithm_class = QMIX
    options: ClassVar[dict[str, Any]] = {**SMALL, "mixing_embed_dim": 8}
    registered_name = "qmix"


class TestQMIXSharedTwoGroups(AlgorithmContract):
    """Two groups of different sizes (padding), one Q-network per group, one mixer."""

    algorithm_class = QMIX
    options: ClassVar[dict[str, Any]] = {
        **SMALL,
        "share_params": True,
        "hidden_sizes": [16],
        "mixing_embed_dim": 8,
    }
    env = "predator_prey"
    env_options: ClassVar[dict[str, Any]] = {"agents": 3, "adversaries": 1, "obstacles": 1}


def qmix_program(**options: Any) -> Any:
    iql = make_program(**options)
    return QMIX(**{**iql.options.model_dump(), "mixing_embed_dim": 8}).program(iql.agents)


def mixer_names(program: Any) -> list[str]:
    return [name for name in program.theta_codec.names if name.startswith("mixer.")]


def test_one_update_moves_the_q_rows_and_one_mixer_copy_in_every_row() -> None:
    program = qmix_program()
    theta, opt_state = program.init_state(0)
    update = program.update(theta, opt_state, make_batch(program), [0, 1, 2], seed=0)
    start = program.theta_codec.unflatten(theta)
    state = program.theta_codec.unflatten(update.theta)
    for agent in range(3):
        assert not torch.equal(state["q.w0"][agent], start["q.w0"][agent])
    for name in mixer_names(program):
        assert not torch.equal(state[name][0], start[name][0]), name
        assert torch.equal(state[name], state[name][:1].expand_as(state[name])), name
        # Polyak: the mixer's target moved tau of the way, like the Q-networks'.
        expected = start["target_" + name].lerp(state[name], program.options.tau)
        assert torch.equal(state["target_" + name], expected)
    opt = program.opt_codec.unflatten(update.opt_state)
    assert opt["adam_step"].tolist() == opt["mixer_adam_step"].tolist() == [1.0, 1.0, 1.0]
    assert update.stats["td_loss"].dim() == 0 and update.stats["mixer_grad_norm"].dim() == 0


def test_the_mixer_reads_every_observation_where_no_state_is_declared() -> None:
    qmix, vdn = qmix_program(), VDN(hidden_sizes=[16]).program(make_program().agents)
    assert qmix.mixer.state_dim == 3 * qmix.obs_dim
    theta, _ = qmix.init_state(0)
    state = qmix.theta_codec.unflatten(theta)
    params = [state["mixer." + name][0] for name in qmix.mixer_rows.names]
    chosen, obs = torch.randn(8, 3), torch.randn(8, 3, qmix.obs_dim)
    moved = obs.clone()
    moved[:, 2, 0] += 1.0  # the last agent's first observation entry
    team = qmix.mixer_rows.mix(params, chosen, obs)
    assert team.shape == (8,)
    assert not torch.equal(team, qmix.mixer_rows.mix(params, chosen, moved))
    assert vdn.mixer_rows is None and vdn.theta_size < qmix.theta_size


def test_a_declared_global_state_is_gathered_from_the_observations() -> None:
    config = load_config(data={"algorithm": {"name": "qmix"}, "env": {"agents": 3}})
    env = make_env("cooperative_navigation", agents=3, seed=0, global_state=True)
    program = QMIX(**config.algorithm.options.model_dump()).bind(env, config)
    reset = env.reset()
    obs = reset["agent", "observation"].unsqueeze(0)  # [1, M, O]
    gathered = obs.flatten(1).index_select(1, program.mixer_rows.state_index)
    assert torch.equal(gathered[0], reset["state"])  # what the env's GlobalState writes
    assert program.mixer.state_dim == reset["state"].shape[-1] == 18


def test_coded_qmix_is_refused_in_one_line(tmp_path: Path) -> None:
    overrides = [
        "algorithm.name=qmix",
        "coding.scheme=mds",
        "coding.learners=4",
        "coding.clock=simulated",
        "env.agents=2",
        "logging.progress=false",
    ]
    with pytest.raises(UserError) as refused:
        run(load_config(data={}, overrides=overrides), run_dir=tmp_path / "run")
    assert str(refused.value) == CODING_REFUSAL


def test_the_same_seed_trains_bit_identically(tmp_path: Path) -> None:
    overrides = [
        "algorithm.name=qmix",
        "algorithm.minibatch_size=16",
        "algorithm.learning_starts=25",
        "algorithm.hidden_sizes=[16]",
        "algorithm.mixing_embed_dim=8",
        "env.agents=3",
        "train.updates=2",
        "train.eval_every=0",
        "logging.progress=false",
    ]
    config = load_config(data={}, overrides=overrides)
    first = run(config, run_dir=tmp_path / "first")
    second = run(config, run_dir=tmp_path / "second")
    assert torch.equal(first.theta, second.theta)
    assert torch.equal(first.opt_state, second.opt_state)
    assert first.opt_state[:, -1].tolist() == [2.0, 2.0, 2.0]  # two mixer steps


def test_the_team_reward_is_credited_to_the_agent_whose_action_earned_it() -> None:
    program = qmix_program(lr=3e-3)
    theta, opt_state = program.init_state(1)
    for step in range(400):
        batch = make_batch(program, size=64, seed=step)
        # The whole team is rewarded when agent 0 takes action 3, whatever the others do.
        batch["reward"] = batch["action"][:, 0, 3].unsqueeze(1).expand(64, 3) / 3
        batch["terminated"] = torch.ones(64, 3, dtype=torch.bool)
        update = program.update(theta, opt_state, batch, [0, 1, 2], seed=0)
        theta, opt_state = update.theta, update.opt_state
    greedy = program.act(theta, torch.randn(500, 3, program.obs_dim), explore=False)
    assert bool((greedy[:, 0].argmax(-1) == 3).all())


def test_the_mixers_weights_stay_bounded_however_far_the_agents_go() -> None:
    # The hypernetworks are linear in the state and the mixing weights are their absolute values:
    # fed raw positions, the factor through which each agent's Q reaches the team's grew with the
    # square of the distance (a trained mixer's from 2.6 to 52 as greedy agents drifted away), and
    # leaving the arena looked best. On the bounded state the factor never exceeds what any state
    # in [-1, 1] can give: each hypernetwork output at most its |weights| summed plus |bias|.
    program = qmix_program()
    theta, _ = program.init_state(0)
    state = program.theta_codec.unflatten(theta)
    names = program.mixer_rows.names
    params = {name: state["mixer." + name][0] for name in names}

    def largest_output(layer: str) -> torch.Tensor:
        return params[layer + ".weight"].abs().sum(1) + params[layer + ".bias"].abs()

    agents, width = 3, program.mixer.embed_dim
    first = largest_output("hyper_w_1").view(agents, width)
    final = largest_output("hyper_w_final")
    limit = (first * final).sum(1)  # [M]; ELU's slope is at most 1
    chosen = torch.randn(16, agents, requires_grad=True)
    for scale in (1.0, 1e3):
        obs = scale * torch.randn(16, agents, program.obs_dim)
        team = program.mixer_rows.mix([params[n] for n in names], chosen, obs)
        (factor,) = torch.autograd.grad(team.sum(), chosen)
        assert bool((factor >= 0).all()), scale  # monotonic
        assert bool((factor <= limit).all()), (scale, float(factor.max()), limit.tolist())
