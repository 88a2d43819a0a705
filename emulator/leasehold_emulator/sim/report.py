"""The output of `leasehold simulate`: the JSON object of DESIGN §8, and a table."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from leasehold.api.durations import format_duration
from leasehold.core.model import Phase, PoolSpec
from leasehold.core.preemption import Decision
from leasehold.core.reason import Reason
from leasehold.core.view import LeaseView

from .engine import SimResult
from .metrics import over_time, requeue_metrics, run_metrics
from .timeline import lease_timelines, render_gantt
from .volatile import PoolLog


def _num(x: float | None) -> float | int | None:
    """Integral seconds print as integers, others rounded to milliseconds."""
    if x is None:
        return None
    r = round(x, 3)
    return int(r) if r == int(r) else r


def lease_record(st: LeaseView) -> dict[str, Any]:
    return {
        "name": st.name,
        "origin": st.request.origin.value,
        "type": st.request.type.value,
        "phase": st.phase.value,
        "submitted": _num(st.request.submitted),
        "start": _num(st.first_start),
        "end": _num(st.end),
        "nodes": list(st.nodes),
        "preemptions": st.preemptions,
        "suspensions": st.suspensions,
        "migrations": st.migrations,
        "overheadSeconds": round(st.overhead, 3),
        "reason": st.reason,
        # per-lease metrics: from submission to the first start, and from the
        # earliest allowed start (ready time, reservation start) to the end
        "waitSeconds": _num(None if st.first_start is None
                            else st.first_start - st.request.submitted),
        "responseSeconds": _num(None if st.end is None or st.phase != Phase.COMPLETED
                                else st.end - st.request.earliest),
        # where it ran (or runs, or is reserved), else where dispatch sent it; last:
        # the keys before it keep their places
        "pool": st.pool if st.pool is not None else st.dispatched,
    }


def decision_record(d: Decision) -> dict[str, Any]:
    return {
        "time": _num(d.time),
        "preemptor": d.preemptor,
        "policy": d.policy,
        "candidateSets": d.candidate_sets,
        "exact": d.exact,
        "chosen": list(d.chosen),
        "overheadSeconds": round(d.overhead_seconds, 3),
        "vacateSeconds": round(d.vacate_seconds, 3),
    }


def result_document(result: SimResult, pools: Sequence[PoolSpec]) -> dict[str, Any]:
    sched = result.scheduler
    leases = sched.leases()  # in submission order
    # without suspension, the re-queues and the work they lost (only then: the
    # documents of runs with suspension keep their keys)
    requeues = sched.config.suspension == "none"
    found = run_metrics(leases, pools)
    if requeues:
        found.update(requeue_metrics(leases))
    metrics = {k: (round(v, 6) if isinstance(v, float) else v) for k, v in found.items()}
    # with volatile pools, their failures and what leases lost to them (only then:
    # the documents of runs without keep their keys)
    volatile = any(p.volatile is not None for p in pools)
    if volatile:
        metrics.update(failure_metrics(leases, result.failures))
    # with leases that have replicas, the copies they lost and ran on without (only
    # then: the documents of runs without keep their keys)
    replicated = any(s.request.replicas > 1 for s in leases)
    if replicated:
        metrics["replicasLost"] = sum(s.replicas_lost for s in leases)
    timelines = lease_timelines(result.actions)
    records = []
    for st in leases:
        record = lease_record(st)
        if requeues:
            record["requeues"] = st.requeues
            record["lostWorkSeconds"] = _num(st.lost_work)
        if volatile:
            record["losses"] = st.losses
            record["lostToFailuresSeconds"] = _num(st.lost_to_failures)
        if replicated:
            record["replicas"] = st.request.replicas
            record["replicasLost"] = st.replicas_lost
        record["timeline"] = [[kind, _num(a), _num(b)] for kind, a, b in timelines.get(st.name, [])]
        transfers = sched.transfers(st.name)
        if transfers:  # only on pools that deploy images: other outputs stay as they were
            # a transfer the lease rides on (piggybacking) names its owner: summing the
            # link's time, count it there only
            record["transfers"] = [
                {"pool": pool, "image": tr.image, "start": _num(tr.start), "end": _num(tr.end),
                 **({"ridesOn": tr.lease} if tr.lease != st.name else {})}
                for pool, tr in transfers]
        records.append(record)
    series = over_time(leases, timelines)
    doc: dict[str, Any] = {
        "leases": records,
        "decisions": [decision_record(d) for d in sched.decisions],
        "metrics": metrics,
        # step series (each value holds until the next time): for plots
        "overTime": {k: [_num(x) for x in v] for k, v in series.items()},
    }
    if volatile:
        doc["failures"] = [failure_record(log, result.end) for log in result.failures]
        if result.failures_stopped is not None:
            doc["failuresStopped"] = _num(result.failures_stopped)
            doc["failuresStoppedBecause"] = result.failures_stopped_because
    return doc


def failure_metrics(leases: Sequence[LeaseView], logs: Sequence[PoolLog]
                    ) -> dict[str, float | int]:
    """A run with volatile pools: the failures of their nodes (``nodeFailures``), the
    times leases lost their nodes (``losses``) and the work that cost them
    (``lostToFailuresSeconds``, seconds at speed 1.0)."""
    return {"nodeFailures": sum(log.failures for log in logs),
            "losses": sum(s.losses for s in leases),
            "lostToFailuresSeconds": round(sum(s.lost_to_failures for s in leases), 6)}


def failure_record(log: PoolLog, end: float) -> dict[str, Any]:
    """One volatile pool's failures over the run (which ended at ``end``)."""
    return {"pool": log.pool, "nodes": log.nodes, "failures": log.failures,
            "recoveries": log.recoveries,
            "nodeDownSeconds": _num(log.down_seconds(end)),
            "events": [[_num(t), node, "up" if up else "down"] for t, node, up in log.events]}


