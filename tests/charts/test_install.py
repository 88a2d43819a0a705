"""`helm install` of charts/leasehold into the emulated cluster, the operator run as a
local process with the Deployment's own arguments and ConfigMap (the image cannot be
pulled here), the testbed applied, and a real Prometheus scraping the operator:

- the operator runs as the chart's service account, with the chart's RBAC enforced
  by the emulated server, and is never refused;
- the Leases are scheduled as `leasehold simulate` schedules them;
- the chart's RBAC grants exactly the verbs and resources the operator and Kopf used;
- every dashboard query and every alert's signal returns data, the rules load, and
  the alerts whose conditions the run meets fire."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from emulated import KUBECTL, Emulated, until
from leasehold.commands import DISPATCH
from leasehold.observe import alerts, dashboards
from operated import TESTBED, apply_testbed, final_phases, free_port, preemptions, simulated_phases

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "leasehold"
HELM = shutil.which("helm") or shutil.which(str(Path(sys.executable).parent / "helm"))
#: set through the chart's values: the run's victims show the ConfigMap reached it
POLICY = "mlip"
PROMETHEUS = shutil.which("prometheus")
SCALE = 300.0
RELEASE, NAMESPACE = "lh", "leasehold"


def local(name: str, vms: int, deadline: str) -> dict[str, Any]:
    return {"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
            "metadata": {"name": name, "namespace": "owners"},
            "spec": {"type": "DeadlineNonPreemptable", "vms": vms, "duration": "30m",
                     "deadline": deadline, "resources": {"cpu": 1, "memory": "256Mi"}}}


#: a local lease no pool can hold: rejected for capacity, a local rejection
TOO_BIG = local("lease-8", 13, "2h")
#: once the testbed is over, two local leases of the whole pool: the second cannot
#: end by its deadline behind the first (a local lease is never preempted), a
#: rejection for its deadline, which its user gave: a deadline miss
HOLDER, TOO_LATE = local("lease-9", 12, "2h"), local("lease-9b", 12, "40m")
#: a pool of real nodes (none match): the operator lists nodes for it
METAL = {"apiVersion": "leasehold.io/v1alpha1", "kind": "NodePool",
         "metadata": {"name": "metal"}, "spec": {"nodeSelector": {"tier": "metal"}}}
#: apiserver_request_total's verb -> the RBAC verb it needs
RBAC_VERBS = {"GET": "get", "LIST": "list", "WATCH": "watch", "POST": "create",
              "PUT": "update", "PATCH": "patch", "APPLY": "patch", "DELETE": "delete",
              "DELETECOLLECTION": "deletecollection"}
OPERATOR_CLIENTS = ("leasehold-operator", "kopf")


@dataclass
class Installed:
    cluster: Emulated
    operator: subprocess.Popen[bytes]
    log: Path
    metrics_port: int
    #: the cluster as the operator's service account sees it
    account: Emulated | None = None
    prometheus: str | None = None
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query through Prometheus's HTTP API; its result vector."""
        assert self.prometheus
        url = f"{self.prometheus}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(url, timeout=10) as r:
            body = json.load(r)
        assert body["status"] == "success", (expr, body)
        return body["data"]["result"]

    def api(self, path: str) -> Any:
        assert self.prometheus
        with urllib.request.urlopen(f"{self.prometheus}{path}", timeout=10) as r:
            return json.load(r)["data"]


