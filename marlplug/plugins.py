"""The plugin manager: loads every ``marlplug`` entry point and builds one registry per component kind.

Isolation, as in pytest: a plugin that fails to import (any exception, ``SystemExit`` included; only
``KeyboardInterrupt`` passes), whose hook raises or returns something else than a mapping, or whose
component breaks the contract (:mod:`marlplug.plugin_checks`) is recorded and reported while the others
keep working. A hook's value may be the component itself or a ``"module:attribute"`` string
imported (and checked) the first time the component is used, so ``marlplug plugins`` never imports
torch. Names are first come, first served: marlplug's own built-ins load first, then plugins
by entry-point name, and a later plugin's component whose name is taken is skipped and reported.
``MARLPLUG_STRICT_PLUGINS=1`` turns any of these into an error, ``MARLPLUG_DISABLE_PLUGINS=a,b``
blocks plugins by entry-point name and ``MARLPLUG_DEBUG=1`` logs each failure with its traceback.
"""

from __future__ import annotations

import functools
import importlib.metadata as metadata
import logging
import os
import traceback
from collections.abc import Mapping
from typing import Any

import pluggy

from marlplug import hookspecs
from marlplug.errors import PluginError, UnknownComponentError, UserError
from marlplug.plugin_checks import component_problem, reference_problem
from marlplug.registry import (
    DISABLE_ENV_VAR,
    Component,
    PluginInfo,
    Registry,
    unknown_name_message,
)
from marlplug.switches import env_flag

__all__ = [
    "DEBUG_ENV_VAR",
    "DISABLE_ENV_VAR",
    "ENTRY_POINT_GROUP",
    "KIND_HOOKS",
    "STRICT_ENV_VAR",
    "Component",
    "PluginInfo",
    "PluginManager",
    "Registry",
    "UnknownComponentError",
    "get_component",
    "get_plugin_manager",
    "unknown_name_message",
]

ENTRY_POINT_GROUP = "marlplug"
STRICT_ENV_VAR = "MARLPLUG_STRICT_PLUGINS"
DEBUG_ENV_VAR = "MARLPLUG_DEBUG"
#: The distribution whose entry points are the built-ins; they load first, so their names win.
BUILTIN_DISTRIBUTION = "marlplug"

#: Component kind -> the hook that provides it.
KIND_HOOKS: dict[str, str] = {
    "env": "marlplug_envs",
    "code": "marlplug_codes",
    "loss": "marlplug_losses",
    "algorithm": "marlplug_algorithms",
}

logger = logging.getLogger(__name__)


def _disabled_names() -> set[str]:
    return {n.strip() for n in os.environ.get(DISABLE_ENV_VAR, "").split(",") if n.strip()}


