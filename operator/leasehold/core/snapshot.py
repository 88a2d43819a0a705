"""A core's state as plain data, and a core rebuilt from it.

The operator's journal keeps the latest snapshot and the inputs given since: a
restarted operator restores the one and replays the others, whatever happened to the
cluster meanwhile (what had happened is in the snapshot as facts: which leases ran,
where, how far, what they hold). :func:`restore` of :func:`snapshot` behaves exactly
as the core it was taken from, for any inputs that follow (tests/core/test_snapshot.py
checks it on random workloads against the core that went on).

Kept: the pools as they are now, every booking in its table's order (the order
preemption scans them in), the leases that still matter with every field that
decides their future (the pool a dispatch strategy sent them to too), the live
timers, the queues, the submission counter, and what the dispatch strategy has seen
and counted (its estimates' sums, round robin's count, RTDP's counts, the draws), and,
on a pool that deploys images (``images``), its image deployment: the transfers on
its repository link (a reservation's still movable under EDF, the leases riding on
each), those not yet in the caches, each node's cache (its images with their sizes,
reference counts and last use, the LRU order), the images planned leases rely on and
the references started leases hold (naming their bookings). Left out: what only
tells history — the decisions taken, the leases that have ended and hold nothing
(:meth:`Scheduler.forget` drops those from a live core too) and their transfers'
records — and what is counted again on reading (how many nodes cache an image).
A pool's VM model is in its spec; its VMs' boots and shutdowns are segments of the
bookings, and a re-queued lease's lost work is one of its fields.

Keys added since the format's first version are written only when they say something
(a pool's ``images``, a request's ``image``, ``imagesNow``): a core without images
writes what it wrote before them, and a snapshot from before reads as one of a core
without images.

Plain data only (dicts, lists, strings, numbers; ``inf`` as the string ``"inf"``; a
:class:`~.reason.Reason` as its parts, so that a restored core's reasons still name
their times and durations apart), read back with checks: :class:`SnapshotError` says
what is wrong and where.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, fields, replace
from heapq import heapify
from math import fsum, inf
from typing import Any

from .images import Images, Transfer
from .images.cache import Entry, NodeCache
from .images.depot import Depot, Held
from .lease import LeaseState, pace
from .model import (
    Extended,
    ImagesSpec,
    LeaseType,
    NodeGroup,
    Origin,
    OverheadParams,
    Phase,
    PoolSpec,
    PoolStatistics,
    Request,
    SchedulerConfig,
    Shape,
    VmModel,
    Volatility,
    extended_of,
)
from .reason import Reason
from .scheduler import Scheduler
from .slots import Booking

#: the snapshot format; a snapshot of another version is refused
VERSION = 1

Data = dict[str, Any]


class SnapshotError(ValueError):
    """A snapshot that cannot be read: what is wrong, and where."""


def _num(x: float | None) -> float | str | None:
    if x is None:
        return None
    return "inf" if x == inf else "-inf" if x == -inf else x


def _float(x: Any, where: str) -> float:
    if x == "inf":
        return inf
    if x == "-inf":
        return -inf
    if isinstance(x, bool) or not isinstance(x, int | float):
        raise SnapshotError(f"{where}: expected a number, got {x!r}")
    return float(x)


def _opt(x: Any, where: str) -> float | None:
    return None if x is None else _float(x, where)


def _bool(x: Any, where: str) -> bool:
    if not isinstance(x, bool):
        raise SnapshotError(f"{where}: expected true or false, got {x!r}")
    return x


def _name(x: Any, where: str, what: str = "an image name") -> str:
    if not isinstance(x, str):
        raise SnapshotError(f"{where}: expected {what}, got {x!r}")
    return x


def _list(x: Any, where: str, what: str) -> list[Any]:
    if not isinstance(x, list):
        raise SnapshotError(f"{where}: expected {what}, got {x!r}")
    return x


def _images_from(spec: Any, where: str) -> ImagesSpec:
    """A pool's ``images`` as :func:`pool_data` wrote them, read back."""
    if not isinstance(spec, dict):
        raise SnapshotError(f"{where}: expected the pool's images, got {spec!r}")
    try:
        predeployed = _list(spec.get("predeployed", []), f"{where}.predeployed",
                            "a list of image names")
        return ImagesSpec(
            bandwidth=_float(spec["bandwidth"], f"{where}.bandwidth"),
            disk=_float(spec["disk"], f"{where}.disk"),
            cache=_opt(spec.get("cache"), f"{where}.cache"),
            reuse=_bool(spec.get("reuse", True), f"{where}.reuse"),
            multicast=_bool(spec.get("multicast", True), f"{where}.multicast"),
            piggyback=_bool(spec.get("piggyback", True), f"{where}.piggyback"),
            predeployed=tuple(_name(x, f"{where}.predeployed[{i}]")
                              for i, x in enumerate(predeployed)),
            predeployed_all=_bool(spec.get("predeployed_all", False),
                                  f"{where}.predeployed_all"))
    except SnapshotError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise SnapshotError(f"{where}: {type(exc).__name__}: {exc}") from None


