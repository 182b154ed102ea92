"""The plugin manager: loads every ``marlplug`` entry point and builds one registry per component kind.

A hook's value may be the component itself or a ``"module:attribute"`` string that is imported the
first time the component is used, so listing plugins (``marlplug plugins``) never imports torch.
A plugin that fails to import, or whose hook raises, is recorded and reported while the others keep
working; ``MARLPLUG_STRICT_PLUGINS=1`` turns that into an error and ``MARLPLUG_DISABLE_PLUGINS=a,b``
blocks plugins by entry-point name.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import importlib.metadata as metadata
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pluggy

from marlplug import hookspecs
from marlplug.errors import PluginError, UserError
from marlplug.switches import env_flag

ENTRY_POINT_GROUP = "marlplug"
STRICT_ENV_VAR = "MARLPLUG_STRICT_PLUGINS"
DISABLE_ENV_VAR = "MARLPLUG_DISABLE_PLUGINS"

#: Component kind -> the hook that provides it.
KIND_HOOKS: dict[str, str] = {
    "env": "marlplug_envs",
    "code": "marlplug_codes",
    "loss": "marlplug_losses",
    "algorithm": "marlplug_algorithms",
}


def unknown_name_message(what: str, name: str, choices: list[str]) -> str:
    """One line naming the bad ``name``, the closest of ``choices`` and all of them.

    >>> unknown_name_message("code", "mdss", ["ldpc", "mds"])
    "unknown code 'mdss' (did you mean 'mds'?); available: ldpc, mds"
    """
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.5)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return f"unknown {what} '{name}'{hint}; available: {', '.join(choices) or '(none installed)'}"


class UnknownComponentError(UserError):
    """A component name that no installed plugin provides."""


@dataclass(frozen=True)
class Component:
    """One registered component and where it came from.

    ``provided`` is what the plugin's hook returned for the name: the component itself, or a
    ``"module:attribute"`` reference that :attr:`obj` imports on first use.

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
        """The component, imported now if the plugin gave a ``"module:attribute"`` reference."""
        if not isinstance(self.provided, str):
            return self.provided
        module_name, _, attribute = self.provided.partition(":")
        try:
            return getattr(importlib.import_module(module_name), attribute)
        except Exception as exc:  # report which plugin broke, not a bare ImportError
            raise PluginError(
                f"{self.kind} '{self.name}' of plugin '{self.plugin}' (distribution "
                f"'{self.distribution}') failed to load '{self.provided}': "
                f"{type(exc).__name__}: {exc}"
            ) from exc


def _check_reference(name: str, provided: Any) -> None:
    """A string component must be a ``"module:attribute"`` reference."""
    if isinstance(provided, str):
        module_name, colon, attribute = provided.partition(":")
        if not (module_name and colon and attribute):
            raise ValueError(f"'{name}': '{provided}' is not a 'module:attribute' reference")


