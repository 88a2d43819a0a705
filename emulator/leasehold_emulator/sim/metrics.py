"""Run metrics with the papers' definitions (000 §7.1, DESIGN §3)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from statistics import fmean

from leasehold.core.model import LeaseType, Origin, Phase, PoolSpec
from leasehold.core.view import LeaseView

from .timeline import Segment


def _rate(part: int, whole: int) -> float:
    return part / whole if whole else 0.0


def _index(node: str) -> int:
    """A node's index in its pool, from its core name ``<pool>-<index>``."""
    return int(node.rsplit("-", 1)[1])


def run_metrics(leases: Iterable[LeaseView], pools: Iterable[PoolSpec]) -> dict[str, float | int]:
    """Rejection rates, utilization (000 eq. 11), preemptions, overhead, best-effort
    makespan (000 eq. 13) and mean wait (first start - submission, advance
    reservations left out), over one finished run; and the preemption and
    best-effort metrics of 003 and 004 (:func:`_preemption_metrics`,
    :func:`_best_effort_metrics`). 003's metrics over several pools are
    :func:`metrics_003` and :func:`pool_metrics` (experiments report them; `leasehold
    simulate`'s document keeps its keys).

    Utilization is the VM run time actually executed, weighted by the share of a node
    one VM takes (a whole node in exclusive pools, its cpu share of the node it runs
    on otherwise: in a pool of mixed sizes, of that node's size), over the pools'
    node-seconds from the first submission to the last end.
    """
    leases = list(leases)
    pool_list = list(pools)
    by_name = {p.name: p for p in pool_list}
    local = [s for s in leases if s.request.origin == Origin.LOCAL]
    external = [s for s in leases if s.request.origin == Origin.EXTERNAL]
    rejected = [s.phase == Phase.REJECTED for s in leases]
    span_from = min((s.request.submitted for s in leases), default=0.0)
    span_to = max((s.end for s in leases if s.end is not None), default=span_from)
    span = span_to - span_from
    used = sum(_node_seconds(s, by_name[s.pool]) for s in leases if s.pool is not None)
    capacity = sum(p.nodes for p in pool_list) * span
    best_effort = [
        s.end - s.request.earliest
        for s in leases
        if s.request.type.best_effort and s.phase == Phase.COMPLETED and s.end is not None
    ]
    # an advance reservation "waits" for its start by design: not counted
    waits = [
        s.first_start - s.request.submitted
        for s in leases
        if s.first_start is not None and s.request.type != LeaseType.ADVANCE_RESERVATION
    ]
    return {
        "localRejectionRate": _rate(sum(s.phase == Phase.REJECTED for s in local), len(local)),
        "externalRejectionRate": _rate(
            sum(s.phase == Phase.REJECTED for s in external), len(external)
        ),
        # admitted, then cancelled by a preemption: not a rejection in 000's sense, but
        # work the cluster dropped, which frees room for later external leases
        "externalCancellationRate": _rate(
            sum(s.phase == Phase.CANCELLED for s in external), len(external)
        ),
        "utilization": used / capacity if capacity else 0.0,
        "netUtilization": _net_utilization(leases, by_name),
        "preemptions": sum(s.preemptions for s in leases),
        "overheadSeconds": sum(s.overhead for s in leases),
        "makespanBestEffort": fmean(best_effort) if best_effort else 0.0,
        "meanWaitSeconds": fmean(waits) if waits else 0.0,
        "leases": len(leases),
        "completed": sum(s.phase == Phase.COMPLETED for s in leases),
        "rejected": sum(rejected),
        **_preemption_metrics(leases),
        **_best_effort_metrics(leases, span_from),
    }


def requeue_metrics(leases: Iterable[LeaseView]) -> dict[str, float | int]:
    """Without suspension (``config.suspension: none``, 004 NOVM-NOSR): how many
    times leases were cancelled and re-queued to start over (``requeues``), and the
    work those runs had done, lost (``lostWorkSeconds``, seconds at speed 1.0).
    `leasehold simulate`'s document has them only under ``none``."""
    leases = list(leases)
    return {"requeues": sum(s.requeues for s in leases),
            "lostWorkSeconds": sum(s.lost_work for s in leases)}


