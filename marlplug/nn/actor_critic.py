"""Per-group actor and critic networks with stacked per-agent weights and exposed encoder features.

Each agent group (``"agent"``, ``"adversary"``) gets one encoder, one policy head and one critic, each
holding every agent of the group in stacked weights. The encoder writes ``(group, "features")`` so
auxiliary losses can read every agent's features on the same rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import torch
from tensordict.nn import TensorDictModule, TensorDictModuleBase, TensorDictSequential
from torch import nn
from torchrl.envs import EnvBase
from torchrl.modules import ProbabilisticActor

from marlplug.envs.layout import GroupLayout, read_layout
from marlplug.envs.state import STATE
from marlplug.errors import UserError
from marlplug.nn.critic_input import CriticInput, critic_from_centralized
from marlplug.nn.obs_norm import ObservationNormalized, ObservationNormalizer
from marlplug.nn.policy_head import (
    ACTION,
    ACTION_LOG_PROB,
    FEATURES,
    LOC,
    LOGITS,
    OBSERVATION,
    SCALE,
    STATE_VALUE,
    policy_actor,
)
from marlplug.nn.recurrent import Recurrent, RecurrentEncoder, StackedGRUCell
from marlplug.nn.rollout_policy import CategoricalRolloutPolicy
from marlplug.nn.stacked import StackedLinear, StackedMLP
from marlplug.nn.value_norm import ValueNormalizer

#: How the networks' weights are drawn: ``torch`` (``nn.Linear``'s uniform) or ``orthogonal``
#: (MAPPO's: the activation's gain for hidden layers, 5/3 for tanh and sqrt(2) for relu; 0.01 for
#: the policy head, 1 for the value output).
WeightInit = Literal["torch", "orthogonal"]
#: The hidden layers' nonlinearity (encoder and critic): ``tanh`` (TorchRL's MAPPO tutorial,
#: BenchMARL) or ``relu`` (the MAPPO paper's default; on a CPU a fraction of tanh's cost per call).
Activation = Literal["tanh", "relu"]
ACTIVATIONS: dict[Activation, type[nn.Module]] = {"tanh": nn.Tanh, "relu": nn.ReLU}
POLICY_HEAD_GAIN = 0.01


#: What a group's networks need to know about its agents: the env layout reader's group
#: (:class:`marlplug.envs.layout.GroupLayout`; :func:`marlplug.envs.read_layout` reads an env's).
GroupSpec = GroupLayout

#: The keys inside a group (:mod:`marlplug.nn.policy_head`), importable from here as before.
__all__ = [
    "ACTION",
    "ACTION_LOG_PROB",
    "FEATURES",
    "LOC",
    "LOGITS",
    "OBSERVATION",
    "SCALE",
    "STATE_VALUE",
    "GroupActorCritic",
    "GroupSpec",
    "JointActorCritic",
]


class GroupActorCritic(nn.Module):
    """One group's encoder, policy head and critic, all stacked over its agents.

    Discrete actions get a categorical head, over the valid actions only where the env writes an
    ``action_mask`` (``spec.action_mask``: TorchRL's ``MaskedCategorical``); continuous ones
    (``spec.continuous``) a TanhNormal over the env's action bounds. :attr:`actor` is the ``ProbabilisticActor`` the loss uses (it writes the
    encoder features on the way); :attr:`rollout_policy` is what the collector runs: the same
    networks, and for discrete actions a lean :class:`CategoricalRolloutPolicy` without the
    per-step wrapper overhead.

    Args:
        spec: the group's agents and sizes.
        hidden_size: width of the hidden layers of encoder and critic.
        feature_dim: width of each agent's encoder features (what aux losses see).
        critic: what each agent's critic reads (:data:`CriticInput`).
        state_dim: the width of the global state (with ``critic="state"``).
        value_norm: the critic ends with a :class:`~marlplug.nn.value_norm.ValueNormalizer`: its
            network predicts standardized returns (the loss updates the statistics).
        obs_norm: the encoder and the critic start with an
            :class:`~marlplug.nn.obs_norm.ObservationNormalizer` (one each, holding the same
            statistics: PPO's rollout source updates both from every rollout).
        init: how the weights are drawn (:data:`WeightInit`); ``orthogonal`` starts the policy
            near uniform (its head's gain is 0.01).
        activation: the nonlinearity of the encoder's and the critic's layers (:data:`Activation`).
        share_params: every agent of the group starts with agent 0's weights (a policy and a
            critic shared by the group, as BenchMARL's ``share_policy_params``); trainers keep
            them equal by stepping every agent with the group's mean gradient
            (:class:`~marlplug.algorithms.ppo.program.PpoProgram`).
        recurrent: ``gru``: the encoder's output goes through a GRU cell whose state is the
            features (:class:`~marlplug.nn.recurrent.RecurrentEncoder`); the critic stays an MLP.
        recurrent_hidden_size: the GRU's state width (the features' width with ``gru``).
        centralized_critic: deprecated, removed in 0.3.0: the spelling of ``critic`` before 0.1.0
            (``True``: ``"joint"``, ``False``: ``"local"``); warns with a ``DeprecationWarning``.

    Examples:
        >>> spec = GroupSpec(group="agent", agent_names=("a", "b"), observation_dim=4, n_actions=3)
        >>> nets = GroupActorCritic(spec, hidden_size=8, feature_dim=8)
        >>> from tensordict import TensorDict
        >>> td = TensorDict({("agent", "observation"): torch.zeros(5, 2, 4)}, batch_size=[5])
        >>> nets.actor(td)["agent", "action"].shape
        torch.Size([5, 2])
        >>> td["agent", "features"].shape
        torch.Size([5, 2, 8])
        >>> on_state = GroupActorCritic(spec, hidden_size=8, feature_dim=8, critic="state",
        ...                             state_dim=6)
        >>> on_state.critic.in_keys, on_state.critic(TensorDict({"state": torch.zeros(5, 6)},
        ...                                                     batch_size=[5]))["agent", "state_value"].shape
        (['state'], torch.Size([5, 2, 1]))
    """

    def __init__(
        self,
        spec: GroupSpec,
        *,
        hidden_size: int = 64,
        feature_dim: int = 64,
        critic: CriticInput = "joint",
        state_dim: int | None = None,
        value_norm: bool = False,
        obs_norm: bool = False,
        init: WeightInit = "torch",
        activation: Activation = "tanh",
        share_params: bool = False,
        recurrent: Recurrent = "none",
        recurrent_hidden_size: int = 64,
        centralized_critic: bool | None = None,
    ) -> None:
        super().__init__()
        critic = critic_from_centralized(centralized_critic, critic, where="GroupActorCritic")
        if critic == "state" and (state_dim is None or obs_norm):
            raise UserError(
                "a state critic needs the width of the env's global state"
                if state_dim is None
                else "obs_norm standardizes observations; a state critic reads the global state"
            )
        if spec.one_hot:
            raise UserError(
                f"group '{spec.group}': one-hot discrete actions are not supported; make the env with "
                "categorical actions"
            )
        self.spec = spec
        self.activation = activation
        group = spec.group
        encoder_mlp = StackedMLP(
            n_agents=spec.n_agents,
            in_features=spec.observation_dim,
            out_features=feature_dim,
            num_cells=[hidden_size],
            activation=ACTIVATIONS[activation],
            activate_last_layer=True,
        )
        encoder_network = self._with_obs_norm(encoder_mlp, obs_norm)
        self.recurrent = recurrent
        self.encoder: TensorDictModuleBase
        if recurrent == "gru":
            cell = StackedGRUCell(
                n_agents=spec.n_agents, input_size=feature_dim, hidden_size=recurrent_hidden_size
            )
            self.encoder = RecurrentEncoder(encoder_network, cell, group=group)
            feature_dim = recurrent_hidden_size  # the head reads the GRU's state
        else:
            self.encoder = TensorDictModule(
                encoder_network, in_keys=[(group, OBSERVATION)], out_keys=[(group, FEATURES)]
            )
        self.policy_head, self.actor = policy_actor(
            spec, self.encoder, feature_dim=feature_dim, samples=recurrent == "gru"
        )
        self.rollout_policy: TensorDictModuleBase = self.actor
        if not spec.continuous and recurrent == "none":
            # The lean policy reads observations only (a GRU also reads and writes its state).
            self.rollout_policy = CategoricalRolloutPolicy(
                encoder_network, self.policy_head.module, group=group, masked=spec.action_mask
            )
        value_net = StackedMLP(
            n_agents=spec.n_agents,
            in_features=state_dim if critic == "state" and state_dim else spec.observation_dim,
            out_features=1,
            num_cells=[hidden_size, hidden_size],
            activation=ACTIVATIONS[activation],
            centralized=critic == "joint",
            shared_input=critic == "state",
            shared_weights=share_params,  # one shared critic on one input: computed once
        )
        if init == "orthogonal":
            self._orthogonal_init(value_net)
        critic_net = self._with_obs_norm(value_net, obs_norm)
        if value_norm:
            critic_net = nn.Sequential(critic_net, ValueNormalizer(n_agents=spec.n_agents))
        self.critic = TensorDictModule(
            critic_net,
            in_keys=[STATE if critic == "state" else (group, OBSERVATION)],
            out_keys=[(group, STATE_VALUE)],
        )
        if share_params:
            self._share_first_agents_weights()

    def _share_first_agents_weights(self) -> None:
        """Every agent's slice of every parameter (agent first, as the per-agent trainers read
        them) set to agent 0's."""
        with torch.no_grad():
            for param in self.parameters():
                param.copy_(param[:1].expand_as(param))

    def _with_obs_norm(self, network: nn.Module, obs_norm: bool) -> nn.Module:
        """``network`` reading standardized observations when ``obs_norm`` is on (its own
        normalizer: a parameter shared by two modules would be two keys of one ``theta`` slot)."""
        if not obs_norm:
            return network
        normalizer = ObservationNormalizer(
            n_agents=self.spec.n_agents, observation_dim=self.spec.observation_dim
        )
        return ObservationNormalized(network, normalizer)

    def _orthogonal_init(self, critic: StackedMLP) -> None:
        encoder = next(m for m in self.encoder.modules() if isinstance(m, StackedMLP))
        gain = nn.init.calculate_gain(self.activation)
        encoder.orthogonal_(gain, last_gain=gain)  # its features pass through the activation too
        head = self.policy_head.module
        head_linear = head[0] if isinstance(head, nn.Sequential) else head
        assert isinstance(head_linear, StackedLinear)
        head_linear.orthogonal_(POLICY_HEAD_GAIN)
        critic.orthogonal_(gain, last_gain=1.0)


