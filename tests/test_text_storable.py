"""first_unstorable: the first string no database can store, found wherever it hides in a body."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from atlaso_site.lib.text import first_unstorable, unstorable

# Mostly plain text, now and then a NUL or a lone surrogate.
texts = st.text(
    alphabet=st.one_of(st.characters(codec="utf-8"), st.sampled_from(["\x00", "\ud800", "\udfff"]))
)
bodies = st.recursive(
    st.none() | st.booleans() | st.integers() | texts,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(texts, children, max_size=4),
    max_leaves=20,
)


def _strings(value, *, top=True, skip=frozenset()):
    """Every string of a body, object keys included, in any order."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, child in value.items():
            if top and key in skip:
                continue
            yield key
            yield from _strings(child, top=False)
    elif isinstance(value, list):
        for child in value:
            yield from _strings(child, top=False)


@given(body=bodies, skipped=st.booleans())
def test_a_body_is_refused_exactly_when_one_of_its_strings_cannot_be_stored(body, skipped):
    skip = frozenset(body) if skipped and isinstance(body, dict) else frozenset()
    found = first_unstorable(body, skip=skip)
    bad = [text for text in _strings(body, skip=skip) if unstorable(text) is not None]
    assert (found is not None) == bool(bad)


def test_the_path_names_the_field_that_holds_it():
    body = {"content": "fine", "scope": {"env": "prod"}, "tags": ["ok", "bad\x00"]}
    assert first_unstorable(body) == (
        "tags.1",
        "a NUL character (\\u0000), which cannot be stored; remove it",
    )
    assert first_unstorable(body, skip=frozenset({"tags"})) is None
