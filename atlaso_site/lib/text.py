"""Text that a database can store: no NUL, no lone surrogate. One rule wherever text enters.

PostgreSQL refuses NUL in text, and neither database can encode a lone surrogate (half of a
UTF-16 pair, such as the JSON escape "\\ud800" alone) as UTF-8; either would fail the write
with a driver error. So the API edge and the domain validation both ask this module first.

And text that shows nothing (`is_blank`): every field that must hold something refuses it.
What shows nothing is decided by Unicode's properties, not by a list of characters someone
thought of (`INVISIBLE_RANGES`).
"""

from __future__ import annotations

import re
import sys
import unicodedata
from array import array
from collections.abc import Iterable, Mapping
from typing import Any

import regex

_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")

# Characters that show nothing by their properties: default-ignorable code points (zero-width
# spaces and joiners, the soft hyphen, the combining grapheme joiner, variation selectors, tags,
# the Mongolian vowel separator…) and format characters (general category Cf).
_SHOW_NOTHING = regex.compile(r"[\p{Default_Ignorable_Code_Point}\p{Cf}]+")
# No property marks the blank braille pattern as showing nothing, nor the Hangul fillers as
# fillers: their names do, among the characters of these two scripts.
_NAMED_CANDIDATES = regex.compile(r"[\p{Script=Hangul}\p{Block=Braille_Patterns}]+")


def _every_character() -> str:
    """Every code point but the surrogates, in order, as one string."""
    codes = array("I", range(0xD800))
    codes.extend(range(0xE000, sys.maxunicode + 1))
    assert codes.itemsize == 4
    return codes.tobytes().decode(f"utf-32-{'le' if sys.byteorder == 'little' else 'be'}")


def _shows_nothing_by_name(character: str) -> bool:
    name = unicodedata.name(character, "")
    return ("HANGUL" in name and "FILLER" in name) or name == "BRAILLE PATTERN BLANK"


def _ranges(code_points: Iterable[int]) -> tuple[tuple[int, int], ...]:
    """Sorted code points as (first, last) runs."""
    runs: list[list[int]] = []
    for code in sorted(set(code_points)):
        if runs and runs[-1][1] == code - 1:
            runs[-1][1] = code
        else:
            runs.append([code, code])
    return tuple((first, last) for first, last in runs)


def _invisible_ranges() -> tuple[tuple[int, int], ...]:
    every = _every_character()
    found = {ord(c) for run in _SHOW_NOTHING.findall(every) for c in run}
    found |= {ord(c) for run in _NAMED_CANDIDATES.findall(every) for c in run if _shows_nothing_by_name(c)}
    # Whitespace is blank already, by str.isspace (none of these is, today).
    return _ranges(code for code in found if not chr(code).isspace())


#: The characters that show nothing and are not whitespace to str.isspace, as (first, last) code
#: point runs. Text made only of these and whitespace counts as empty (api.md); the client holds
#: a generated copy (`python -m atlaso_site.lib.text`), which a test holds equal over all of Unicode.
INVISIBLE_RANGES = _invisible_ranges()


def char_class(ranges: Iterable[tuple[int, int]]) -> str:
    """Runs of code points as the inside of a regex character class, read alike by Python and ECMA-262.

    ECMA-262 with the u flag, as JSON Schema reads patterns: `\\uXXXX` escapes in the BMP, the
    characters themselves beyond it (neither dialect spells an escape for those the other reads).
    """

    def one(code: int) -> str:
        return f"\\u{code:04x}" if code <= 0xFFFF else chr(code)

    return "".join(one(first) if first == last else f"{one(first)}-{one(last)}" for first, last in ranges)


#: INVISIBLE_RANGES as the inside of a character class (the OpenAPI patterns say the same).
INVISIBLE_CLASS = char_class(INVISIBLE_RANGES)
_INVISIBLE_RUN = re.compile(f"[{INVISIBLE_CLASS}]+")


def is_blank(text: str) -> bool:
    """Whether `text` shows nothing: it holds only whitespace and invisible characters."""
    return not _INVISIBLE_RUN.sub("", text).strip()


def client_table() -> str:
    """The client's copy of INVISIBLE_RANGES, as the source of clients/python/src/atlaso/_invisible.py."""
    rows = "".join(f"    (0x{first:04X}, 0x{last:04X}),\n" for first, last in INVISIBLE_RANGES)
    return (
        '"""The characters that show nothing and are not whitespace, as (first, last) code point runs.\n\n'
        "Text made only of these and whitespace is empty, as the server counts it.\n\n"
        "Generated from the server's rule (atlaso_site.lib.text, by Unicode's properties) with\n"
        "`python -m atlaso_site.lib.text > clients/python/src/atlaso/_invisible.py`; a test holds\n"
        'the two equal over all of Unicode. Not edited by hand.\n"""\n\n'
        "from __future__ import annotations\n\n"
        f"INVISIBLE_RANGES: tuple[tuple[int, int], ...] = (\n{rows})\n"
    )


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
    """The dotted path and problem of the first unstorable string in a decoded JSON value.

    A path as `scope.env` or `tags.1`, object keys included; None when every string can be stored.

    `skip` names top-level keys left to a later, finer check. Iterative: a deeply nested body
    must not exhaust the stack.
    """
    if not _any_unstorable(value, skip):
        return None  # the common case, asked without building a path for every string
    stack: list[tuple[tuple[str, ...], Any]] = [((), value)]
    while stack:
        path, node = stack.pop()
        fields = _fields(node, skip if not path else frozenset())
        problem = _own_problem(node, fields)
        if problem is not None:
            return ".".join(path) or "body", problem
        if isinstance(node, list | tuple):
            fields = list(enumerate(node))
        stack.extend(reversed([((*path, str(key)), child) for key, child in fields]))
    return None


def _fields(node: Any, skip: frozenset[str]) -> list[tuple[Any, Any]]:
    """An object's (key, value) pairs but those `skip` names; nothing for any other value."""
    if not isinstance(node, Mapping):
        return []
    return [(key, child) for key, child in node.items() if key not in skip]


def _own_problem(node: Any, fields: list[tuple[Any, Any]]) -> str | None:
    """What makes a string, or the first of an object's field names, unstorable."""
    if isinstance(node, str):
        return unstorable(node)
    for key, _ in fields:
        if isinstance(key, str) and (problem := unstorable(key)) is not None:
            return f"a field name with {problem}"
    return None


def _any_unstorable(value: Any, skip: frozenset[str]) -> bool:
    """Whether any string in `value` is unstorable: first_unstorable's question without the paths.

    Object keys included and `skip`'s top-level keys left out; one pattern search per string.
    """
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


if __name__ == "__main__":
    sys.stdout.write(client_table())