class JointActorCritic(nn.Module):
    """Every group's networks, plus the joint policy a TorchRL collector runs.

    The documented agent order (the order of the ``features`` list aux losses receive) is: groups in
    ``env.group_map`` order, agents in their group's order; :attr:`agent_names` lists it.

    Args:
        specs: one :class:`GroupSpec` per group.
        hidden_size: see :class:`GroupActorCritic`.
        feature_dim: see :class:`GroupActorCritic`.
        critic: see :class:`GroupActorCritic`.
        state_dim: see :class:`GroupActorCritic`.
        value_norm: see :class:`GroupActorCritic`.
        obs_norm: see :class:`GroupActorCritic`.
        init: see :class:`GroupActorCritic`.
        activation: see :class:`GroupActorCritic`.
        share_params: see :class:`GroupActorCritic`.
        recurrent: see :class:`GroupActorCritic`.
        recurrent_hidden_size: see :class:`GroupActorCritic`.
        centralized_critic: deprecated, removed in 0.3.0: the spelling of ``critic`` before 0.1.0
            (``True``: ``"joint"``, ``False``: ``"local"``); warns with a ``DeprecationWarning``.

    Examples:
        >>> specs = [GroupSpec(group="agent", agent_names=("a", "b"), observation_dim=4, n_actions=3)]
        >>> model = JointActorCritic(specs, hidden_size=8, feature_dim=8)
        >>> model.agent_names
        [('agent', 'a'), ('agent', 'b')]
    """

    def __init__(
        self,
        specs: Sequence[GroupSpec],
        *,
        hidden_size: int = 64,
        feature_dim: int = 64,
        critic: CriticInput = "joint",
        state_dim: int | None = None,
        value_norm: bool = False,
        obs_norm: bool = False,
        init: WeightInit = "torch",
        activation: Activation = "tanh",
        share_params: bool = False,
        recurrent: Recurrent = "none",
        recurrent_hidden_size: int = 64,
        centralized_critic: bool | None = None,
    ) -> None:
        super().__init__()
        critic = critic_from_centralized(centralized_critic, critic, where="JointActorCritic")
        if not specs:
            raise UserError("JointActorCritic needs at least one agent group")
        self.groups = nn.ModuleDict(
            {
                spec.group: GroupActorCritic(
                    spec,
                    hidden_size=hidden_size,
                    feature_dim=feature_dim,
                    critic=critic,
                    state_dim=state_dim,
                    value_norm=value_norm,
                    obs_norm=obs_norm,
                    init=init,
                    activation=activation,
                    share_params=share_params,
                    recurrent=recurrent,
                    recurrent_hidden_size=recurrent_hidden_size,
                )
                for spec in specs
            }
        )
        self.policy = TensorDictSequential(*(nets.rollout_policy for nets in self._group_nets()))

    @classmethod
    def from_env(
        cls,
        env: EnvBase,
        *,
        hidden_size: int = 64,
        feature_dim: int = 64,
        critic: CriticInput = "joint",
        value_norm: bool = False,
        obs_norm: bool = False,
        init: WeightInit = "torch",
        activation: Activation = "tanh",
        share_params: bool = False,
        recurrent: Recurrent = "none",
        recurrent_hidden_size: int = 64,
        centralized_critic: bool | None = None,
    ) -> JointActorCritic:
        """Build networks sized for ``env``'s groups (discrete or bounded continuous actions); a
        state critic is sized for the env's :data:`~marlplug.envs.state.STATE` (``make_env(...,
        global_state=True)`` writes it). The arguments are :class:`JointActorCritic`'s."""
        critic = critic_from_centralized(
            centralized_critic, critic, where="JointActorCritic.from_env"
        )
        state_dim = None
        if critic == "state":
            state_spec = env.observation_spec.get(STATE, None)
            if state_spec is None:
                raise UserError(
                    "a state critic reads the env's global state; build the env with "
                    "make_env(..., global_state=True)"
                )
            state_dim = int(state_spec.shape[-1])
        return cls(
            read_layout(env).groups,
            hidden_size=hidden_size,
            feature_dim=feature_dim,
            critic=critic,
            state_dim=state_dim,
            value_norm=value_norm,
            obs_norm=obs_norm,
            init=init,
            activation=activation,
            share_params=share_params,
            recurrent=recurrent,
            recurrent_hidden_size=recurrent_hidden_size,
        )

    def _group_nets(self) -> list[GroupActorCritic]:
        return [nets for nets in self.groups.values() if isinstance(nets, GroupActorCritic)]

    @property
    def actors(self) -> dict[str, ProbabilisticActor]:
        """Group name -> its probabilistic actor."""
        return {nets.spec.group: nets.actor for nets in self._group_nets()}

    @property
    def critics(self) -> dict[str, TensorDictModule]:
        """Group name -> its critic."""
        return {nets.spec.group: nets.critic for nets in self._group_nets()}

    @property
    def agent_names(self) -> list[tuple[str, str]]:
        """``(group, agent)`` pairs in the documented agent order."""
        return [
            (nets.spec.group, name) for nets in self._group_nets() for name in nets.spec.agent_names
        ]

    @property
    def group_sizes(self) -> dict[str, int]:
        """Group name -> number of agents."""
        return {nets.spec.group: nets.spec.n_agents for nets in self._group_nets()}

    def encoder_features(self, observations: Mapping[str, torch.Tensor]) -> list[torch.Tensor]:
        """Every agent's encoder features ``[B, d_i]`` in the documented agent order.

        Args:
            observations: group name -> ``[B, n_agents, obs_dim]`` observations.
        """
        features: list[torch.Tensor] = []
        for nets in self._group_nets():
            if not isinstance(nets.encoder, TensorDictModule):
                raise UserError("encoder_features: a recurrent encoder also reads its state")
            encoder = nets.encoder.module
            assert isinstance(encoder, nn.Module)
            group_features = encoder(observations[nets.spec.group])
            features.extend(group_features.unbind(-2))
        return features
