"""The check every body passes before the emulated API server takes it: a body
refused exactly when a plain recursive reading of the limits refuses it (the
brute-force oracle), whatever shortcut the check takes."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from leasehold_emulator.apiserver.bodies import INT64, MAX_DEPTH, check
from leasehold_emulator.apiserver.errors import ApiError


def _valid(v: Any, depth: int = 0) -> bool:
    if depth > MAX_DEPTH:
        return False
    if isinstance(v, dict):
        return all(isinstance(k, str) and _valid(x, depth + 1) for k, x in v.items())
    if isinstance(v, list):
        return all(_valid(x, depth + 1) for x in v)
    if isinstance(v, bool) or v is None or isinstance(v, str):
        return True
    if isinstance(v, int):
        return INT64[0] <= v <= INT64[1]
    if isinstance(v, float):
        return math.isfinite(v)
    return False


_leaf = hs.one_of(hs.none(), hs.booleans(), hs.text(max_size=3),
                  hs.integers(-(2**64), 2**64), hs.floats(), hs.just({1, 2}))
_value = hs.recursive(_leaf, lambda inner: hs.one_of(
    hs.lists(inner, max_size=3),
    hs.dictionaries(hs.one_of(hs.text(max_size=3), hs.integers(0, 3)), inner, max_size=3)),
    max_leaves=12)


def _nested(depth: int) -> Any:
    v: Any = "leaf"
    for i in range(depth):
        v = {"a": v} if i % 2 else [v]
    return v


def _refused(v: Any) -> bool:
    try:
        check(v)
    except ApiError as exc:
        assert exc.code == 400
        return True
    return False


@settings(max_examples=400, deadline=None)
@given(_value)
def test_a_body_is_refused_exactly_when_the_limits_refuse_it(value: Any) -> None:
    assert _refused(value) == (not _valid(value))


@pytest.mark.parametrize("depth", [MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, MAX_DEPTH + 2],
                         ids=lambda d: f"depth-{d}")
def test_nesting_at_the_limit(depth: int) -> None:
    body = {"spec": _nested(depth)}
    assert _refused(body) == (not _valid(body))


@pytest.mark.parametrize(("body", "words"), [
    pytest.param({"spec": {"x": [1, float("nan")]}}, "/spec/x/1", id="nan"),
    pytest.param({"spec": {"n": 2**64}}, "/spec/n", id="int64"),
    pytest.param({"spec": {3: "x"}}, "/spec", id="key"),
])
def test_a_refusal_says_where(body: Any, words: str) -> None:
    with pytest.raises(ApiError, match=words):
        check(body)
