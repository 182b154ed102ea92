"""Reading config text (YAML, TOML, ``--set`` values) with limits, so that no file can exhaust memory.

A config is a few hundred values; a hostile or broken file (a YAML "billion laughs" of nested
aliases, a 10,000-deep list, a binary file, a 5,000-digit integer) gets one line naming the file and
the limit instead of minutes of work, gigabytes of memory or a traceback.

Example:
    >>> parse_yaml_text("a: &x [1, 2]\\nb: *x\\n", source="run.yaml")
    {'a': [1, 2], 'b': [1, 2]}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import tomllib
import yaml

from marlplug.errors import ConfigError

#: Largest config file read (bytes). Real configs are a few kB; this leaves room for long inline lists.
MAX_CONFIG_BYTES = 256 * 1024
#: Deepest nesting of mappings and lists (``coding.stragglers.count`` is depth 3).
MAX_DEPTH = 32
#: Most values in a config once every YAML alias and merge key is expanded.
MAX_VALUES = 10_000


class _LimitExceeded(Exception):
    """A limit was hit while composing YAML; carries the position of the offending node."""

    def __init__(self, message: str, mark: yaml.Mark | None) -> None:
        super().__init__(message)
        self.mark = mark


class _LimitedSafeLoader(yaml.SafeLoader):
    """PyYAML's safe loader that counts values as if every alias were expanded, and the depth.

    Aliases are references while loading, so a "billion laughs" file loads quickly into a small
    graph; the blow-up comes later, when anything walks it. Charging each alias the expanded size
    of its anchor bounds everything downstream (merge keys included, since they copy aliased
    nodes). Composing is recursive, so bounding the depth here also keeps it clear of Python's
    recursion limit.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._values = 0
        self._depth = 0
        self._expanded: dict[yaml.Node, int] = {}

    def _charge(self, count: int, mark: yaml.Mark | None) -> None:
        self._values += count
        if self._values > MAX_VALUES:
            raise _LimitExceeded(
                f"more than {MAX_VALUES} values once aliases are expanded "
                "(nested YAML aliases multiply)",
                mark,
            )

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        mark = self.peek_event().start_mark
        if self.check_event(yaml.AliasEvent):
            node = super().compose_node(parent, index)
            size = self._expanded.get(node) if node is not None else 0
            if size is None:  # the anchor is still being composed: it contains itself
                raise _LimitExceeded("an alias refers to a value that contains it", mark)
            self._charge(size, mark)
            return node
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise _LimitExceeded(f"nested deeper than {MAX_DEPTH} levels", mark)
        before = self._values
        node = super().compose_node(parent, index)
        self._depth -= 1
        self._charge(1, mark)
        if node is not None:
            self._expanded[node] = self._values - before
        return node


def parse_yaml_text(text: str, *, source: str, malformed_as_string: bool = False) -> Any:
    """Parse YAML ``text`` safely (plain data only) within the limits; errors name ``source``.

    Args:
        text: the YAML document.
        source: the file or ``--set KEY`` the text came from, for the error message.
        malformed_as_string: return ``text`` itself when it is not valid YAML (a ``--set`` value
            such as ``a: b: c`` is meant as a string); the limits still apply.

    >>> parse_yaml_text("[[[1]]]", source="--set x")
    [[[1]]]
    >>> parse_yaml_text("{unclosed", source="--set x", malformed_as_string=True)
    '{unclosed'
    """
    loader: _LimitedSafeLoader | None = None
    try:
        loader = _LimitedSafeLoader(text)  # reads the text: refuses control characters
        return loader.get_single_data()
    except _LimitExceeded as exc:
        raise ConfigError(f"{source}:{_where(exc.mark)} too large: {exc}") from None
    except yaml.YAMLError as exc:
        if malformed_as_string:
            return text
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or _first_line(exc)
        raise ConfigError(f"{source}:{_where(mark)} malformed YAML: {problem}") from None
    except (ValueError, OverflowError) as exc:
        # A scalar that resolves to a type but cannot be built: a 5,000-digit integer (Python's
        # int() refuses it), a timestamp on February 30th.
        raise ConfigError(f"{source}: malformed YAML: {_first_line(exc)}") from None
    finally:
        if loader is not None:
            loader.dispose()


def parse_toml_text(text: str, *, source: str) -> dict[str, Any]:
    """Parse TOML ``text`` within the limits; errors name ``source``.

    >>> parse_toml_text("[train]\\nupdates = 3\\n", source="run.toml")
    {'train': {'updates': 3}}
    """
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: malformed TOML: {_first_line(exc)}") from None
    except RecursionError:
        # tomllib parses nested arrays and inline tables recursively.
        raise ConfigError(f"{source}: too large: nested deeper than {MAX_DEPTH} levels") from None
    except (ValueError, OverflowError) as exc:
        raise ConfigError(f"{source}: malformed TOML: {_first_line(exc)}") from None
    check_size(data, source=source)
    return data


def read_config_file(path: str | Path) -> dict[str, Any]:
    """Read a ``.yaml``/``.yml`` or ``.toml`` config file into a dict, safely and within the limits.

    Raises:
        ConfigError: one line naming the file: missing, not a UTF-8 text file, over
            :data:`MAX_CONFIG_BYTES`, malformed, deeper than :data:`MAX_DEPTH`, more than
            :data:`MAX_VALUES` values, or not a mapping at the top level.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    suffix = path.suffix.lower()
    if suffix not in {".toml", ".yaml", ".yml"}:
        raise ConfigError(
            f"{path}: unknown config format '{path.suffix}'; use .yaml, .yml or .toml"
        )
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file: {exc.strerror}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"{path}: too large: a config file must be at most {MAX_CONFIG_BYTES // 1024} KiB"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not a text file: byte {exc.start} is not UTF-8; "
            "a config is a YAML or TOML text file"
        ) from None
    if "\x00" in text:
        raise ConfigError(f"{path}: not a text file: it contains NUL bytes")
    source = str(path)
    data = parse_toml_text(text, source=source) if suffix == ".toml" else _yaml(text, source)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
    return data


def _yaml(text: str, source: str) -> Any:
    data = parse_yaml_text(text, source=source)
    check_size(data, source=source)
    return data


def check_size(data: Any, *, source: str) -> None:
    """Raise :class:`ConfigError` if ``data`` nests deeper than :data:`MAX_DEPTH` or holds more
    than :data:`MAX_VALUES` values (shared references counted each time they appear).

    The walk stops at the first limit it crosses, so it costs at most ``MAX_VALUES`` steps even on
    a self-referencing structure.

    >>> check_size({"a": [1, [2, 3]]}, source="x")
    >>> check_size([[[[1]]]], source="x")
    """
    count = 0
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        count += 1
        if count > MAX_VALUES:
            raise ConfigError(f"{source}: too large: more than {MAX_VALUES} values")
        if depth > MAX_DEPTH:
            raise ConfigError(f"{source}: too large: nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, dict):
            stack.extend((item, depth + 1) for item in value.values())
        elif isinstance(value, (list, tuple, set, frozenset)):
            stack.extend((item, depth + 1) for item in value)


def _where(mark: yaml.Mark | None) -> str:
    return f" line {mark.line + 1}, column {mark.column + 1}:" if mark is not None else ""


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    # Python's advice on its integer-digits limit ("use sys.set_int_max_str_digits()") is not for
    # a config's author: keep the part before it.
    return lines[0].split("; use sys.")[0] if lines else type(exc).__name__