def pool_data(spec: PoolSpec) -> Data:
    """A pool's spec as plain data (``groups`` only for a pool of mixed sizes, ``speed``
    only when it is not 1.0, ``images`` and ``vm`` only when it has them)."""
    out = {"name": spec.name, "nodes": spec.nodes, "cpu": spec.cpu, "memory": spec.memory,
           "exclusive": spec.exclusive, "overhead": asdict(spec.overhead)}
    if spec.speed != 1.0:  # as snapshots were before pools had speeds
        out["speed"] = spec.speed
    if spec.groups:
        out["groups"] = [{"nodes": g.nodes, "cpu": g.cpu, "memory": g.memory,
                          **_extended_data(g.extended)} for g in spec.groups]
    out.update(_extended_data(spec.extended))
    if spec.statistics is not None:  # what dispatch was told of the pool
        out["statistics"] = asdict(spec.statistics)
    if spec.vm is not None:  # its VM model (as snapshots were before it, when none)
        out["vm"] = asdict(spec.vm)
    if spec.images is not None:  # its repository and disks (likewise)
        out["images"] = {**asdict(spec.images), "predeployed": list(spec.images.predeployed)}
    if spec.volatile is not None:  # its failure law (likewise)
        out["volatile"] = asdict(spec.volatile)
    return out


def _extended_data(extended: Extended) -> Data:
    """A shape's extended resources as plain data: an ``extended`` map, only when it
    has some (as snapshots were before them)."""
    return {"extended": dict(extended)} if extended else {}


def _extended_from(data: Any) -> Extended:
    """:func:`_extended_data` read back (none when the key is absent)."""
    return extended_of({str(k): int(v) for k, v in data.get("extended", {}).items()})


def pool_from(spec: Any, where: str) -> PoolSpec:
    """:func:`pool_data` read back (a snapshot without ``groups``, as those taken
    before pools of mixed sizes were, is of one size; without ``speed``, of speed 1.0)."""
    try:
        params = OverheadParams(**{f.name: spec["overhead"][f.name]
                                   for f in fields(OverheadParams)})
        groups = tuple(NodeGroup(int(g["nodes"]), int(g["cpu"]), int(g["memory"]),
                                 _extended_from(g))
                       for g in spec.get("groups", ()))
        pool = PoolSpec(str(spec["name"]), int(spec["nodes"]), int(spec["cpu"]),
                        int(spec["memory"]), bool(spec["exclusive"]), params, groups,
                        _float(spec.get("speed", 1.0), f"{where}.speed"),
                        extended=_extended_from(spec))
        given = spec.get("statistics")
        if given is not None:
            pool = replace(pool, statistics=PoolStatistics(
                **{f.name: given[f.name] for f in fields(PoolStatistics)}))
        vm = spec.get("vm")
        if vm is not None:
            pool = replace(pool, vm=VmModel(**{f.name: _float(vm[f.name], f"{where}.vm")
                                               for f in fields(VmModel)}))
        images = spec.get("images")
        if images is not None:
            pool = replace(pool, images=_images_from(images, f"{where}.images"))
        law = spec.get("volatile")
        if law is not None:
            pool = replace(pool, volatile=Volatility(
                **{f.name: _float(law[f.name], f"{where}.volatile")
                   for f in fields(Volatility)}))
    except SnapshotError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise SnapshotError(f"{where}: {type(exc).__name__}: {exc}") from None
    if pool.nodes < 0:
        raise SnapshotError(f"{where}.nodes: must be >= 0")
    return pool


