"""What an agent's critic reads (``CriticInput``), and the deprecated keyword that said it before
0.1.0 (``centralized_critic``), kept for one minor version (CHANGELOG.md, "Deprecation policy")."""

from __future__ import annotations

from typing import Literal

from marlplug.deprecation import warn_renamed

#: What each agent's critic reads: ``joint`` every agent's observation side by side (MAPPO as in
#: TorchRL's tutorial; input ~M² wide in cooperative navigation), ``state`` the env's compact
#: global state (:data:`marlplug.envs.state.STATE`, MAPPO's environment-provided state; ~M wide),
#: ``local`` its own observation (IPPO).
CriticInput = Literal["joint", "state", "local"]

#: The release without ``centralized_critic``, the spelling of ``critic`` before 0.1.0.
CENTRALIZED_CRITIC_REMOVED_IN = "0.3.0"


def critic_from_centralized(
    centralized_critic: bool | None, critic: CriticInput, *, where: str
) -> CriticInput:
    """``critic`` as given, or as the deprecated ``centralized_critic`` said it (``True``: ``joint``,
    every agent's observation; ``False``: ``local``, its own), with a :class:`DeprecationWarning`
    blamed on the caller of ``where``.

    Raises:
        TypeError: ``centralized_critic`` is not a bool, or comes with a ``critic`` other than
            the default.

    Examples:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     critic_from_centralized(False, "joint", where="JointActorCritic")
        'local'
        >>> print(caught[0].message)
        JointActorCritic(centralized_critic=...) is deprecated and will be removed in marlplug 0.3.0; use critic='joint' (True) or critic='local' (False)
    """
    if centralized_critic is None:
        return critic
    warn_renamed(
        f"{where}(centralized_critic=...)",
        "critic='joint' (True) or critic='local' (False)",
        removed_in=CENTRALIZED_CRITIC_REMOVED_IN,
        stacklevel=4,
    )
    if not isinstance(centralized_critic, bool):
        raise TypeError(
            f"{where}: centralized_critic must be True or False (it is now critic: 'joint', "
            f"'state' or 'local'), got {centralized_critic!r}"
        )
    if critic != "joint":
        raise TypeError(f"{where}: give critic alone (centralized_critic is its old spelling)")
    return "joint" if centralized_critic else "local"
