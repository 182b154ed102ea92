"""Shared settings of the tests that run `marlplug train` end to end."""

from __future__ import annotations

#: ``--set`` overrides for a run of a second or two: 2 agents, 50-step rollouts, tiny networks.
SMALL_RUN = [
    "env.agents=2",
    "train.rollout_steps=50",
    "train.minibatch_size=25",
    "train.n_epochs=1",
    "train.iterate_all_minibatches=false",  # one minibatch per epoch: one round per iteration
    "algorithm.hidden_size=16",
    "algorithm.feature_dim=8",
    "logging.progress=false",
]
