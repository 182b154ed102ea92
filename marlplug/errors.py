"""Exceptions that mean "the user asked for something wrong" rather than "marlplug is broken".

The CLI prints a :class:`UserError` as one or two lines and exits with status 2, no traceback.
"""

from __future__ import annotations


class UserError(Exception):
    """A mistake in the user's input: a config file, a CLI argument, a component name."""


class ConfigError(UserError):
    """A config value that does not validate; the message starts with the field's full path."""


class UnknownComponentError(ConfigError):
    """A component name (env, backend, code, loss, algorithm) that no loaded plugin provides.

    Every unknown name raises this one class, in one format: the field, the bad name, the closest
    valid name and all of them, plus a note when a plugin that might provide it failed to load.
    It is a :class:`ConfigError`, so ``except ConfigError`` catches every bad config value.

    Example:
        >>> from marlplug.plugins import get_component
        >>> try:
        ...     get_component("loss", "redundency", field="losses[1].name")
        ... except ConfigError as exc:
        ...     print(str(exc).split(";")[0])
        losses[1].name: unknown loss 'redundency' (did you mean 'redundancy'?)
    """


class PluginError(UserError):
    """A plugin problem the user must fix: a name clash, a broken component or plugin (strict mode)."""
