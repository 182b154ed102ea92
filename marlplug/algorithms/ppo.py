"""The joint PPO learner algorithm: per-agent updates over one shared backward pass.

An agent's update is a pure function ``U_i(θ_all, state_i, batch, seed) -> (θ'_i, state'_i)``:
:meth:`PPO.agent_update` evaluates one of them (what a coded learner runs); :meth:`PPO.update_step`
evaluates all of them at once (what the joint trainer runs). Both give the same result.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from pydantic import Field
from tensordict import TensorDict, TensorDictBase
from torchrl.envs import EnvBase

from marlplug.config import MAX_WIDTH
from marlplug.errors import UserError
from marlplug.losses.joint_ppo import JointPPOLoss, sum_losses
from marlplug.losses.ppo_options import PPOLossOptions
from marlplug.nn.actor_critic import JointActorCritic
from marlplug.optim.agent_optim import (
    AgentAdam,
    AgentGroupParameters,
    adam_update,
    clip_grad_norm_per_agent_,
    group_parameters,
)

if TYPE_CHECKING:
    from marlplug.config.train import TrainSection


@contextmanager
def seeded(seed: int | None) -> Iterator[None]:
    """Run the block with torch's global RNG seeded to ``seed``, restoring the RNG afterwards."""
    if seed is None:
        yield
        return
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


@dataclass
class UpdateStepResult:
    """What one optimization step did.

    Attributes:
        losses: the loss module's output, detached.
        total_loss: L_total (the sum of the ``loss_*`` entries).
        grad_norms: every agent's gradient norm before clipping, in agent order.
        stepped: which agents' parameters moved.
        nonfinite: which agents were skipped because their gradient norm was not finite.
    """

    losses: TensorDictBase
    total_loss: float
    grad_norms: torch.Tensor
    stepped: torch.Tensor
    nonfinite: torch.Tensor


def loss_parameter_groups(loss: JointPPOLoss) -> list[AgentGroupParameters]:
    """Each group's stacked parameters (its actor's and critic's) in ``loss.groups`` order."""
    return group_parameters(
        {group: [loss.actor_networks[group], loss.critic_networks[group]] for group in loss.groups}
    )


def _agent_location(groups: list[AgentGroupParameters], agent: int) -> tuple[int, int]:
    start = 0
    for position, group in enumerate(groups):
        if agent < start + group.n_agents:
            return position, agent - start
        start += group.n_agents
    raise UserError(f"agent index {agent} is out of range; there are {start} agents")


def _active_masks(
    groups: list[AgentGroupParameters], frozen: Collection[int], finite: torch.Tensor
) -> dict[str, torch.Tensor]:
    active = finite.clone()
    for agent in frozen:
        _agent_location(groups, agent)  # validates the index
        active[agent] = False
    masks, start = {}, 0
    for group in groups:
        masks[group.group] = active[start : start + group.n_agents]
        start += group.n_agents
    return masks


