"""The dashboards and alerts as generated: well-formed for Grafana and Prometheus, and
every metric they name is one the operator exports. (tests/charts/test_install.py
evaluates every query against a real Prometheus.)"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from leasehold.kube.metrics import Metrics
from leasehold.observe import alerts, dashboards

ROOT = Path(__file__).resolve().parents[2]
BOARDS = dashboards.dashboards()


def exported() -> set[str]:
    """Every sample name the operator's registry can expose."""
    names = set()
    for family in Metrics().registry.collect():
        names.add(family.name)
        suffixes = {"counter": ["_total"], "histogram": ["_bucket", "_sum", "_count"]}
        names.update(family.name + s for s in suffixes.get(family.type, []))
    return names


def named(expr: str) -> set[str]:
    return set(re.findall(r"\bleasehold_[a-z_]+", expr))


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_a_dashboard_is_laid_out_and_every_panel_has_a_query(name):
    board = BOARDS[name]
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    for panel in board["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        assert panel["targets"] and all(t["expr"] for t in panel["targets"]), panel["title"]
        assert panel["datasource"] == dashboards.DATASOURCE
    # panels do not overlap
    cells = set()
    for panel in board["panels"]:
        g = panel["gridPos"]
        mine = {(x, y) for x in range(g["x"], g["x"] + g["w"])
                for y in range(g["y"], g["y"] + g["h"])}
        assert not mine & cells, panel["title"]
        cells |= mine
    variables = [v["name"] for v in board["templating"]["list"]]
    assert variables[0] == "datasource"


def test_the_overview_filters_by_pool_and_namespace_and_the_drilldown_by_lease():
    overview = BOARDS["leasehold-overview.json"]
    leases = BOARDS["leasehold-leases.json"]
    assert {v["name"] for v in overview["templating"]["list"]} >= {"pool", "namespace"}
    assert {v["name"] for v in leases["templating"]["list"]} >= {"namespace", "lease"}
    exprs = " ".join(e for _, e in dashboards.queries(overview))
    assert "$pool" in exprs and "$namespace" in exprs
    timeline = next(p for p in leases["panels"] if p["type"] == "state-timeline")
    mapped = timeline["fieldConfig"]["defaults"]["mappings"][0]["options"]
    assert {m["text"] for m in mapped.values()} == set(dashboards.PHASE_CODES)


def test_every_metric_a_query_or_alert_names_is_exported():
    known = exported()
    exprs = [e for b in BOARDS.values() for _, e in dashboards.queries(b)]
    exprs += [a.expr for a in alerts.ALERTS]
    exprs += [v["definition"] for b in BOARDS.values() for v in b["templating"]["list"]
              if "definition" in v]
    unknown = {n for e in exprs for n in named(e)} - known
    assert unknown == set()


def test_the_overview_covers_what_the_issue_lists():
    titles = " ".join(p["title"].lower() for p in BOARDS["leasehold-overview.json"]["panels"])
    for topic in ("utilization", "phase", "rejection", "preemptions", "overhead", "wait",
                  "makespan", "latency", "candidate", "dispatch", "nodes down"):
        assert topic in titles, topic


def test_promtool_accepts_the_rules():
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (apt-get install prometheus; .ci/run does)")
    r = subprocess.run([promtool, "check", "rules", str(ROOT / "prometheus" /
                                                       "leasehold.rules.yaml")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"SUCCESS: {len(alerts.ALERTS)} rules found" in r.stdout