class Registry(Mapping[str, Any]):
    """Components of one kind, keyed by name; ``registry["mds"]`` returns the component itself.

    Example:
        >>> from marlplug.plugins import get_plugin_manager
        >>> codes = get_plugin_manager().registry("code")
        >>> "mds" in codes
        True
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, Component] = {}

    def add(self, component: Component) -> None:
        existing = self._entries.get(component.name)
        if existing is not None:
            raise PluginError(
                f"{self.kind} name '{component.name}' is registered twice: by distribution "
                f"'{existing.distribution}' (plugin '{existing.plugin}') and by distribution "
                f"'{component.distribution}' (plugin '{component.plugin}')"
            )
        self._entries[component.name] = component

    def __getitem__(self, name: str) -> Any:
        return self._entries[name].obj  # imports a lazily registered component now

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def entry(self, name: str) -> Component:
        """The :class:`Component` record (with its plugin and distribution) for ``name``."""
        return self._entries[name]

    def get_component(self, name: str, *, field: str | None = None) -> Any:
        """Return the component called ``name`` or raise a one-line error listing the choices.

        Args:
            name: the component name from a config file or the command line.
            field: the config path to name in the error (``"losses[1].name"``).
        """
        if name in self._entries:
            return self._entries[name].obj
        where = f"{field}: " if field else ""
        raise UnknownComponentError(where + unknown_name_message(self.kind, name, list(self)))


@dataclass
class PluginInfo:
    """What ``marlplug plugins`` shows about one entry point."""

    name: str
    distribution: str
    version: str
    module: str
    hooks: list[str] = field(default_factory=list)
    components: dict[str, list[str]] = field(default_factory=dict)
    error: str | None = None

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "distribution": self.distribution,
            "version": self.version,
            "module": self.module,
            "hooks": self.hooks,
            "components": self.components,
            "error": self.error,
        }


def _disabled_names() -> set[str]:
    return {n.strip() for n in os.environ.get(DISABLE_ENV_VAR, "").split(",") if n.strip()}


class PluginManager:
    """Loads ``marlplug`` entry points into a pluggy manager and builds registries from their hooks.

    Example:
        >>> pm = PluginManager.from_entry_points()
        >>> sorted(pm.registries)
        ['algorithm', 'code', 'env', 'loss']
    """

    def __init__(self, *, strict: bool = False, disabled: set[str] | None = None) -> None:
        self.strict = strict
        self.disabled = disabled or set()
        self.pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        self.pm.add_hookspecs(hookspecs)
        self.plugins: dict[str, PluginInfo] = {}
        self.registries: dict[str, Registry] = {kind: Registry(kind) for kind in KIND_HOOKS}

    @classmethod
    def from_entry_points(
        cls, *, strict: bool | None = None, disabled: set[str] | None = None
    ) -> PluginManager:
        """Load every installed plugin; settings default to the environment variables."""
        manager = cls(
            strict=env_flag(STRICT_ENV_VAR) if strict is None else strict,
            disabled=_disabled_names() if disabled is None else disabled,
        )
        for entry_point in sorted(
            metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name
        ):
            manager._load_entry_point(entry_point)
        manager._build_registries()
        return manager

    def _record_failure(self, info: PluginInfo, message: str) -> None:
        info.error = message
        if self.strict:
            raise PluginError(
                f"plugin '{info.name}' from '{info.distribution}' failed: {message} "
                f"(unset {STRICT_ENV_VAR} to continue without it)"
            )

    def _load_entry_point(self, entry_point: metadata.EntryPoint) -> None:
        dist = entry_point.dist
        info = PluginInfo(
            name=entry_point.name,
            distribution=dist.name if dist is not None else "?",
            version=dist.version if dist is not None else "?",
            module=entry_point.value,
        )
        if info.name in self.plugins:
            other = self.plugins[info.name]
            raise PluginError(
                f"plugin name '{info.name}' is used by distribution '{other.distribution}' "
                f"and by distribution '{info.distribution}'"
            )
        self.plugins[info.name] = info
        if info.name in self.disabled:
            self.pm.set_blocked(info.name)
            info.error = f"disabled by {DISABLE_ENV_VAR}"
            return
        try:
            plugin = entry_point.load()
        except Exception as exc:  # a broken plugin must not take the others down
            self._record_failure(info, f"import failed: {type(exc).__name__}: {exc}")
            return
        try:
            self.pm.register(plugin, name=info.name)
            self.pm.check_pending()
        except pluggy.PluginValidationError as exc:
            self.pm.unregister(name=info.name)
            self._record_failure(info, f"invalid hook: {exc}")
            return
        info.hooks = sorted(caller.name for caller in self.pm.get_hookcallers(plugin) or [])

    def register(self, plugin: object, *, name: str, distribution: str = "(registered)") -> None:
        """Register an in-process plugin object (for tests and notebooks) and add its components."""
        info = PluginInfo(name=name, distribution=distribution, version="", module=repr(plugin))
        self.plugins[name] = info
        self.pm.register(plugin, name=name)
        self.pm.check_pending()
        info.hooks = sorted(caller.name for caller in self.pm.get_hookcallers(plugin) or [])
        self._collect(name, plugin)

    def unregister(self, name: str) -> None:
        """Remove a plugin registered with :meth:`register` and its components."""
        self.pm.unregister(name=name)
        self.plugins.pop(name, None)
        for registry in self.registries.values():
            for component_name in [n for n in registry if registry.entry(n).plugin == name]:
                del registry._entries[component_name]

    def _build_registries(self) -> None:
        for name, plugin in self.pm.list_name_plugin():
            if plugin is not None:
                self._collect(name, plugin)

    def _collect(self, plugin_name: str, plugin: object) -> None:
        info = self.plugins[plugin_name]
        for kind, hook_name in KIND_HOOKS.items():
            impl = getattr(plugin, hook_name, None)
            if impl is None:
                continue
            try:
                provided = dict(impl())
                for component_name, value in provided.items():
                    _check_reference(component_name, value)
            except Exception as exc:
                self._record_failure(info, f"hook {hook_name} raised {type(exc).__name__}: {exc}")
                continue
            for component_name, value in provided.items():
                self.registries[kind].add(
                    Component(kind, component_name, value, plugin_name, info.distribution)
                )
            info.components[kind] = sorted(provided)

    def import_components(self) -> None:
        """Import every lazily registered component now; a failure is recorded on its plugin
        (or raised in strict mode), as for a plugin that fails to import."""
        for registry in self.registries.values():
            for name in registry:
                entry = registry.entry(name)
                try:
                    entry.obj  # noqa: B018 -- the import is the point
                except PluginError as exc:
                    self._record_failure(self.plugins[entry.plugin], str(exc))

    def registry(self, kind: str) -> Registry:
        """The registry for ``kind`` (one of ``env``, ``code``, ``loss``, ``algorithm``)."""
        if kind not in self.registries:
            raise UserError(unknown_name_message("component kind", kind, list(KIND_HOOKS)))
        return self.registries[kind]

    def report(self) -> list[PluginInfo]:
        """Every plugin with its hooks, components and error, sorted by name."""
        return [self.plugins[name] for name in sorted(self.plugins)]


@functools.cache
def get_plugin_manager() -> PluginManager:
    """The process-wide plugin manager, loaded from entry points on first use."""
    return PluginManager.from_entry_points()


def get_component(kind: str, name: str, *, field: str | None = None) -> Any:
    """Shortcut: ``get_plugin_manager().registry(kind).get_component(name, field=field)``."""
    return get_plugin_manager().registry(kind).get_component(name, field=field)
