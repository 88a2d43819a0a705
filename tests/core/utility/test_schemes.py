"""Algorithm 2's schemes (rr, rrr, rrr-k): who gets the private nodes, in what order."""

from __future__ import annotations

import pytest

from leasehold.core.model import UTILITY_SCHEME_NAMES, utility_scheme
from leasehold.core.utility.schemes import Standing, order


def standing(name: str, tuc: float = 0.0, arrival: float = 0.0,
             private: bool = False) -> Standing:
    return Standing(name=name, tuc=tuc, arrival=arrival, private=private)


def test_the_declared_schemes():
    assert UTILITY_SCHEME_NAMES == ("rr", "rrr", "rrr-k")
    assert [utility_scheme(n).replicated for n in UTILITY_SCHEME_NAMES] == [False, False, True]


def test_an_unknown_scheme_names_the_choices():
    with pytest.raises(ValueError, match="rr, rrr, rrr-k"):
        utility_scheme("rrk")


@pytest.mark.parametrize(("scheme", "queue", "p", "want"), [
    # rr: the jobs on private nodes go to the end of the queue, the first p get them
    pytest.param("rr", [standing("a", private=True), standing("b"), standing("c")], 1,
                 ["b", "c", "a"], id="rr-private-to-the-end"),
    pytest.param("rr", [standing("a", private=True), standing("b", private=True),
                        standing("c"), standing("d")], 2,
                 ["c", "d", "a", "b"], id="rr-two-private-rotate"),
    pytest.param("rr", [standing("a", tuc=5), standing("b")], 1, ["a", "b"],
                 id="rr-ignores-tuc"),
    # rrr: by TUC, most dissatisfied first
    pytest.param("rrr", [standing("a", tuc=0.1), standing("b", tuc=2.0),
                         standing("c", tuc=1.0)], 1, ["b", "c", "a"], id="rrr-by-tuc"),
    # ties: a job on a private node keeps it, then the earlier arrival, then the name
    pytest.param("rrr", [standing("a", arrival=5), standing("b", arrival=1, private=False),
                         standing("c", arrival=9, private=True)], 1, ["c", "b", "a"],
                 id="rrr-tie-private-first"),
    pytest.param("rrr", [standing("z", arrival=2), standing("y", arrival=1)], 1,
                 ["y", "z"], id="rrr-tie-arrival"),
    pytest.param("rrr", [standing("z"), standing("y")], 1, ["y", "z"], id="rrr-tie-name"),
    pytest.param("rrr-k", [standing("a", tuc=0.1), standing("b", tuc=2.0)], 1, ["b", "a"],
                 id="rrr-k-ranks-as-rrr"),
])
def test_order(scheme, queue, p, want):
    assert list(order(utility_scheme(scheme), queue, p)) == want
