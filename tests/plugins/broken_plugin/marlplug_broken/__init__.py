"""A plugin that fails to import, as a real broken release would."""

raise ImportError("marlplug_broken needs a dependency that is not installed")
