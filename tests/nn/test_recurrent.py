"""The stacked GRU and the recurrent encoder: GRUCell's math per agent, acting step by step equals
replaying a sequence, the stored state read only at a sequence's first step, resets at is_init."""

from __future__ import annotations

import torch
from tensordict import TensorDict
from torch import nn
from torchrl.modules import set_recurrent_mode

from marlplug.envs import make_env
from marlplug.envs.transformed import with_policy_transforms
from marlplug.nn.recurrent import RecurrentEncoder, StackedGRUCell
from marlplug.nn.stacked import StackedMLP

AGENTS, OBS, INPUT, HIDDEN = 3, 5, 6, 4


def _encoder() -> RecurrentEncoder:
    torch.manual_seed(0)
    network = StackedMLP(
        n_agents=AGENTS, in_features=OBS, out_features=INPUT, activate_last_layer=True
    )
    cell = StackedGRUCell(n_agents=AGENTS, input_size=INPUT, hidden_size=HIDDEN)
    return RecurrentEncoder(network, cell, group="agent")


def test_each_agents_cell_is_torch_grucell() -> None:
    torch.manual_seed(0)
    cell = StackedGRUCell(n_agents=AGENTS, input_size=INPUT, hidden_size=HIDDEN)
    inputs, hidden = torch.randn(7, AGENTS, INPUT), torch.randn(7, AGENTS, HIDDEN)
    out = cell(inputs, hidden)
    for agent in range(AGENTS):
        reference = nn.GRUCell(INPUT, HIDDEN)
        with torch.no_grad():
            reference.weight_ih.copy_(cell.weight_ih[agent].T)
            reference.weight_hh.copy_(cell.weight_hh[agent].T)
            reference.bias_ih.copy_(cell.bias_ih[agent])
            reference.bias_hh.copy_(cell.bias_hh[agent])
        expected = reference(inputs[:, agent], hidden[:, agent])
        torch.testing.assert_close(out[:, agent], expected)


def _acted(
    encoder: RecurrentEncoder, observations: torch.Tensor, is_init: torch.Tensor
) -> TensorDict:
    """Step by step, as a collector runs it: each step reads the state the previous one wrote."""
    steps = []
    hidden = torch.zeros(observations.shape[0], AGENTS, HIDDEN)
    for t in range(observations.shape[1]):
        td = TensorDict(
            {
                ("agent", "observation"): observations[:, t],
                ("agent", "rnn_hidden"): hidden,
                "is_init": is_init[:, t],
            },
            batch_size=[observations.shape[0]],
        )
        encoder(td)
        hidden = td.get(("next", "agent", "rnn_hidden"))
        steps.append(td)
    return torch.stack(steps, dim=1)


def test_replaying_a_sequence_gives_the_acted_features_and_resets_at_episode_starts() -> None:
    encoder = _encoder()
    observations = torch.randn(2, 9, AGENTS, OBS)
    is_init = torch.zeros(2, 9, 1, dtype=torch.bool)
    is_init[:, 0] = True
    is_init[1, 4] = True  # a new episode inside the second sequence
    with torch.no_grad():
        acted = _acted(encoder, observations, is_init)
        replay = acted.exclude("next", ("agent", "features")).clone()
        # Only the first step's stored state is read: the rest is recomputed.
        replay.set(("agent", "rnn_hidden"), replay.get(("agent", "rnn_hidden")).clone())
        replay.get(("agent", "rnn_hidden"))[:, 1:] = 100.0
        with set_recurrent_mode(True):
            encoder(replay)
    features = acted.get(("agent", "features"))
    torch.testing.assert_close(replay.get(("agent", "features")), features)
    # The reset: the second sequence from step 4 is a fresh episode, the same as starting there.
    with torch.no_grad():
        fresh = _acted(encoder, observations[1:, 4:], is_init[1:, 4:])
    torch.testing.assert_close(fresh.get(("agent", "features"))[0], features[1, 4:])
    assert not torch.allclose(features[0, 4:], features[1, 4:])


def test_acting_without_a_stored_state_starts_from_zero() -> None:
    encoder = _encoder()
    observation = torch.randn(4, AGENTS, OBS)
    with torch.no_grad():
        without = encoder(TensorDict({("agent", "observation"): observation}, batch_size=[4]))
        zero = encoder(
            TensorDict(
                {
                    ("agent", "observation"): observation,
                    ("agent", "rnn_hidden"): torch.zeros(4, AGENTS, HIDDEN),
                },
                batch_size=[4],
            )
        )
    torch.testing.assert_close(without.get(("agent", "features")), zero.get(("agent", "features")))


def test_the_env_carries_the_state_and_zeroes_it_at_every_reset() -> None:
    encoder = _encoder()
    base = make_env("cooperative_navigation", agents=AGENTS, seed=0)
    encoder.network = StackedMLP(
        n_agents=AGENTS,
        in_features=base.observation_spec["agent", "observation"].shape[-1],
        out_features=INPUT,
        activate_last_layer=True,
    )
    env = with_policy_transforms(base, encoder)
    assert env.group_map["agent"] == [f"agent_{i}" for i in range(AGENTS)]

    def policy(td: TensorDict) -> TensorDict:
        encoder(td)
        td.set(("agent", "action"), torch.zeros(AGENTS, dtype=torch.long))
        return td

    with torch.no_grad():
        rollout = env.rollout(60, policy, break_when_any_done=False)
    is_init = rollout.get("is_init").squeeze(-1)
    assert is_init.nonzero().flatten().tolist() == [0, 25, 50]  # 25-step episodes
    stored = rollout.get(("agent", "rnn_hidden"))
    written = rollout.get(("next", "agent", "rnn_hidden"))
    assert bool((stored[is_init] == 0).all())
    carried = ~is_init[1:]
    torch.testing.assert_close(stored[1:][carried], written[:-1][carried], rtol=0, atol=0)
    assert bool((stored[1:][carried] != 0).any())


def test_one_batch_dim_is_single_steps_even_in_recurrent_mode() -> None:
    """A minibatch of shuffled single steps (no time dim) runs each row from its stored state."""
    encoder = _encoder()
    td = TensorDict(
        {
            ("agent", "observation"): torch.randn(6, AGENTS, OBS),
            ("agent", "rnn_hidden"): torch.randn(6, AGENTS, HIDDEN),
            "is_init": torch.zeros(6, 1, dtype=torch.bool),
        },
        batch_size=[6],
    )
    with torch.no_grad():
        steps = encoder(td.clone()).get(("agent", "features"))
        with set_recurrent_mode(True):
            replayed = encoder(td.clone()).get(("agent", "features"))
    torch.testing.assert_close(replayed, steps, rtol=0, atol=0)
