"""The configs of ``python -m marlplug.bench.parity``: the one its flags describe (MADDPG on one of
the paper's scenarios, coded on the simulated clock) or a config file's, and each run's config
made from it (seed, coded or centralized, evaluated by the bench between chunks).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from marlplug.config import MarlplugConfig, load_config
from marlplug.errors import UserError

#: The paper's four scenarios (marlplug names).
SCENARIOS = ("cooperative_navigation", "predator_prey", "physical_deception", "keep_away")
#: The flags a ``--config`` file replaces (its own settings say them).
CONFIG_REPLACES = (
    "scenarios",
    "agents",
    "adversaries",
    "iterations",
    "learners",
    "stragglers",
    "delay_s",
    "env_backend",
    "num_envs",
)
#: The scenarios whose adversary count the paper sets (K); physical deception has exactly one.
ADVERSARIAL = ("predator_prey", "keep_away")


def env_options(scenario: str, agents: int | None, adversaries: int | None) -> dict[str, Any]:
    """The env options of ``scenario`` for ``agents`` agents and ``adversaries`` adversaries
    (applied only where the paper varies them, :data:`ADVERSARIAL`); ``None`` keeps the default.

    Examples:
        >>> env_options("keep_away", 8, 4), env_options("physical_deception", 8, 4)
        ({'agents': 8, 'adversaries': 4}, {'agents': 8})
    """
    options: dict[str, Any] = {} if agents is None else {"agents": agents}
    if adversaries is not None and scenario in ADVERSARIAL:
        options["adversaries"] = adversaries
    return options


def flags_setup(
    scenario: str,
    *,
    iterations: int,
    env: dict[str, Any],
    learners: int,
    stragglers: int,
    delay_s: float,
    options: dict[str, Any],
    env_backend: str = "mpe",
    num_envs: int = 1,
) -> dict[str, Any]:
    """The config (as a dict) the bench's flags describe: MADDPG on ``scenario`` with ``env``
    options (:func:`env_options`) on ``env_backend`` (``num_envs`` copies: VMAS steps them as one
    batch), and the coded runs' ``coding:`` section (``mds`` on ``learners`` learners,
    ``stragglers`` delayed by ``delay_s`` on the simulated clock). ``--config FILE`` gives it instead.

    Examples:
        >>> setup = flags_setup("cooperative_navigation", iterations=10, env={"agents": 3},
        ...     learners=5, stragglers=1, delay_s=0.25, options={})
        >>> setup["env"], setup["coding"]["scheme"]
        ({'name': 'cooperative_navigation', 'backend': 'mpe', 'entity_order': 'world', 'agents': 3}, 'mds')
    """
    return {
        # The paper's observations list entities in mpe2's world order (a config's run default
        # is nearest first); --set env.entity_order=nearest changes it.
        "env": {"name": scenario, "backend": env_backend, "entity_order": "world", **env},
        "algorithm": {"name": "maddpg", **options},
        "train": {"updates": iterations, "num_envs": num_envs},
        "coding": {
            "scheme": "mds",
            "learners": learners,
            "clock": "simulated",
            "stragglers": {"count": stragglers, "delay_s": delay_s},
        },
    }


def parity_config(setup: Mapping[str, Any], *, coded: bool, seed: int) -> MarlplugConfig:
    """One run's config: ``setup`` (a config as a dict, with its ``coding:`` section) with ``seed``,
    without the ``coding:`` section unless ``coded``. The run evaluates nothing itself
    (``train.eval_every: 0``; :func:`marlplug.bench.parity.evaluation_curve` does, between
    chunks) and checkpoints only
    at its end.

    Examples:
        >>> setup = flags_setup("cooperative_navigation", iterations=10, env={"agents": 3},
        ...     learners=5, stragglers=1, delay_s=0.25, options={})
        >>> config = parity_config(setup, coded=True, seed=0)
        >>> config.coding.scheme.name, config.coding.learners, config.train.updates
        ('mds', 5, 10)
        >>> config.train.eval_every, parity_config(setup, coded=False, seed=0).coding is None
        (0, True)
    """
    raw = copy.deepcopy(dict(setup))
    if not coded:
        raw.pop("coding", None)
    elif raw.get("coding") is None:
        raise UserError("coding: the config has no coding section: no coded run to compare with")
    raw["seed"] = seed
    raw["logging"] = {**raw.get("logging", {}), "progress": False}
    raw["train"] = {**raw.get("train", {}), "eval_every": 0}
    raw["train"]["checkpoint_every"] = load_config(data=raw).train.updates
    return load_config(data=raw)
