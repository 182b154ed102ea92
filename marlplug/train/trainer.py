"""JointMultiAgentTrainer: collect a rollout, per-agent GAE, minibatch epochs of joint PPO steps.

A facade over the PPO learner algorithm: :class:`~marlplug.algorithms.ppo.rollouts.PpoRollouts`
collects and cuts the minibatches (reseeded from ``(seed, update)``, so a run resumed from a
checkpoint continues bit-identically) and ``PPO.update_step`` runs each step in place.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

import torch
from tensordict import TensorDictBase
from torch import nn
from torchrl.envs import EnvBase

from marlplug.algorithms.ppo import PPO, UpdateStepResult
from marlplug.algorithms.ppo.iteration import PpoSchedule
from marlplug.algorithms.ppo.rollouts import MinibatchPlan, PpoRollouts, episode_returns
from marlplug.losses.clip_ppo import ClipPPO
from marlplug.losses.ppo_options import JointTrainerConfig, PPOLossOptions
from marlplug.runs.nonfinite import NonfiniteMonitor, affected_agents, nonfinite_terms
from marlplug.runs.stats import PER_AGENT_STATS, JointStats

#: One optimization step on a minibatch: ``step(minibatch, seed=..., frozen=...)``; it updates the
#: trainer's loss weights and optimizer state in place (see :attr:`JointMultiAgentTrainer.step_function`).
StepFunction = Callable[..., UpdateStepResult]

_STAT_SOURCES = {
    "policy_loss": "policy_loss",
    "value_loss": "value_loss",
    "entropy": "entropy",
    "clip_fraction": "clip_fraction",
    "approx_kl": "approx_kl",
    "explained_var": "explained_variance",
}


class JointMultiAgentTrainer:
    """Synchronized joint multi-agent PPO: one shared backward pass per minibatch, per-agent steps.

    Args:
        env: a TorchRL multi-agent env (agent groups as nested keys; categorical or bounded
            continuous actions).
        config: rollout and optimization settings.
        algorithm: the PPO learner (model sizes, Adam ε).
        aux_losses: name -> aux loss module, added to the joint loss.
        loss_critic_type: distance for the value loss.
        schedule: learning-rate and entropy-coefficient schedules over the updates
            (:meth:`PPO.schedule`; ``None``: constants).

    Examples:
        >>> from marlplug.envs import make_env
        >>> env = make_env("cooperative_navigation", agents=2, seed=0)
        >>> trainer = JointMultiAgentTrainer(
        ...     env, config=JointTrainerConfig(rollout_steps=50, minibatch_size=25, n_epochs=1))
        >>> stats = trainer.train_update()
        >>> stats.minibatch_steps, len(stats.per_agent["grad_norm"])
        (1, 2)
    """

    def __init__(
        self,
        env: EnvBase,
        *,
        config: JointTrainerConfig | None = None,
        algorithm: PPO | None = None,
        aux_losses: Mapping[str, nn.Module] | None = None,
        loss_critic_type: str | None = None,
        schedule: PpoSchedule | None = None,
    ) -> None:
        self.config = config or JointTrainerConfig()
        self.algorithm = algorithm or PPO()
        self.env = env
        torch.manual_seed(self.config.seed)
        self.model = self.algorithm.build_model(env)
        terms = self.config.model_dump(include=set(PPOLossOptions.model_fields))
        clip_ppo = ClipPPO(
            **{**terms, "loss_critic_type": loss_critic_type or terms["loss_critic_type"]}
        )
        self.loss = clip_ppo.build(self.model.actors, self.model.critics, aux_losses=aux_losses)
        self.loss.make_value_estimator(gamma=self.config.gamma, lmbda=self.config.gae_lambda)
        self.optimizer = self.algorithm.make_optimizer(self.loss, lr=self.config.lr)
        self.frozen: set[int] = set()
        #: Replaces the local ``PPO.update_step`` for every minibatch when set (coded PPO sets a
        #: controller round here); ``None`` runs the step in this process.
        self.step_function: StepFunction | None = None
        self.update_index = 0
        self.rollouts = PpoRollouts(
            env,
            self.loss,
            self.model.policy,
            seed=self.config.seed,
            rollout_steps=self.config.rollout_steps,
            plan=MinibatchPlan(
                n_epochs=self.config.n_epochs,
                minibatch_size=self.config.minibatch_size,
                iterate_all_minibatches=self.config.iterate_all_minibatches,
                max_minibatches_per_epoch=self.config.max_minibatches_per_epoch,
                # A GRU actor trains on whole sequences, replayed from their first stored state,
                # as PPO's own loop draws them (single shuffled steps give no gradient through time).
                sequence_length=self.algorithm.training_sequence_length,
            ),
            schedule=schedule,
        )
        #: Skipped steps (non-finite gradient norms), the losses behind them, and the stop rule.
        self.nonfinite = NonfiniteMonitor(self.agent_names, self.config.max_nonfinite_steps)

    @property
    def agent_names(self) -> list[str]:
        return [name for _, name in self.model.agent_names]

    def freeze(self, agents: Collection[int]) -> None:
        """Agents (global indices) whose parameters and optimizer state must not move."""
        self.frozen = set(agents)

    @property
    def frames(self) -> int:
        """Env frames collected so far."""
        return self.rollouts.frames

    def collect_rollout(self) -> TensorDictBase:
        """One rollout from a freshly seeded env reset (seeded from ``(seed, update index)``)."""
        return self.rollouts.collect(self.update_index)

    def update(self, rollout: TensorDictBase) -> JointStats:
        """Per-agent GAE on ``rollout``, then ``n_epochs`` of minibatch steps; returns the stats."""
        results: list[UpdateStepResult] = []
        terms: dict[str, set[str]] = {}
        affected = 0
        for minibatch, seed in self.rollouts.minibatches(rollout, self.update_index):
            result = self._step(minibatch, seed=seed)
            results.append(result)
            affected += self._check_finite(result, terms, step=len(results))
        stats = self._stats(results, rollout)
        stats.nonfinite_terms = {term: sorted(agents) for term, agents in terms.items()}
        stats.nonfinite_agent_steps = affected
        self.update_index += 1
        return stats

    def _check_finite(
        self, result: UpdateStepResult, terms: dict[str, set[str]], *, step: int
    ) -> int:
        """Find the non-finite terms of a step, count them, and stop the run
        (:class:`~marlplug.runs.nonfinite.NonfiniteLossError`) once an agent no longer learns;
        returns how many agents the step's non-finite values concern."""
        found = nonfinite_terms(result.losses, self.loss.groups, self.agent_names, result.nonfinite)
        for term, agents in found.items():
            terms.setdefault(term, set()).update(agents)
        affected = affected_agents(found, self.agent_names)
        self.nonfinite.record(affected, found, where=f"update {self.update_index + 1}, step {step}")
        return int(affected.sum())

    def _step(self, minibatch: TensorDictBase, *, seed: int) -> UpdateStepResult:
        if self.step_function is not None:
            return self.step_function(minibatch, seed=seed, frozen=self.frozen)
        return self.algorithm.update_step(
            self.loss,
            self.optimizer,
            minibatch,
            max_grad_norm=self.config.max_grad_norm,
            frozen=self.frozen,
            seed=seed,
        )

    def train_update(self) -> JointStats:
        """Collect one rollout and update on it."""
        return self.update(self.collect_rollout())

    def _stats(self, results: list[UpdateStepResult], rollout: TensorDictBase) -> JointStats:
        stats = JointStats(agent_names=self.agent_names)
        groups = self.loss.groups
        for stat in PER_AGENT_STATS:
            if stat == "grad_norm":
                values = torch.stack([r.grad_norms.float() for r in results])
            else:
                source = _STAT_SOURCES[stat]
                values = torch.stack(
                    [torch.cat([r.losses.get((g, source)) for g in groups]) for r in results]
                )
            stats.per_agent[stat] = values.mean(0).tolist()
        for name in self.loss.aux_losses:
            stats.aux_losses[name] = float(
                torch.stack([r.losses.get(f"loss_{name}") for r in results]).mean()
            )
            if ("aux_stats", name) in results[0].losses.keys(True):
                for stat in results[0].losses.get(("aux_stats", name)).keys():  # noqa: SIM118
                    samples = [r.losses.get(("aux_stats", name, stat)).float() for r in results]
                    stats.aux_stats[f"{name}/{stat}"] = float(torch.stack(samples).mean())
        stats.total_loss = sum(r.total_loss for r in results) / len(results)
        stats.minibatch_steps = len(results)
        stats.skipped_nonfinite = int(sum(int(r.nonfinite.sum()) for r in results))
        returns = episode_returns(rollout, groups)
        stats.mean_return = float(returns.mean()) if returns.numel() else None
        stats.frames = self.frames
        return stats

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue bit-identically: weights, optimizer, counters."""
        return {
            "loss": self.loss.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "update_index": self.update_index,
            "frames": self.frames,
            "frozen": sorted(self.frozen),
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.loss.load_state_dict(state["loss"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.update_index = int(state["update_index"])
        self.rollouts.frames = int(state["frames"])
        self.frozen = set(state.get("frozen", []))

    def close(self) -> None:
        self.rollouts.close()
