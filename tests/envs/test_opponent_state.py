"""``marlplug evaluate --opponent`` with a recurrent (GRU) opponent: the opponent reads its own
hidden state, carried from its previous step and zero where an episode starts, never the evaluated
policy's (which lives at the same keys)."""

from __future__ import annotations

import torch
from tensordict import NestedKey, TensorDictBase
from tensordict.nn import TensorDictModuleBase

from marlplug.algorithms.acting import acting_policy
from marlplug.algorithms.ppo import PPO
from marlplug.config import load_config
from marlplug.envs import make_env
from marlplug.envs.evaluate import evaluate
from marlplug.envs.policies import opponent_group_policy
from tests.torch_threads import one_torch_thread  # noqa: F401  (autouse: one torch thread)

GRU = {
    "recurrent": "gru",
    "hidden_size": 16,
    "feature_dim": 8,
    "recurrent_hidden_size": 8,
    "sequence_length": 5,
}
#: The group that acts as the opponent says.
OPPONENT = "adversary"
HIDDEN = (OPPONENT, "rnn_hidden")


class _Recorder(TensorDictModuleBase):
    """The opponent, recording the state it reads, the state it writes and the episode starts."""

    def __init__(self, policy: TensorDictModuleBase) -> None:
        super().__init__()
        self.policy = policy
        self.in_keys: list[NestedKey] = list(policy.in_keys)
        self.out_keys: list[NestedKey] = list(policy.out_keys)
        self.read: list[torch.Tensor] = []
        self.written: list[torch.Tensor] = []
        self.starts: list[bool] = []

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        self.read.append(tensordict.get(HIDDEN).clone())
        self.starts.append(bool(tensordict.get("is_init").all()))
        tensordict = self.policy(tensordict)
        self.written.append(tensordict.get(("next", *HIDDEN)).clone())
        return tensordict


def _gru_policy(seed: int) -> TensorDictModuleBase:
    env = make_env("keep_away", seed=0)
    config = load_config(data={"env": {"name": "keep_away"}, "algorithm": {"name": "ppo", **GRU}})
    program = PPO(**GRU).bind(env, config)
    theta, _ = program.init_state(seed)
    return acting_policy(program, env, theta)


def test_a_gru_opponent_carries_its_own_hidden_state() -> None:
    env = make_env("keep_away", seed=0)
    # Two GRU policies of different weights: the evaluated one also keeps (adversary, rnn_hidden).
    opponent = _Recorder(_gru_policy(seed=1))
    evaluate(env, opponent_group_policy(_gru_policy(seed=2), opponent, env, OPPONENT), episodes=2)
    assert len(opponent.read) == 50  # two 25-step episodes
    assert [step for step, start in enumerate(opponent.starts) if start] == [0, 25]
    for step, read in enumerate(opponent.read):
        if opponent.starts[step]:
            assert bool((read == 0).all()), step
        else:  # what it wrote a step before: its own state, not the evaluated policy's
            torch.testing.assert_close(read, opponent.written[step - 1], rtol=0, atol=0)
            assert bool((read != 0).any())
