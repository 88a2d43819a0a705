"""The Grafana dashboards (``leasehold dashboards`` writes them into ``grafana/`` and
the chart): an overview of the cluster and a drill-down into leases.

Every panel's query is plain PromQL over the operator's metrics (docs/operator.md):
replace ``$pool``, ``$namespace`` and ``$lease`` with a value or ``.*`` and it can be
pasted into Prometheus as it is. Windows are fixed (``[1h]``) rather than Grafana's
``$__rate_interval`` for that reason. Tests evaluate each one against a real
Prometheus scraping an emulated run."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from leasehold.core.model import Phase

DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
#: a phase's number on the drill-down's timeline (its place in the lifecycle)
PHASE_CODES = {phase.value: i for i, phase in enumerate(Phase)}
#: what a template variable stands for when a query is pasted or tested
ALL = ".*"


@dataclass(frozen=True)
class Query:
    expr: str
    legend: str = ""


@dataclass(frozen=True)
class Panel:
    title: str
    queries: tuple[Query, ...]
    kind: str = "timeseries"
    unit: str = "short"
    description: str = ""
    width: int = 12
    height: int = 8
    options: dict[str, Any] = field(default_factory=dict)
    field_config: dict[str, Any] = field(default_factory=dict)


def q(expr: str, legend: str = "") -> Query:
    return Query(expr, legend)


def _percentiles(metric: str, by: str = "", window: str = "1h") -> tuple[Query, ...]:
    group = f"le{', ' + by if by else ''}"
    prefix = "{{" + by + "}} " if by else ""
    return tuple(
        q(f"histogram_quantile({p}, sum by ({group}) (rate({metric}_bucket[{window}])))",
          f"{prefix}p{int(p * 100)}")
        for p in (0.5, 0.95, 0.99))


POOL = 'pool=~"$pool"'
NAMESPACE = 'namespace=~"$namespace"'


def overview_panels() -> list[Panel]:
    return [
        Panel("Utilization by pool", (
            q(f"leasehold_pool_cpu_utilization_ratio{{{POOL}}}", "{{pool}}"),),
            unit="percentunit",
            description="Share of each pool's cpu held by running leases"),
        Panel("CPU held and capacity by pool", (
            q(f"leasehold_pool_usage_cpu_cores{{{POOL}}}", "{{pool}} held"),
            q(f"leasehold_pool_capacity_cpu_cores{{{POOL}}}", "{{pool}} capacity")),
            unit="none", description="Cores"),
        Panel("Dispatch rate by pool", (
            q(f"sum by (pool, policy) (rate(leasehold_dispatched_leases_total{{{POOL}}}[1h]))",
              "{{pool}} {{policy}}"),),
            description="External leases that named no pool sent to each pool per second,"
                        " by the dispatch strategy (the operator's dispatch setting)"),
        Panel("Leases by phase", (
            q(f"sum by (phase) (leasehold_leases{{{NAMESPACE}}})", "{{phase}}"),),
            options={"stacking": "normal"},
            description="Leases the operator knows, in the namespaces selected"),
        Panel("Queue length", (q("leasehold_queue_length", "queued, scheduled, suspended"),),
              description="Leases waiting to start or to resume"),
        Panel("Rejection rate by origin (since the operator started)", (
            q('sum by (origin) (leasehold_lease_requests_total{outcome="rejected"})'
              " / sum by (origin) (leasehold_lease_requests_total)", "{{origin}}"),),
            unit="percentunit",
            description="Rejected requests over all requests; local users come first"),
        Panel("Requests in the last hour by origin and outcome", (
            q("sum by (origin, outcome) (increase(leasehold_lease_requests_total[1h]))",
              "{{origin}} {{outcome}}"),), kind="barchart"),
        Panel("Rejections in the last hour by origin and cause", (
            q("sum by (origin, reason) (increase(leasehold_lease_rejections_total[1h]))",
              "{{origin}} {{reason}}"),), kind="barchart",
            description="spec: the Lease cannot be read; capacity: no pool holds it;"
                        " deadline: no slot ends by its deadline (or at its start)"),
        Panel("Preemptions in the last hour by policy, action and type", (
            q("sum by (policy, action, type) (increase(leasehold_preemptions_total[1h]))",
              "{{policy}} {{action}} {{type}}"),), kind="barchart"),
        Panel("VMs preempted in the last hour", (
            q("sum(increase(leasehold_preempted_vms_total[1h]))", "VMs"),), kind="stat"),
        Panel("Preemption overhead per decision", _percentiles(
            "leasehold_preemption_overhead_seconds"), unit="s",
            description="Modelled suspend, resume, migrate and cancel time of the chosen set"),
        Panel("Deadline misses in the last hour by origin", (
            q("sum by (origin) (increase(leasehold_deadline_misses_total[1h]))",
              "{{origin}}"),), kind="barchart",
            description="Leases with a deadline their user gave, rejected or ended after it"),
        Panel("Wait: submission to first start", _percentiles("leasehold_wait_seconds"),
              unit="s"),
        Panel("Makespan by lease type", _percentiles("leasehold_makespan_seconds", "type"),
              unit="s", description="Earliest start to end, completed leases"),
        Panel("Decision latency", _percentiles("leasehold_decision_cpu_seconds"), unit="s",
              description="CPU seconds of each scheduling step that decided a preemption"),
        Panel("Candidate sets per decision", (
            *_percentiles("leasehold_candidate_sets"),
            q("sum(rate(leasehold_candidate_sets_sum[1h]))"
              " / sum(rate(leasehold_candidate_sets_count[1h]))", "mean")),
            description="Victim sets a policy considered for one preemption"),
        Panel("Spot capacity: nodes down and leases lost in the last hour by pool", (
            q(f"leasehold_pool_nodes_down{{{POOL}}}", "{{pool}} nodes down"),
            q(f"sum by (pool, outcome) (increase(leasehold_leases_lost_total{{{POOL}}}[1h]))",
              "{{pool}} lost, {{outcome}}")),
            description="Nodes of each pool down now (NotReady, deleted, cordoned: a"
                        " volatile pool's spot nodes), and the leases that lost theirs, by"
                        " what became of them (docs/volatile.md)"),
        Panel("Active operator replicas", (
            q("sum(leasehold_operator_active)", "active"),), kind="stat",
            description="1 when one replica schedules; 0 means nothing is scheduling"),
    ]


def lease_panels() -> list[Panel]:
    selector = f'{NAMESPACE}, lease=~"$lease"'
    mappings = [{"type": "value", "options": {
        str(code): {"text": phase, "index": code} for phase, code in PHASE_CODES.items()}}]
    # the 0/1 series per phase, as one number per lease: its phase's code
    coded = "max by (namespace, lease) (" + " or ".join(
        f'{code} * (leasehold_lease_phase{{{selector}, phase="{phase}"}} == 1)'
        for phase, code in PHASE_CODES.items()) + ")"
    return [
        Panel("Lease phases over time", (q(coded, "{{namespace}}/{{lease}}"),),
            kind="state-timeline", width=24, height=12,
            field_config={"mappings": mappings, "color": {"mode": "palette-classic"}},
            options={"showValue": "never", "mergeValues": True},
            description="Each lease's phase (the series of leasehold_lease_phase that is 1)"),
        Panel("Current phase", (
            q(f"leasehold_lease_phase{{{selector}}} == 1", "{{namespace}}/{{lease}}"),),
            kind="table", field_config={"mappings": mappings},
            options={"showHeader": True}),
        Panel("Preemptions of each lease", (
            q(f"leasehold_lease_preemptions{{{selector}}} > 0", "{{namespace}}/{{lease}}"),),
            kind="bargauge", options={"orientation": "horizontal"},
            description="Times each lease was suspended, cancelled or migrated for another"),
    ]


def _variable(name: str, label: str, query: str) -> dict[str, Any]:
    return {"type": "query", "name": name, "label": label, "datasource": DATASOURCE,
            "definition": query, "query": {"query": query, "refId": name},
            "includeAll": True, "multi": True, "allValue": ALL, "refresh": 2, "sort": 1,
            "current": {"text": "All", "value": "$__all"}}


def _panel(panel: Panel, pid: int, x: int, y: int) -> dict[str, Any]:
    return {
        "id": pid, "type": panel.kind, "title": panel.title,
        "description": panel.description, "datasource": DATASOURCE,
        "gridPos": {"h": panel.height, "w": panel.width, "x": x, "y": y},
        "targets": [{"refId": chr(ord("A") + i), "datasource": DATASOURCE,
                     "expr": query.expr, "legendFormat": query.legend or "__auto",
                     "instant": panel.kind in ("table", "bargauge", "barchart")}
                    for i, query in enumerate(panel.queries)],
        "fieldConfig": {"defaults": {"unit": panel.unit, **panel.field_config},
                        "overrides": []},
        "options": panel.options,
    }


def dashboard(uid: str, title: str, panels: list[Panel], variables: list[dict[str, Any]],
              description: str) -> dict[str, Any]:
    laid: list[dict[str, Any]] = []
    x = y = row = 0
    for i, panel in enumerate(panels, start=1):
        if x + panel.width > 24:
            x, y = 0, y + row
            row = 0
        laid.append(_panel(panel, i, x, y))
        x += panel.width
        row = max(row, panel.height)
    return {
        "uid": uid, "title": title, "description": description, "tags": ["leasehold"],
        "schemaVersion": 39, "version": 1, "editable": True, "graphTooltip": 1,
        "time": {"from": "now-6h", "to": "now"}, "refresh": "30s",
        "templating": {"list": [
            {"type": "datasource", "name": "datasource", "label": "Data source",
             "query": "prometheus"}, *variables]},
        "annotations": {"list": []},
        "panels": laid,
    }


def dashboards() -> dict[str, dict[str, Any]]:
    """File name -> dashboard."""
    pool = _variable("pool", "Pool", "label_values(leasehold_pool_capacity_cpu_cores, pool)")
    namespace = _variable("namespace", "Namespace",
                          "label_values(leasehold_lease_phase, namespace)")
    lease = _variable("lease", "Lease",
                      'label_values(leasehold_lease_phase{namespace=~"$namespace"}, lease)')
    return {
        "leasehold-overview.json": dashboard(
            "leasehold-overview", "leasehold / Overview", overview_panels(),
            [pool, namespace], "Pools, leases, rejections, preemptions and their cost"),
        "leasehold-leases.json": dashboard(
            "leasehold-leases", "leasehold / Leases", lease_panels(), [namespace, lease],
            "Each lease's phase over time"),
    }


def queries(board: dict[str, Any]) -> list[tuple[str, str]]:
    """(panel title, expression) for every target of a dashboard."""
    return [(p["title"], t["expr"]) for p in board["panels"] for t in p["targets"]]


def pasteable(expr: str, value: str = ALL) -> str:
    """An expression with every template variable replaced, as a user pastes it."""
    for name in ("pool", "namespace", "lease"):
        expr = expr.replace(f"${name}", value)
    return expr


def render(board: dict[str, Any]) -> str:
    return json.dumps(board, indent=2) + "\n"