def metrics_003(leases: Iterable[LeaseView], pools: Iterable[PoolSpec],
                dispatched: Mapping[str, str] | None = None) -> dict[str, float]:
    """003's metrics that :func:`run_metrics` lacks: AWRT over the pools weighted by
    their size (``awrtPoolWeighted``, eq. 24: :func:`pool_weighted_awrt`) and the
    share of external migratable leases migrated (``migratedRate``,
    :func:`migrated_rate`). ``dispatched``: the pool each dispatched lease was sent to
    (the core's ``Dispatch`` actions), which places the leases rejected there
    (:func:`pool_of`)."""
    leases = list(leases)
    return {"awrtPoolWeighted": pool_weighted_awrt(leases, pools, dispatched),
            "migratedRate": migrated_rate(leases)}


def _node_seconds(s: LeaseView, pool: PoolSpec) -> float:
    """The node-seconds a lease's VMs ran on ``pool``: a whole node each in exclusive
    pools, its cpu share of the node it runs on otherwise (in a pool of mixed sizes,
    of that node's size)."""
    if s.ran == 0:
        return 0.0
    if pool.groups and s.nodes:
        sizes = pool.sizes()
        cpu = s.request.shape.cpu
        return sum(cpu / sizes[_index(node)].cpu for node in s.nodes) * s.ran
    share = 1.0 if pool.exclusive else s.request.shape.cpu / pool.cpu
    return s.request.vms * share * s.ran


def _speed(s: LeaseView, pools: Mapping[str, PoolSpec]) -> float:
    pool = pools.get(s.pool) if s.pool is not None else None
    return pool.speed if pool is not None else 1.0


def _net_utilization(leases: list[LeaseView], pools: Mapping[str, PoolSpec]) -> float:
    """003 eq. 21 (22): ``1 - Σ overhead / Σ v(l)·d(l)`` over the leases that were
    allocated (started at least once), as a fraction; overhead is the seconds
    recorded per preemption (000's ``h(L)``, which sums the VMs' suspension or
    migration times as 003's per-VM figures do). ``d(l)`` is the run time on the
    lease's pool, its duration over the pool's ``speed``: both terms in seconds of
    that pool."""
    allocated = [s for s in leases if s.first_start is not None]
    work = sum(s.request.vms * s.request.duration / _speed(s, pools) for s in allocated)
    return 1 - sum(s.overhead for s in leases) / work if work else 0.0


def _migratable(leases: Iterable[LeaseView]) -> list[LeaseView]:
    return [s for s in leases if s.request.origin == Origin.EXTERNAL
            and s.request.type == LeaseType.DEADLINE_MIGRATABLE]


def migrated_rate(leases: Iterable[LeaseView]) -> float:
    """The share of external ``DeadlineMigratable`` leases migrated at least once (003
    §5.1.1: "percentage of Migratable leases that get migrated"; 0 without any)."""
    migratable = _migratable(leases)
    return _rate(sum(s.migrations > 0 for s in migratable), len(migratable))


def _preemption_metrics(leases: list[LeaseView]) -> dict[str, float | int]:
    """Preempted VMs; 003 §5.3.4's respect for valuable users: migrations per
    external ``DeadlineMigratable`` lease (``migrationRate``; the share migrated is
    :func:`migrated_rate`) and the rejection rate of external
    ``DeadlineNonPreemptable`` ones."""
    migratable = _migratable(leases)
    non_preemptable = [s for s in leases if s.request.origin == Origin.EXTERNAL
                       and s.request.type == LeaseType.DEADLINE_NON_PREEMPTABLE]
    return {
        "preemptedVMs": sum(s.preemptions * s.request.vms for s in leases),
        "migrationRate": _rate(sum(s.migrations for s in migratable), len(migratable)),
        "nonPreemptableRejectionRate": _rate(
            sum(s.phase == Phase.REJECTED for s in non_preemptable), len(non_preemptable)),
    }