class PPO:
    """Joint multi-agent PPO: model, optimizer and the per-agent update rule.

    Args:
        hidden_size: hidden width of encoders and critics.
        feature_dim: width of each agent's encoder features.
        centralized_critic: critics see every agent's observation (MAPPO); ``False``: IPPO.
        adam_eps: Adam's ε.

    Examples:
        >>> PPO(hidden_size=32).hidden_size
        32
    """

    class Options(PPOLossOptions):
        """``algorithm: {name: ppo, ...}``: the networks, Adam's epsilon and the PPO loss terms."""

        hidden_size: int = Field(
            64, ge=1, le=MAX_WIDTH, description="Hidden width of encoders and critics."
        )
        feature_dim: int = Field(
            64, ge=1, le=MAX_WIDTH, description="Width of each agent's encoder features."
        )
        centralized_critic: bool = Field(True, description="MAPPO critics (else IPPO).")
        adam_eps: float = Field(1e-8, gt=0.0, description="Adam's epsilon.")

        def min_memory_bytes(
            self, *, agents: int, observation_floats: int, train: TrainSection
        ) -> tuple[int, str, str]:
            """A lower bound of the largest allocation: one rollout (every agent's observation and
            next observation, action, reward, value, log-prob, advantage... per step) or the
            critics (with ``centralized_critic`` each reads every agent's observation), counted
            with their gradients and Adam moments."""
            steps = train.rollout_steps * train.num_envs
            rollout = 4 * steps * agents * (2 * observation_floats + 8)
            critic_inputs = observation_floats * (agents if self.centralized_critic else 1)
            networks = 4 * 4 * agents * (critic_inputs + observation_floats) * self.hidden_size
            if rollout >= networks:
                return (
                    rollout,
                    f"one rollout ({train.rollout_steps} steps x {train.num_envs} envs x "
                    f"{agents} agents)",
                    "train.rollout_steps",
                )
            return networks, f"the networks of {agents} agents", "env.agents"

    def __init__(
        self,
        *,
        hidden_size: int = 64,
        feature_dim: int = 64,
        centralized_critic: bool = True,
        adam_eps: float = 1e-8,
        **loss_settings: Any,
    ) -> None:
        #: The PPO loss terms (``clip_range``, ``vf_coef``, ...): a :class:`PPOLossOptions`.
        self.loss_options = PPOLossOptions(**loss_settings)
        self.hidden_size = hidden_size
        self.feature_dim = feature_dim
        self.centralized_critic = centralized_critic
        self.adam_eps = adam_eps

    def build_model(self, env: EnvBase) -> JointActorCritic:
        """Actor/critic networks for ``env``'s agent groups (initialized from torch's global RNG)."""
        return JointActorCritic.from_env(
            env,
            hidden_size=self.hidden_size,
            feature_dim=self.feature_dim,
            centralized_critic=self.centralized_critic,
        )

    def make_optimizer(self, loss: JointPPOLoss, *, lr: float) -> AgentAdam:
        """One :class:`AgentAdam` over every group's stacked weights."""
        return AgentAdam(loss_parameter_groups(loss), lr=lr, eps=self.adam_eps)

    def update_step(
        self,
        loss: JointPPOLoss,
        optimizer: AgentAdam,
        batch: TensorDictBase,
        *,
        max_grad_norm: float,
        frozen: Collection[int] = (),
        seed: int | None = None,
    ) -> UpdateStepResult:
        """All U_i at once: one backward of L_total, per-agent clip, masked per-agent Adam step.

        Args:
            loss: the joint loss.
            optimizer: its :class:`AgentAdam`.
            batch: one minibatch with advantages and value targets.
            max_grad_norm: per-agent global L2 clip.
            frozen: global indices of agents that must not move this step (their losses stay in
                the graph).
            seed: seeds torch's RNG for the loss computation (stochastic aux losses).
        """
        groups = loss_parameter_groups(loss)
        optimizer.zero_grad(set_to_none=True)
        with seeded(seed):
            losses = loss(batch)
            total = sum_losses(losses)
        total.backward()
        norms, finite = clip_grad_norm_per_agent_(groups, max_grad_norm)
        masks = _active_masks(groups, frozen, finite)
        optimizer.step(active=masks)
        optimizer.zero_grad(set_to_none=True)
        return UpdateStepResult(
            losses=losses.detach(),
            total_loss=float(total.detach()),
            grad_norms=norms,
            stepped=torch.cat(list(masks.values())),
            nonfinite=~finite,
        )

    def agent_update(
        self,
        loss: JointPPOLoss,
        theta_all: TensorDictBase,
        state_i: TensorDictBase,
        batch: TensorDictBase,
        seed: int | None,
        *,
        agent: int,
        lr: float,
        max_grad_norm: float,
        betas: tuple[float, float] = (0.9, 0.999),
    ) -> tuple[TensorDict, TensorDict]:
        """U_i: agent ``agent``'s new parameters and Adam state; nothing is modified in place.

        Args:
            loss: the joint loss (its structure; its own weights are not used).
            theta_all: every parameter, as ``TensorDict.from_module(loss)`` (see
                :func:`parameters_of`).
            state_i: agent ``agent``'s optimizer state (see :func:`agent_optimizer_state`).
            batch: the minibatch.
            seed: the same seed the joint step would use.
            agent: global agent index (documented agent order).
            lr: learning rate.
            max_grad_norm: the agent's global L2 clip.
            betas: Adam's β1, β2.

        Returns:
            ``(θ'_i, state'_i)``: dicts keyed like :func:`agent_parameters`/``state_i``. A
            non-finite gradient norm returns the inputs unchanged.
        """
        groups = loss_parameter_groups(loss)
        position, index = _agent_location(groups, agent)
        names = _group_parameter_names(loss, groups[position])
        params = theta_all.detach().clone()
        leaves = [params.get(name).requires_grad_(True) for name in names]
        with params.to_module(loss), seeded(seed):
            total = sum_losses(loss(batch))
        grads = torch.autograd.grad(total, leaves, allow_unused=True)
        agent_grads = [
            torch.zeros_like(leaf[index]) if grad is None else grad[index]
            for leaf, grad in zip(leaves, grads, strict=True)
        ]
        norm = torch.stack([g.double().square().sum() for g in agent_grads]).sum().sqrt()
        theta_i = TensorDict(
            {name: leaf[index].detach() for name, leaf in zip(names, leaves, strict=True)}
        )
        if not torch.isfinite(norm):
            return theta_i, state_i.clone()
        coefficient = float((max_grad_norm / (norm + 1e-6)).clamp(max=1.0))
        new_params, new_state = {}, {}
        step = state_i.get("step") + 1.0
        for name, leaf, grad in zip(names, leaves, agent_grads, strict=True):
            clipped = grad * torch.tensor(coefficient, dtype=torch.float64).to(grad.dtype)
            new_param, exp_avg, exp_avg_sq, _ = adam_update(
                leaf[index].detach().unsqueeze(0),
                clipped.unsqueeze(0),
                state_i.get(("exp_avg", *name)).unsqueeze(0),
                state_i.get(("exp_avg_sq", *name)).unsqueeze(0),
                step.reshape(1),
                lr=lr,
                betas=betas,
                eps=self.adam_eps,
            )
            new_params[name] = new_param[0]
            new_state[("exp_avg", *name)] = exp_avg[0]
            new_state[("exp_avg_sq", *name)] = exp_avg_sq[0]
        new_state[("step",)] = step
        return TensorDict(new_params), TensorDict(new_state)


