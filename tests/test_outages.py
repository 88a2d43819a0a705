"""A volatile pool's emulated outages (leasehold_emulator.outages): seeded per node,
exponential up and down times of the pool's means."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import pytest
import yaml

from leasehold.api.resources import pool_problems, pool_spec, pool_volatility
from leasehold.core.model import Volatility
from leasehold_emulator.outages import Law, Outages

ROOT = Path(__file__).resolve().parents[1]
#: seed 002's law: 0.3 failures per 10-s epoch (33.3 s up on average), 120 s down
P002 = Volatility(failure_rate=0.3, recovery=120.0)


def draws(law: Law, node: str, n: int = 5) -> list[tuple[float, float]]:
    life = Outages(law, node)
    return [(life.up(), life.down()) for _ in range(n)]


def test_the_same_seed_and_node_give_the_same_outages():
    assert draws(Law(P002, 7), "spot-3") == draws(Law(P002, 7), "spot-3")


@pytest.mark.parametrize(("a", "b"), [
    pytest.param((7, "spot-3"), (8, "spot-3"), id="another-seed"),
    pytest.param((7, "spot-3"), (7, "spot-4"), id="another-node"),
])
def test_another_seed_or_node_gives_other_outages(a, b):
    assert draws(Law(P002, a[0]), a[1]) != draws(Law(P002, b[0]), b[1])


def test_times_up_and_down_have_the_law_s_means():
    life = Outages(Law(P002, 1), "spot-0")
    pairs = [(life.up(), life.down()) for _ in range(20_000)]
    up = statistics.fmean(u for u, _ in pairs)
    down = statistics.fmean(d for _, d in pairs)
    # exponential: the mean of 20,000 draws is within 3 % of the law's (7 sigma)
    assert up == pytest.approx(P002.mean_up, rel=0.05)
    assert down == pytest.approx(120.0, rel=0.05)
    # and its deviation equals its mean
    assert statistics.pstdev(u for u, _ in pairs) == pytest.approx(up, rel=0.05)


@pytest.mark.parametrize(("law", "up", "down"), [
    pytest.param(Volatility(failure_rate=0.0, recovery=120.0), math.inf, None, id="no-hazard"),
    pytest.param(Volatility(failure_rate=0.3, recovery=0.0), None, 0.0, id="back-at-once"),
])
def test_degenerate_laws(law, up, down):
    life = Outages(Law(law), "n-0")
    if up is not None:
        assert life.up() == up
    if down is not None:
        life.up()
        assert life.down() == down


def test_the_spot_example_is_a_volatile_pool_beside_a_firm_one():
    docs = list(yaml.safe_load_all((ROOT / "examples/emulator/spot.yaml").read_text()))
    laws = {d["metadata"]["name"]: pool_volatility(d) for d in docs}
    assert laws == {"spot": Volatility(failure_rate=0.3, recovery=120.0), "firm": None}
    assert all(pool_problems(d) == [] for d in docs)
    assert [pool_spec(d).nodes for d in docs] == [8, 2]
