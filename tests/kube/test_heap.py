"""Freed memory given back: what a thread freed between what it keeps leaves the
process's resident set once the heap is trimmed."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from leasehold.kube.heap import trimmed, trimmer

MB = 1 << 20


def _rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


def _churn(kept: list[bytes]) -> None:
    """In a thread (its own arena): 80 MB in blocks malloc serves, all freed but
    the last, which keeps the heap's top where it is."""
    blocks = [bytes(2000) + str(i).encode() for i in range(40_000)]
    kept.append(blocks[-1])


@pytest.fixture
def churned() -> list[bytes]:
    if trimmer() is None:
        pytest.skip("this C library has no malloc_trim (not glibc): nothing to give back")
    kept: list[bytes] = []
    worker = threading.Thread(target=_churn, args=(kept,))
    worker.start()
    worker.join()
    return kept


def test_trimming_gives_back_what_a_thread_freed(churned):
    before = _rss()
    trim = trimmer()
    assert trim is not None
    trim()
    assert _rss() < before - 40 * MB, (before / MB, _rss() / MB)


def test_the_operator_trims_on_its_own(churned):
    async def run() -> int:
        before = _rss()
        task = asyncio.create_task(trimmed(every=0.01))
        deadline = time.monotonic() + 30
        try:
            while _rss() > before - 40 * MB and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
        finally:
            task.cancel()
        return before - _rss()

    assert asyncio.run(run()) >= 40 * MB


_COUNT_COLLECTIONS = """
import gc, sys
from leasehold.kube.heap import YOUNG_EVERY, tune_collector
if sys.argv[1] == "tuned":
    tune_collector()
    assert gc.get_freeze_count() > 0, "start-up objects not frozen"
before = [s["collections"] for s in gc.get_stats()]
kept = [[i] for i in range(200_000)]  # containers the collector tracks, all kept
print(*(s["collections"] - b for s, b in zip(gc.get_stats(), before)))
"""


@pytest.mark.parametrize(("mode", "young_at_most"), [("default", None), ("tuned", 11)],
                         ids=["cpython-defaults", "tuned"])
def test_the_collector_runs_less_often_once_tuned(mode, young_at_most):
    """200,000 objects kept: at CPython's defaults (a young collection every 700
    allocations) ~285 young collections; tuned, 200,000 / 20,000."""
    out = subprocess.run([sys.executable, "-c", _COUNT_COLLECTIONS, mode], check=True,
                         capture_output=True, text=True).stdout.split()
    young, _, full = (int(x) for x in out)
    if young_at_most is None:
        assert young >= 250
    else:
        assert young <= young_at_most
        assert full == 0
