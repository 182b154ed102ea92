"""The flat ``[E, M, ...]`` env adapter lives in :mod:`marlplug.envs.flat`; this name stays for imports."""

from marlplug.envs.flat import MultiAgentEnvAdapter

__all__ = ["MultiAgentEnvAdapter"]
