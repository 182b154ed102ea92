"""marlplug's own components, registered through the ``marlplug`` entry-point group like any plugin.

One module per kind. They import nothing heavy: each hook names its components as
``"module:attribute"`` references, imported when a component is first used, so ``marlplug plugins``
and ``marlplug --help`` start without torch.
"""
