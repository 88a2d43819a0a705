"""Hypothesis strategies shared by the core's property tests."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import strategies as st

from builders import AR, BEC, BES, DM, DNP, config, req
from leasehold.core.model import Origin, OverheadParams, PoolSpec

#: an extended resource (issue 24): two per node, one per node
GPU = "nvidia.com/gpu"
GPUS_2, GPUS_1 = ((GPU, 2),), ((GPU, 1),)

POOLS = {
    "exclusive": [PoolSpec("p", 4, 1000, 1024, exclusive=True)],
    "shared": [PoolSpec("p", 3, 4000, 4096)],
    # multi-core nodes whose memory binds before their cpu for the larger VMs
    "shared-memory-bound": [PoolSpec("p", 2, 8000, 2048)],
    "two-pools": [PoolSpec("a", 2, 2000, 2048), PoolSpec("b", 3, 1000, 1024, exclusive=True)],
    # GPU nodes: leases asking for GPUs are drawn (some run, some wait for a GPU)
    "shared-gpu": [PoolSpec("p", 3, 4000, 4096, extended=GPUS_2)],
    # GPUs in one pool only, of one a node (an exclusive pool of GPU nodes beside it)
    "two-pools-gpu": [PoolSpec("a", 2, 2000, 2048, extended=GPUS_1),
                      PoolSpec("b", 3, 1000, 1024, exclusive=True, extended=GPUS_1)],
}


#: pool speeds (issue 21): half the pools as before, the others faster or slower, by
#: exact binary factors and by one that is not (1.5 rounds)
SPEEDS = st.sampled_from([1.0, 1.0, 1.0, 2.0, 0.5, 1.5])


def _pools(draw, over: OverheadParams | None = None) -> list[PoolSpec]:
    """One of :data:`POOLS`, each pool of a drawn speed (and of ``over``, if given)."""
    pools = POOLS[draw(st.sampled_from(sorted(POOLS)))]
    return [replace(p, speed=draw(SPEEDS), overhead=over or p.overhead) for p in pools]


def _seconds(draw, lo: int, hi: int) -> float:
    return draw(st.integers(lo * 1000, hi * 1000)) / 1000


@st.composite
def workloads(draw):
    pools = _pools(draw)
    n = draw(st.integers(1, 14))
    # one VM shape for every lease: a shared pool is then counted throughout (slots
    # bound to nodes as leases start); mixed shapes switch it to packing and back
    # GPUs asked for only where some pool has them (else every such lease is refused)
    gpus = [0, 0, 1, 2] if any(p.extended for p in pools) else [0]
    one = draw(st.one_of(st.none(), st.tuples(st.sampled_from([500, 1000, 2000]),
                                              st.sampled_from([128, 512, 1024]),
                                              st.sampled_from(gpus))))
    out = []
    for i in range(n):
        kind = draw(st.sampled_from([BES, BES, BEC, DM, DNP, AR, "local"]))
        at = _seconds(draw, 0, 300)
        vms = draw(st.integers(1, 5))
        duration = _seconds(draw, 1, 200)
        runtime = draw(st.one_of(st.none(), st.just(duration),
                                 st.integers(1000, int(duration * 1000)).map(lambda x: x / 1000)))
        cpu, memory, gpu = one or (draw(st.sampled_from([500, 1000, 2000])),
                                   draw(st.sampled_from([128, 512, 1024])),
                                   draw(st.sampled_from(gpus)))
        kw = dict(cpu=cpu, memory=memory, runtime=runtime, extended={GPU: gpu})
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
    return pools, out, config(mode, sbb), inputs


@st.composite
def preempting_workloads(draw):
    """Like :func:`workloads`, drawn to preempt: local leases and reservations that
    arrive on top of external ones, whose deadlines leave room to move them, on pools
    whose overheads (drawn, either model) last seconds rather than minutes, so that
    suspensions, migrations (to a later slot too) and stops happen."""
    over = OverheadParams(
        suspend_rate=draw(st.sampled_from([32.0, 256.0])),
        resume_rate=draw(st.sampled_from([32.0, 256.0])),
        bandwidth=draw(st.sampled_from([32.0, 512.0])),
        stop_seconds=draw(st.sampled_from([0.0, 3.0])),
        model=draw(st.sampled_from(["intergrid", "haizea"])),
    )
    pools = _pools(draw, over)
    one = draw(st.one_of(st.none(), st.sampled_from([128, 512])))  # one shape: counted
    out = []
    for i in range(draw(st.integers(1, 10))):
        kind = draw(st.sampled_from([BES, BEC, DM, DM, DNP, AR, "local", "local"]))
        at = _seconds(draw, 0, 200)
        vms = draw(st.integers(1, 4))
        duration = _seconds(draw, 20, 300)
        runtime = draw(st.one_of(st.none(), st.integers(10_000, int(duration * 1000))
                                 .map(lambda x: x / 1000)))
        kw = dict(cpu=1000, memory=one or draw(st.sampled_from([128, 512])), runtime=runtime)
        if kind == AR:
            out.append(req(f"l{i}", vms, duration, at, type=AR,
                           start=at + _seconds(draw, 0, 100), **kw))
        elif kind == "local":
            out.append(req(f"l{i}", vms, duration, at, type=DNP, origin=Origin.LOCAL,
                           deadline=at + duration + _seconds(draw, 0, 60), **kw))
        elif kind in (DM, DNP):
            out.append(req(f"l{i}", vms, duration, at, type=kind,
                           deadline=at + duration + _seconds(draw, 50, 1000), **kw))
        else:
            out.append(req(f"l{i}", vms, duration, at, type=kind, **kw))
    inputs = draw(st.lists(
        st.tuples(st.integers(0, 600_000).map(lambda x: x / 1000),
                  st.sampled_from(["cancel", "finished"]),
                  st.sampled_from([r.name for r in out])),
        max_size=3,
    ))
    cfg = config(draw(st.sampled_from(["conservative", "easy"])), draw(st.booleans()),
                 policy=draw(st.sampled_from(["moml", "mlip", "mov"])))
    return pools, out, cfg, inputs
