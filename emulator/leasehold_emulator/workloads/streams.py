"""Several request streams in one workload (seed 003 §5.2.2): a local stream per pool
and the gateway's external stream, each its own DAS-2 model and rate.

A :class:`Stream` is a DAS-2 model (:mod:`.das2`) with an origin and, for a local
stream, the pool its requests name (local requests stay in their cluster; an external
stream names no pool, so the dispatch strategy picks one). :func:`tuned` sets a
model's mean arrival rate, mean number of VMs and mean duration, as 003 sweeps them:

* rate ``λ`` (requests per second): the Weibull scale becomes ``1 / (λ·Γ(1 + 1/shape))``,
  the shape kept;
* mean duration ``d̄``: the log-normal ``mu`` becomes ``ln d̄ − sigma²/2`` (003 eq. 30);
* mean VMs ``v̄``: the two-stage log-uniform's middle bound ``med`` (003 Table 2's
  ``m``, which its Grid row sweeps from 2.5 to 3.5) is found by bisection so that the
  *exact* mean size (:func:`.jobs.expected_size`) is ``v̄``.

Each stream draws from its own random stream, derived from the replication's seed
and the stream's name (:func:`stream_seed`), so adding, removing or retuning one
stream leaves the others' requests as they were. A stream is generated in chunks of
:data:`CHUNK` jobs, each chunk from its own seed: a stream's *k*-th job is drawn
from the same numbers whatever the rate, so a sweep of the rate stretches or
squeezes the same jobs in time (common random numbers across grid points).
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from leasehold.core.model import Origin, Request

from . import das2
from .jobs import Job
from .mix import TypeMix, requests

#: jobs drawn per chunk (each chunk its own seed: see the module's docstring)
CHUNK = 1024


@dataclass(frozen=True, slots=True)
class Stream:
    """One request stream: ``model``'s jobs, all of ``origin``; a local stream's
    requests name ``pool``."""

    name: str
    model: das2.Das2
    origin: Origin
    pool: str | None = None


def stream_seed(seed: int, name: str) -> int:
    """The seed of stream ``name`` in replication ``seed``: numpy's SeedSequence of
    both (the name through CRC-32, stable across runs and platforms), one 32-bit word."""
    return int(np.random.SeedSequence([seed, zlib.crc32(name.encode())]).generate_state(1)[0])


def tuned(model: das2.Das2, rate: float | None = None, mean_vms: float | None = None,
          mean_duration: float | None = None) -> das2.Das2:
    """``model`` with the given mean rate (per second), mean VMs and mean duration
    (seconds); ValueError saying what cannot be reached."""
    if rate is not None:
        if not rate > 0:
            raise ValueError(f"rate must be > 0 per second, got {rate}")
        model = replace(model, scale=1 / (rate * math.gamma(1 + 1 / model.shape)))
    if mean_duration is not None:
        if not mean_duration > 0:
            raise ValueError(f"mean duration must be > 0 s, got {mean_duration}")
        model = replace(model, mu=math.log(mean_duration) - model.sigma**2 / 2)
    if mean_vms is not None:
        model = replace(model, med=_med_for(model, mean_vms))
    return model


def _med_for(model: das2.Das2, mean_vms: float) -> float:
    """The ``med`` in [low, high] whose exact mean size is ``mean_vms`` (the mean grows
    with ``med``: both stages' sizes do)."""
    low, high = model.low, model.high
    least, most = (replace(model, med=m).mean_size() for m in (low, high))
    if not least - 1e-9 <= mean_vms <= most + 1e-9:
        raise ValueError(f"mean VMs {mean_vms:g} cannot be reached with these sizes: between"
                         f" {least:.3g} and {most:.3g} (sizes up to {round(2**high)} VMs)")
    for _ in range(100):
        mid = (low + high) / 2
        if replace(model, med=mid).mean_size() < mean_vms:
            low = mid
        else:
            high = mid
    med = (low + high) / 2
    got = replace(model, med=med).mean_size()
    if abs(got - mean_vms) > 1e-6 * max(1.0, mean_vms):
        # the mean jumps where a bound sits on a rounding boundary (an interval that
        # shrinks to a point rounds at once): no med gives what lies in the jump
        raise ValueError(f"mean VMs {mean_vms:g} cannot be reached with these sizes: the"
                         f" mean jumps past it at med = {med:.6g} (to {got:.6g})")
    return med


def stream_jobs(model: das2.Das2, span: float, seed: int) -> list[Job]:
    """The jobs of ``model`` arriving in ``[0, span)`` seconds, chunk by chunk (chunk
    ``k`` from the SeedSequence of ``(seed, k)``), each chunk's arrivals after the
    previous chunk's last."""
    out: list[Job] = []
    offset, k = 0, 0
    while True:
        chunk_seed = int(np.random.SeedSequence([seed, k]).generate_state(1)[0])
        jobs = das2.generate(CHUNK, chunk_seed, model)
        for job in jobs:
            arrival = offset + job.arrival
            if arrival >= span:
                return out
            out.append(replace(job, arrival=arrival))
        if jobs[-1].arrival == 0:  # a whole chunk in the first second: no end in sight
            raise ValueError(f"{CHUNK} jobs arrive within a second; lower the rate")
        offset += jobs[-1].arrival
        k += 1


def stream_requests(streams: Sequence[Stream], span: float, seed: int,
                    mix: TypeMix | None = None) -> list[Request]:
    """Every stream's requests over ``span`` seconds, in submission order (streams in
    the order given at one instant). A local stream's requests are local
    (``DeadlineNonPreemptable`` at arrival, as :mod:`.mix` makes them) and name its
    pool; an external stream's are typed by ``mix``'s weights, slack, cpu and memory
    (its ``local`` share is not used). Names are ``<stream>-<index>``."""
    mix = mix or TypeMix()
    out: list[tuple[float, int, Request]] = []
    for order, stream in enumerate(streams):
        s = stream_seed(seed, stream.name)
        jobs = stream_jobs(stream.model, span, s)
        local = 1.0 if stream.origin == Origin.LOCAL else 0.0
        # the typing draws from its own seed: retyping keeps the jobs
        typed = requests(jobs, replace(mix, local=local), s ^ 0x5F3759DF)
        out += [(r.submitted, order, replace(r, name=f"{stream.name}-{i:05d}", pool=stream.pool))
                for i, r in enumerate(typed)]
    out.sort(key=lambda x: (x[0], x[1]))
    return [r for _, _, r in out]
