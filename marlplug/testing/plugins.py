"""Register an in-process plugin for one test (or one notebook cell) and remove it afterwards.

Like datasette's ``pm.register(...)``/``pm.unregister(...)`` pattern, but undone even when the test
fails, so a component registered by one test never leaks into the next.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from marlplug.errors import PluginError
from marlplug.plugins import PluginManager, get_plugin_manager


@contextmanager
def register_plugin(
    plugin: object, *, name: str, manager: PluginManager | None = None
) -> Iterator[PluginManager]:
    """Make ``plugin``'s components visible to the registries inside the ``with`` block.

    Everything that looks components up by name (``load_config``, ``make_env``, ``get_component``,
    ``marlplug config reference``) sees them; on leaving the block the plugin and its components are
    removed again, also when the block raises.

    Args:
        plugin: any object (a module, a class instance, a ``SimpleNamespace``) whose attributes are
            hook implementations marked with :data:`marlplug.hookimpl`.
        name: the plugin's name; must not be in use (an installed plugin's entry-point name is).
        manager: the plugin manager to register with (default: the process-wide one that
            :func:`marlplug.plugins.get_plugin_manager` returns).

    Yields:
        The plugin manager, with the plugin registered.

    Raises:
        PluginError: the name is taken, a component name clashes with an installed one, or a hook
            raised (the plugin is not left registered).

    Examples:
        >>> from types import SimpleNamespace
        >>> import marlplug
        >>> from marlplug.coding import ReplicationCode
        >>> @marlplug.hookimpl
        ... def marlplug_codes():
        ...     return {"my_replication": ReplicationCode}
        >>> with register_plugin(SimpleNamespace(marlplug_codes=marlplug_codes), name="mine"):
        ...     marlplug.get_component("code", "my_replication") is ReplicationCode
        True
        >>> "my_replication" in marlplug.get_plugin_manager().registry("code")
        False
    """
    manager = get_plugin_manager() if manager is None else manager
    if name in manager.plugins or manager.pm.get_plugin(name) is not None:
        raise PluginError(
            f"plugin name '{name}' is already registered; pick another name for the test plugin"
        )
    try:
        manager.register(plugin, name=name, distribution=f"(registered: {name})")
        error = manager.plugins[name].error
        if error is not None:  # a hook raised; without strict mode register() only records it
            raise PluginError(f"plugin '{name}': {error}")
        yield manager
    finally:
        if name in manager.plugins or manager.pm.get_plugin(name) is not None:
            manager.unregister(name)


__all__ = ["register_plugin"]
