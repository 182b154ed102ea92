"""Every VMAS scenario by its own name (``vmas/balance``, ``vmas/simple_spread``, ...) as a marlplug
env, with VMAS's native actions, groups and keyword options.

Each scenario gets an ``Options`` model built from the keywords its ``make_world`` reads
(:mod:`marlplug_vmas.keywords`): a literal default gives the field its type (``bool``, a number,
``str``), an option whose default VMAS computes (``n_food`` = ``n_agents``) takes any value and
stays VMAS's when unset. VMAS's ``n_agents`` is marlplug's ``agents``; a scenario whose team is
fixed by other options (football's ``n_blue_agents``, give_way's two) fills ``agents`` in. Options
are checked by building the VMAS world once (milliseconds), so a value VMAS refuses is a config
error, not a traceback at the first rollout.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

import torch
from pydantic import BeforeValidator, Field, create_model, model_validator
from pydantic_core import PydanticCustomError
from torchrl.envs import Compose, EnvBase, StepCounter, TransformedEnv
from torchrl.envs.libs.vmas import VmasEnv
from vmas.make_env import make_env as vmas_make_env

from marlplug.envs import EnvScenario
from marlplug.envs.options import MAX_AGENTS, ScenarioOptions
from marlplug.errors import ConfigError
from marlplug_vmas.keywords import KeywordOption, class_name, scenario_keywords, scenario_names
from marlplug_vmas.transforms import GroupDones

#: VMAS's keyword for the team size, which marlplug calls ``agents``.
AGENTS_KEYWORD = "n_agents"
#: Episode length of every native scenario unless set: BenchMARL's VMAS tasks use 100 steps.
DEFAULT_MAX_STEPS = 100


def _number(value: Any) -> Any:
    # pydantic's lax int and float accept True and "3"; a VMAS mass or reward given as either is
    # a config mistake, not a number.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PydanticCustomError("number_type", "expected a number")
    return value


def _flag(value: Any) -> Any:
    if not isinstance(value, bool):
        raise PydanticCustomError("bool_type", "expected true or false")
    return value


def _text(value: Any) -> Any:
    if not isinstance(value, str):
        raise PydanticCustomError("string_type", "expected a string")
    return value


#: An option whose default is a number: an int stays an int (counts), a float a float.
Number = Annotated[int | float, BeforeValidator(_number)]
Flag = Annotated[bool, BeforeValidator(_flag)]
Text = Annotated[str, BeforeValidator(_text)]


def _field(option: KeywordOption) -> tuple[Any, Any]:
    """The pydantic ``(type, FieldInfo)`` of one VMAS keyword option."""
    if not option.literal:
        description = f"Default: computed by the scenario ({option.source})."
        return Any, Field(None, description=description)
    default = option.default
    description = f"VMAS option (default {option.source})."
    if isinstance(default, bool):
        return Flag, Field(default, description=description)
    if isinstance(default, int | float):
        return Number, Field(default, description=description)
    if isinstance(default, str):
        return Text, Field(default, description=description)
    # None, tuples and lists: VMAS's world build checks them.
    return Any, Field(default, description=description)


def _key(arguments: Mapping[str, Any]) -> str:
    return json.dumps(arguments, sort_keys=True, default=repr)


class VmasRefused(Exception):
    """VMAS raised while building a world from a scenario's options (the message says what)."""


@functools.lru_cache(maxsize=256)
def _world_agent_names(scenario: str, arguments_key: str) -> tuple[str, ...]:
    """The agents VMAS ``scenario`` has with these world arguments, by building one copy.

    Raises:
        VmasRefused: VMAS refused the arguments.
    """
    arguments = json.loads(arguments_key)
    # A world build may draw random numbers: the caller's seeded streams must not move.
    with torch.random.fork_rng(devices=[]):
        try:
            env = vmas_make_env(scenario, num_envs=1, device="cpu", seed=0, **arguments)
        except Exception as exc:
            first = next((line for line in str(exc).splitlines() if line.strip()), "")
            raise VmasRefused(f"{type(exc).__name__}: {first.strip()}") from None
    return tuple(agent.name for agent in env.agents)


class VmasNativeOptions(ScenarioOptions):
    """The options of a native VMAS scenario: marlplug's ``agents``, ``continuous_actions`` (VMAS's
    default: on) and ``max_steps``, plus the scenario's own keywords (added per scenario).

    Examples:
        >>> from marlplug_vmas.native import native_scenario
        >>> options = native_scenario("balance").Options(agents=4, package_mass=2.5)
        >>> options.world_arguments()
        {'package_mass': 2.5, 'random_package_pos_on_line': True, 'n_agents': 4}
    """

    #: The VMAS scenario name (``"balance"``).
    vmas_scenario: ClassVar[str] = ""

    continuous_actions: bool = Field(
        True,
        description="VMAS's native continuous actions (each agent's force, bounded by its "
        "u_range); false for VMAS's discrete choices.",
    )
    max_steps: int = Field(
        DEFAULT_MAX_STEPS, ge=1, le=10**6, description="Episode length; the env truncates after it."
    )

    @classmethod
    def takes_agents(cls) -> bool:
        """Whether the scenario's team size is VMAS's ``n_agents`` (else other options fix it)."""
        return AGENTS_KEYWORD in scenario_keywords(cls.vmas_scenario)

    def world_arguments(self) -> dict[str, Any]:
        """The keyword arguments for VMAS's ``make_world``: every option of the scenario that is
        set (an option VMAS computes is left to it while ``None``), ``agents`` as ``n_agents``."""
        own = set(ScenarioOptions.model_fields)
        arguments = {
            name: value
            for name, value in self.model_dump(exclude=own).items()
            if value is not None or scenario_keywords(self.vmas_scenario)[name].literal
        }
        if self.takes_agents():
            arguments[AGENTS_KEYWORD] = self.agents
        return arguments

    def agent_names(self) -> tuple[str, ...]:
        """The names of the agents the world has with these options.

        Raises:
            ConfigError: VMAS refused the options; the line names the ones that were set.
        """
        try:
            return _world_agent_names(self.vmas_scenario, _key(self.world_arguments()))
        except VmasRefused as exc:
            chosen = ", ".join(
                f"{name}={getattr(self, name)!r}" for name in sorted(self.model_fields_set)
            )
            raise ConfigError(
                f"env: vmas/{self.vmas_scenario} refused its options ({chosen or 'defaults'}): {exc}"
            ) from None

    @model_validator(mode="after")
    def _agents_match_the_world(self) -> VmasNativeOptions:
        if self.takes_agents():
            self.agent_names()  # a value VMAS refuses fails here, naming the scenario
            return self
        count = len(self.agent_names())
        if "agents" in self.model_fields_set and self.agents != count:
            raise ConfigError(
                f"env.agents: vmas/{self.vmas_scenario} has {count} agents with these options "
                f"(its own options fix the number); leave agents out or set {count}"
            )
        # Filled in without validate_assignment's re-run of this validator.
        self.__dict__["agents"] = count
        return self


