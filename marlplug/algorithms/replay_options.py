"""What the options of every replay-based (off-policy) algorithm share: MADDPG, IDDPG, IQL, VDN."""

from __future__ import annotations

#: ``train:`` fields a replay-based algorithm does not read: it collects and updates on its own
#: schedule (its options carry their own ``lr``, ``gamma``, minibatch size, ...), and runs one
#: torch thread per update. Setting one gives a warning (``ignored_train_fields`` of its Options).
REPLAY_IGNORED_TRAIN_FIELDS: frozenset[str] = frozenset(
    {
        "rollout_steps",
        "gamma",
        "gae_lambda",
        "n_epochs",
        "minibatch_size",
        "lr",
        "lr_schedule",
        "lr_final",
        "max_grad_norm",
        "iterate_all_minibatches",
        "max_minibatches_per_epoch",
        "torch_threads",
    }
)
