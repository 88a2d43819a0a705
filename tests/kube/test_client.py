"""How the operator finds its cluster: a kubeconfig, or a pod's service account."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from leasehold.kube.client import KubeClient


def test_in_a_pod_the_service_account_reaches_the_api(emulated, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch):
    """A service-account directory laid out as Kubernetes mounts it (token, ca.crt),
    with the emulated server's token and CA, and $KUBERNETES_SERVICE_HOST/PORT."""
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text(emulated.token() + "\n")
    shutil.copy(emulated.data / "pki" / "ca.crt", account / "ca.crt")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(emulated.port))
    client = KubeClient.in_cluster(account)
    assert client is not None and client.server == f"https://127.0.0.1:{emulated.port}"

    async def namespaces() -> list[str]:
        async with client:
            listing = await client.get("/api/v1/namespaces")
        return [n["metadata"]["name"] for n in listing["items"]]
    assert "default" in asyncio.run(namespaces())


def test_outside_a_pod_there_is_no_service_account(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    assert KubeClient.in_cluster(tmp_path) is None
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    assert KubeClient.in_cluster(tmp_path) is None  # no token mounted


def test_a_kubeconfig_wins_over_the_service_account(emulated, monkeypatch):
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    client = KubeClient.from_environment(emulated.kubeconfig)
    assert client.server == emulated.url


def test_a_kubeconfigs_embedded_certificates_leave_no_copy_on_disk(emulated, tmp_path: Path,
                                                                   monkeypatch):
    """``certificate-authority-data`` (and a client key, were there one) are written to
    a file only for the TLS context to read: the file is gone once it has (a
    thousand operator starts left a thousand copies in /tmp)."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(scratch))
    assert "certificate-authority-data" in emulated.kubeconfig.read_text()
    client = KubeClient.from_kubeconfig(emulated.kubeconfig)

    async def namespaces() -> list[str]:
        async with client:
            listing = await client.get("/api/v1/namespaces")
        return [n["metadata"]["name"] for n in listing["items"]]
    assert "default" in asyncio.run(namespaces())
    assert list(scratch.iterdir()) == []
