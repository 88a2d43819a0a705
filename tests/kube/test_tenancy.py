"""Tenants against each other (issue 17), end to end on the emulated cluster: one
tenant's flood of Leases does not delay another's decisions (the admins' caps per
namespace), and Leases beyond a cap enter in order as room comes; a preempted
tenant is not told who preempted it; the operator's metrics are served only where
it is told, over HTTPS when given a certificate."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import json
import shutil
import ssl
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from emulated import until
from leasehold.kube.client import KubeClient
from operated import Operated, free_port, one_node_pool, operated

LEASES = "/apis/leasehold.io/v1alpha1/namespaces/{ns}/leases"


def lease(name: str, ns: str, cpu: int = 1) -> dict[str, Any]:
    return {"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"type": "BestEffortSuspendable", "vms": 1, "duration": "1h",
                     "resources": {"cpu": cpu, "memory": "256Mi"}}}


def started(tmp_path: Path, tenancy: dict[str, Any], pools: Path | None = None) -> Operated:
    """The emulated cluster and the operator with ``tenancy`` as its admins' say, its
    first recovery done, and the namespaces ``quiet`` and ``flood`` (and the
    testbed's ``lab`` and ``owners``)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    config = tmp_path / "operator.yaml"
    config.write_text(yaml.safe_dump({"tenancy": tenancy}))
    c = operated(tmp_path / "cluster", "moml", pools or one_node_pool(tmp_path), 60.0, 0,
                 "--config", str(config))
    try:
        c.until(lambda: c.recoveries() == 1)
        c.kubectl("create", "namespace", "quiet")
        c.kubectl("create", "namespace", "flood")
    except BaseException:
        c.stop_all()
        raise
    return c


DECIDED = ("Scheduled", "Running", "Rejected")


async def time_to_decision(c: Operated, flood: int) -> tuple[float, float]:
    """``flood`` Leases created in ``flood`` (32 at a time), then one in ``quiet``:
    the seconds the flood took to create, and from the quiet Lease's creation until
    its status shows the core's decision."""
    async with KubeClient.from_kubeconfig(c.kubeconfig) as client:
        gate = asyncio.Semaphore(32)

        async def one(i: int) -> None:
            async with gate:
                await client.create(LEASES.format(ns="flood"), lease(f"f{i:05d}", "flood"))
        began = time.monotonic()
        await asyncio.gather(*(one(i) for i in range(flood)))
        created = time.monotonic() - began
        began = time.monotonic()
        await client.create(LEASES.format(ns="quiet"), lease("probe", "quiet"))
        while time.monotonic() - began < 120:
            got = await client.get(LEASES.format(ns="quiet") + "/probe")
            if (got.get("status") or {}).get("phase") in DECIDED:
                return created, time.monotonic() - began
            await asyncio.sleep(0.02)
    raise AssertionError("the quiet namespace's Lease was not decided within 120 s")


def all_told(c: Operated, ns: str) -> list[dict[str, Any]] | None:
    """The Leases of ``ns`` once every one has a status."""
    leases = c.get("lhl", "-n", ns)["items"]
    return leases if leases and all(x.get("status") for x in leases) else None


#: the flood: one tenant's Leases, all at once, with its namespace capped at CAP
FLOOD, CAP = 10_000, 20


def test_one_tenants_flood_does_not_delay_another_namespaces_decision(tmp_path):
    """The quiet namespace's Lease is decided about as fast with the flood as
    without: the flood's Leases beyond the cap wait at the edge, unplanned, with a
    condition saying which cap holds them."""
    tenancy = {"maxPendingLeases": CAP}
    figures = {}
    held: list[dict[str, Any]] = []
    for flood in (0, FLOOD):
        c = started(tmp_path / f"flood-{flood}", tenancy)
        try:
            figures[flood] = asyncio.run(time_to_decision(c, flood))
            if flood:  # every Lease of the flood told where it stands
                leases = c.until(lambda c=c: all_told(c, "flood"), 60)
                held = [x for x in leases
                        if x["status"]["conditions"][0].get("reason") == "NamespaceCap"]
        finally:
            c.stop_all()
    (_, alone), (created, flooded) = figures[0], figures[FLOOD]
    print(f"\ntime to decision in another namespace: {alone:.3f} s alone, {flooded:.3f} s"
          f" after a flood of {FLOOD} Leases (created in {created:.1f} s; cap {CAP});"
          f" {len(held)} of the flood held back")
    assert flooded <= max(3 * alone, alone + 1.0), (alone, flooded)
    assert len(held) >= FLOOD - CAP - 2  # two running on the node
    condition = held[0]["status"]["conditions"][0]
    assert condition["type"] == "Admitted" and condition["status"] == "False"
    assert f"(maxPendingLeases: {CAP})" in condition["message"]
    assert held[0]["status"]["phase"] == "Pending"


def test_leases_beyond_the_cap_enter_in_order_as_room_comes(tmp_path):
    """One node, each Lease the whole of it; at most two pending per namespace:
    a runs, b and c are scheduled after it, d and e wait at the edge, and still do
    after a restart. b deleted, d enters (not e); a Lease held back can be
    deleted."""
    c = started(tmp_path, {"maxPendingLeases": 2})
    try:
        def phases() -> dict[str, str]:
            return {x["metadata"]["name"]: x.get("status", {}).get("phase", "")
                    for x in c.get("lhl", "-n", "flood")["items"]}

        def reason(name: str) -> str | None:
            conditions = c.lease("flood", name).get("status", {}).get("conditions") or [{}]
            return conditions[0].get("reason")
        for name in "abcde":
            c.apply(lease(name, "flood", cpu=2))
        c.until(lambda: phases() == {"a": "Running", "b": "Scheduled", "c": "Scheduled",
                                     "d": "Pending", "e": "Pending"}
                and reason("d") == reason("e") == "NamespaceCap")
        # a restarted operator holds them back again (they were never journaled)
        c.operator.terminate()
        c.operator.wait(timeout=20)
        c.start_operator("moml", 0, "--config", str(tmp_path / "operator.yaml"))
        c.until(lambda: c.recoveries() == 2)
        # another namespace is not held by this one's cap
        c.apply(lease("other", "quiet", cpu=2))
        c.until(lambda: c.lease("quiet", "other").get("status", {}).get("phase")
                == "Scheduled")
        c.kubectl("delete", "lhl", "-n", "flood", "b")
        c.until(lambda: phases() == {"a": "Running", "c": "Scheduled", "d": "Scheduled",
                                     "e": "Pending"} and reason("e") == "NamespaceCap")
        c.kubectl("delete", "lhl", "-n", "flood", "e")
        c.kubectl("delete", "lhl", "-n", "flood", "a")
        c.until(lambda: phases() == {"c": "Running", "d": "Scheduled"})
    finally:
        c.stop_all()


def test_a_held_leases_relative_times_count_from_when_it_came(tmp_path):
    """A Lease held back at its namespace's cap, then let in: its ``ready: 10m`` is
    ten (emulated) minutes after it came, not after it entered (which would move it
    as late as the cap held it)."""
    c = started(tmp_path, {"maxPendingLeases": 1})
    try:
        # a takes half the node for an hour, b all of it after a; c fits beside a
        c.apply(lease("a", "flood"))
        c.until(lambda: c.lease("flood", "a").get("status", {}).get("phase") == "Running")
        c.apply(lease("b", "flood", cpu=2))
        c.until(lambda: c.lease("flood", "b").get("status", {}).get("phase") == "Scheduled")
        late = lease("c", "flood")
        late["spec"].update(ready="10m", duration="1m")
        c.apply(late)
        came = c.until(lambda: c.lease("flood", "c").get("status", {}).get("phase")
                       == "Pending" and time.time())
        until(lambda: time.time() > came + 4, 6)  # held 4 s: 4 emulated minutes
        c.kubectl("delete", "lhl", "-n", "flood", "b")
        status = c.until(lambda: (c.lease("flood", "c").get("status") or {}).get(
            "reservation") and c.lease("flood", "c")["status"])
        start = datetime.datetime.fromisoformat(status["reservation"]["start"]).timestamp()
        # 10 emulated minutes are 10 s after it came (give or take the seconds of stamps)
        assert start - came < 10 + 2, (start - came, status)
    finally:
        c.stop_all()


# ---- what a preempted tenant is told ----------------------------------------------
@pytest.mark.parametrize("disclose", [False, True], ids=["default", "disclosed"])
def test_a_victim_learns_another_tenants_lease_only_if_the_admins_allow(tmp_path, disclose):
    """An external Lease in ``lab`` holds the node; a local one in ``owners`` takes it.
    Neither side's events, nor the victim's status, name the other tenant's namespace
    or Lease, unless ``discloseOtherTenants``."""
    c = started(tmp_path, {"localNamespaces": ["owners"], "discloseOtherTenants": disclose})
    try:
        c.apply(lease("v-secret", "lab", cpu=2))
        c.until(lambda: c.lease("lab", "v-secret").get("status", {}).get("phase") == "Running")
        c.apply({"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
                 "metadata": {"name": "p-secret", "namespace": "owners"},
                 "spec": {"type": "DeadlineNonPreemptable", "vms": 1, "duration": "10m",
                          "resources": {"cpu": 2, "memory": "256Mi"}}})

        def told() -> tuple[list[str], list[str]] | None:
            """The victim's events and status, the preemptor's events, once both
            sides have their preemption events."""
            events = c.get("events", "-A")["items"]
            victim = [e["message"] for e in events if e["metadata"]["namespace"] == "lab"]
            boss = [e["message"] for e in events if e["metadata"]["namespace"] == "owners"]
            if not ([e for e in events if e["reason"] == "Preempted"]
                    and [e for e in events if e["reason"] == "PreemptedOthers"]):
                return None
            return [*victim, json.dumps(c.lease("lab", "v-secret")["status"])], boss
        victim, boss = c.until(told)
        if disclose:
            assert [m for m in victim if "owners/p-secret" in m], victim
            assert [m for m in boss if "lab/v-secret" in m], boss
        else:
            assert not [m for m in victim if "owners" in m or "p-secret" in m], victim
            assert not [m for m in boss if "lab" in m or "v-secret" in m], boss
            assert [m for m in victim if "a Lease of another namespace" in m], victim
    finally:
        c.stop_all()


# ---- the operator's metrics --------------------------------------------------------

def answers(url: str, context: ssl.SSLContext | None = None) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5, context=context) as r:
            return r.status == 200
    except OSError:
        return False