def to_json(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2) + "\n"


def _fmt_time(x: float | int | None) -> str:
    """Seconds as H:MM:SS (with milliseconds only when there are any)."""
    if x is None:
        return "-"
    h, rem = divmod(float(x), 3600)
    m, s = divmod(rem, 60)
    sec = f"{s:06.3f}".rstrip("0") if s % 1 else f"{int(s):02d}"
    return f"{int(h)}:{int(m):02d}:{sec}"


def _fmt_reason(reason: str) -> str:
    """A core's reason in the table's terms: its times as the SUBMIT, START and END
    columns write them, its durations as users write them (the JSON keeps the core's
    ``t=…s``)."""
    if isinstance(reason, Reason):
        return reason.render(_fmt_time, format_duration)
    return reason


def _fmt_nodes(nodes: list[str]) -> str:
    """``a,a,a,b`` as ``a*3,b``: several VMs share a node in shared pools."""
    if not nodes:
        return "-"
    counts = Counter(nodes)
    return ",".join(n if counts[n] == 1 else f"{n}*{counts[n]}" for n in dict.fromkeys(nodes))


def to_table(doc: dict[str, Any]) -> str:
    """A readable schedule: one row per lease, then decisions and metrics."""
    head = ["LEASE", "ORIGIN", "TYPE", "PHASE", "SUBMIT", "START", "END", "NODES", "NOTE"]
    rows = []
    for r in doc["leases"]:
        nodes = _fmt_nodes(r["nodes"])
        note = _fmt_reason(r["reason"] or "") or (
            f"suspended {r['suspensions']}x" if r["suspensions"] else "")
        rows.append([
            r["name"], r["origin"], r["type"], r["phase"], _fmt_time(r["submitted"]),
            _fmt_time(r["start"]), _fmt_time(r["end"]), nodes, note,
        ])
    widths = [max(len(h), *(len(row[i]) for row in rows)) if rows else len(h)
              for i, h in enumerate(head)]
    widths[-1] = len(head[-1])  # the note runs free at the end of the line
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
              for row in rows]
    if doc["decisions"]:
        lines += ["", "PREEMPTION DECISIONS"]
        for d in doc["decisions"]:
            chosen = ", ".join(d["chosen"]) or "(none)"
            sets = f"{d['candidateSets']} candidate sets" + ("" if d["exact"] else " (sampled)")
            wait = f", starts {d['vacateSeconds']:g}s late" if d["vacateSeconds"] else ""
            lines.append(
                f"  t={_fmt_time(d['time'])}  {d['preemptor']} ({d['policy']}): "
                f"{sets}, chose {chosen}, overhead {d['overheadSeconds']:g}s{wait}"
            )
    # the legend names image transfers only where there are any (DESIGN §2.6)
    image = "  = image transfer" if any("transfers" in r for r in doc["leases"]) else ""
    last = max(((r["end"] or 0) for r in doc["leases"]), default=0)  # no leases: 0
    lines += ["", f"TIMELINE  0 .. {_fmt_time(last)}"
              f"   (. waiting{image}  # running  ~ suspend/resume/migrate  x rejected)"]
    lines += render_gantt(doc["leases"])
    m = doc["metrics"]
    lines += [
        "",
        f"leases {m['leases']}  completed {m['completed']}  rejected {m['rejected']}  "
        f"(local {m['localRejectionRate']:.1%}, external {m['externalRejectionRate']:.1%})",
        f"utilization {m['utilization']:.1%}  mean wait {m['meanWaitSeconds'] / 60:.2f} min  "
        f"best-effort makespan {m['makespanBestEffort'] / 60:.2f} min  "
        f"preemptions {m['preemptions']}  overhead {m['overheadSeconds']:g}s",
    ]
    for f in doc.get("failures", ()):
        lines.append(f"pool {f['pool']}: {f['failures']} node failures, {f['recoveries']}"
                     f" recoveries, {_fmt_time(f['nodeDownSeconds'])} node time down")
    if "failures" in doc:
        lines.append(f"leases lost their nodes {m['losses']}x, losing"
                     f" {format_duration(m['lostToFailuresSeconds'])} of work")
    if "replicasLost" in m:
        lines.append(f"replicas: {m['replicasLost']} copies lost, their leases running on")
    if "failuresStopped" in doc:
        because = doc.get("failuresStoppedBecause",
                          "the guard: under this law some lease could not end")
        lines.append(f"failures stopped at {_fmt_time(doc['failuresStopped'])} ({because})")
    return "\n".join(lines) + "\n"
