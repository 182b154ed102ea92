"""PPO's hyperparameters (:class:`PpoOptions`, their one declaration): the networks, Adam's
epsilon, the recurrent actor and the PPO loss terms, apart from the plugin
(:mod:`marlplug.algorithms.ppo`) that reads them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from marlplug.algorithms.recurrent_options import (
    recurrent_field,
    recurrent_hidden_size_field,
    sequence_length_field,
)
from marlplug.config import MAX_WIDTH
from marlplug.config.checks import warn
from marlplug.config.train import SMALL_GEMM_ROWS
from marlplug.losses.ppo_options import PPOLossOptions
from marlplug.nn.actor_critic import Activation, WeightInit
from marlplug.nn.critic_input import CENTRALIZED_CRITIC_REMOVED_IN, CriticInput
from marlplug.nn.recurrent import Recurrent

if TYPE_CHECKING:
    from marlplug.config.train import TrainSection

__all__ = ["PpoOptions"]


class PpoOptions(PPOLossOptions):
    """``algorithm: {name: ppo, ...}``: the networks, Adam's epsilon and the PPO loss terms.

    The defaults are what ``marlplug train`` measured best (:class:`~marlplug.config.TrainSection`
    says how); two differ from :class:`~marlplug.algorithms.ppo.PPO`'s constructor, which keeps
    TorchRL's MAPPO tutorial's networks for use from Python: ``value_norm`` (on) and ``activation``
    (relu).
    Measured and kept: value clipping (``clip_range_vf`` 0.2, now in standardized units; off,
    explained variance fell to 0.30-0.43 and the return from -61.7 to -66.4 at 48k frames,
    seed 0) and ``init: torch`` (MAPPO's orthogonal init was not better on median: -49.8 alone,
    -51.8 with 125-row minibatches, against -48.1).
    """

    #: Every rollout starts from a freshly seeded reset (:mod:`marlplug.algorithms.ppo.rollouts`),
    #: so a rollout shorter than an episode never reaches the episode's later steps.
    rollouts_start_from_reset: ClassVar[bool] = True

    hidden_size: int = Field(
        64, ge=1, le=MAX_WIDTH, description="Hidden width of encoders and critics."
    )
    feature_dim: int = Field(
        64, ge=1, le=MAX_WIDTH, description="Width of each agent's encoder features."
    )
    critic: CriticInput = Field(
        "joint",
        description="What each agent's critic reads: joint (every agent's observation side by "
        "side, MAPPO; cost ~M^3 per frame in cooperative navigation), state (the env's compact "
        "global state, each entity once: ~M^2) or local (its own observation, IPPO: ~M^2).",
    )
    adam_eps: float = Field(1e-8, gt=0.0, description="Adam's epsilon.")
    # MAPPO's ValueNorm. Without it the critic explained nothing (explained variance -0.001 at
    # 48k frames: returns of about -65 against a critic that starts at 0); with it 0.60-0.68
    # at 48k and 0.81-0.89 at 144k. Return at 144k, seed 0: -58.0 with it, -60.3 without.
    value_norm: bool = Field(
        True,
        description="Critics predict standardized returns (MAPPO's ValueNorm: per-agent "
        "running mean/std of the value targets, in each agent's theta row).",
    )
    obs_norm: bool = Field(
        False,
        description="Actors and critics read each agent's observation standardized by its "
        "running mean/std (updated from every rollout before the update, in each agent's "
        "theta row) and clipped to [-5, 5].",
    )
    ent_coef_final: float | None = Field(
        None,
        ge=0.0,
        description="Anneal the entropy coefficient linearly from ent_coef at the first update "
        "to this over train.updates updates; null: constant ent_coef.",
    )
    init: WeightInit = Field(
        "torch",
        description="Weight initialization: torch (nn.Linear's uniform) or orthogonal "
        "(MAPPO's: the activation's gain on hidden layers, 0.01 for the policy head, 1 for the "
        "value output).",
    )
    # With nearest-first observations (env.entity_order), seeds 0-4 on a 2-core AMD EPYC Zen 5:
    # -43.6 / -46.5 / -45.9 / -46.2 / -44.7 (score IQM 0.566 [0.552, 0.595]) against -38.0 /
    # -53.7 / -54.2 / -54.7 / -55.3 (IQM 0.416 [0.400, 0.609]) in world order with tanh;
    # P(improvement) 0.80 [0.40, 1.00] (docs/notes/benchmarks-history.md, "ReLU with
    # nearest first").
    activation: Activation = Field(
        "relu",
        description="Nonlinearity of the encoder's and the critic's hidden layers: tanh "
        "(TorchRL's MAPPO tutorial) or relu (the MAPPO paper's; cheaper on a CPU).",
    )
    share_params: bool = Field(
        False,
        description="One policy and one critic per agent group (parameter sharing, as "
        "BenchMARL's share_policy_params): every agent's rows start as agent 0's and step with "
        "the group's mean gradient, so each agent learns from every agent's samples "
        "(obs_norm's and value_norm's running statistics stay per agent). A state or joint "
        "critic, whose input every agent shares, then runs once per frame; works with coded "
        "training.",
    )

    recurrent: Recurrent = recurrent_field(
        "The actor's memory: none (an MLP) or gru (encoder -> GRU cell -> head, "
        "its hidden state in the tensordict, reset when an episode starts; PPO then trains "
        "on sequences of sequence_length steps). The critic stays an MLP on its input.",
    )
    recurrent_hidden_size: int = recurrent_hidden_size_field()
    # No bound of its own: it must divide train.rollout_steps (at most 10**7).
    sequence_length: int = sequence_length_field(
        "Steps per training sequence with recurrent: gru: the rollout is cut into "
        "chunks of this many steps, each replayed from its first step's stored hidden state; "
        "must divide train.rollout_steps. A minibatch holds train.minibatch_size / "
        "sequence_length sequences.",
        le=None,
    )

    @model_validator(mode="before")
    @classmethod
    def _centralized_critic_moved(cls, data: Any) -> Any:
        # Run folders and configs written before `critic` existed say centralized_critic.
        if not isinstance(data, dict) or "centralized_critic" not in data:
            return data
        data = dict(data)
        centralized = data.pop("centralized_critic")
        if "critic" in data:
            raise PydanticCustomError(
                "critic_twice", "give critic alone (centralized_critic is its old spelling)"
            )
        if not isinstance(centralized, bool):
            raise PydanticCustomError(
                "centralized_critic", "centralized_critic is now critic: joint | state | local"
            )
        data["critic"] = "joint" if centralized else "local"
        warn(
            f"algorithm.centralized_critic is now algorithm.critic: {data['critic']} (the old "
            f"spelling is removed in marlplug {CENTRALIZED_CRITIC_REMOVED_IN})"
        )
        return data

    @field_validator("obs_norm")
    @classmethod
    def _state_critic_reads_no_observations(cls, obs_norm: bool, info: ValidationInfo) -> bool:
        if obs_norm and info.data.get("critic") == "state":
            raise PydanticCustomError(
                "obs_norm_state_critic",
                "standardizes observations and the state critic reads the global state; "
                "use it with critic: joint or local",
            )
        return obs_norm

    @property
    def training_sequence_length(self) -> int | None:
        """Steps per training sequence (``None``: minibatches of single steps)."""
        return self.sequence_length if self.recurrent != "none" else None

    @property
    def uses_global_state(self) -> bool:
        """Whether training needs the env's global state (``make_env(global_state=True)``)."""
        return self.critic == "state"

    def thread_invariant(self, train: TrainSection) -> bool:
        """Whether a run ends bit for bit the same on any torch thread count (then
        ``train.torch_threads: auto`` may give it several; ``tests/train/test_threads.py``).
        PPO reduces per agent, but MKL multiplies 5 to 11 rows with other last bits on two
        threads (:mod:`marlplug.train.threads`), so every minibatch and every collection step
        must have at least ``SMALL_GEMM_ROWS`` rows; recurrent runs are not checked yet."""
        rows = min(train.minibatch_size, train.num_envs)
        return self.recurrent == "none" and rows >= SMALL_GEMM_ROWS

    def min_memory_bytes(
        self, *, agents: int, observation_floats: int, train: TrainSection
    ) -> tuple[int, str, str]:
        """A lower bound of the largest allocation: one rollout (every agent's observation and
        next observation, action, reward, value, log-prob, advantage... per step) or the
        critics (with ``critic: joint`` each reads every agent's observation), counted
        with their gradients and Adam moments."""
        steps = train.rollout_steps * train.num_envs
        rollout = 4 * steps * agents * (2 * observation_floats + 8)
        critic_inputs = observation_floats * (agents if self.critic == "joint" else 1)
        networks = 4 * 4 * agents * (critic_inputs + observation_floats) * self.hidden_size
        if rollout >= networks:
            return (
                rollout,
                f"one rollout ({train.rollout_steps} steps x {train.num_envs} envs x "
                f"{agents} agents)",
                "train.rollout_steps",
            )
        return networks, f"the networks of {agents} agents", "env.agents"
