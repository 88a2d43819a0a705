"""An experiment's units on a Dask distributed cluster (issue 24): ``leasehold
experiment run --cluster ADDRESS`` (a running scheduler's address) or ``--cluster
local:N`` (a ``LocalCluster`` of N local worker processes). Needs the extra ``dask``.

A unit is one task, :func:`.experiment.run_unit` on the experiment and the unit, its
rows sent back to this process, which writes them as the local pool's are
(:func:`.experiment.run`: the same results.csv, the same progress bar). A unit whose
worker died is put on another worker by the scheduler itself, up to its
``distributed.scheduler.allowed-failures`` times (3 by default; then Dask's
KilledWorker, which ends the run as a local worker's death does). A unit that fails
for its own reasons (an ExperimentError: a request larger than every pool) is not
retried (no ``retries``: it is the same seed, it would fail the same way) and ends the
run with its message, as in local processes.
"""

from __future__ import annotations

import importlib.metadata
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import dask.config
from dask.utils import parse_timedelta
from distributed import Client, Future, KilledWorker, LocalCluster, as_completed
from distributed.client import CancelledError

from .experiment import ExperimentError, ExperimentSpec, Rows, Runner, Unit, WorkerLost, run_unit

#: ``--cluster local`` or ``local:N``: a LocalCluster on this machine
LOCAL = "local"
DISTRIBUTION = "leasehold"


def local_workers(cluster: str) -> int | None:
    """N of ``local:N``; 0 for ``local`` (one worker per CPU); None for an address
    (Dask's to read: it says what is wrong with one when it connects)."""
    name, colon, count = cluster.partition(":")
    if name != LOCAL:
        return None
    if not colon:
        return 0
    if not count.isdigit() or int(count) < 1:
        raise ExperimentError([f"--cluster {cluster}: local:N wants N a whole number of"
                               f" workers, at least 1"])
    return int(count)


def dask_units(cluster: str) -> Runner:
    """Units on the Dask cluster ``cluster``: a scheduler's address
    (``tcp://10.0.0.5:8786``), or ``local[:N]``. ExperimentError for a bad ``local:N``,
    at once."""
    local_workers(cluster)

    @contextmanager
    def units_on_dask(spec: ExperimentSpec, units: list[Unit]) -> Iterator[Iterator[Rows]]:
        with _client(cluster) as client:
            _check_workers(client, cluster)
            # pure=False: a key of its own per submission, never another client's
            # result for an equal-looking task; no retries (above)
            futures = [client.submit(run_unit, spec, u, pure=False) for u in units]
            try:
                yield _results(futures, cluster)
            finally:
                client.cancel(futures)

    return units_on_dask


@contextmanager
def _client(cluster: str) -> Iterator[Client]:
    workers = local_workers(cluster)
    if workers is not None:
        # processes, one thread each: a unit is pure Python (the GIL). No memory limit
        # (a unit needs what it needs, as in a local process) and no dashboard (its
        # port would be taken by the second run on a machine)
        with LocalCluster(n_workers=workers or None, threads_per_worker=1, processes=True,
                          memory_limit=0, dashboard_address=None,
                          silence_logs=logging.ERROR) as local, Client(local) as client:
            yield client
        return
    timeout = parse_timedelta(dask.config.get("distributed.comm.timeouts.connect"), "s")
    try:
        client = Client(cluster, timeout=timeout)
    except (OSError, TimeoutError, ValueError) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ExperimentError([
            f"--cluster {cluster}: no Dask scheduler answered within {timeout:g} s ({why});"
            f" is it running, and is the address reachable from here? (the wait is Dask's"
            f" distributed.comm.timeouts.connect)"]) from None
    with client:
        yield client


def _check_workers(client: Client, cluster: str) -> None:
    """Every worker there now runs this machine's leasehold: another version's results
    would not be this one's. None yet: the units wait for them (said on stderr)."""
    try:
        ours = importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:  # a source tree: nothing to compare
        return
    found = client.run(importlib.metadata.version, DISTRIBUTION, on_error="return")
    if not found:
        print(f"warning: the Dask scheduler at {cluster} has no workers yet; the units"
              f" wait for them", file=sys.stderr)
    problems = [f"Dask worker {worker}: " + (
        f"runs leasehold {theirs}, this machine {ours}: install the same version there"
        if isinstance(theirs, str) else
        "has no leasehold installed: the workers need it (pip install leasehold, in the"
        " workers' image)") for worker, theirs in sorted(found.items()) if theirs != ours]
    if problems:
        raise ExperimentError(problems)


def _results(futures: list[Future], cluster: str) -> Iterator[Rows]:
    """Each unit's rows as it finishes."""
    for future in as_completed(futures):
        try:
            rows: Rows = future.result()
        except KilledWorker:
            raise WorkerLost(
                "Dask workers died running one unit more often than the scheduler allows"
                " (distributed.scheduler.allowed-failures, 3 by default; killed from"
                " outside, e.g. out of memory)",
                "workers with more memory, or fewer per machine") from None
        except CancelledError:
            raise WorkerLost(f"the Dask scheduler at {cluster} went away",
                             "once it answers again") from None
        except ImportError as exc:  # a worker that joined without leasehold
            raise ExperimentError([f"a Dask worker cannot import {exc.name}: the workers"
                                   f" need leasehold installed"]) from None
        yield rows
