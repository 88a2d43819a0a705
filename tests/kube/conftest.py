"""Fixtures the operator's tests on the emulated cluster share."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from operated import Operated, one_node


@pytest.fixture
def small(tmp_path: Path) -> Iterator[Operated]:
    """One emulated node with the operator up (:func:`operated.one_node`), stopped
    after the test."""
    c = one_node(tmp_path)
    try:
        yield c
    finally:
        c.stop_all()
