"""The canonical JSON text that ties a span's messages to their branch entries (issue 10: orjson, not the
stdlib, so an inline span is matched in a third less time): equal texts exactly for equal values."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from longhaul_daemon.jsoncodec import canonical

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),  # past 64 bits orjson refuses: the stdlib path
    st.text(alphabet=st.characters(blacklist_categories=())),  # lone surrogates: the stdlib path too
    st.sampled_from(["\ud800", "a\udfff", "é", ""]),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=12,
)


def _same(a: Any, b: Any) -> bool:
    """Equality as JSON sees it: True and 1 are different values there, though Python calls them equal."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


@settings(max_examples=400)
@given(_VALUES, _VALUES)
def test_equal_texts_exactly_for_equal_values(a: Any, b: Any) -> None:
    text_a, text_b = canonical(a), canonical(b)
    assert text_a is not None and text_b is not None
    assert (text_a == text_b) == _same(a, b)


@given(st.dictionaries(st.text(max_size=5), st.integers(), min_size=2, max_size=6))
def test_key_order_does_not_matter(value: dict[str, int]) -> None:
    assert canonical(dict(reversed(list(value.items())))) == canonical(value)


def test_what_cannot_be_written_as_json_has_no_text() -> None:
    assert canonical({1: "a", "1": "b"}) is None  # two keys that both read "1"
    assert canonical(object()) is None
