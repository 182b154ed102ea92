"""SAC's optimizer steps over the forwarded agents' unflattened rows (:class:`SacSteps`): the twin
critics' and the actor's per-agent clip and Adam step, the temperature's step on the entropy error,
the target critics' Polyak move, and the packing of the asked agents' new rows.

The continuous :class:`~marlplug.algorithms.sac.program.SacProgram` and the discrete
:class:`~marlplug.algorithms.sac.discrete.DiscreteSacProgram` compute different losses; from their
gradients on, both update the same rows the same way, here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

from marlplug.algorithms.state_codec import AdamStep, StateCodec, clipped_adam_step
from marlplug.optim.adam import AdamSettings
from marlplug.optim.sharing import mean_within_groups

if TYPE_CHECKING:
    from marlplug.algorithms.sac.options import SacOptions

__all__ = ["SacSteps"]


class SacSteps:
    """The steps of one SAC program's update, for its row layout.

    Args:
        options: the hyperparameters (``lr``, ``max_grad_norm``, ``tau``, a fixed ``alpha`` or
            not, ``share_params``).
        codec: one agent's whole state, ``theta`` then ``opt_state``.
        critic_names: each twin critic's tensor names (critic 1's, then critic 2's).
        actor_names: the actor's tensor names.
        target_entropy: ``[M]`` each agent's target entropy.

    Examples:
        >>> from marlplug.algorithms.sac.options import SacOptions
        >>> from marlplug.algorithms.sac.program import SacProgram
        >>> from marlplug.algorithms.spaces import AgentSpace
        >>> agents = [AgentSpace(f"agent_{i}", "agent", obs_dim=6, action_dim=2, discrete=False,
        ...                      low=-1.0, high=1.0) for i in range(3)]
        >>> steps = SacProgram(SacOptions(hidden_sizes=[8], share_params=True), agents).steps
        >>> grads = [torch.tensor([[1.0], [3.0], [8.0]])]
        >>> steps.shared(grads, torch.tensor([0, 0, 1]))[0].flatten().tolist()  # group means
        [2.0, 2.0, 8.0]
    """

    def __init__(
        self,
        options: SacOptions,
        codec: StateCodec,
        critic_names: Sequence[Sequence[str]],
        actor_names: Sequence[str],
        target_entropy: torch.Tensor,
    ) -> None:
        self.options = options
        self.codec = codec
        self.critic_names = [list(names) for names in critic_names]
        self.actor_names = list(actor_names)
        self.target_entropy = target_entropy
        self.adam = AdamSettings(lr=options.lr)

    def shared(self, grads: Sequence[torch.Tensor], group: torch.Tensor) -> list[torch.Tensor]:
        """``grads`` as they are, or with ``share_params`` every group's mean gradient."""
        if not self.options.share_params:
            return list(grads)
        return mean_within_groups(grads, group)

    def _step(
        self, own: dict[str, torch.Tensor], names: Sequence[str], grads: Sequence[torch.Tensor]
    ) -> AdamStep:
        return clipped_adam_step(
            own, names, grads, max_grad_norm=self.options.max_grad_norm, settings=self.adam
        )

    def critics(
        self, own: dict[str, torch.Tensor], grads: Sequence[torch.Tensor], group: torch.Tensor
    ) -> list[AdamStep]:
        """Both critics' per-agent clip and Adam step, from their gradients (critic 1's, then 2's)."""
        grads = self.shared(grads, group)
        half = len(self.critic_names[0])
        return [
            self._step(own, names, part)
            for names, part in zip(self.critic_names, (grads[:half], grads[half:]), strict=True)
        ]

    def actor(
        self, own: dict[str, torch.Tensor], grads: Sequence[torch.Tensor], group: torch.Tensor
    ) -> AdamStep:
        """The actor's per-agent clip and Adam step, from its gradients."""
        return self._step(own, self.actor_names, self.shared(grads, group))

    def finish(
        self,
        own: dict[str, torch.Tensor],
        own_rows: torch.Tensor,
        calls: tuple[list[int], list[int]],
        group: torch.Tensor,
        stepped_critics: list[AdamStep],
        actor_step: AdamStep,
        entropy: torch.Tensor,
        losses: dict[str, torch.Tensor],
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """Step the temperature on the policy's ``entropy`` ``[F, B]`` (unless fixed), move the
        target critics, pack the new rows and select the asked agents' (``calls``: the forwarded
        and the asked agents)."""
        options = self.options
        forwarded, agents = calls
        index = torch.as_tensor(forwarded, dtype=torch.long)
        alpha = own["log_alpha"].exp()
        new_actor, actor_m, actor_v, new_step, actor_norm, actor_ok = actor_step
        new_state: dict[str, torch.Tensor] = {}
        stepped = actor_ok
        if options.alpha is None:
            # d/d(log_alpha) of log_alpha * (entropy - target): alpha grows while the entropy is low
            target = self.target_entropy.index_select(0, index).unsqueeze(1)
            alpha_grad = [(entropy - target).mean(dim=1, keepdim=True)]
            log_alpha, alpha_m, alpha_v, _, _, alpha_ok = self._step(
                own, ["log_alpha"], self.shared(alpha_grad, group)
            )
            new_state.update(
                {
                    "log_alpha": log_alpha[0],
                    "adam_m.log_alpha": alpha_m[0],
                    "adam_v.log_alpha": alpha_v[0],
                }
            )
            stepped = stepped & alpha_ok
        else:
            for name in ("log_alpha", "adam_m.log_alpha", "adam_v.log_alpha"):
                new_state[name] = own[name]

        # --- Polyak targets, then pack
        for names, (params, avgs, sqs, _, _, ok) in zip(
            self.critic_names, stepped_critics, strict=True
        ):
            stepped = stepped & ok
            for name, param, avg, sq in zip(names, params, avgs, sqs, strict=True):
                param = param.detach()
                new_state[name] = param
                new_state["target_" + name] = own["target_" + name].lerp(param, options.tau)
                new_state["adam_m." + name] = avg
                new_state["adam_v." + name] = sq
        for name, param, avg, sq in zip(self.actor_names, new_actor, actor_m, actor_v, strict=True):
            new_state[name] = param.detach()
            new_state["adam_m." + name] = avg
            new_state["adam_v." + name] = sq
        new_state["adam_step"] = new_step
        rows = self.codec.flatten(new_state)
        if not bool(stepped.all()):
            rows = torch.where(stepped.unsqueeze(1), rows, own_rows)
        critic_norm = torch.hypot(stepped_critics[0][4], stepped_critics[1][4])
        stats = {
            **losses,
            "alpha": alpha.squeeze(1),
            "entropy": entropy.mean(dim=1),
            "critic_grad_norm": critic_norm,
            "actor_grad_norm": actor_norm,
            "stepped": stepped,
            "nonfinite": ~stepped,
        }
        # Only the asked agents' rows (with share_params the rest of the group only lent gradients).
        position = torch.as_tensor([forwarded.index(agent) for agent in agents], dtype=torch.long)
        return rows.index_select(0, position), {
            name: value.index_select(0, position) for name, value in stats.items()
        }
