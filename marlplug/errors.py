"""Exceptions that mean "the user asked for something wrong" rather than "marlplug is broken".

The CLI prints a :class:`UserError` as one or two lines and exits with status 2, no traceback.
"""

from __future__ import annotations


class UserError(Exception):
    """A mistake in the user's input: a config file, a CLI argument, a component name."""


class ConfigError(UserError):
    """A config value that does not validate; the message starts with the field's full path."""


class PluginError(UserError):
    """A plugin problem the user must fix: a name clash, or a broken plugin in strict mode."""
