"""``--set key.path=value`` overrides, applied to a config's raw data before it is validated.

Example:
    >>> data = {"train": {"updates": 5}}
    >>> apply_override(data, "train.updates=2")
    >>> data
    {'train': {'updates': 2}}
"""

from __future__ import annotations

import re
from typing import Any

from marlplug.config.loading import parse_yaml_text
from marlplug.config.messages import clip, format_loc
from marlplug.errors import ConfigError

_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _parse_path(path: str) -> list[str | int]:
    tokens: list[str | int] = []
    position = 0
    for match in _TOKEN.finditer(path):
        gap = path[position : match.start()]
        if gap not in {"", "."}:
            break
        name, index = match.groups()
        tokens.append(int(index) if index is not None else (int(name) if name.isdigit() else name))
        position = match.end()
    if not tokens or position != len(path):
        raise ConfigError(f"--set: malformed key '{clip(path)}'; expected a.b.c or losses[1].coef")
    return tokens


def override_path(assignment: str) -> list[str | int]:
    """The config path a ``key.path=value`` assignment sets.

    >>> override_path("algorithm.hidden_sizes[0]=32")
    ['algorithm', 'hidden_sizes', 0]
    """
    return _parse_path(assignment.partition("=")[0].strip())


def apply_override(data: dict[str, Any], assignment: str) -> None:
    """Apply one ``key.path=value`` (value parsed as YAML) to ``data`` in place.

    >>> cfg = {"losses": [{"name": "redundancy"}]}
    >>> apply_override(cfg, "losses[0].coef=0.1")
    >>> cfg["losses"][0]["coef"]
    0.1
    """
    key, sep, raw_value = assignment.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set '{clip(assignment)}': expected KEY=VALUE, e.g. train.updates=10")
    tokens = _parse_path(key.strip())
    key = clip(key)  # as shown in messages
    value = (
        parse_yaml_text(raw_value, source=f"--set {key}", malformed_as_string=True)
        if raw_value.strip()
        else ""
    )
    node: Any = data
    for depth, token in enumerate(tokens):
        last = depth == len(tokens) - 1
        where = clip(format_loc(tokens[: depth + 1]))
        if isinstance(token, int):
            if not isinstance(node, list):
                parent = clip(format_loc(tokens[:depth]))
                raise ConfigError(f"--set {key}: {parent} is not a list in this config file")
            if not -len(node) <= token < len(node):
                raise ConfigError(
                    f"--set {key}: {where} does not exist (the list has {len(node)} items)"
                )
        elif not isinstance(node, dict):
            raise ConfigError(
                f"--set {key}: {clip(format_loc(tokens[:depth])) or 'config'} is not a mapping"
            )
        if last:
            node[token] = value
        else:
            if isinstance(node, dict) and not isinstance(node.get(token), (dict, list)):
                node[token] = {}
            node = node[token]
