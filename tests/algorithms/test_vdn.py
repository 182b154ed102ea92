"""VDN: the algorithm contract, the team TD loss through TorchRL's VDNMixer (which couples every
agent's update) and the one-line refusal of coded training."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
import torch

from marlplug import load_config
from marlplug.algorithms.q import IQL, VDN
from marlplug.algorithms.q.vdn import CODING_REFUSAL
from marlplug.errors import UserError
from marlplug.nn.functional import stacked_mlp
from marlplug.testing import AlgorithmContract
from marlplug.train.orchestrator import run
from tests.algorithms.test_iql import SMALL, make_batch, make_program


class TestVDN(AlgorithmContract):
    algorithm_class = VDN
    options: ClassVar[dict[str, Any]] = SMALL
    registered_name = "vdn"


def vdn_program(**options: Any) -> Any:
    iql = make_program(**options)
    return VDN(**iql.options.model_dump()).program(iql.agents)


def test_the_team_loss_is_the_summed_q_against_the_summed_reward() -> None:
    program = vdn_program()
    theta, opt_state = program.init_state(0)
    batch = make_batch(program)
    update = program.update(theta, opt_state, batch, [0, 1, 2], seed=0)
    state = program.theta_codec.unflatten(theta)
    names = [f"q.{kind}{layer}" for layer in range(2) for kind in "wb"]
    q = stacked_mlp(batch["obs"].transpose(0, 1), [state[n] for n in names])
    taken = (q * batch["action"].transpose(0, 1)).sum(-1).sum(0)  # [B]: the summed chosen Q
    next_q = stacked_mlp(batch["next_obs"].transpose(0, 1), [state["target_" + n] for n in names])
    valid = program.action_mask.unsqueeze(1)
    best = next_q.masked_fill(~valid, -torch.inf).amax(-1).sum(0)
    alive = ~batch["terminated"].any(-1)
    target = batch["reward"].sum(-1) + program.options.gamma * alive * best
    expected = (taken - target).pow(2).mean()
    assert torch.allclose(update.stats["td_loss"], expected, rtol=1e-5)
    assert update.stats["td_loss"].dim() == 0  # one team loss


def test_an_agents_update_reads_the_other_agents_q_unlike_iql() -> None:
    vdn, iql = vdn_program(), make_program()
    theta, opt_state = vdn.init_state(0)
    batch = make_batch(vdn)
    other = theta.clone()
    other[1] += 0.1  # another agent's weights change
    for program, coupled in ((vdn, True), (iql, False)):
        mine = program.update(theta, opt_state, batch, [0], seed=0).theta
        moved = program.update(other, opt_state, batch, [0], seed=0).theta
        assert (not torch.equal(mine, moved)) == coupled


def test_vdn_differs_from_iql_only_in_the_mixer() -> None:
    assert VDN.Options is IQL.Options
    assert make_program().mixer is None


def test_coded_vdn_is_refused_in_one_line(tmp_path: Path) -> None:
    overrides = [
        "algorithm.name=vdn",
        "coding.scheme=mds",
        "coding.learners=4",
        "coding.clock=simulated",
        "env.agents=2",
        "logging.progress=false",
    ]
    with pytest.raises(UserError) as refused:
        run(load_config(data={}, overrides=overrides), run_dir=tmp_path / "run")
    assert str(refused.value) == CODING_REFUSAL


def test_vdn_trains_a_few_updates(tmp_path: Path) -> None:
    overrides = [
        "algorithm.name=vdn",
        "algorithm.minibatch_size=16",
        "algorithm.learning_starts=25",
        "algorithm.hidden_sizes=[16]",
        "env.agents=3",
        "train.updates=3",
        "train.eval_every=0",
        "logging.progress=false",
    ]
    result = run(load_config(data={}, overrides=overrides), run_dir=tmp_path / "run")
    assert result.opt_state[:, -1].tolist() == [3.0, 3.0, 3.0]
    assert torch.isfinite(result.theta).all()
