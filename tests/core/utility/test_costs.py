"""002 §III-C's unsatisfactory costs: CUC, HUC, TUC, and SLA compliance."""

from __future__ import annotations

import pytest

from leasehold.core.utility.costs import (
    compliant,
    current_cost,
    historic_cost,
    total_cost,
    unsatisfactory_factor,
)


@pytest.mark.parametrize(("received", "epochs", "share", "want"), [
    pytest.param(0.0, 1, 10.0, 1.0, id="nothing-received"),
    pytest.param(5.0, 1, 10.0, 0.5, id="half"),
    pytest.param(30.0, 4, 10.0, 0.25, id="three-quarters-over-4-epochs"),
    pytest.param(10.0, 1, 10.0, 0.0, id="exactly-owed"),
    pytest.param(15.0, 1, 10.0, 0.0, id="more-than-owed-is-0"),
])
def test_unsatisfactory_factor(received, epochs, share, want):
    assert unsatisfactory_factor(received, epochs, share) == pytest.approx(want)


@pytest.mark.parametrize(("a", "factor", "want"), [
    pytest.param(2.0, 1.0, 1.0, id="a2-starved"),
    pytest.param(2.0, 0.0, 0.0, id="a2-satisfied"),
    pytest.param(2.0, 0.5, 2 ** 0.5 - 1, id="a2-half"),
    pytest.param(1.5, 1.0, 0.5, id="a1.5-starved"),
    pytest.param(1.5, 0.5, 1.5 ** 0.5 - 1, id="a1.5-half"),
])
def test_current_cost_is_a_to_the_l_minus_1(a, factor, want):
    assert current_cost(a, factor) == pytest.approx(want)


@pytest.mark.parametrize("a", [1.0, 0.5, 2.5])
def test_current_cost_refuses_a_outside_1_2(a):
    with pytest.raises(ValueError, match=r"\(1, 2\]"):
        current_cost(a, 0.5)


@pytest.mark.parametrize(("huc", "ok", "want"), [
    pytest.param(0, True, 0, id="compliant-floored-at-0"),
    pytest.param(3, True, 2, id="compliant-minus-1"),
    pytest.param(0, False, 1, id="incompliant-plus-1"),
    pytest.param(2, False, 3, id="incompliant-again"),
])
def test_historic_cost(huc, ok, want):
    assert historic_cost(huc, ok) == want


def test_total_cost_is_the_sum():
    assert total_cost(0.25, 3) == pytest.approx(3.25)


@pytest.mark.parametrize(("received", "rho", "share", "window", "want"), [
    pytest.param(80.0, 0.8, 1.0, 100.0, True, id="exactly-rho-B-T"),
    pytest.param(79.9, 0.8, 1.0, 100.0, False, id="just-short"),
    pytest.param(40.0, 0.8, 0.5, 100.0, True, id="half-share"),
    pytest.param(100.0, 1.0, 1.0, 100.0, True, id="rho-1-full"),
])
def test_compliant_when_V_at_least_rho_B_T(received, rho, share, window, want):
    assert compliant(received, rho, share, window) is want
