"""Registries: the components of one kind keyed by name, the record of each plugin, and the one
error for an unknown name (which says when a plugin that might provide it failed to load).

Filled by :class:`marlplug.plugins.PluginManager`; read through ``get_plugin_manager().registry(kind)``.
"""

from __future__ import annotations

import difflib
import functools
import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from marlplug.errors import PluginError, UnknownComponentError
from marlplug.plugin_checks import component_problem

DISABLE_ENV_VAR = "MARLPLUG_DISABLE_PLUGINS"


def unknown_name_message(what: str, name: str, choices: list[str], *, where: str = "") -> str:
    """One line naming the bad ``name`` (and ``where`` it was looked for), the closest of
    ``choices`` and all of them.

    >>> unknown_name_message("code", "mdss", ["ldpc", "mds"])
    "unknown code 'mdss' (did you mean 'mds'?); available: ldpc, mds"
    >>> unknown_name_message("field", "lrr", ["lr", "gamma"], where="train")
    "unknown field 'lrr' in train (did you mean 'lr'?); available: lr, gamma"
    """
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.5)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    place = f" in {where}" if where else ""
    available = ", ".join(choices) or "(none installed)"
    return f"unknown {what} '{name}'{place}{hint}; available: {available}"


@dataclass(frozen=True)
class Component:
    """One registered component and where it came from.

    ``provided`` is what the plugin's hook returned for the name: the component itself, or a
    ``"module:attribute"`` reference that :attr:`obj` imports (and checks) on first use.

    Example:
        >>> Component("code", "mds", "marlplug.coding.codes:MDSCode", "codes", "marlplug").obj.name
        'mds'
    """

    kind: str
    name: str
    provided: Any
    plugin: str
    distribution: str

    @functools.cached_property
    def obj(self) -> Any:
        """The component, imported and checked now if the plugin gave a reference."""
        if not isinstance(self.provided, str):
            return self.provided
        where = f"of plugin '{self.plugin}' (distribution '{self.distribution}')"
        module_name, _, attribute = self.provided.partition(":")
        try:
            component = getattr(importlib.import_module(module_name), attribute)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # SystemExit too: a plugin must not end every command
            raise PluginError(
                f"{self.kind} '{self.name}' {where} failed to load '{self.provided}': "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        problem = component_problem(self.kind, self.name, component)
        if problem is not None:
            raise PluginError(f"{problem} ({where})")
        return component


@dataclass
class PluginInfo:
    """What ``marlplug plugins`` shows about one entry point (or in-process plugin).

    ``status`` is ``"ok"``, ``"disabled"`` (by ``MARLPLUG_DISABLE_PLUGINS``) or ``"error"``: the
    plugin failed to load (``loaded`` is False) or some of its components were skipped (``errors``
    says which and why; its other components are registered).
    """

    name: str
    distribution: str
    version: str
    module: str
    hooks: list[str] = field(default_factory=list)
    components: dict[str, list[str]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    disabled: bool = False
    loaded: bool = True
    #: The failing exception's full traceback (import or hook), shown with ``--debug``.
    traceback: str | None = None
    #: Whether components it may provide are unknown (its import or a hook failed).
    lost_components: bool = False
    #: ``"<kind>:<name>"`` -> why that component was skipped, to explain an "unknown" name later.
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def status(self) -> str:
        return "disabled" if self.disabled else "error" if self.errors else "ok"

    @property
    def error(self) -> str | None:
        """Every problem in one string, or ``None``."""
        return "; ".join(self.errors) if self.errors else None

    def label(self) -> str:
        """``plugin 'x' (distribution 'marlplug-x')`` for messages."""
        return f"plugin '{self.name}' (distribution '{self.distribution}')"

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "module": self.module,
            "status": self.status,
            "hooks": self.hooks,
            "components": self.components,
            "error": self.error,
            "errors": self.errors,
            "traceback": self.traceback,
        }


def _not_loaded_note(plugins: Mapping[str, PluginInfo], kind: str, name: str) -> str:
    """A second line for an unknown-name error: the plugins that could have provided ``name``."""
    for info in plugins.values():
        reason = info.skipped.get(f"{kind}:{name}")
        if reason is not None:
            return f"\n{kind} '{name}' of {info.label()} was not registered: {reason}"
    failed = [info for info in plugins.values() if info.lost_components and not info.disabled]
    disabled = [info.name for info in plugins.values() if info.disabled]
    notes = []
    if failed:
        first = failed[0]
        verb = "failed to load" if not first.loaded else "has a failing hook"
        notes.append(f"{first.label()} {verb}: {first.errors[0]}")
        if len(failed) > 1:
            notes[-1] += f" (and {len(failed) - 1} more)"
    if disabled:
        notes.append(f"disabled by {DISABLE_ENV_VAR}: {', '.join(disabled)}")
    if not notes:
        return ""
    return "\nnote: " + "; ".join(notes) + " (see `marlplug plugins`)"


class Registry(Mapping[str, Any]):
    """Components of one kind, keyed by name; ``registry["mds"]`` returns the component itself.

    Example:
        >>> from marlplug.plugins import get_plugin_manager
        >>> codes = get_plugin_manager().registry("code")
        >>> "mds" in codes
        True
    """

    def __init__(self, kind: str, plugins: Mapping[str, PluginInfo] | None = None) -> None:
        self.kind = kind
        self._entries: dict[str, Component] = {}
        # The manager's plugin records, to say which plugin failed when a name is unknown.
        self._plugins: Mapping[str, PluginInfo] = plugins if plugins is not None else {}

    def add(self, component: Component) -> str | None:
        """Register ``component`` unless its name is taken; return the clash message if it is."""
        existing = self._entries.get(component.name)
        if existing is not None:
            return (
                f"{self.kind} name '{component.name}' is already registered by distribution "
                f"'{existing.distribution}' (plugin '{existing.plugin}'), so distribution "
                f"'{component.distribution}' (plugin '{component.plugin}') does not provide it; "
                f"rename it, or disable one with {DISABLE_ENV_VAR}"
            )
        self._entries[component.name] = component
        return None

    def __getitem__(self, name: str) -> Any:
        return self._entries[name].obj

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def entry(self, name: str) -> Component:
        """The :class:`Component` record (with its plugin and distribution) for ``name``."""
        return self._entries[name]

    def unknown(
        self,
        name: str,
        *,
        what: str | None = None,
        field: str | None = None,
        choices: list[str] | None = None,
        key: str | None = None,
    ) -> UnknownComponentError:
        """The one error for a name this registry lacks, naming a plugin that failed to load.

        Args:
            name: the name as the user wrote it.
            what: how to call it in the message (default: the kind, ``"loss"``).
            field: the config path or option to name first (``"losses[1].name"``).
            choices: the valid names (default: every name in this registry).
            key: the registry key to look for among skipped components (default: ``name``).
        """
        where = f"{field}: " if field else ""
        message = unknown_name_message(
            what or self.kind, name, list(self) if choices is None else choices
        )
        note = _not_loaded_note(self._plugins, self.kind, key or name)
        return UnknownComponentError(where + message + note)

    def get_component(self, name: str, *, field: str | None = None) -> Any:
        """Return the component called ``name`` or raise a one-line error listing the choices.

        Args:
            name: the component name from a config file or the command line.
            field: the config path to name in the error (``"losses[1].name"``).
        """
        if name in self._entries:
            return self._entries[name].obj
        raise self.unknown(name, field=field)

    def get_env(self, name: str, backend: str, *, backend_field: str = "env.backend") -> Component:
        """The env registered as ``"<backend>/<name>"``; unknown backend or scenario name raise
        (an unknown backend names ``backend_field``).

        Example:
            >>> from marlplug.plugins import get_plugin_manager
            >>> get_plugin_manager().registry("env").get_env("keep_awy", "mpe")
            Traceback (most recent call last):
            ...
            marlplug.errors.UnknownComponentError: env.name: unknown mpe scenario 'keep_awy' (did you mean 'keep_away'?); available: cooperative_navigation, keep_away, physical_deception, predator_prey
        """
        key = f"{backend}/{name}"
        if key in self._entries:
            return self._entries[key]
        backends = sorted({k.split("/", 1)[0] for k in self._entries})
        if backend not in backends:
            raise self.unknown(
                backend, what="backend", field=backend_field, choices=backends, key=key
            )
        scenarios = sorted(k.split("/", 1)[1] for k in self._entries if k.startswith(backend + "/"))
        raise self.unknown(
            name, what=f"{backend} scenario", field="env.name", choices=scenarios, key=key
        )
