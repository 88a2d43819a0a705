"""The operator as a controller a shared cluster can trust (issue 16): one Lease's
failure never touches another's, what the core wants of the pods is mended whatever
woke the operator, and it never dies silently.

On the emulated cluster, with the real kubectl, Kopf and operator."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

from operated import Operated, free_port, lease_events, one_node_pool, operated

GATED = (str(Path(__file__).with_name("gated_operator.py")),)


def lease(name: str, cpu: str = "500m", **spec: Any) -> dict[str, Any]:
    """A Lease in lab of one VM of ``cpu`` for an hour (the node has 2 cpus)."""
    return {"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
            "metadata": {"name": name, "namespace": "lab"},
            "spec": {"type": "BestEffortSuspendable", "vms": 1, "duration": "1h",
                     "resources": {"cpu": cpu, "memory": "256Mi"}, **spec}}


def status(c: Operated, name: str) -> dict[str, Any]:
    return c.lease("lab", name).get("status") or {}


def pods(c: Operated) -> dict[str, dict[str, Any]]:
    """The live pods of lab (not being deleted), by name."""
    return {p["metadata"]["name"]: p for p in c.get("pods", "-n", "lab")["items"]
            if not p["metadata"].get("deletionTimestamp")}




def test_a_lease_whose_pods_are_refused_fails_alone_and_frees_its_capacity(small):
    """One apply, one step: the bad template's pod is refused by the API server (a
    label value of 64 characters: admission checks the template's shape, the server
    its values, as ResourceQuota or Pod Security admission would refuse on a real
    cluster); that Lease is Failed with the server's message, the two others of its
    step run, and its capacity goes to the next Lease at once (had it been held, the
    next one would wait an hour)."""
    bad = lease("bad", template={"metadata": {"labels": {"team": "x" * 64}},
                                 "spec": {"containers": [{"name": "x", "image": "busybox"}]}})
    small.apply(lease("good-1", cpu="1"), bad, lease("good-2"))
    small.until(lambda: {"good-1-vm-0", "good-2-vm-0"} <= set(pods(small))
                and status(small, "good-1").get("phase") == "Running"
                and status(small, "good-2").get("phase") == "Running"
                and status(small, "bad").get("phase") == "Failed")
    failed = status(small, "bad")
    assert "metadata.labels" in failed["message"] and "63" in failed["message"], failed
    assert {c["type"]: c["reason"] for c in failed["conditions"]}["Finished"] == "Failed"
    assert "metadata.labels" in lease_events(small, "bad")["Failed"]
    assert "Started" not in lease_events(small, "bad")  # never said to run
    assert "bad-vm-0" not in pods(small)
    small.apply(lease("next"))
    small.until(lambda: status(small, "next").get("phase") == "Running"
                and "next-vm-0" in pods(small))


def test_a_deleted_vm_pod_is_back_within_a_step(small):
    small.apply(lease("keep", cpu="1", vms=2))
    small.until(lambda: {"keep-vm-0", "keep-vm-1"} <= set(pods(small)))
    before = pods(small)["keep-vm-0"]
    small.kubectl("delete", "pod", "-n", "lab", "keep-vm-0", "--wait=false")

    def back() -> dict[str, Any] | None:
        """keep-vm-0 back: a new pod, on the same node"""
        pod = pods(small).get("keep-vm-0")
        return pod if pod and pod["metadata"]["uid"] != before["metadata"]["uid"] else None
    again = small.until(back, 15)
    assert again["spec"]["nodeName"] == before["spec"]["nodeName"]
    assert "keep-vm-0" in small.until(lambda: lease_events(small, "keep").get("PodsRecreated"))
    assert status(small, "keep")["phase"] == "Running"


def test_dates_that_do_not_exist_and_endless_durations_reject_only_their_lease(small):
    small.apply(lease("feb-30", ready="2026-02-30T10:00:00Z"),
                lease("forever", duration="99999999999d"), lease("fine"))
    small.until(lambda: status(small, "fine").get("phase") == "Running"
                and status(small, "feb-30").get("phase") == "Rejected"
                and status(small, "forever").get("phase") == "Rejected")
    assert 'spec.ready: "2026-02-30T10:00:00Z" is not a time: day is out of range for' \
        in status(small, "feb-30")["message"]
    assert "spec.duration: \"99999999999d\" is longer than the longest lease leasehold" \
        " plans, 100 years (36500d)" in status(small, "forever")["message"]
    # and a restarted operator takes later Leases (it refused them, "out of order")
    small.operator.send_signal(signal.SIGKILL)
    small.operator.wait(timeout=10)
    small.start_operator("moml")
    small.until(lambda: small.recoveries() == 2)
    small.apply(lease("later"))
    small.until(lambda: status(small, "later").get("phase") == "Running")
    assert status(small, "fine")["phase"] == "Running"


def test_a_metrics_port_in_use_is_one_line_and_a_failed_exit(tmp_path):
    kubeconfig = tmp_path / "kubeconfig"  # never reached: the port is taken first
    kubeconfig.write_text("apiVersion: v1\nkind: Config\ncurrent-context: x\n"
                          "contexts: [{name: x, context: {cluster: x, user: x}}]\n"
                          "clusters: [{name: x, cluster: {server: 'https://127.0.0.1:9'}}]\n"
                          "users: [{name: x, user: {token: t}}]\n")
    with socket.create_server(("0.0.0.0", 0)) as taken:
        port = taken.getsockname()[1]
        for args in (["operator", "--kubeconfig", str(kubeconfig)],
                     ["up", "--data", str(tmp_path / "up")]):
            r = subprocess.run([sys.executable, "-m", "leasehold.cli", *args,
                                "--metrics-port", str(port)],
                               capture_output=True, text=True, timeout=60)
            assert r.returncode != 0, (args, r.stdout, r.stderr)
            lines = r.stderr.strip().splitlines()
            assert len(lines) == 1 and f"--metrics-port {port}" in lines[0] \
                and "in use" in lines[0], (args, r.stderr)
            assert "Traceback" not in r.stdout + r.stderr


def test_an_error_in_recovery_is_logged_retried_and_fails_healthz_meanwhile(tmp_path):
    """gated_operator.py makes the recovery raise while a file exists: the operator
    logs it with its traceback, tries again with back-off, and /healthz says 503 with
    why; once the file is gone it recovers, /healthz is 200 and Leases run."""
    flag = tmp_path / "fail-recovery"
    flag.write_text("")
    port = free_port()
    c = operated(tmp_path / "cluster", "moml", one_node_pool(tmp_path), 60.0, port,
                 program=GATED, env={**os.environ, "LEASEHOLD_FAIL_RECOVERY": str(flag)})
    log = c.data / "operator.log"

    def healthz() -> tuple[int, str]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()
        except OSError as exc:
            return 0, str(exc)
    try:
        c.until(lambda: log.read_text().count("scheduling stopped: RuntimeError: injected")
                >= 2)
        assert "Traceback" in log.read_text()
        code, text = healthz()
        assert code == 503 and "RuntimeError: injected" in text, (code, text)
        flag.unlink()
        c.until(lambda: c.recoveries() == 1 and healthz()[0] == 200, 60)
        c.apply(lease("after"))
        c.until(lambda: status(c, "after").get("phase") == "Running")
        assert c.operator.poll() is None
    finally:
        c.stop_all()


def test_the_spec_is_immutable_once_the_lease_is_created(small):
    """The API server refuses a changed spec (a CEL transition rule the emulated
    server evaluates as a real one does); labels may change; the status says which
    generation the operator schedules."""
    small.apply(lease("fixed", cpu="1"))
    small.until(lambda: status(small, "fixed").get("phase") == "Running")
    edited = lease("fixed", cpu="1", vms=2)
    r = small.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(edited),
                      check=False)
    assert r.returncode != 0
    assert "spec is immutable once the Lease is created" in r.stderr, r.stderr
    small.kubectl("label", "lhl", "-n", "lab", "fixed", "team=a")
    obj = small.lease("lab", "fixed")
    assert obj["spec"]["vms"] == 1 and obj["metadata"]["generation"] == 1
    assert obj["status"]["observedGeneration"] == 1
    assert sorted(pods(small)) == ["fixed-vm-0"]


def nodepool(name: str, nodes: int = 1) -> dict[str, Any]:
    return {"apiVersion": "leasehold.io/v1alpha1", "kind": "NodePool", "metadata": {"name": name},
            "spec": {"emulated": {"nodes": nodes, "cpu": 2, "memory": "2Gi"}}}


def test_a_nodepool_created_after_start_is_used(small):
    small.apply(lease("first", cpu="1", vms=2))  # fills p-0
    small.apply(lease("second", cpu="1", vms=2))
    small.until(lambda: status(small, "second").get("phase") == "Scheduled")
    small.apply(nodepool("q"))
    small.until(lambda: status(small, "second").get("phase") == "Running", 30)
    on = {p["spec"]["nodeName"] for name, p in pods(small).items() if name.startswith("second")}
    assert on == {"q-0"}
    assert status(small, "first")["phase"] == "Running"


def test_a_node_deleted_mid_run_loses_its_leases_by_type_and_gets_no_pod(tmp_path):
    """Two nodes; a cancellable lease on one, a suspendable one on the other. The
    cancellable one's node is deleted: it is Cancelled, saying so; then the other's:
    it is queued again (no checkpoint: it will start over) and waits, as no node is
    left. No pod is bound to a deleted node afterwards."""
    pools = tmp_path / "pools.yaml"
    pools.write_text(yaml.safe_dump(nodepool("p", 2)))
    c = operated(tmp_path / "cluster", "moml", pools)
    try:
        c.until(lambda: c.recoveries() == 1)
        c.apply(lease("c", cpu="2", type="BestEffortCancellable"))
        c.until(lambda: "c-vm-0" in pods(c))
        c.apply(lease("s", cpu="2"))
        c.until(lambda: "s-vm-0" in pods(c) and status(c, "s").get("phase") == "Running")
        node_c = pods(c)["c-vm-0"]["spec"]["nodeName"]
        node_s = pods(c)["s-vm-0"]["spec"]["nodeName"]
        assert node_c != node_s
        c.kubectl("delete", "node", node_c)
        c.until(lambda: status(c, "c").get("phase") == "Cancelled")
        assert status(c, "c")["message"] == f"cancelled: its node {node_c} was lost"
        assert "NodeLost" in lease_events(c, "c")
        assert status(c, "s")["phase"] == "Running"
        c.kubectl("delete", "node", node_s)
        c.until(lambda: status(c, "s").get("phase") == "Queued")
        assert "start over" in lease_events(c, "s")["NodeLost"]
        gone = {node_c, node_s}
        for _ in range(10):  # and in ten listings after that: nothing bound to them
            bound = [p["metadata"]["name"] for p in c.get("pods", "-A")["items"]
                     if p["spec"].get("nodeName") in gone
                     and not p["metadata"].get("deletionTimestamp")]
            assert bound == [], bound
        c.apply(lease("later", cpu="1"))  # no node is left: it waits
        c.until(lambda: status(c, "later").get("phase") == "Queued")
        assert "later-vm-0" not in pods(c)
    finally:
        c.stop_all()


def test_a_lease_naming_a_pool_that_appears_later_runs_there(small):
    small.apply(lease("wants-r", pool="r"))
    small.until(lambda: status(small, "wants-r").get("phase") == "Pending")
    assert "waiting for NodePool r" in status(small, "wants-r")["message"]
    small.apply(nodepool("r"))
    small.until(lambda: status(small, "wants-r").get("phase") == "Running", 30)
    assert pods(small)["wants-r-vm-0"]["spec"]["nodeName"] == "r-0"
