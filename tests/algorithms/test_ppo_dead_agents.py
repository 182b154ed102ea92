"""PPO where agents die mid-episode (MAgent2 battle, issue 45): a dead agent's rows (the group's
``mask`` false) add nothing to the loss, its advantage statistics or its diagnostics, and its GAE
does not bootstrap through its death; PPO trains on battle with shared parameters."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from tensordict import TensorDictBase

from marlplug.algorithms.ppo import PPO
from marlplug.algorithms.ppo.program import PpoProgram
from marlplug.config import MarlplugConfig, load_config
from marlplug.envs import make_env
from marlplug.errors import UserError
from marlplug.losses.ppo_keys import in_group
from marlplug.losses.redundancy import (
    RedundancyLoss,
    mean_abs_correlation,
    redundancy_all_pairs,
)
from marlplug.nn.actor_critic import OBSERVATION
from marlplug.nn.obs_norm import observation_normalizers
from marlplug.train.run import run_training
from tests.torch_threads import one_torch_thread  # noqa: F401  (autouse: one torch thread)

pytest.importorskip("magent2")

#: 6 agents a side on a 16x16 map, fronts 6 cells apart.
BATTLE = {"backend": "pettingzoo", "name": "battle", "map_size": 16}
#: magent2 battle's actions: 8 moves red 2 cells right, 4 moves blue 2 cells left, 7 one cell
#: right, 6 stays; 13-20 attack the 8 neighbouring cells.
APPROACH = {"red": 8, "blue": 4}
CLOSE_IN = {"red": 7, "blue": 6}
ATTACKS = (13, 21)


def _config(
    tmp_path: Path | None = None, algorithm: dict[str, object] | None = None, **train: int
) -> MarlplugConfig:
    train = {"rollout_steps": 70, "minibatch_size": 70, "n_epochs": 1, **train}
    data: dict[str, object] = {
        "env": {**BATTLE, "max_steps": train["rollout_steps"]},
        "algorithm": {
            "name": "ppo",
            "hidden_size": 16,
            "feature_dim": 8,
            "share_params": True,
            **(algorithm or {}),
        },
        "train": train,
    }
    if tmp_path is not None:
        data["logging"] = {"dir": str(tmp_path), "run_name": "battle", "progress": False}
    return load_config(data=data)


def _fight(steps: int) -> tuple[PpoProgram, TensorDictBase]:
    """A scripted fight: the armies close in, then attack at random until agents die; the rollout
    carries the program's log-probabilities (moved off 1 so ratios clip) and per-agent GAE."""
    env = make_env("battle", backend="pettingzoo", map_size=16, max_steps=70, seed=0)
    program = PPO(hidden_size=16, feature_dim=8, share_params=True).bind(env, _config())
    generator = torch.Generator().manual_seed(0)
    clock = iter(range(steps))

    def scripted(td: TensorDictBase) -> TensorDictBase:
        step = next(clock)
        for group, agents in env.group_map.items():
            if step < 3:
                action = torch.full((len(agents),), APPROACH[group])
            elif step == 3:
                action = torch.full((len(agents),), CLOSE_IN[group])
            else:
                action = torch.randint(*ATTACKS, (len(agents),), generator=generator)
            td.set((group, "action"), action)
        return td

    rollout = env.rollout(steps, policy=scripted, break_when_any_done=False)
    env.close()
    loss = program.loss
    log_prob_key = loss.tensor_keys.sample_log_prob
    with torch.no_grad():
        for group in loss.groups:
            actor = loss.actor_networks[group]
            log_prob = actor.get_dist(rollout.select(*actor.in_keys)).log_prob(
                rollout.get((group, "action"))
            )
            drift = 0.3 * torch.randn(log_prob.shape, generator=generator)
            rollout.set(in_group(log_prob_key, group, loss.groups), log_prob + drift)
        loss.value_estimator(rollout)
    return program, rollout


@pytest.fixture(scope="module")
def fight() -> tuple[PpoProgram, TensorDictBase]:
    return _fight(70)


def test_agents_die_and_the_battle_goes_on(fight: tuple[PpoProgram, TensorDictBase]) -> None:
    _, rollout = fight
    alive = torch.cat([rollout.get((group, "mask")) for group in ("red", "blue")], dim=-1)
    # Some agents die, and the episode does not end with the first death (TorchRL's default for
    # parallel envs): every step after it is still in the same episode.
    assert not bool(alive[-1].all())
    assert not bool(rollout.get(("next", "done"))[:-1].any())