class VmasNativeScenario(EnvScenario):
    """A VMAS scenario as VMAS defines it: its groups (TorchRL's default grouping: agents named
    ``<group>_<i>`` form ``<group>``; one group of ``agent_<i>`` is called ``agents``), its native
    action bounds, and its keyword options. Subclasses are made per scenario by
    :func:`native_scenario`.

    All ``num_envs`` copies step as one batch of torch tensors; a ``StepCounter`` truncates each
    episode after ``max_steps`` (a copy that VMAS marks done is reset by the collector).

    Examples:
        >>> from marlplug.envs import make_env
        >>> env = make_env("balance", backend="vmas", num_envs=4, seed=0, agents=2)
        >>> env.group_map
        {'agents': ['agent_0', 'agent_1']}
        >>> spec = env.full_action_spec["agents", "action"]
        >>> tuple(spec.shape), float(spec.space.low.min()), float(spec.space.high.max())
        ((4, 2, 2), -1.0, 1.0)
        >>> make_env("balance", backend="vmas", package_mas=2)
        Traceback (most recent call last):
        ...
        marlplug.errors.ConfigError: env.package_mas: unknown field 'package_mas' in env 'balance' (did you mean 'package_mass'?); available: agents, continuous_actions, max_steps, package_mass, random_package_pos_on_line
    """

    backend: ClassVar[str] = "vmas"
    Options: ClassVar[type[VmasNativeOptions]] = VmasNativeOptions

    def _build(self, *, num_envs: int, seed: int | None, device: str) -> EnvBase:
        options = self.options
        assert isinstance(options, VmasNativeOptions)
        base = VmasEnv(
            scenario=self.scenario,
            num_envs=num_envs,
            device=device,
            continuous_actions=options.continuous_actions,
            categorical_actions=True,
            max_steps=None,
            seed=seed,
            **options.world_arguments(),
        )
        group_map = {group: list(names) for group, names in base.group_map.items()}
        env = TransformedEnv(
            base, Compose(StepCounter(max_steps=options.max_steps), GroupDones(group_map))
        )
        env.group_map = group_map
        return env


def _summary(scenario: str) -> str:
    return f"VMAS's {scenario} scenario with its native actions and groups (vectorized)"


@functools.cache
def native_scenario(scenario: str) -> type[VmasNativeScenario]:
    """The marlplug env class of VMAS scenario ``scenario`` (made once per process).

    Raises:
        KeyError: ``scenario`` is not a VMAS scenario marlplug registers.

    Examples:
        >>> Balance = native_scenario("balance")
        >>> Balance.__name__, Balance.Options().agents, Balance.Options().max_steps
        ('Balance', 3, 100)
        >>> native_scenario("give_way").Options().agents  # fixed by the scenario
        2
    """
    keywords = scenario_keywords(scenario)
    fields = {name: _field(option) for name, option in keywords.items() if name != AGENTS_KEYWORD}
    clashes = sorted(set(fields) & set(VmasNativeOptions.model_fields))
    if clashes:  # a future VMAS keyword named like marlplug's own option
        raise KeyError(f"vmas/{scenario}: keyword(s) {clashes} clash with marlplug's options")
    counted = keywords.get(AGENTS_KEYWORD)
    default_agents = (
        counted.default
        if counted is not None and counted.literal
        else len(_world_agent_names(scenario, _key({})))
    )
    fields["agents"] = (
        int,
        Field(
            default_agents,
            ge=1,
            le=MAX_AGENTS,
            description="Number of agents (VMAS's n_agents)"
            if counted is not None
            else "Number of agents: fixed by the scenario's other options (filled in)",
        ),
    )
    name = class_name(scenario)
    options_model = create_model(  # type: ignore[call-overload]
        f"{name}Options",
        __base__=VmasNativeOptions,
        __module__=__name__,
        **fields,
    )
    options_model.vmas_scenario = scenario
    return type(
        name,
        (VmasNativeScenario,),
        {
            "Options": options_model,
            "scenario": scenario,
            "summary": _summary(scenario),
            "__module__": __name__,
            "__doc__": f"VMAS's ``{scenario}`` scenario (:class:`VmasNativeScenario`).",
        },
    )


def __getattr__(name: str) -> type[VmasNativeScenario]:
    # The registry imports each scenario's class by name on first use (``marlplug_vmas.native:Balance``).
    by_class = {class_name(scenario): scenario for scenario in scenario_names()}
    if name in by_class:
        return native_scenario(by_class[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
