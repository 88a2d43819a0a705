"""A real emulated cluster per test module (:class:`emulated.Emulated`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from emulated import KUBECTL, Emulated


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
