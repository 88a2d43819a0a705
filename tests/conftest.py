"""Shared fixtures: where the real workload traces live, and an emulated cluster."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from emulated import KUBECTL, Emulated

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """`shared/data/` beside the checkout (CI clones main with shared/ next to it)."""
    path = Path(os.environ.get("LEASEHOLD_SHARED_DATA", ROOT.parent / "shared" / "data"))
    if not (path / "SDSC-BLUE-haizea-30days.swf.gz").exists():
        pytest.skip(f"workload traces not found in {path} (set LEASEHOLD_SHARED_DATA)")
    return path


@pytest.fixture(scope="module")
def emulated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Emulated]:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed (apt-get install kubectl)")
    cluster = Emulated(tmp_path_factory.mktemp("cluster"))
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def api_server(tmp_path: Path) -> Iterator[Emulated]:
    """A fresh emulated API server of the test's own (no kubectl needed)."""
    server = Emulated(tmp_path / "cluster")
    server.start()
    try:
        yield server
    finally:
        server.stop()
