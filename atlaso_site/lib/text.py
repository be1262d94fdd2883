"""Text that a database can store: no NUL, no lone surrogate. One rule wherever text enters.

PostgreSQL refuses NUL in text, and neither database can encode a lone surrogate (half of a
UTF-16 pair, such as the JSON escape "\\ud800" alone) as UTF-8; either would fail the write
with a driver error. So the API edge and the domain validation both ask this module first.

And text that shows nothing (`is_blank`): every field that must hold something refuses it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
# Characters that show nothing and are not whitespace to str.isspace: the zero-width space,
# non-joiner and joiner, the word joiner and the BOM (zero-width no-break space). Text made only
# of these and whitespace counts as empty (api.md); the client checks the same five.
INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff"
_WITHOUT_INVISIBLE = dict.fromkeys(map(ord, INVISIBLE))


def is_blank(text: str) -> bool:
    """Whether `text` shows nothing: it holds only whitespace and invisible characters."""
    return not text.translate(_WITHOUT_INVISIBLE).strip()


def unstorable(text: str) -> str | None:
    """What makes `text` unstorable, as words for a message, or None when it can be stored."""
    found = _UNSTORABLE.search(text)
    if found is None:
        return None
    if found.group() == "\x00":
        return "a NUL character (\\u0000), which cannot be stored; remove it"
    return (
        f"a lone surrogate (\\u{ord(found.group()):04x}), half of a UTF-16 pair, which is not text "
        "and cannot be stored; send whole characters (UTF-8, or a \\uXXXX pair for one beyond U+FFFF)"
    )


def first_unstorable(value: Any, *, skip: frozenset[str] = frozenset()) -> tuple[str, str] | None:
    """The dotted path (`scope.env`, `tags.1`) and problem of the first unstorable string in a
    decoded JSON value, object keys included; None when every string can be stored.

    `skip` names top-level keys left to a later, finer check. Iterative: a deeply nested body
    must not exhaust the stack.
    """
    if not _any_unstorable(value, skip):
        return None  # the common case, asked without building a path for every string
    stack: list[tuple[tuple[str, ...], Any]] = [((), value)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, str):
            problem = unstorable(node)
            if problem is not None:
                return ".".join(path) or "body", problem
        elif isinstance(node, Mapping):
            children = []
            for key, child in node.items():
                if not path and key in skip:
                    continue
                problem = unstorable(key) if isinstance(key, str) else None
                if problem is not None:
                    return ".".join(path) or "body", f"a field name with {problem}"
                children.append(((*path, str(key)), child))
            stack.extend(reversed(children))
        elif isinstance(node, list | tuple):
            stack.extend(reversed([((*path, str(index)), child) for index, child in enumerate(node)]))
    return None


def _any_unstorable(value: Any, skip: frozenset[str]) -> bool:
    """Whether any string in `value` (object keys included, `skip`'s top-level keys left out) is
    unstorable: first_unstorable's question without the paths, one pattern search per string."""
    strings: list[str] = []
    stack: list[Any] = [value]
    top = True
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            strings.append(node)
        elif isinstance(node, Mapping):
            for key, child in node.items():
                if top and key in skip:
                    continue
                if isinstance(key, str):
                    strings.append(key)
                stack.append(child)
        elif isinstance(node, list | tuple):
            stack.extend(node)
        top = False
    # One search over the joined strings: NUL and lone surrogates cannot arise at a seam.
    return _UNSTORABLE.search("".join(strings)) is not None