def self_signed(where: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 (its own CA) and its key, as PEM files."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "leasehold-metrics")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = where / "tls.crt", where / "tls.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


@pytest.mark.parametrize(("flags", "served", "refused"), [
    ((), "127.0.0.1", "127.0.0.2"),
    (("--metrics-address", "127.0.0.2"), "127.0.0.2", "127.0.0.1"),
], ids=["default", "told"])
def test_metrics_are_served_only_where_the_operator_is_told(tmp_path, flags, served, refused):
    """127.0.0.2 is this machine too (all of 127/8 is loopback): an operator bound to
    every address (0.0.0.0) answers there, one bound to 127.0.0.1 does not. The log
    says where it is bound."""
    port = free_port()
    c = operated(tmp_path, "moml", one_node_pool(tmp_path), 60.0, port, *flags)
    try:
        c.until(lambda: f"metrics at http://{served}:{port}/metrics"
                in (c.data / "operator.log").read_text())
        assert answers(f"http://{served}:{port}/healthz")
        assert not answers(f"http://{refused}:{port}/healthz")
    finally:
        c.stop_all()


def test_metrics_over_https_are_scraped_by_a_real_prometheus(tmp_path):
    """With a certificate, /metrics is HTTPS only: a client that trusts the
    certificate reads it, plain HTTP gets nothing, and a real Prometheus scrapes it
    with the certificate as its CA."""
    cert, key = self_signed(tmp_path)
    port = free_port()
    c = operated(tmp_path, "moml", one_node_pool(tmp_path), 60.0, port,
                 "--metrics-cert", str(cert), "--metrics-key", str(key))
    try:
        c.until(lambda: f"metrics at https://127.0.0.1:{port}/metrics"
                in (c.data / "operator.log").read_text())
        trusting = ssl.create_default_context(cafile=str(cert))
        assert answers(f"https://127.0.0.1:{port}/metrics", trusting)
        assert not answers(f"http://127.0.0.1:{port}/metrics")
        assert not answers(f"https://127.0.0.1:{port}/metrics", ssl.create_default_context())
        prometheus = shutil.which("prometheus")
        if prometheus is None:
            pytest.skip("prometheus is not installed: the HTTPS scrape by a real one")
        config = tmp_path / "prometheus.yml"
        config.write_text(yaml.safe_dump({
            "global": {"scrape_interval": "1s"},
            "scrape_configs": [{"job_name": "leasehold", "scheme": "https",
                                "tls_config": {"ca_file": str(cert)},
                                "static_configs": [{"targets": [f"127.0.0.1:{port}"]}]}]}))
        web = free_port()
        with (tmp_path / "prometheus.log").open("ab") as out:
            proc = subprocess.Popen(
                [prometheus, f"--config.file={config}",
                 f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                 f"--web.listen-address=127.0.0.1:{web}"], stdout=out,
                stderr=subprocess.STDOUT)
        try:
            def scraped() -> bool:
                query = urllib.parse.urlencode({"query": "leasehold_operator_active == 1"})
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{web}/api/v1/query?"
                                                f"{query}", timeout=5) as r:
                        return bool(json.load(r)["data"]["result"])
                except OSError:
                    return False
            until(scraped, 60, 0.2, lambda: (tmp_path / "prometheus.log").read_text()[-2000:])
        finally:
            proc.terminate()
            proc.wait(timeout=20)
    finally:
        c.stop_all()


