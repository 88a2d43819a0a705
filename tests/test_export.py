"""`leasehold trace export` on bad input: no cluster, no Leases, Leases the operator has
not submitted or whose status it cannot read. One clear message (an error and a
non-zero exit, or a warning naming the Lease), never a traceback. The round trip
on a cluster the operator ran is tests/kube/test_whatif_roundtrip.py."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from emulated import KUBECTL, Emulated
from leasehold.api.clock import rfc3339
from leasehold.core.model import NodeGroup, PoolSpec, extended_of
from leasehold_emulator.export import pool_model
from operated import TESTBED


def export(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "leasehold.cli", "trace", "export", *args],
                          capture_output=True, text=True, timeout=60)


def unreachable(tmp_path: Path) -> Path:
    """A kubeconfig of a server nobody runs (port 1 of loopback)."""
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "x",
        "clusters": [{"name": "x", "cluster": {"server": "http://127.0.0.1:1"}}],
        "contexts": [{"name": "x", "context": {"cluster": "x", "user": "x"}}],
        "users": [{"name": "x", "user": {"token": "t"}}]}))
    return path


@pytest.mark.parametrize(("kubeconfig", "said"), [
    pytest.param(unreachable, "cluster http://127.0.0.1:1: cannot reach the cluster",
                 id="nobody-listens"),
    pytest.param(lambda tmp: tmp / "missing", "missing: no such file", id="missing-file"),
    pytest.param(lambda tmp: (tmp / "k").write_text("[1, 2]") and tmp / "k",
                 "k: not a kubeconfig with a current context", id="not-a-kubeconfig"),
])
def test_a_cluster_that_cannot_be_read_is_one_error(tmp_path, kubeconfig, said):
    r = export("--kubeconfig", str(kubeconfig(tmp_path)))
    assert r.returncode == 2
    assert r.stderr.startswith("error: ") and said in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.splitlines()) == 1


def test_the_kubeconfig_is_the_operators_kubeconfig_variable(tmp_path):
    r = subprocess.run([sys.executable, "-m", "leasehold.cli", "trace", "export"],
                       capture_output=True, text=True, timeout=60,
                       env={"KUBECONFIG": str(unreachable(tmp_path)), "PATH": ""})
    assert r.returncode == 2 and "127.0.0.1:1: cannot reach" in r.stderr, r.stderr


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulated]:
    """The testbed's pool and namespaces, no operator: no Lease is ever submitted."""
    if KUBECTL is None:
        pytest.skip("kubectl is not installed (apt-get install kubectl)")
    c = Emulated(tmp_path_factory.mktemp("export"))
    c.start(0, "--pools", str(TESTBED / "2-pool.yaml"))
    try:
        c.kubectl("apply", "-f", str(TESTBED / "1-namespaces.yaml"))
        yield c
    finally:
        c.stop()


def lease(name: str) -> dict:
    return {"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
            "metadata": {"name": name, "namespace": "lab"},
            "spec": {"type": "BestEffortSuspendable", "vms": 1, "duration": "1h"}}


def status(c: Emulated, name: str, body: dict) -> None:
    c.kubectl("patch", "lhl", "-n", "lab", name, "--subresource", "status", "--type",
              "merge", "-p", json.dumps({"status": body}))


def test_no_leases_is_one_error(cluster):
    r = export("--kubeconfig", str(cluster.kubeconfig), "--namespace", "owners")
    assert r.returncode == 2
    assert r.stderr == f"error: cluster {cluster.url}: no Leases in namespace owners;" \
                       " nothing to export\n"


def test_a_lease_that_cannot_be_read_is_left_out_with_its_name(cluster, tmp_path):
    cluster.apply(lease("fine"), lease("unsubmitted"), lease("no-origin"),
                  lease("bad-time"), lease("negative"))
    now = rfc3339(time.time(), micro=True)  # after the emulated clock's origin
    status(cluster, "fine", {"phase": "Running", "origin": "external", "submittedAt": now,
                             "sequence": 0, "startedAt": now})
    status(cluster, "no-origin", {"phase": "Queued", "submittedAt": now})
    status(cluster, "bad-time", {"phase": "Queued", "origin": "external",
                                 "submittedAt": now, "startedAt": "yesterday"})
    status(cluster, "negative", {"phase": "Running", "origin": "external",
                                 "submittedAt": now, "preemptions": -3})
    out = tmp_path / "t.jsonl.gz"
    r = export("--kubeconfig", str(cluster.kubeconfig), "--out", str(out))
    assert r.returncode == 0, r.stderr
    warnings = sorted(line for line in r.stderr.splitlines() if line.startswith("warning"))
    assert warnings == [
        "warning: Lease lab/bad-time: left out: malformed status: status.startedAt:"
        " 'yesterday' is not an RFC 3339 time",
        "warning: Lease lab/negative: left out: malformed status: status.preemptions:"
        " Input should be greater than or equal to 0",
        "warning: Lease lab/no-origin: left out: malformed status: status.origin: expected"
        " local or external, got None",
        "warning: Lease lab/unsubmitted: left out: the operator has not submitted it to its"
        " scheduler (no status.submittedAt)",
    ]
    listed = subprocess.run([sys.executable, "-m", "leasehold.cli", "trace", "convert",
                             str(out)], capture_output=True, text=True, check=True)
    scenario = yaml.safe_load(listed.stdout)
    assert [x["name"] for x in scenario["leases"]] == ["lab/fine"]
    assert scenario["cluster"]["pools"][0]["nodes"] == 3


@pytest.mark.parametrize("pool", [
    pytest.param(PoolSpec("gpu", 2, 8000, 32768, extended=extended_of({"nvidia.com/gpu": 4})),
                 id="one-size"),
    pytest.param(PoolSpec("mixed", 3, 8000, 32768, groups=(
        NodeGroup(1, 8000, 32768, extended_of({"nvidia.com/gpu": 8})),
        NodeGroup(2, 4000, 16384))), id="groups"),
])
def test_a_pools_extended_resources_are_exported(pool):
    """A replay of a GPU cluster's history has its GPUs: the exported pool is the
    operator's, device counts included."""
    got = pool_model(pool, {"spec": {}}, ()).to_pool_spec()
    assert (got.nodes, got.groups, got.extended_names()) == (
        pool.nodes, pool.groups, ("nvidia.com/gpu",))
    assert [size.extended for size, _ in got.distinct()] == [
        size.extended for size, _ in pool.distinct()]