def request_from(r: Any, where: str) -> Request:
    """:func:`request_data` read back."""
    try:
        return Request(name=str(r["name"]), type=LeaseType(r["type"]), vms=int(r["vms"]),
                       shape=Shape(int(r["cpu"]), int(r["memory"]), _extended_from(r)),
                       duration=_float(r["duration"], f"{where}.duration"),
                       submitted=_float(r["submitted"], f"{where}.submitted"),
                       origin=Origin(r["origin"]), ready=_opt(r["ready"], where),
                       deadline=_opt(r["deadline"], where), start=_opt(r["start"], where),
                       runtime=_opt(r["runtime"], where), pool=r["pool"],
                       image_mb=float(r["imageMB"]),
                       image=None if r.get("image") is None
                       else _name(r["image"], f"{where}.image"),
                       replicas=int(r.get("replicas", 1)))
    except SnapshotError:
        raise
    except (KeyError, TypeError, ValueError) as exc:
        raise SnapshotError(f"{where}: {type(exc).__name__}: {exc}") from None


def request_data(r: Request) -> Data:
    """A request as plain data."""
    return {"name": r.name, "type": r.type.value, "vms": r.vms, "cpu": r.shape.cpu,
            "memory": r.shape.memory, **_extended_data(r.shape.extended),
            "duration": _num(r.duration),
            "submitted": _num(r.submitted), "origin": r.origin.value, "ready": _num(r.ready),
            "deadline": _num(r.deadline), "start": _num(r.start), "runtime": _num(r.runtime),
            "pool": r.pool, "imageMB": r.image_mb,
            # its image (as snapshots were before leases named one, when none)
            **({"image": r.image} if r.image is not None else {}),
            # its copies (as snapshots were before replicas, when one)
            **({"replicas": r.replicas} if r.replicas != 1 else {})}


def _booking(b: Booking) -> Data:
    return {"lease": b.lease, "start": _num(b.start), "end": _num(b.end), "vms": b.vms,
            "cpu": b.shape.cpu, "memory": b.shape.memory, **_extended_data(b.shape.extended),
            "nodes": None if b.nodes is None else list(b.nodes),
            "segments": [[k, _num(s), _num(e)] for k, s, e in b.segments]}


def _depot_data(depot: Depot, ref: Callable[[Any], list[Any] | None], kept: set[str]
                ) -> Data:
    """A pool's image deployment as plain data. A transfer is kept once (several
    leases may rely on it, and it may be on the link, on its way to the caches and in
    their logs at once), the others name it by its index; the bookings of started
    leases' references, as the table's bookings are named. Left out: what can be
    counted again (how many nodes cache each image, how many leases rely on it), and
    the logs of the leases left out (history)."""
    index: dict[int, int] = {}
    out_transfers: list[Data] = []

    def at(tr: Transfer) -> int:
        i = index.get(id(tr))
        if i is None:
            i = index[id(tr)] = len(out_transfers)
            out_transfers.append({
                "lease": tr.lease, "image": tr.image, "size": _num(tr.size),
                "start": _num(tr.start), "end": _num(tr.end),
                "deadline": _num(tr.deadline), "riders": list(tr.riders)})
        return i
    link = [at(t) for t in depot.link.transfers]
    leases = [[n, at(t)] for n, t in depot.transfers.items()]
    undelivered = [at(t) for t in depot.undelivered]
    on_the_way = [[image, [at(t) for t in trs]] for image, trs in depot.on_the_way.items()]
    # the logs of the leases kept, and of any lease whose transfer, reliance or
    # references are kept (:meth:`Depot.given_back` takes a transfer given back out
    # of its lease's log: the log must be there)
    needed = kept | set(depot.transfers) | set(depot.held) | set(depot.relying)
    log = [[n, [at(t) for t in trs]] for n, trs in depot.log.items() if n in needed]
    return {
        "transfers": out_transfers, "link": link, "leases": leases,
        "undelivered": undelivered, "onTheWay": on_the_way, "log": log,
        "relying": [[n, image] for n, image in depot.relying.items()],
        "held": [[n, h.image, ref(h.booking), list(h.nodes)] for n, h in depot.held.items()],
        "caches": [{"capacity": _num(c.capacity),
                    "entries": [[image, _num(e.size), e.refs, _num(e.used)]
                                for image, e in c.entries.items()]}
                   for c in depot.caches],
        "violations": list(depot.violations),
    }