def _group_parameter_names(
    loss: JointPPOLoss, group: AgentGroupParameters
) -> list[tuple[str, ...]]:
    ids = {id(param) for param in group.params}
    return [tuple(name.split(".")) for name, param in loss.named_parameters() if id(param) in ids]


def parameters_of(loss: JointPPOLoss) -> TensorDict:
    """θ_all: every parameter of ``loss`` as a TensorDict (a detached copy)."""
    return TensorDict.from_module(loss).detach().clone()


def agent_parameters(loss: JointPPOLoss, agent: int) -> TensorDict:
    """θ_i: agent ``agent``'s slice of every parameter of its group, keyed by parameter name."""
    groups = loss_parameter_groups(loss)
    position, index = _agent_location(groups, agent)
    named = dict(loss.named_parameters())
    return TensorDict(
        {
            name: named[".".join(name)][index].detach().clone()
            for name in _group_parameter_names(loss, groups[position])
        }
    )


def agent_optimizer_state(loss: JointPPOLoss, optimizer: AgentAdam, agent: int) -> TensorDict:
    """state_i: agent ``agent``'s Adam moments and step count (zeros before the first step)."""
    groups = loss_parameter_groups(loss)
    position, index = _agent_location(groups, agent)
    named = dict(loss.named_parameters())
    state: dict[tuple[str, ...], torch.Tensor] = {}
    step = torch.zeros(())
    for name in _group_parameter_names(loss, groups[position]):
        param = named[".".join(name)]
        param_state = optimizer.state.get(param, {})
        for moment in ("exp_avg", "exp_avg_sq"):
            value = param_state.get(moment)
            state[(moment, *name)] = (
                torch.zeros_like(param[index]) if value is None else value[index].clone()
            )
        if "step" in param_state:
            step = param_state["step"][index].clone()
    state[("step",)] = step
    return TensorDict(state)