@pytest.mark.parametrize(("flags", "message"), [
    (("--metrics-cert", "{d}/none.crt", "--metrics-key", "{d}/none.key"),
     "--metrics-cert {d}/none.crt, --metrics-key {d}/none.key: cannot use them: No such"
     " file or directory"),
    (("--metrics-cert", "{d}/none.crt"), "--metrics-cert and --metrics-key: give both"),
    (("--metrics-address", "nowhere.invalid"), "cannot listen on nowhere.invalid"),
], ids=["missing-files", "cert-alone", "bad-address"])
def test_a_metrics_option_it_cannot_use_is_one_line_at_start_up(tmp_path, flags, message):
    kubeconfig = tmp_path / "kubeconfig"  # never reached: the metrics options come first
    kubeconfig.write_text("apiVersion: v1\nkind: Config\ncurrent-context: x\n"
                          "contexts: [{name: x, context: {cluster: x, user: x}}]\n"
                          "clusters: [{name: x, cluster: {server: 'https://127.0.0.1:9'}}]\n"
                          "users: [{name: x, user: {token: t}}]\n")
    r = subprocess.run([sys.executable, "-m", "leasehold.cli", "operator", "--kubeconfig",
                        str(kubeconfig), "--metrics-port", str(free_port()),
                        *(f.format(d=tmp_path) for f in flags)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and message.format(d=tmp_path) in lines[0], r.stderr
