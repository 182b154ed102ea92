"""QMIX: the team's Q a monotonic mix of the agents' Q-values, its weights produced from the
env's global state by hypernetworks (TorchRL's ``QMixer``), learned from one team TD target on the
summed reward (plugin name ``qmix``).

The mixer's parameters belong to no agent: every agent's row carries the same copy (with its
target and Adam state) and the update steps it once and writes it back into every row
(:mod:`~marlplug.algorithms.q.mixing` says why), so the update stays a pure function of
``(theta_all, opt_state, batch)``. The mixer reads the scenario's global state where the scenario
declares one, else every agent's observation concatenated. As with VDN, the mixer couples every
agent's update: coded training is refused in one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from torchrl.envs import EnvBase
from torchrl.modules.models.multiagent import QMixer

from marlplug.algorithms.q.iql import IQL, discrete_agents
from marlplug.algorithms.q.mixing import state_index
from marlplug.algorithms.q.options import QMixOptions
from marlplug.algorithms.q.program import QProgram
from marlplug.algorithms.spaces import AgentSpace, padded_dims
from marlplug.envs.state import StateColumns
from marlplug.errors import UserError

if TYPE_CHECKING:
    from marlplug.config import MarlplugConfig

__all__ = ["QMIX"]

#: Why a coded QMIX run is refused.
CODING_REFUSAL = "coding: qmix's mixer couples every agent's update; run it centralized"


class QMIX(IQL):
    """QMIX (plugin name ``qmix``): IQL's per-agent Q-networks, options and exploration, trained on
    the team's TD error through TorchRL's ``QMixer``.

    Examples:
        >>> algo = QMIX(hidden_sizes=[8], mixing_embed_dim=4)
        >>> agents = [AgentSpace(f"agent_{i}", "agent", obs_dim=6, action_dim=5, discrete=True)
        ...           for i in range(3)]
        >>> program = algo.program(agents)
        >>> type(program.mixer).__name__, program.mixer.state_dim  # 3 observations side by side
        ('QMixer', 18)
        >>> theta, _ = program.init_state(seed=0)
        >>> bias = program.theta_codec.unflatten(theta)["mixer.V.2.bias"]
        >>> bool((bias == bias[0]).all())  # the same mixer copy in every agent's row
        True
    """

    Options = QMixOptions
    options: QMixOptions

    def __init__(self, **options: Any) -> None:
        self.options = QMixOptions(**options)

    def program(
        self, agents: Sequence[AgentSpace], columns: StateColumns | None = None
    ) -> QProgram:
        """The update program for these agents (in this order); the mixer reads the state that
        ``columns`` declares, or every agent's observation when ``None``."""
        obs_dim, _ = padded_dims(agents)
        index = state_index(agents, obs_dim, columns)
        mixer = QMixer(
            state_shape=(len(index),),
            mixing_embed_dim=self.options.mixing_embed_dim,
            n_agents=len(agents),
            device="cpu",
        )
        return QProgram(self.options, agents, mixer=mixer, state_index=index)

    def bind(self, env: EnvBase, config: MarlplugConfig | None = None) -> QProgram:
        """The update program for ``env``'s agents, mixing on the global state that
        ``config.env``'s scenario declares (none without a config); a one-line error for
        continuous actions or a ``coding:`` section."""
        if config is not None and config.coding is not None:
            raise UserError(CODING_REFUSAL)
        columns = None
        if config is not None:
            columns = getattr(config.env.options, "state_columns", lambda: None)()
        return self.attached(self.program(discrete_agents(env, "qmix"), columns), env)
