"""A griffe extension for the API pages: the Sphinx roles in marlplug's docstrings shown as code.

marlplug's docstrings are Google style (what mkdocstrings parses) but name other objects with Sphinx
roles, which the API pages would otherwise print as they are: ``:func:`~marlplug.envs.make_env```
becomes `make_env` (a ``~`` keeps the last part, as Sphinx does) and ``:class:`JointPPOLoss``` becomes
`JointPPOLoss`. mkdocs.yml loads it (``extensions`` of mkdocstrings' python handler).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|data|mod|attr|exc|obj|const):`(~?)([^`]+)`")


def roles_as_code(text: str) -> str:
    """``text`` with every Sphinx cross-reference role replaced by inline code.

    Example:
        >>> roles_as_code("see :func:`~marlplug.envs.make_env` and :class:`JointPPOLoss`")
        'see `make_env` and `JointPPOLoss`'
    """

    def code(match: re.Match[str]) -> str:
        shorten, target = match.groups()
        return f"`{target.rsplit('.', 1)[-1] if shorten else target}`"

    return _ROLE.sub(code, text)


class SphinxRolesAsCode(griffe.Extension):
    """Rewrites every docstring once the object tree is loaded, before mkdocstrings parses it."""

    def on_object(self, *, obj: griffe.Object, loader: griffe.GriffeLoader, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = roles_as_code(obj.docstring.value)