def _load_depot(depot: Depot, data: Any, where: str,
                booked: Callable[[Any, str], object | None]) -> None:
    """:func:`_depot_data` read back into a fresh depot."""
    if not isinstance(data, dict):
        raise SnapshotError(f"{where}: expected the pool's image state, got {data!r}")
    out: list[Transfer] = []
    for i, t in enumerate(_list(data["transfers"], f"{where}.transfers", "a list")):
        w = f"{where}.transfers[{i}]"
        if not isinstance(t, dict):
            raise SnapshotError(f"{w}: expected a transfer, got {t!r}")
        out.append(Transfer(
            _name(t["lease"], f"{w}.lease", "a lease name"), _name(t["image"], f"{w}.image"),
            _float(t["size"], f"{w}.size"), _float(t["start"], f"{w}.start"),
            _float(t["end"], f"{w}.end"), _opt(t["deadline"], f"{w}.deadline"),
            [_name(x, f"{w}.riders", "a lease name")
             for x in _list(t["riders"], f"{w}.riders", "a list of lease names")]))

    def transfer(x: Any, w: str) -> Transfer:
        if isinstance(x, bool) or not isinstance(x, int) or not 0 <= x < len(out):
            raise SnapshotError(f"{w}: no transfer {x!r}")
        return out[x]

    def several(xs: Any, w: str) -> list[Transfer]:
        return [transfer(x, f"{w}[{i}]")
                for i, x in enumerate(_list(xs, w, "a list of transfers"))]
    for tr in several(data["link"], f"{where}.link"):
        depot.link.book(tr)
    depot.transfers = {_name(n, f"{where}.leases[{i}]", "a lease name"):
                       transfer(x, f"{where}.leases[{i}]")
                       for i, (n, x) in enumerate(data["leases"])}
    depot.undelivered = several(data["undelivered"], f"{where}.undelivered")
    depot.on_the_way = {_name(image, f"{where}.onTheWay[{i}]"):
                        several(trs, f"{where}.onTheWay[{i}]")
                        for i, (image, trs) in enumerate(data["onTheWay"])}
    depot.log = {_name(n, f"{where}.log[{i}]", "a lease name"): several(trs, f"{where}.log[{i}]")
                 for i, (n, trs) in enumerate(data["log"])}
    for i, (n, image) in enumerate(data["relying"]):
        w = f"{where}.relying[{i}]"
        image = depot.relying[_name(n, w, "a lease name")] = _name(image, w)
        depot.planned[image] = depot.planned.get(image, 0) + 1
    caches = _list(data["caches"], f"{where}.caches", "a list of caches")
    if len(caches) != len(depot.caches):
        raise SnapshotError(f"{where}.caches: {len(caches)} caches for the pool's"
                            f" {len(depot.caches)} nodes")
    for i, c in enumerate(caches):
        w = f"{where}.caches[{i}]"
        cache = depot.caches[i] = NodeCache(_float(c["capacity"], f"{w}.capacity"))
        for j, (image, size, refs, used) in enumerate(c["entries"]):
            e = f"{w}.entries[{j}]"
            if isinstance(refs, bool) or not isinstance(refs, int) or refs < 0:
                raise SnapshotError(f"{e}: expected a count of references, got {refs!r}")
            if _name(image, e) in cache.entries:
                raise SnapshotError(f"{e}: {image!r} is cached there already")
            cache.entries[image] = Entry(_float(size, e), refs, _float(used, e))
            depot.copies[image] = depot.copies.get(image, 0) + 1
        # summed as :meth:`NodeCache.add` sums it
        cache.used = fsum(x.size for x in cache.entries.values())
    for i, (n, image, ref, nodes) in enumerate(data["held"]):
        w = f"{where}.held[{i}]"
        held = [int(x) for x in _list(nodes, f"{w}.nodes", "a list of node indices")]
        if any(not 0 <= x < len(depot.caches) for x in held):
            raise SnapshotError(f"{w}.nodes: outside the pool's {len(depot.caches)} nodes")
        # a booking no longer in the table (the lease's nodes were lost) is matched
        # by no booking given back: a new object, as no booking is it
        booking = object() if ref is None else booked(ref, w)
        depot.held[_name(n, w, "a lease name")] = Held(_name(image, w), booking, tuple(held))
    depot.violations = [str(v) for v in _list(data["violations"], f"{where}.violations",
                                               "a list")]


