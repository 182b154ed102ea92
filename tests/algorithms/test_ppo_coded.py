"""Joint PPO on coded learners: one coded round equals one joint optimization step."""

from __future__ import annotations

import torch

from marlplug.algorithms.ppo import PPO
from marlplug.algorithms.ppo_coded import PpoCodedProgram
from marlplug.coding import MDSCode
from marlplug.distributed.controller import CodedController
from marlplug.distributed.stragglers import StragglerModel
from marlplug.losses import RedundancyLoss
from tests.losses.helpers import make_batch, make_loss, make_model


def test_a_coded_round_is_one_joint_ppo_step() -> None:
    model = make_model((("agent", 2), ("adversary", 2)))
    loss = make_loss(model, aux_losses={"redundancy": RedundancyLoss(coef=0.5)})
    ppo = PPO()
    optimizer = ppo.make_optimizer(loss, lr=1e-2)
    batch = make_batch(model)
    ppo.update_step(loss, optimizer, batch, max_grad_norm=0.5)  # a non-trivial Adam state
    program = PpoCodedProgram(ppo, loss, lr=1e-2, max_grad_norm=0.5)
    theta = program.encode(loss, optimizer)
    scheme = MDSCode()
    controller = CodedController(
        program,
        scheme.assignment_matrix(4, 6, 0),
        None,
        scheme=scheme,
        clock="simulated",
        stragglers=StragglerModel(count=2, delay_s=1.0, seed=0),
    )
    decoded, log = controller.update(theta, batch, round_index=0)
    ppo.update_step(loss, optimizer, batch, max_grad_norm=0.5)
    expected = program.encode(loss, optimizer)
    assert not torch.equal(theta, expected)
    relative = (decoded - expected).norm() / expected.norm()
    assert relative <= 1e-5
    assert log.wait_s < 1.0  # two stragglers of six, M = 4: never waited for
