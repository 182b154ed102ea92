"""The two sides ``marlplug bench loss`` (:mod:`marlplug.bench.loss`) times against each other: one
:class:`JointPPOLoss` step over a group of M agents (:func:`model_and_batch`, :func:`joint_update`)
and M separate TorchRL ``ClipPPOLoss`` modules on each agent's slice of the same minibatch
(:func:`separate_update`), with the same settings, networks and critic input.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from tensordict import TensorDict
from tensordict.nn import TensorDictModule
from torch import nn
from torch.distributions import Categorical
from torchrl.modules import ProbabilisticActor
from torchrl.objectives import ClipPPOLoss

from marlplug.algorithms.ppo import PPO
from marlplug.losses.joint_ppo import JointPPOLoss
from marlplug.nn import GroupSpec, JointActorCritic
from marlplug.nn.actor_critic import ACTIVATIONS, Activation
from marlplug.nn.critic_input import CriticInput

OBSERVATION_DIM, N_ACTIONS = 18, 5


def state_dim(n_agents: int) -> int:
    """The global state's width with ``critic="state"``: 6 per agent, like cooperative navigation's
    (each agent's velocity and position and one landmark's position).

    >>> state_dim(3)
    18
    """
    return 6 * n_agents


def model_and_batch(
    n_agents: int,
    *,
    rows: int,
    hidden: int,
    critic: CriticInput,
    activation: Activation = "tanh",
) -> tuple[JointActorCritic, TensorDict]:
    """The joint side's networks (one group of ``n_agents``, critics reading ``critic``, hidden
    layers through ``activation``) and one random minibatch of ``rows`` rows with everything the
    loss reads (a ``"state"`` ``[rows, 6·M]`` with ``critic="state"``).

    >>> model, batch = model_and_batch(2, rows=3, hidden=4, critic="state")
    >>> batch["state"].shape, batch["agent", "state_value"].shape
    (torch.Size([3, 12]), torch.Size([3, 2, 1]))
    """
    model = JointActorCritic(
        [
            GroupSpec(
                group="agent",
                agent_names=tuple(f"a{i}" for i in range(n_agents)),
                observation_dim=OBSERVATION_DIM,
                n_actions=N_ACTIONS,
            )
        ],
        hidden_size=hidden,
        feature_dim=hidden,
        critic=critic,
        state_dim=state_dim(n_agents) if critic == "state" else None,
        activation=activation,
    )
    td = TensorDict(
        {("agent", "observation"): torch.randn(rows, n_agents, OBSERVATION_DIM)}, batch_size=[rows]
    )
    if critic == "state":
        td.set("state", torch.randn(rows, state_dim(n_agents)))
    with torch.no_grad():
        model.policy(td)
        model.critics["agent"](td)
    td.set(("agent", "advantage"), torch.randn(rows, n_agents, 1))
    td.set(("agent", "value_target"), torch.randn(rows, n_agents, 1))
    return model, td.exclude(("agent", "features"), ("agent", "logits"))


#: What a separate ClipPPOLoss critic reads (a key of :func:`per_agent_batches`) for each critic input.
SEPARATE_CRITIC_KEY: dict[CriticInput, str] = {
    "joint": "all_observations",
    "state": "state",
    "local": "observation",
}


def _separate_losses(
    n_agents: int, hidden: int, critic: CriticInput, activation: Activation
) -> list[ClipPPOLoss]:
    nonlinearity = ACTIVATIONS[activation]
    critic_width = {
        "joint": OBSERVATION_DIM * n_agents,
        "state": state_dim(n_agents),
        "local": OBSERVATION_DIM,
    }[critic]
    losses = []
    for _ in range(n_agents):
        actor_net = nn.Sequential(
            nn.Linear(OBSERVATION_DIM, hidden),
            nonlinearity(),
            nn.Linear(hidden, hidden),
            nonlinearity(),
            nn.Linear(hidden, N_ACTIONS),
        )
        actor = ProbabilisticActor(
            TensorDictModule(actor_net, in_keys=["observation"], out_keys=["logits"]),
            in_keys=["logits"],
            out_keys=["action"],
            distribution_class=Categorical,
            return_log_prob=True,
        )
        critic_net = nn.Sequential(
            nn.Linear(critic_width, hidden),
            nonlinearity(),
            nn.Linear(hidden, hidden),
            nonlinearity(),
            nn.Linear(hidden, 1),
        )
        critic_module = TensorDictModule(
            critic_net, in_keys=[SEPARATE_CRITIC_KEY[critic]], out_keys=["state_value"]
        )
        loss = ClipPPOLoss(
            actor,
            critic_module,
            loss_critic_type="l2",
            normalize_advantage=True,
            clip_value=0.2,
            entropy_coeff=0.01,
            critic_coeff=0.5,
        )
        loss.set_keys(sample_log_prob="action_log_prob")
        losses.append(loss)
    return losses


def per_agent_batches(batch: TensorDict) -> list[TensorDict]:
    """Agent ``i``'s slice of a joint ``("agent", ...)`` minibatch, keyed the way one TorchRL
    ``ClipPPOLoss`` per agent reads it (its critic sees ``all_observations``, the global ``state``
    when the minibatch has one, or its own ``observation``: :data:`SEPARATE_CRITIC_KEY`)."""
    rows, n_agents = batch.batch_size[0], batch["agent", "action"].shape[1]
    state = batch.select("state", strict=False)  # empty unless the minibatch has a global state
    return [
        TensorDict(
            {
                "observation": batch["agent", "observation"][:, i],
                "all_observations": batch["agent", "observation"].reshape(rows, -1),
                "action": batch["agent", "action"][:, i],
                "action_log_prob": batch["agent", "action_log_prob"][:, i],
                "advantage": batch["agent", "advantage"][:, i],
                "value_target": batch["agent", "value_target"][:, i],
                "state_value": batch["agent", "state_value"][:, i],
            },
            batch_size=[rows],
        ).update(state)
        for i in range(n_agents)
    ]


def joint_update(model: JointActorCritic, batch: TensorDict) -> Callable[[], None]:
    """One joint PPO optimization step on ``batch`` per call: :class:`JointPPOLoss` (marlplug's
    settings, the same ones the separate ClipPPOLoss modules get) forward and backward, per-agent
    clip and per-agent Adam (``PPO.update_step``)."""
    loss = JointPPOLoss(
        actor_network=model.actors, critic_network=model.critics, defaults="marlplug"
    )
    ppo = PPO()
    optimizer = ppo.make_optimizer(loss, lr=1e-4)

    def step() -> None:
        ppo.update_step(loss, optimizer, batch, max_grad_norm=0.5)

    return step


def separate_update(
    n_agents: int, batch: TensorDict, *, hidden: int, critic: CriticInput, activation: Activation
) -> Callable[[], None]:
    """The other side: one step of ``n_agents`` separate TorchRL ``ClipPPOLoss`` modules per call,
    each on its agent's slice of ``batch`` (:func:`per_agent_batches`), one backward of their summed
    losses, a 0.5 norm clip per module and one Adam step."""
    separate = _separate_losses(n_agents, hidden, critic, activation)
    agent_batches = per_agent_batches(batch)
    # The same fused Adam kernel the joint side's AgentAdam uses.
    separate_optimizer = torch.optim.Adam(
        [p for loss in separate for p in loss.parameters()], lr=1e-4, fused=True
    )

    def separate_step() -> None:
        separate_optimizer.zero_grad()
        total = sum(
            sum(v for k, v in loss(agent_batch).items() if k.startswith("loss_"))
            for loss, agent_batch in zip(separate, agent_batches, strict=True)
        )
        total.backward()  # type: ignore[union-attr]
        for loss in separate:
            torch.nn.utils.clip_grad_norm_(loss.parameters(), 0.5)
        separate_optimizer.step()

    return separate_step
