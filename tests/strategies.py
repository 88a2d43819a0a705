"""Hypothesis strategies shared by the core's property tests."""

from __future__ import annotations

from hypothesis import strategies as st

from builders import AR, BEC, BES, DM, DNP, config, req
from leasehold.core.model import Origin, PoolSpec

POOLS = {
    "exclusive": [PoolSpec("p", 4, 1000, 1024, exclusive=True)],
    "shared": [PoolSpec("p", 3, 4000, 4096)],
    "two-pools": [PoolSpec("a", 2, 2000, 2048), PoolSpec("b", 3, 1000, 1024, exclusive=True)],
}


def _seconds(draw, lo: int, hi: int) -> float:
    return draw(st.integers(lo * 1000, hi * 1000)) / 1000


@st.composite
def workloads(draw):
    pools = draw(st.sampled_from(sorted(POOLS)))
    n = draw(st.integers(1, 14))
    out = []
    for i in range(n):
        kind = draw(st.sampled_from([BES, BES, BEC, DM, DNP, AR, "local"]))
        at = _seconds(draw, 0, 300)
        vms = draw(st.integers(1, 5))
        duration = _seconds(draw, 1, 200)
        runtime = draw(st.one_of(st.none(), st.just(duration),
                                 st.integers(1000, int(duration * 1000)).map(lambda x: x / 1000)))
        cpu = draw(st.sampled_from([500, 1000, 2000]))
        memory = draw(st.sampled_from([128, 512, 1024]))
        kw = dict(cpu=cpu, memory=memory, runtime=runtime)
        if kind == AR:
            out.append(req(f"l{i}", vms, duration, at, type=AR,
                           start=at + _seconds(draw, 0, 200), **kw))
        elif kind == "local":
            out.append(req(f"l{i}", vms, duration, at, type=DNP, origin=Origin.LOCAL,
                           deadline=at + duration + _seconds(draw, 0, 100), **kw))
        elif kind in (DM, DNP):
            out.append(req(f"l{i}", vms, duration, at, type=kind,
                           deadline=at + duration + _seconds(draw, 0, 400), **kw))
        else:
            out.append(req(f"l{i}", vms, duration, at, type=kind, **kw))
    inputs = draw(st.lists(
        st.tuples(st.integers(0, 800_000).map(lambda x: x / 1000),
                  st.sampled_from(["cancel", "finished"]),
                  st.sampled_from([r.name for r in out])),
        max_size=4,
    ))
    mode = draw(st.sampled_from(["conservative", "easy", "none"]))
    sbb = draw(st.booleans())
    return POOLS[pools], out, config(mode, sbb), inputs