#: the metrics :func:`pool_metrics` gives per pool
POOL_METRICS = ("utilization", "netUtilization", "preemptedVMs", "awrtBestEffort",
                "migratedRate", "nonPreemptableRejectionRate")


def pool_of(s: LeaseView, dispatched: Mapping[str, str] | None = None) -> str | None:
    """The pool a lease counts on: the one it ran on last (or holds a slot on); else
    the one it was dispatched to (and rejected on); else the one it named; else none
    (an external lease rejected before any pool was chosen counts in the totals
    only)."""
    if s.pool is not None:
        return s.pool
    if dispatched is not None and s.name in dispatched:
        return dispatched[s.name]
    return s.request.pool


def _by_pool(leases: Iterable[LeaseView], pools: Iterable[PoolSpec],
             dispatched: Mapping[str, str] | None) -> dict[str, list[LeaseView]]:
    out: dict[str, list[LeaseView]] = {p.name: [] for p in pools}
    for s in leases:
        pool = pool_of(s, dispatched)
        if pool in out:
            out[pool].append(s)
    return out


def pool_metrics(leases: Iterable[LeaseView], pools: Iterable[PoolSpec],
                 dispatched: Mapping[str, str] | None = None) -> dict[str, dict[str, float]]:
    """003's metrics per pool (:data:`POOL_METRICS`), each over the leases that count
    on it (:func:`pool_of`): utilization (000 eq. 11: that pool's node-seconds used
    over its nodes and the whole run's span), 003 eq. 21 on that cluster, preempted
    VMs, AWRT (eq. 23; 0 when no best-effort lease completed there), the migrated
    share of migratable leases and the rejection rate of non-preemptable ones."""
    leases = list(leases)
    pools = list(pools)
    span_from = min((s.request.submitted for s in leases), default=0.0)
    span = max((s.end for s in leases if s.end is not None), default=span_from) - span_from
    by_pool = _by_pool(leases, pools, dispatched)
    out = {}
    for pool in pools:
        mine = by_pool[pool.name]
        used = sum(_node_seconds(s, pool) for s in mine if s.pool == pool.name)
        out[pool.name] = {
            "utilization": used / (pool.nodes * span) if span else 0.0,
            "netUtilization": _net_utilization(mine, {pool.name: pool}),
            **{k: float(v) for k, v in _preemption_metrics(mine).items()},
            "migratedRate": migrated_rate(mine),
            "awrtBestEffort": _best_effort_metrics(mine, span_from)["awrtBestEffort"],
        }
    return {name: {m: values[m] for m in POOL_METRICS} for name, values in out.items()}


def pool_size(pool: PoolSpec) -> float:
    """003's ``M_j``, the pool's processing elements: its cores (a one-core node is
    one)."""
    if pool.groups:
        grouped = sum(g.nodes for g in pool.groups)
        return (sum(g.nodes * g.cpu for g in pool.groups)
                + (pool.nodes - grouped) * pool.cpu) / 1000
    return pool.nodes * pool.cpu / 1000


def pool_weighted_awrt(leases: Iterable[LeaseView], pools: Iterable[PoolSpec],
                       dispatched: Mapping[str, str] | None = None) -> float:
    """003 eq. 24: ``Σ_j M_j·AWRT_j / Σ_j M_j`` with ``AWRT_j`` eq. 23 over the
    best-effort leases completed on pool ``j`` (:func:`pool_of`) and ``M_j`` its size
    (:func:`pool_size`). A pool where no best-effort lease completed has no
    ``AWRT_j`` and is left out of both sums (counting it as 0 would lower the mean
    for a pool that served no one); none anywhere: 0."""
    pools = list(pools)
    by_pool = _by_pool(leases, pools, dispatched)
    weighted = total = 0.0
    for pool in pools:
        done = [s for s in by_pool[pool.name]
                if s.request.type.best_effort and s.phase == Phase.COMPLETED
                and s.end is not None and s.first_start is not None]
        if done:
            weighted += pool_size(pool) * _best_effort_metrics(done, 0.0)["awrtBestEffort"]
            total += pool_size(pool)
    return weighted / total if total else 0.0


