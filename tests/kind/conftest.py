"""A kind cluster (pytest-kind) for the tests that must also hold on a real cluster.
kind needs a Docker daemon: where `docker info` does not answer, every test here
skips and says so, and nothing is downloaded."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


def _docker_answers() -> str | None:
    """None when a Docker daemon answers; otherwise why not."""
    if shutil.which("docker") is None:
        return "no docker command"
    try:
        r = subprocess.run(["docker", "info"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"docker info failed: {exc}"
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["no output"])[-1]
        return f"docker info: {last}"
    return None


@pytest.fixture(scope="session")
def kind_kubeconfig(request: pytest.FixtureRequest) -> Iterator[Path]:
    why = _docker_answers()
    if why is not None:
        pytest.skip(f"kind needs a Docker daemon, and none answers here ({why})")
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed (apt-get install kubectl)")
    from pytest_kind import KindCluster

    cluster = KindCluster("leasehold-tests", kubectl_path=Path(kubectl))
    cluster.create()
    try:
        yield cluster.kubeconfig_path
    finally:
        cluster.delete()
