"""Properties of image deployment on random workloads (hypothesis), checked against
brute-force oracles over what the core did:

* the repository link is never over-booked: no two transfers of a pool overlap
  (every pair compared; with piggybacking on or off);
* no VM starts before its image is on its node: each start of a lease with an image
  on a pool that deploys images comes after its own transfer ended, or its image is
  predeployed, or (reused) a transfer of that image to the pool ended before it and
  the core found it in the cache of each of the lease's nodes;
* a node's image cache never holds more than its capacity (summed at every step);
* and the core's own invariants (no node over-committed) hold throughout.
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

from builders import drive
from leasehold.core.model import ImagesSpec, Start
from strategies import workloads

IMAGES = ("centos", "debian", "alpine")


@st.composite
def image_workloads(draw):
    pools, requests, cfg, inputs = draw(workloads())
    out_pools = []
    for i, p in enumerate(pools):
        if i and not draw(st.booleans()):
            out_pools.append(p)  # a pool without images beside one with
            continue
        disk = draw(st.sampled_from([200, 400, 1000]))
        spec = ImagesSpec(
            bandwidth=draw(st.sampled_from([1.0, 5.0, 20.0])), disk=disk,
            cache=draw(st.sampled_from([None, disk / 4, float(disk)])),
            reuse=draw(st.booleans()), multicast=draw(st.booleans()),
            piggyback=draw(st.booleans()),
            predeployed=tuple(draw(st.lists(st.sampled_from(IMAGES), max_size=1))),
            predeployed_all=draw(st.booleans()) and draw(st.booleans()))
        out_pools.append(replace(p, images=spec))
    requests = [replace(r, image=draw(st.one_of(st.none(), st.sampled_from(IMAGES))),
                        image_mb=draw(st.sampled_from([10.0, 50.0, 100.0, 300.0])))
                for r in requests]
    return out_pools, requests, cfg, inputs


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(image_workloads())
def test_image_invariants_hold_on_random_workloads(workload):
    pools, requests, cfg, inputs = workload
    note(repr(workload))  # in full: the example's repr is cut short in the report
    specs = {p.name: p for p in pools}
    starts: list[Start] = []
    problems: list[str] = []

    def check(sched, now, actions):
        starts.extend(a for a in actions if isinstance(a, Start))
        problems.extend(f"t={now}: {v}" for v in sched.usage_violations())
        for name, depot in (sched.images.depots.items() if sched.images else ()):
            for i, cache in enumerate(depot.caches):
                held = sum(e.size for e in cache.entries.values())
                if held > specs[name].images.cache_mb:
                    problems.append(f"t={now}: {name}-{i} cache holds {held} MB")

    sched = drive(pools, requests, cfg, inputs, check=check)
    assert problems == []
    by_name = {r.name: r for r in requests}
    transfers = {r.name: sched.transfers(r.name) for r in requests}
    # the link: every pair of a pool's transfers, compared (a transfer several leases
    # ride on is in each one's list: it counts once)
    every = list({id(tr): (pool, tr) for trs in transfers.values() for pool, tr in trs
                  }.values())
    for i, (pa, a) in enumerate(every):
        for pb, b in every[i + 1:]:
            assert pa != pb or a.end <= b.start or b.end <= a.start, (a, b)
    # each start after its image
    for s in starts:
        r = by_name[s.lease]
        pool = specs[s.nodes[0].rsplit("-", 1)[0]]  # where it starts: its nodes' pool
        if r.image is None or pool.images is None:
            continue
        images = pool.images
        if images.predeployed_all or r.image in images.predeployed:
            continue
        own = [tr for p, tr in transfers[r.name] if p == pool.name]
        if any(tr.end <= s.time for tr in own):
            continue
        assert images.reuse, f"{r.name} started at {s.time} with no transfer and no reuse"
        assert any(p == pool.name and tr.image == r.image and tr.end <= s.time
                   for p, tr in every), f"{r.name}'s image never reached {pool.name}"