#: 004 §4.4 leaves the first 5% of best-effort requests out of waits and slowdowns
RAMP_UP = 0.05
#: bounded slowdown divides by at least this many seconds (004 §4.4, after [10])
SLOWDOWN_BOUND = 10.0


def _best_effort_metrics(leases: list[LeaseView], start: float) -> dict[str, float]:
    """Best-effort leases that completed:

    * AWRT, 003 eq. 23 on one cluster: ``Σ v·d·(c - b) / Σ v·d`` over VMs ``v``,
      duration ``d``, completion ``c`` and ready time ``b``;
    * all-best-effort, 004 §4.4: from the first submission to the last completion
      (seconds, not normalised to a reference run);
    * mean wait ``t_s - t_a`` and mean bounded slowdown ``(t_e - t_a) / max(t_u, 10 s)``
      with ``t_u`` the run time, 004 §4.4, leaving out the first 5% by submission.
    """
    done = sorted((s for s in leases if s.request.type.best_effort and s.phase == Phase.COMPLETED
                   and s.end is not None and s.first_start is not None),
                  key=lambda s: (s.request.submitted, s.sequence))
    weight = sum(s.request.vms * s.request.duration for s in done)
    awrt = sum(s.request.vms * s.request.duration * (s.end - s.request.earliest) for s in done)
    kept = done[int(len(done) * RAMP_UP):]
    return {
        "awrtBestEffort": awrt / weight if weight else 0.0,
        "allBestEffortSeconds": max((s.end for s in done), default=start) - start,
        "waitBestEffort": fmean(s.first_start - s.request.submitted for s in kept) if kept else 0.0,
        "boundedSlowdownBestEffort": fmean(
            (s.end - s.request.submitted) / max(s.request.actual_runtime, SLOWDOWN_BOUND)
            for s in kept
        ) if kept else 0.0,
    }


def over_time(leases: Iterable[LeaseView], timelines: Mapping[str, list[Segment]]
              ) -> dict[str, list[float]]:
    """A run as step series, for plots: at each instant where something changes
    (``time``), the VMs that hold nodes — running, or being suspended, resumed,
    migrated or stopped; a migrating VM counts on its source and on its target
    nodes while it holds both, as the slot table does — (``busyVMs``) and the leases
    waiting — submitted and not ended, holding nothing: queued, reserved for later,
    suspended, or between leaving and landing — (``waiting``). Each value holds
    until the next instant."""
    busy: dict[float, int] = defaultdict(int)
    waiting: dict[float, int] = defaultdict(int)
    for st in leases:
        segments = timelines.get(st.name, [])
        end = st.end if st.end is not None else max((b for _, _, b in segments),
                                                    default=st.request.submitted)
        waiting[st.request.submitted] += 1
        waiting[end] -= 1
        for _, a, b in segments:
            busy[a] += st.request.vms
            busy[b] -= st.request.vms
        for a, b in _union(segments):  # holding anything at all, it does not wait
            b = min(b, end)  # a cancelled lease has ended while it stops
            if b > a:
                waiting[a] -= 1
                waiting[b] += 1
    times = sorted(busy.keys() | waiting.keys())
    series: dict[str, list[float]] = {"time": times, "busyVMs": [], "waiting": []}
    vms = queue = 0
    for t in times:
        vms += busy.get(t, 0)
        queue += waiting.get(t, 0)
        series["busyVMs"].append(vms)
        series["waiting"].append(queue)
    return series


def _union(segments: Iterable[Segment]) -> list[tuple[float, float]]:
    """The spans that segments (overlapping ones too) cover, in order."""
    out: list[tuple[float, float]] = []
    for _, a, b in sorted(segments, key=lambda s: (s[1], s[2])):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out
