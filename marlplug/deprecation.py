"""Renamed public names keep working for one minor version, with a warning that names the new one.

The policy (CHANGELOG.md, "Deprecation policy"): a public name or keyword that changes keeps
working, unchanged in effect, for the next minor version, and each use warns with a
:class:`DeprecationWarning` that says what to write instead and when the old spelling goes.

Example:
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_renamed("Net(wide=...)", "Net(width=...)", removed_in="0.3.0")
    >>> print(caught[0].category.__name__, caught[0].message)
    DeprecationWarning Net(wide=...) is deprecated and will be removed in marlplug 0.3.0; use Net(width=...)
"""

from __future__ import annotations

import warnings


def warn_renamed(old: str, new: str, *, removed_in: str, stacklevel: int = 3) -> None:
    """Warn that ``old`` is a deprecated spelling of ``new``, removed in version ``removed_in``.

    Args:
        old: what the caller wrote, e.g. ``"JointActorCritic(centralized_critic=...)"``.
        new: what to write instead.
        removed_in: the first version without ``old``.
        stacklevel: frames up from this function to the line to blame (3: the caller of the
            function that calls this one, the user's code for a keyword of a public function).
    """
    warnings.warn(
        f"{old} is deprecated and will be removed in marlplug {removed_in}; use {new}",
        DeprecationWarning,
        stacklevel=stacklevel,
    )