#: the lease fields kept as they are (numbers, strings, booleans, None)
_PLAIN = ("seq", "phase", "pool", "remaining", "actual_left", "running_since", "resuming",
          "ran", "first_start", "end", "landing", "preemptions", "preempted_by",
          "suspensions", "migrations", "overhead", "reason", "version")


def _ended(s: Scheduler, st: LeaseState, live: set[str]) -> bool:
    """Over, holding nothing, with no timer to come: nothing it left can matter."""
    return st.phase.terminal and st.booking is None and st.departure is None \
        and st.name not in live


def snapshot(s: Scheduler) -> Data:
    """The core's state between two steps (no input waiting)."""
    if s.pending_inputs():
        raise ValueError("a snapshot is taken between steps: inputs are waiting")
    if s.holding():
        raise ValueError(f"a snapshot is taken once a hold is over (at t={s.hold_until})")
    lc, planner = s.lifecycle, s.planner
    leases = lc.leases
    heap = [e for e in lc.timers.heap if leases[e[4]].version == e[3]]
    live = {e[4] for e in heap}
    refs: dict[int, tuple[str, int]] = {}
    pools: list[Data] = []
    for name, table in s.slots.pools.items():
        kept = list(table.bookings)
        for i, b in enumerate(kept):
            refs[id(b)] = (name, i)
        pools.append({"spec": pool_data(table.spec), "bookings": [_booking(b) for b in kept]})

    def ref(b: Booking | None) -> list[Any] | None:
        return None if b is None else list(refs[id(b)])
    out_leases = []
    for st in leases.values():
        if _ended(s, st, live):
            continue
        d: Data = {"request": request_data(st.req)}
        for f in _PLAIN:
            v = getattr(st, f)
            d[f] = v.value if isinstance(v, Phase) else _num(v) if isinstance(v, float) else v
        if isinstance(st.reason, Reason):  # its times and durations kept apart
            d["reason"] = st.reason.data()
        d["nodes"] = list(st.nodes)
        d["booking"], d["departure"] = ref(st.booking), ref(st.departure)
        d["checkpoint"] = None if st.checkpoint is None else list(st.checkpoint)
        if st.dispatched is not None:
            d["dispatched"] = st.dispatched
        if st.requeues:  # no suspension (as snapshots were before it, when none)
            d["requeues"], d["lostWork"] = st.requeues, st.lost_work
        if st.losses:  # its nodes lost under it (as snapshots were before, when none)
            d["losses"], d["lostToFailures"] = st.losses, _num(st.lost_to_failures)
        if st.replicas_lost:  # copies lost, running on the others (none before replicas)
            d["replicasLost"] = st.replicas_lost
            d["copies"] = None if st.copies is None else list(st.copies)
        out_leases.append(d)
    named = {d["request"]["name"] for d in out_leases}
    if s.images is not None:
        # a started lease's references name its booking; one no longer in the table
        # (its nodes were lost) is named by none
        def held(b: Any) -> list[Any] | None:
            found = refs.get(id(b))
            return None if found is None else list(found)
        for p in pools:
            depot = s.images.depots.get(p["spec"]["name"])
            if depot is not None:
                p["images"] = _depot_data(depot, held, named)
    return {
        "version": VERSION, "now": _num(s.now), "sequence": lc.seq,
        "pools": pools, "leases": out_leases,
        "timers": [[_num(t), k, seq, v, n] for t, k, seq, v, n in sorted(heap)],
        "reserved": list(lc.reserved), "queue": [st.name for st in planner.queue],
        "head": planner.head, "parked": [st.name for st in planner.parked
                                         if not st.phase.terminal],
        "dead": sorted(s.dead),
        # what the transitions since the last plan did, for the next plan to act on (a
        # reservation given up at the snapshot's instant lets others move earlier then)
        "changes": [lc.changes.released, lc.changes.freed],
        # what the dispatch strategy has seen and counted (none kept by ``earliest``)
        **({"dispatch": s.dispatcher.data()} if s.dispatcher.active else {}),
        # the last instant image transfers were planned from (as snapshots were
        # before images, when no pool ever deployed them)
        **({"imagesNow": _num(s.images.now)} if s.images is not None else {}),
    }