def start_prometheus(data: Path, metrics_port: int) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    rules = data / "leasehold.rules.yaml"
    shutil.copy(ROOT / "prometheus" / "leasehold.rules.yaml", rules)
    config = data / "prometheus.yml"
    config.write_text(yaml.safe_dump({
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(rules)],
        "scrape_configs": [{"job_name": "leasehold", "static_configs": [
            {"targets": [f"127.0.0.1:{metrics_port}"]}]}]}))
    proc = subprocess.Popen(
        [PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={data / 'tsdb'}",
         f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"],
        stdout=(data / "prometheus.log").open("ab"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False
    until(ready, 30, 0.2, lambda: (data / "prometheus.log").read_text()[-2000:])
    return proc, url


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    if KUBECTL is None or HELM is None:
        pytest.skip("kubectl and helm are needed (`make test` installs helm)")
    data = tmp_path_factory.mktemp("installed")
    pools = data / "pools.yaml"
    pools.write_text((TESTBED / "2-pool.yaml").read_text() + "\n---\n" + yaml.safe_dump(METAL))
    c = Emulated(data / "cluster")
    c.start(0, "--time-scale", f"{SCALE:g}", "--pools", str(pools))
    procs: list[subprocess.Popen[bytes]] = []
    try:
        c.kubectl("apply", "-f", str(TESTBED / "1-namespaces.yaml"))
        r = subprocess.run([HELM, "--kubeconfig", str(c.kubeconfig), "install", RELEASE,
                            str(CHART), "-n", NAMESPACE, "--create-namespace",
                            "--set", "replicaCount=2", "--set", f"scheduler.policy={POLICY}",
                            # the testbed's local namespace, named by its admins
                            "--set", "tenancy.localNamespaces={owners}",
                            # snapshots during the run: every journal verb is used
                            "--set", "journal.snapshotEvery=4"],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        assert "STATUS: deployed" in r.stdout
        # NOTES.txt, rendered for these values
        assert f"with policy {POLICY}\nand dispatch {DISPATCH[0]}" in r.stdout
        assert "2 replicas, one active through Kopf peering" in r.stdout
        assert "Local namespaces: owners." in r.stdout
        # the operator as the Deployment would run it, with its ConfigMap as the file
        deployment = c.get("deployment", "-n", NAMESPACE, f"{RELEASE}-leasehold")
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        mount = next(m["mountPath"] for m in container["volumeMounts"] if m["name"] == "config")
        config = c.get("configmap", "-n", NAMESPACE, f"{RELEASE}-leasehold-config")
        (data / "config.yaml").write_text(config["data"]["config.yaml"])
        port = free_port()
        args = [a.replace(mount, str(data)) for a in container["args"]]
        args[args.index("--metrics-port") + 1] = str(port)
        # the pod's IP, which the kubelet would give ($(POD_IP)): here, this machine's
        args[args.index("--metrics-address") + 1] = "127.0.0.1"
        log = data / "operator.log"
        # as the chart's service account, with only the rights the chart gives it (the
        # emulated server enforces RBAC)
        account = c.as_subject("--service-account", f"{NAMESPACE}/{RELEASE}-leasehold")
        operator = subprocess.Popen(
            [sys.executable, "-m", "leasehold.cli", *args, "--kubeconfig",
             str(account.kubeconfig)],
            stdout=log.open("ab"), stderr=subprocess.STDOUT)
        procs.append(operator)
        run = Installed(c, operator, log, port, account, procs=procs)
        if PROMETHEUS:
            proc, run.prometheus = start_prometheus(data, port)
            procs.append(proc)
        until(lambda: "] recovered " in log.read_text(), 30, 0.1,
              lambda: log.read_text()[-2000:])
        if run.prometheus:
            # the counters' zeros are scraped before anything counts: an increase
            # Prometheus can see
            until(lambda: run.query("leasehold_operator_active == 1"), 30, 0.2)
        arrivals, _ = apply_testbed(c, SCALE)  # type: ignore[arg-type]
        arrivals.join()
        c.apply(TOO_BIG)
        until(lambda: final_phases(c), 120, 0.5,  # type: ignore[arg-type]
              lambda: c.kubectl("get", "lhl", "-A").stdout)
        c.apply(HOLDER, TOO_LATE)  # one apply: created in this order, by name
        until(lambda: final_phases(c) and len(final_phases(c)) == 10,  # type: ignore
              120, 0.5, lambda: c.kubectl("get", "lhl", "-A").stdout)
        time.sleep(3)  # a few more scrapes of the final state
        yield run
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=20)
        c.stop()


def test_leases_applied_after_the_install_are_scheduled(installed: Installed):
    phases = final_phases(installed.cluster)  # type: ignore[arg-type]
    assert phases == {**simulated_phases(POLICY), "lease-8": "Rejected",
                      "lease-9": "Completed", "lease-9b": "Rejected"}
    # mlip's victims (moml, the default, would take 5 and 6)
    assert preemptions(installed.cluster) == {"lease-1": 1, "lease-6": 1}  # type: ignore
    assert f"policy {POLICY}" in installed.log.read_text()


def _rules(cluster: Emulated) -> list[dict[str, Any]]:
    """The ClusterRole's rules and the journal's Role's (in the release namespace)."""
    role = cluster.get("clusterrole", f"{RELEASE}-leasehold")
    journal = cluster.get("role", "-n", NAMESPACE, f"{RELEASE}-leasehold-journal")
    return [*role["rules"], *journal["rules"]]


def _used(cluster: Emulated) -> set[tuple[str, str, str]]:
    """(API group, resource[/subresource], RBAC verb) of every request the operator and
    Kopf made, from the API server's apiserver_request_total (requests done) and
    apiserver_longrunning_requests (watches still open)."""
    from prometheus_client.parser import text_string_to_metric_families
    text = cluster.kubectl("get", "--raw", "/metrics").stdout
    used = set()
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name in ("apiserver_request_total", "apiserver_longrunning_requests") \
                    and s.labels["client"] in OPERATOR_CLIENTS and s.value > 0:
                resource = s.labels["resource"] + (f"/{s.labels['subresource']}"
                                                   if s.labels["subresource"] else "")
                used.add((s.labels["group"], resource, RBAC_VERBS[s.labels["verb"]]))
    return used


def test_the_operator_ran_as_the_charts_service_account_and_was_never_refused(
        installed: Installed):
    refused = {k: n for k, n in installed.cluster.requests().items()
               if k[4] == "403" and k[5] in OPERATOR_CLIENTS}
    assert refused == {}
    assert "Forbidden" not in installed.log.read_text()
    assert installed.account is not None
    whoami = installed.account.kubectl("auth", "whoami", "-o", "json")
    assert json.loads(whoami.stdout)["status"]["userInfo"]["username"] == \
        f"system:serviceaccount:{NAMESPACE}:{RELEASE}-leasehold"


def test_the_chart_grants_exactly_what_the_operator_used(installed: Installed):
    granted = {(group, resource, verb) for rule in _rules(installed.cluster)
               for group in rule["apiGroups"] for resource in rule["resources"]
               for verb in rule["verbs"]}
    used = _used(installed.cluster)
    assert used - granted == set(), "used but not granted"
    assert granted - used == set(RARELY_USED), "granted but never used"


#: what the chart grants for a path this run does not take, each with the test that
#: takes it (as the chart's service account, under enforced RBAC)
RARELY_USED = {
    # a pod's name is taken: whose pod is it? (kube/shell.py)
    ("", "pods", "get"): "tests/charts/test_roles.py::"
                         "test_every_call_of_the_operator_is_allowed_by_the_charts_role",
}


def test_every_dashboard_query_returns_data(installed: Installed):
    if not installed.prometheus:
        pytest.skip("prometheus is not installed (apt-get install prometheus; .ci/run does)")
    empty = []
    for board in dashboards.dashboards().values():
        for title, expr in dashboards.queries(board):
            if not installed.query(dashboards.pasteable(expr)):
                empty.append(f"{board['title']} / {title}: {expr}")
    assert empty == []
    # the template variables' own queries find values
    for name, values in [("pool", ["rp1"]), ("namespace", ["lab", "owners"])]:
        found = installed.api(f"/api/v1/label/{name}/values")
        assert set(values) <= set(found), (name, found)


def test_the_alert_rules_load_and_their_signals_have_data(installed: Installed):
    if not installed.prometheus:
        pytest.skip("prometheus is not installed (apt-get install prometheus; .ci/run does)")
    groups = installed.api("/api/v1/rules")["groups"]
    loaded = {r["name"]: r["health"] for g in groups for r in g["rules"]}
    assert loaded == {a.name: "ok" for a in alerts.ALERTS}
    for alert in alerts.ALERTS:
        assert installed.query(alert.signal), f"{alert.name}: no data for {alert.signal}"
    # the run rejected local leases, one for its deadline: those two alerts' conditions hold
    for name in ("LeaseholdLocalRejectionRateHigh", "LeaseholdDeadlineMisses"):
        alert = next(a for a in alerts.ALERTS if a.name == name)
        assert installed.query(alert.expr), f"{name} does not fire: {alert.expr}"
    states = {a["labels"]["alertname"]: a["state"] for a in installed.api("/api/v1/alerts")[
        "alerts"]}
    assert states.get("LeaseholdDeadlineMisses") == "firing"  # `for: 0m`
    assert states.get("LeaseholdLocalRejectionRateHigh") == "pending"  # `for: 15m`
    # and the rest hold nothing now
    for name in ("LeaseholdDecisionLatencyHigh", "LeaseholdOperatorDown"):
        alert = next(a for a in alerts.ALERTS if a.name == name)
        assert installed.query(alert.expr) == [], name


def test_operator_down_fires_once_the_operator_is_gone(installed: Installed):
    """Last: it stops the operator."""
    if not installed.prometheus:
        pytest.skip("prometheus is not installed (apt-get install prometheus; .ci/run does)")
    down = next(a for a in alerts.ALERTS if a.name == "LeaseholdOperatorDown")
    assert installed.query(down.expr) == []
    installed.operator.send_signal(signal.SIGKILL)
    installed.operator.wait(timeout=10)
    until(lambda: installed.query(down.expr), 30, 0.5)
