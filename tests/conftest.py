"""Shared fixtures: where the real workload traces live."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """`shared/data/` beside the checkout (CI clones main with shared/ next to it)."""
    path = Path(os.environ.get("LEASEHOLD_SHARED_DATA", ROOT.parent / "shared" / "data"))
    if not (path / "SDSC-BLUE-haizea-30days.swf.gz").exists():
        pytest.skip(f"workload traces not found in {path} (set LEASEHOLD_SHARED_DATA)")
    return path