def restore(data: Data, config: SchedulerConfig) -> Scheduler:
    """The core :func:`snapshot` described, with ``config``. Raises
    :class:`SnapshotError` for data it cannot trust."""
    try:
        return _restore(data, config)
    except SnapshotError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise SnapshotError(f"not a snapshot of this version: {type(exc).__name__}: {exc}"
                            ) from None


def _restore(data: Data, config: SchedulerConfig) -> Scheduler:
    if not isinstance(data, dict) or data.get("version") != VERSION:
        raise SnapshotError(f"version: expected {VERSION}, got "
                            f"{data.get('version') if isinstance(data, dict) else data!r}")
    specs = [pool_from(p["spec"], f"pools[{i}].spec") for i, p in enumerate(data["pools"])]
    s = Scheduler(specs, config)
    lc, planner = s.lifecycle, s.planner
    tables: dict[str, list[Booking]] = {}
    for i, p in enumerate(data["pools"]):
        name = specs[i].name
        kept = tables[name] = []
        table = s.slots.pools[name]
        for j, b in enumerate(p["bookings"]):
            where = f"pools[{i}].bookings[{j}]"
            nodes = None if b["nodes"] is None else tuple(int(x) for x in b["nodes"])
            if nodes is not None and any(not 0 <= x < specs[i].nodes for x in nodes):
                raise SnapshotError(f"{where}.nodes: outside the pool's {specs[i].nodes} nodes")
            booking = Booking(str(b["lease"]), name, _float(b["start"], f"{where}.start"),
                              _float(b["end"], f"{where}.end"), int(b["vms"]),
                              Shape(int(b["cpu"]), int(b["memory"]), _extended_from(b)), nodes,
                              tuple((str(k), _float(a, where), _float(e, where))
                                    for k, a, e in b["segments"]))
            table.book(booking)
            kept.append(booking)

    def booked(ref: Any, where: str) -> Booking | None:
        if ref is None:
            return None
        pool, i = ref
        try:
            found: Booking = tables[pool][i]
            return found
        except (KeyError, IndexError, TypeError):
            raise SnapshotError(f"{where}: no booking {ref!r}") from None
    for i, p in enumerate(data["pools"]):
        _restore_images(s, specs[i], p, f"pools[{i}].images", booked)
    if "imagesNow" in data:
        if s.images is None:  # a pool deployed images once: as the core it was taken from
            s.images = s.lifecycle.images = s.placement.images = Images(())
        s.images.now = _float(data["imagesNow"], "imagesNow")
    for i, d in enumerate(data["leases"]):
        where = f"leases[{i}]"
        req = request_from(d["request"], f"{where}.request")
        st = LeaseState(req, int(d["seq"]))
        for f in _PLAIN:
            v = d[f]
            if f == "phase":
                v = Phase(v)
            elif f in ("remaining", "actual_left", "ran", "overhead"):
                v = _float(v, f"{where}.{f}")
            elif f in ("running_since", "first_start", "end", "landing"):
                v = _opt(v, f"{where}.{f}")
            elif f == "reason" and isinstance(v, list):
                try:
                    v = Reason.from_data(v)
                except ValueError as exc:
                    raise SnapshotError(f"{where}.reason: {exc}") from None
            setattr(st, f, v)
        spec = s.pools.get(st.pool) if st.pool is not None else None
        if spec is not None:  # its pace is its pool's: not kept, read off the pool
            st.pace = pace(req, spec)
        st.nodes = tuple(str(n) for n in d["nodes"])
        st.booking = booked(d["booking"], f"{where}.booking")
        st.departure = booked(d["departure"], f"{where}.departure")
        cp = d["checkpoint"]
        st.checkpoint = None if cp is None else (_float(cp[0], where), _float(cp[1], where))
        dispatched = d.get("dispatched")
        st.dispatched = None if dispatched is None else str(dispatched)
        st.requeues = int(d.get("requeues", 0))
        st.lost_work = _float(d.get("lostWork", 0.0), f"{where}.lostWork")
        st.losses = int(d.get("losses", 0))
        st.lost_to_failures = _float(d.get("lostToFailures", 0.0), f"{where}.lostToFailures")
        st.replicas_lost = int(d.get("replicasLost", 0))
        copies = d.get("copies")
        st.copies = None if copies is None else tuple(int(c) for c in copies)
        if req.name in lc.leases:
            raise SnapshotError(f"{where}: a second lease named {req.name!r}")
        lc.leases[req.name] = st
    for i, (t, k, seq, v, n) in enumerate(data["timers"]):
        if n not in lc.leases:
            raise SnapshotError(f"timers[{i}]: no lease {n!r}")
        lc.timers.heap.append((_float(t, f"timers[{i}]"), int(k), int(seq), int(v), str(n)))
    heapify(lc.timers.heap)
    lc.reserved.update(dict.fromkeys(_known(lc.leases, data["reserved"], "reserved")))
    planner.restore_queue(lc.leases[n] for n in _known(lc.leases, data["queue"], "queue"))
    planner.parked.extend(lc.leases[n] for n in _known(lc.leases, data["parked"], "parked"))
    planner.head = data["head"]
    s.dead = {str(n) for n in data["dead"]}
    # a snapshot from before it was kept has none pending
    changes = data.get("changes", [False, False])
    if not (isinstance(changes, list) and len(changes) == 2
            and all(isinstance(x, bool) for x in changes)):
        raise SnapshotError(f"changes: expected [released, freed], two booleans, got"
                            f" {changes!r}")
    lc.changes.released, lc.changes.freed = changes
    if "dispatch" in data:
        try:
            s.dispatcher.load(data["dispatch"])
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            raise SnapshotError(f"dispatch: {type(exc).__name__}: {exc}") from None
    lc.seq = int(data["sequence"])
    s.now = _float(data["now"], "now")
    return s


def _restore_images(s: Scheduler, spec: PoolSpec, pool: Data, where: str,
                    booked: Callable[[Any, str], object | None]) -> None:
    """A pool's image deployment: none without ``images`` (snapshots from before
    images have none), all of it with them."""
    if spec.images is None:
        if "images" in pool:
            raise SnapshotError(f"{where}: the pool deploys no images")
        return
    if "images" not in pool:
        raise SnapshotError(f"{where}: missing: the pool deploys images")
    assert s.images is not None  # a pool deploys images: the core has its depots
    depot = s.images.depots[spec.name]
    try:
        _load_depot(depot, pool["images"], where, booked)
    except SnapshotError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:
        raise SnapshotError(f"{where}: {type(exc).__name__}: {exc}") from None


def _known(leases: dict[str, LeaseState], names: list[Any], where: str) -> list[str]:
    for i, n in enumerate(names):
        if n not in leases:
            raise SnapshotError(f"{where}[{i}]: no lease {n!r}")
    return [str(n) for n in names]
