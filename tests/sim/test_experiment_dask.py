"""Experiments on a Dask distributed cluster (issue 24): a real scheduler and real
worker processes on loopback, the same results.csv as local processes, byte for byte,
a unit whose worker was killed run again elsewhere."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from distributed import Client

from leasehold_emulator.sim.dask_units import dask_units
from leasehold_emulator.sim.experiment import (
    RESULTS,
    ExperimentError,
    run,
    validate_experiment,
)

ROOT = Path(__file__).resolve().parents[2]
#: 8 units of about 0.25 s each (1,000 jobs, two policies): long enough that a worker
#: is still busy when the first unit is in
SPEC = {
    "name": "dask",
    "workload": {"model": "lublin99", "preset": "papers", "jobs": 1000},
    "mix": {"local": 0.33},
    "cluster": {"pools": [{"name": "rp", "nodes": 32, "exclusive": True}]},
    "policies": ["nop", "moml"],
    "grid": {"mix.local": [0.2, 0.5]},
    "replications": 4,
}
#: a unit's own failure: lublin99's requests of up to 32 VMs on 4 nodes
TOO_BIG = {**SPEC, "workload": {**SPEC["workload"], "jobs": 100},
           "cluster": {"pools": [{"name": "rp", "nodes": 4, "exclusive": True}]},
           "grid": {}, "replications": 1}


def until(condition, what: str, seconds: float = 60.0):
    """``condition()``'s first true value, polled; fails naming ``what`` after
    ``seconds`` (a bound on a hang, not a guess of how long it takes)."""
    deadline = time.monotonic() + seconds
    while not (found := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)
    return found


@contextmanager
def dask_cluster(tmp: Path, workers: int) -> Iterator[tuple[str, list[subprocess.Popen]]]:
    """A `dask scheduler` on 127.0.0.1 (a free port) and ``workers`` `dask worker`
    processes of one thread, without nannies (a killed worker stays dead), each its
    own process: (the scheduler's address, the workers)."""
    file = tmp / "scheduler.json"
    logs = (tmp / "dask.log").open("w")
    procs = [subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
         "--port", "0", "--no-dashboard", "--scheduler-file", str(file)],
        stdout=logs, stderr=logs)]
    try:
        address = until(lambda: file.exists() and json.loads(file.read_text() or "{}")
                        .get("address"), "the scheduler's address")
        procs += [subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_worker", address, "--nthreads",
             "1", "--no-nanny", "--no-dashboard", "--host", "127.0.0.1"],
            stdout=logs, stderr=logs) for _ in range(workers)]
        yield address, procs[1:]
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
        logs.close()


@pytest.fixture(scope="module")
def expected(tmp_path_factory) -> bytes:
    """SPEC's results.csv from local processes (one: in the units' order as they run)."""
    out = tmp_path_factory.mktemp("local")
    run(validate_experiment(SPEC), out, processes=1)
    return (out / RESULTS).read_bytes()


def test_a_worker_killed_mid_run_loses_nothing_and_changes_nothing(tmp_path, expected):
    spec = validate_experiment(SPEC)
    finished = threading.Event()
    outcome: list[object] = []

    def progress(done: int, total: int) -> None:
        if done:
            finished.set()

    with dask_cluster(tmp_path, workers=2) as (address, workers), \
            Client(address, timeout=30) as observer:
        observer.wait_for_workers(2, timeout=60)
        pids = observer.run(os.getpid)
        assert sorted(pids.values()) == sorted(w.pid for w in workers)

        def experiment() -> None:
            try:
                outcome.append(run(spec, tmp_path / "dask", progress=progress,
                                   runner=dask_units(address)))
            except BaseException as exc:
                outcome.append(exc)

        thread = threading.Thread(target=experiment)
        thread.start()
        until(finished.is_set, "a first unit's rows")
        # a worker holding a unit, while the run goes on
        busy = until(lambda: next((w for w, keys in observer.processing().items() if keys),
                                  None) or outcome, "a worker with a unit")
        assert not outcome, "the run ended before a worker could be killed"
        os.kill(pids[busy], signal.SIGKILL)
        thread.join(timeout=120)
        assert not thread.is_alive()
        assert [w for w in workers if w.poll() is not None] == \
            [w for w in workers if w.pid == pids[busy]]
        assert outcome == [8]
        assert (tmp_path / "dask" / RESULTS).read_bytes() == expected
        # a unit's own error, on the worker left: the local run's message, not retried
        bad = validate_experiment(TOO_BIG)
        with pytest.raises(ExperimentError) as there:
            run(bad, tmp_path / "bad-local", processes=1)
        with pytest.raises(ExperimentError) as here:
            run(bad, tmp_path / "bad-dask", runner=dask_units(address))
        assert here.value.problems == there.value.problems
        assert "wants" in there.value.problems[0]


def test_a_local_cluster_gives_the_local_results(tmp_path, expected):
    assert run(validate_experiment(SPEC), tmp_path, runner=dask_units("local:2")) == 8
    assert (tmp_path / RESULTS).read_bytes() == expected


@pytest.mark.parametrize("cluster", ["local:0", "local:", "local:two"])
def test_a_local_cluster_wants_workers(cluster):
    with pytest.raises(ExperimentError) as found:
        dask_units(cluster)
    assert found.value.problems == [f"--cluster {cluster}: local:N wants N a whole number"
                                    f" of workers, at least 1"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_scheduler_that_does_not_answer_is_one_line_within_dasks_timeout(tmp_path):
    spec = tmp_path / "e.yaml"
    spec.write_text(json.dumps(SPEC))
    address = f"tcp://127.0.0.1:{free_port()}"  # nothing listens there
    began = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "leasehold.cli", "experiment", "run", str(spec),
                        "--cluster", address],
                       capture_output=True, text=True, cwd=ROOT, timeout=120,
                       env={**os.environ, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"})
    assert r.returncode == 2 and r.stdout == ""
    [line] = r.stderr.splitlines()
    assert line.startswith(f"error: --cluster {address}: no Dask scheduler answered within"
                           f" 2 s ("), line
    assert time.monotonic() - began < 30
    assert not (tmp_path / "results-dask").exists()  # nothing written