def _load_order(entry_point: metadata.EntryPoint) -> tuple[bool, str, str]:
    distribution = entry_point.dist.name if entry_point.dist is not None else ""
    return (distribution != BUILTIN_DISTRIBUTION, entry_point.name, distribution)


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
        self.registries: dict[str, Registry] = {
            kind: Registry(kind, self.plugins) for kind in KIND_HOOKS
        }

    @classmethod
    def from_entry_points(
        cls, *, strict: bool | None = None, disabled: set[str] | None = None
    ) -> PluginManager:
        """Load every installed plugin; settings default to the environment variables."""
        manager = cls(
            strict=env_flag(STRICT_ENV_VAR) if strict is None else strict,
            disabled=_disabled_names() if disabled is None else disabled,
        )
        for entry_point in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=_load_order):
            manager._load_entry_point(entry_point)
        for name, info in list(manager.plugins.items()):
            plugin = manager.pm.get_plugin(name)
            if info.loaded and plugin is not None:
                manager._collect(name, plugin)
        return manager

    def _record_failure(
        self, info: PluginInfo, message: str, exc: BaseException | None = None
    ) -> None:
        info.errors.append(message)
        if exc is not None and info.traceback is None:
            info.traceback = "".join(traceback.format_exception(exc))
        if self.strict:
            raise PluginError(
                f"plugin '{info.name}' from '{info.distribution}' failed: {message} "
                f"(unset {STRICT_ENV_VAR} to continue without it)"
            ) from exc

    def _load_entry_point(self, entry_point: metadata.EntryPoint) -> None:
        dist = entry_point.dist
        info = PluginInfo(
            name=entry_point.name,
            distribution=dist.name if dist is not None else "?",
            version=dist.version if dist is not None else "?",
            module=entry_point.value,
        )
        key = info.name
        if key in self.plugins:
            # Two distributions use one entry-point name: the first keeps it, the second is reported.
            other = self.plugins[key]
            key = f"{info.name} ({info.distribution})"
            self.plugins[key] = info
            info.loaded = False
            self._record_failure(
                info,
                f"entry-point name '{info.name}' is already used by distribution "
                f"'{other.distribution}'; one of them must rename it",
            )
            return
        self.plugins[key] = info
        if info.name in self.disabled:
            self.pm.set_blocked(info.name)
            info.disabled, info.loaded = True, False
            return
        try:
            plugin = entry_point.load()
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # SystemExit included: a plugin must not end every command
            info.loaded, info.lost_components = False, True
            self._record_failure(info, f"import failed: {_exception_line(exc)}", exc)
            return
        self._register_hooks(info, plugin)

    def _register_hooks(self, info: PluginInfo, plugin: object) -> None:
        try:
            self.pm.register(plugin, name=info.name)
            self.pm.check_pending()
        except (pluggy.PluginValidationError, ValueError) as exc:
            if self.pm.get_plugin(info.name) is plugin:
                self.pm.unregister(name=info.name)
            info.loaded, info.lost_components = False, True
            self._record_failure(info, f"invalid hook: {exc}", exc)
            return
        info.hooks = sorted(caller.name for caller in self.pm.get_hookcallers(plugin) or [])

    def register(
        self, plugin: object, *, name: str, distribution: str = "(registered)"
    ) -> PluginInfo:
        """Register an in-process plugin object (for tests and notebooks) and add its components.

        It follows the rules of installed plugins: a component whose name is taken is skipped and
        reported in the returned record's ``errors`` (an error in strict mode).
        """
        if name in self.plugins:
            raise PluginError(f"a plugin named '{name}' is already registered")
        info = PluginInfo(name=name, distribution=distribution, version="", module=repr(plugin))
        self.plugins[name] = info
        self._register_hooks(info, plugin)
        if info.loaded:
            self._collect(name, plugin)
        return info

    def unregister(self, name: str) -> None:
        """Remove a plugin registered with :meth:`register` and its components."""
        if self.pm.get_plugin(name) is not None:
            self.pm.unregister(name=name)
        self.plugins.pop(name, None)
        for registry in self.registries.values():
            for component_name in [n for n in registry if registry.entry(n).plugin == name]:
                del registry._entries[component_name]

    def _collect(self, plugin_name: str, plugin: object) -> None:
        info = self.plugins[plugin_name]
        for kind, hook_name in KIND_HOOKS.items():
            impl = getattr(plugin, hook_name, None)
            if impl is None:
                continue
            try:
                provided = impl()
            except KeyboardInterrupt:
                raise
            except BaseException as exc:
                info.lost_components = True
                self._record_failure(info, f"hook {hook_name} raised {_exception_line(exc)}", exc)
                continue
            if not isinstance(provided, Mapping):
                info.lost_components = True
                self._record_failure(
                    info,
                    f"hook {hook_name} returned {type(provided).__name__}, expected a mapping "
                    f"from names to components, e.g. {{'my_{kind}': My{kind.capitalize()}}}",
                )
                continue
            registered = []
            for component_name, obj in provided.items():
                # A "module:attribute" reference is checked when it is first imported.
                problem = (
                    reference_problem(kind, component_name, obj)
                    if isinstance(obj, str)
                    else component_problem(kind, component_name, obj)
                )
                if problem is None:
                    component = Component(kind, component_name, obj, plugin_name, info.distribution)
                    problem = self.registries[kind].add(component)
                if problem is not None:
                    info.skipped[f"{kind}:{component_name}"] = problem
                    self._record_failure(info, problem)
                else:
                    registered.append(component_name)
            info.components[kind] = sorted(registered)

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
        """Every plugin with its hooks, components and errors, sorted by name."""
        return [self.plugins[name] for name in sorted(self.plugins)]

    def failures(self) -> list[PluginInfo]:
        """Plugins with a problem (not disabled ones), in report order."""
        return [info for info in self.report() if info.errors]


def _exception_line(exc: BaseException) -> str:
    """``ImportError: message``; a ``SystemExit`` says it was an exit (its code, not its message)."""
    if isinstance(exc, SystemExit):
        return f"SystemExit: the plugin called sys.exit({exc.code!r})"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


@functools.cache
def get_plugin_manager() -> PluginManager:
    """The process-wide plugin manager, loaded from entry points on first use.

    Each plugin problem is logged once as a warning (one line; with its traceback when
    ``MARLPLUG_DEBUG`` is on), so a broken plugin is never silent.
    """
    manager = PluginManager.from_entry_points()
    debug = env_flag(DEBUG_ENV_VAR)
    for info in manager.failures():
        detail = f"\n{info.traceback}" if debug and info.traceback else ""
        logger.warning(
            "warning: %s: %s (see `marlplug plugins`)%s", info.label(), info.error, detail
        )
    return manager


def get_component(kind: str, name: str, *, field: str | None = None) -> Any:
    """Shortcut: ``get_plugin_manager().registry(kind).get_component(name, field=field)``."""
    return get_plugin_manager().registry(kind).get_component(name, field=field)