def test_a_loss_with_dead_rows_is_the_loss_of_the_alive_rows_alone(
    fight: tuple[PpoProgram, TensorDictBase],
) -> None:
    program, rollout = fight
    batch = rollout.exclude("next")
    loss = program.loss
    with torch.no_grad():
        full = loss.agent_losses(batch)
        diagnostics = loss(batch)
        unmasked = loss.agent_losses(batch.exclude(*[(g, "mask") for g in loss.groups]))
    checked = 0
    agent = 0
    for group in loss.groups:
        alive = batch.get((group, "mask"))
        for index in range(alive.shape[-1]):
            rows = alive[:, index]
            if not bool(rows.all()):
                # Every row of the subset has this agent alive (others may be dead in it).
                alone = batch[rows]
                with torch.no_grad():
                    expected = loss.agent_losses(alone)[agent]
                    expected_stats = loss(alone).get(group)
                torch.testing.assert_close(full[agent], expected)
                for stat in ("policy_loss", "value_loss", "entropy", "clip_fraction"):
                    torch.testing.assert_close(
                        diagnostics.get((group, stat))[index], expected_stats.get(stat)[index]
                    )
                # Without the mask the dead rows would count: the masking is what makes it equal.
                assert not torch.allclose(unmasked[agent], expected)
                checked += 1
            agent += 1
    assert checked >= 2


def test_a_dead_agents_gae_does_not_bootstrap_through_its_death(
    fight: tuple[PpoProgram, TensorDictBase],
) -> None:
    _, rollout = fight
    deaths = 0
    for group in ("red", "blue"):
        alive = rollout.get((group, "mask"))
        dies = alive & rollout.get(("next", group, "terminated")).squeeze(-1)
        # The death step is terminal for the agent: its value target is its reward alone.
        torch.testing.assert_close(
            rollout.get((group, "value_target"))[dies], rollout.get(("next", group, "reward"))[dies]
        )
        deaths += int(dies.sum())
        # The survivors' last step is a time limit: they bootstrap from the next value.
        cut = alive & rollout.get(("next", group, "truncated")).squeeze(-1)
        assert bool(cut[-1].any())
        assert not torch.allclose(
            rollout.get((group, "value_target"))[cut], rollout.get(("next", group, "reward"))[cut]
        )
    assert deaths >= 2


def test_ppo_trains_on_battle_with_shared_parameters(tmp_path: Path) -> None:
    result = run_training(_config(tmp_path, updates=2, rollout_steps=30, minibatch_size=30))
    assert result.nonfinite is None
    stats = result.iterations[-1].stats
    assert all(math.isfinite(value) for value in stats.values()), stats
    assert {"red_0/policy_loss", "blue_5/entropy"} <= set(stats)
    # share_params: one policy per army, every agent's policy columns equal to its army's first
    # (the value normalizer's running statistics stay per agent).
    env = make_env("battle", backend="pettingzoo", map_size=16, max_steps=70, seed=0)
    program = PPO(hidden_size=16, feature_dim=8, share_params=True).bind(env, _config())
    env.close()
    for group in program.groups:
        rows = result.theta[group.first : group.first + group.n_agents]
        for slot in group.slots:
            if slot.key[0] == "actor_networks":
                columns = rows[:, slot.start : slot.stop]
                assert torch.equal(columns, columns[:1].expand_as(columns)), slot.key


def test_max_ratio_reads_the_alive_rows_alone(fight: tuple[PpoProgram, TensorDictBase]) -> None:
    program, rollout = fight
    batch = rollout.exclude("next").clone()
    loss = program.loss
    with torch.no_grad():
        for group in loss.groups:
            actor = loss.actor_networks[group]
            log_prob = actor.get_dist(batch.select(*actor.in_keys)).log_prob(
                batch.get((group, "action"))
            )
            # Every action was likelier under the old policy: every ratio is exp(-0.5) < 1.
            key = in_group(loss.tensor_keys.sample_log_prob, group, loss.groups)
            batch.set(key, log_prob + 0.5)
        out = loss(batch)
    # A dead row's ratio reads 1: counted, it would be the maximum.
    torch.testing.assert_close(out["max_ratio"], torch.tensor(math.exp(-0.5)))


def test_observation_statistics_read_the_alive_rows_alone(
    fight: tuple[PpoProgram, TensorDictBase],
) -> None:
    _, rollout = fight
    env = make_env("battle", backend="pettingzoo", map_size=16, max_steps=70, seed=0)
    config = _config(algorithm={"obs_norm": True})
    algorithm = PPO(hidden_size=16, feature_dim=8, share_params=True, obs_norm=True)
    program = algorithm.bind(env, config)
    source = algorithm.rollouts(env, program, config)
    try:
        next(source.minibatches(rollout.clone(), 0))  # folds the rollout's observations in
    finally:
        source.close()
    checked = 0
    for group in program.loss.groups:
        alive = rollout.get((group, "mask"))
        observations = rollout.get((group, OBSERVATION)).reshape(*alive.shape, -1).double()
        networks = (program.loss.actor_networks[group], program.loss.critic_networks[group])
        normalizers = [norm for net in networks for norm in observation_normalizers(net)]
        assert len(normalizers) == 2
        for normalizer in normalizers:
            mean, var, count = normalizer.moments()
            for agent in range(alive.shape[-1]):
                rows = observations[alive[:, agent], agent]
                assert int(count[agent]) == rows.shape[0]
                torch.testing.assert_close(mean[agent], rows.mean(0).float())
                torch.testing.assert_close(var[agent], rows.var(0, correction=0).float())
                if rows.shape[0] < alive.shape[0]:
                    # With the dead rows (zeros) the mean would be another.
                    every_row = observations[:, agent].mean(0).float()
                    assert not torch.allclose(mean[agent], every_row)
                    checked += 1
    assert checked >= 4  # at least one dead agent a group, in the actor's and the critic's


class _RecordAlive(torch.nn.Module):
    """A third-party aux loss that takes ``alive``: records what joint PPO hands it."""

    def __init__(self) -> None:
        super().__init__()
        self.alive: list[torch.Tensor] | None = None

    def forward(
        self, features: list[torch.Tensor], alive: list[torch.Tensor] | None = None
    ) -> torch.Tensor:
        self.alive = alive
        return features[0].sum() * 0.0


class _NoAlive(torch.nn.Module):
    def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
        return features[0].sum() * 0.0


def _aux_program(aux: dict[str, torch.nn.Module]) -> PpoProgram:
    env = make_env("battle", backend="pettingzoo", map_size=16, max_steps=70, seed=0)
    config = _config()
    program = PPO(hidden_size=16, feature_dim=8, share_params=True).bind(env, config)
    env.close()
    program.loss.aux_losses.update(aux)
    return program


def _features(program: PpoProgram, batch: TensorDictBase) -> list[torch.Tensor]:
    """Every agent's encoder features on ``batch`` (``[rows, d]`` each, in agent order)."""
    features = []
    for group in program.loss.groups:
        actor = program.loss.actor_networks[group]
        actor_input = batch.select(*actor.in_keys)
        actor.get_dist(actor_input)
        features += actor_input.get((group, "features")).unbind(-2)
    return features


def test_aux_losses_get_each_agents_alive_rows(fight: tuple[PpoProgram, TensorDictBase]) -> None:
    _, rollout = fight
    batch = rollout.exclude("next")
    recorder = _RecordAlive()
    program = _aux_program({"recorder": recorder})
    with torch.no_grad():
        program.loss(batch)
    expected = [a for g in program.loss.groups for a in batch.get((g, "mask")).unbind(-1)]
    assert recorder.alive is not None and len(recorder.alive) == len(expected) == 12
    for got, want in zip(recorder.alive, expected, strict=True):
        assert torch.equal(got, want)
    # Without deaths the call is unchanged: no alive at all.
    with torch.no_grad():
        program.loss(batch.exclude(*[(g, "mask") for g in program.loss.groups]))
    assert recorder.alive is None


def test_an_aux_loss_without_alive_is_refused_where_agents_die(
    fight: tuple[PpoProgram, TensorDictBase],
) -> None:
    _, rollout = fight
    program = _aux_program({"plain": _NoAlive()})
    with pytest.raises(UserError, match=r"aux loss 'plain' takes no alive=.*agents die"):
        program.loss(rollout.exclude("next"))


def test_redundancy_reads_each_pair_on_the_rows_both_agents_lived(
    fight: tuple[PpoProgram, TensorDictBase],
) -> None:
    _, rollout = fight
    batch = rollout.exclude("next")
    program = _aux_program({"redundancy": RedundancyLoss(coef=1.0)})
    with torch.no_grad():
        out = program.loss(batch)
        features = _features(program, batch)
    alive = [a for g in program.loss.groups for a in batch.get((g, "mask")).unbind(-1)]
    expected = torch.zeros(())
    corr_pairs = []
    for i in range(len(features)):
        for j in range(i + 1, len(features)):
            rows = alive[i] & alive[j]
            expected += redundancy_all_pairs([features[i][rows], features[j][rows]])
        # feature_abs_corr's neighbouring pairs, on their rows alone.
        j = (i + 1) % len(features)
        rows = alive[i] & alive[j]
        corr_pairs.append(mean_abs_correlation([features[i][rows], features[j][rows]]))
    assert not bool(torch.stack(alive).all())
    torch.testing.assert_close(out["loss_redundancy"], expected)
    # With the dead rows the penalty would be another.
    assert not torch.allclose(out["loss_redundancy"], redundancy_all_pairs(features))
    torch.testing.assert_close(out["feature_abs_corr"], torch.stack(corr_pairs).mean())
