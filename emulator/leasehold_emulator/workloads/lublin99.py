"""Lublin and Feitelson's workload model for rigid parallel jobs, as the authors'
program ``m_lublin99.c`` generates it (U. Lublin, D. Feitelson, "The workload on
parallel supercomputers: modeling the characteristics of rigid jobs", JPDC 2003).

Per job, in the program's order of random draws:

* **arrival**: two job types, batch and interactive, each with its own arrival
  process; the next job is of the type whose next arrival comes first. A type's
  inter-arrival time is ``exp(g)`` seconds with ``g ~ gamma(aarr·arar, barr)``
  (redrawn above 13), spent as *points* over a day of 48 half-hour buckets whose
  weights follow the gamma(anum, bnum) density over the hours 11 to 35 folded back
  onto one day: busy buckets cost more points, so arrivals crowd into the day.
* **size**: serial with probability ``serial_prob``; otherwise ``2^u`` with ``u``
  from a two-stage uniform (``[ulow, umed]`` with probability ``uprob``, else
  ``[umed, uhi]``), ``u`` rounded first for a power of two (probability
  ``pow2_prob``).
* **runtime**: ``exp(h)`` seconds with ``h`` from a hyper-gamma whose first
  component has probability ``p = pa·nodes + pb`` (clipped to [0, 1]) — larger jobs
  run longer — redrawn above 12.

Gamma variates are drawn as the program does (Jain 1991: a sum of exponentials for
the integer part of alpha, a beta-based draw for the rest), and the gamma CDF by the
series and continued fraction of Numerical Recipes. With ``rng="drand48"`` the
uniforms are the C library's ``drand48`` stream after ``srand48(seed)``, so a seed
gives exactly the jobs the C program prints for it (a test compares them with its
output); with ``rng="numpy"`` (the default) they come from numpy's PCG64.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

import numpy as np

from .jobs import Job, expected_size, swf_text

#: program constants: log-runtime and log-inter-arrival caps, the day's buckets
TOO_MUCH_TIME = 12.0
TOO_MUCH_ARRIVE_TIME = 13.0
BUCKETS = 48
SECONDS_IN_BUCKET = 24 * 3600 // BUCKETS
CYCLIC_DAY_START = 11
ITER_MAX = 1000
EPS = 1e-10
#: the program's job types (its output column 15)
INTERACTIVE, BATCH = 0, 1
#: the batch arrival clock when jobs are typeless: never the next
_NEVER = 2**64 - 1


@dataclass(frozen=True, slots=True)
class TypeParams:
    """One job type's parameters (the program's ``#define``s)."""

    # size: serial and power-of-two probabilities, two-stage uniform of log2(nodes)
    serial_prob: float
    pow2_prob: float
    ulow: float
    umed: float
    uhi: float
    uprob: float
    # runtime: hyper-gamma of log(seconds), first-component probability pa·nodes + pb
    a1: float
    b1: float
    a2: float
    b2: float
    pa: float
    pb: float
    # arrivals: gamma of log(inter-arrival) at rush hours (alpha scaled by arar to
    # all hours), and gamma(anum, bnum) over the hours for the daily cycle
    aarr: float
    barr: float
    anum: float
    bnum: float
    arar: float


BATCH_PARAMS = TypeParams(0.2927, 0.6686, 1.2, 5, 7, 0.875,
                          6.57, 0.823, 639.1, 0.0156, -0.003, 0.6986,
                          6.0415, 0.8531, 6.1271, 5.2740, 1.0519)
INTERACTIVE_PARAMS = TypeParams(0.1541, 0.625, 1, 3, 5.5, 0.705,
                                3.8351, 0.6605, 7.073, 0.6856, -0.0118, 0.9156,
                                6.5510, 0.6621, 8.9186, 3.6680, 0.9797)
#: the whole sample fitted as one type (the program's INCLUDE_JOBS_TYPE 0)
TYPELESS_PARAMS = TypeParams(0.244, 0.576, 0.8, 4.5, 7, 0.86,
                             4.2, 0.94, 312, 0.03, -0.0054, 0.78,
                             10.2303, 0.4871, 8.1737, 3.9631, 1.0225)


@dataclass(frozen=True, slots=True)
class Lublin99:
    """The model: per-type parameters, whether jobs are typed, and the hour of day
    the workload starts at. Defaults are the program's (a 128-node machine)."""

    batch: TypeParams = BATCH_PARAMS
    interactive: TypeParams = INTERACTIVE_PARAMS
    #: False: every job is interactive, drawn from ``typeless``
    typed: bool = True
    typeless: TypeParams = TYPELESS_PARAMS
    start_hour: int = 0
    #: multiplies every inter-arrival time (as points spent over the day's buckets,
    #: so the daily cycle stays) and every runtime; 1 is the program
    arrival_scale: float = 1.0
    runtime_scale: float = 1.0

    def params(self) -> tuple[TypeParams, TypeParams]:
        """Parameters indexed by job type (INTERACTIVE, BATCH)."""
        if self.typed:
            return self.interactive, self.batch
        return self.typeless, self.typeless


#: the papers' machine and jobs (see :data:`PRESETS`)
PAPERS_NODES = 32
PAPERS = Lublin99(
    typed=False,
    typeless=replace(TYPELESS_PARAMS, uhi=5.0, umed=2.5, uprob=0.8604818732033304),
    runtime_scale=1.887,
    arrival_scale=0.4458,
)
#: Named models.
#:
#: * ``program``: the C program's defaults (batch and interactive jobs, 128 nodes);
#: * ``typeless``: its single set fitted to the whole sample (INCLUDE_JOBS_TYPE 0);
#: * ``papers``: seeds 000 and 001 (§7.2), which configured Lublin99 for "a
#:   two-week-long workload that includes 3000 parallel requests" on 32 nodes and
#:   "adjusted the average number of VMs of leases to be 4 and the average duration
#:   of requests to be 2 hours", without saying how. Calibrated here from the
#:   typeless set (GridSim's Lublin99 example uses it): ``uhi = log2(32)``, ``umed =
#:   uhi - 2.5`` as the program advises, ``uprob`` fitted so that the *expected*
#:   size is exactly 4 (:func:`fitted_sizes`); runtimes scaled by 7,200 s over the
#:   mean of 200,000 jobs (seed 0); inter-arrival times scaled, by fixed-point
#:   iteration on 100,000 jobs (seed 0), to 1,209,600 s / 3,000 apart on average.
#:   The arrival process is bursty: 3,000 jobs span 12.6-14.7 days for seeds 1-3.
PRESETS: dict[str, Lublin99] = {
    "program": Lublin99(),
    "typeless": Lublin99(typed=False),
    "papers": PAPERS,
}


# ---- uniform streams ----------------------------------------------------------------
class Drand48:
    """The C library's ``drand48``: a 48-bit linear congruential generator
    (POSIX: a = 0x5DEECE66D, c = 11; ``srand48`` keeps the low 32 bits of the seed
    and appends 0x330E). Its 48 bits fit a double's mantissa, so ``x / 2^48`` is
    exactly what glibc returns."""

    __slots__ = ("_x",)
    _A, _C, _MASK = 0x5DEECE66D, 0xB, (1 << 48) - 1

    def __init__(self, seed: int) -> None:
        self._x = ((seed & 0xFFFFFFFF) << 16) | 0x330E

    def __call__(self) -> float:
        self._x = (self._A * self._x + self._C) & self._MASK
        return self._x / 281474976710656.0  # 2**48


def numpy_uniforms(seed: int, block: int = 4096) -> Callable[[], float]:
    """Uniforms in [0, 1) from numpy's PCG64, drawn a block at a time."""
    gen = np.random.default_rng(seed)

    def stream() -> Iterator[float]:
        while True:
            yield from gen.random(block).tolist()

    return stream().__next__


# ---- the program's distributions -------------------------------------------------------
class _Draws:
    """The program's random-variate functions over one uniform stream."""

    __slots__ = ("u",)

    def __init__(self, uniform: Callable[[], float]) -> None:
        self.u = uniform

    def gamma(self, alpha: float, beta: float) -> float:
        gam = 0.0
        whole = int(alpha)
        if alpha >= 1:
            acc = 0.0
            for _ in range(whole):  # a sum of exponentials: -beta * sum(log u)
                acc += math.log(self.u())
            gam += -acc * beta
        diff = alpha - whole
        if diff > 0:
            gam += self._gamma_below_1(diff, beta)
        return gam

    def _gamma_below_1(self, alpha: float, beta: float) -> float:
        x = self._beta_below_1(alpha, 1 - alpha)
        y = -math.log(self.u())
        return beta * x * y

    def _beta_below_1(self, alpha: float, beta: float) -> float:
        while True:
            x = math.pow(self.u(), 1 / alpha)
            y = math.pow(self.u(), 1 / beta)
            if x + y <= 1:
                return x / (x + y)

    def hyper_gamma(self, a1: float, b1: float, a2: float, b2: float, p: float) -> float:
        if self.u() <= p:
            return self.gamma(a1, b1)
        return self.gamma(a2, b2)

    def two_stage_uniform(self, low: float, med: float, hi: float, prob: float) -> float:
        a, b = (low, med) if self.u() <= prob else (med, hi)
        return self.u() * (b - a) + a


def gamma_cdf(x: float, alpha: float, beta: float) -> float:
    """The gamma(alpha, beta) CDF at ``x`` by the program's Numerical Recipes code
    (kept, rather than scipy's, so that the daily weights are bit for bit its own)."""
    x /= beta
    if x < alpha + 1:
        return _series(x, alpha)
    return 1 - _fraction(x, alpha)


def _series(x: float, a: float) -> float:
    total = monom = 1 / a
    aa = a
    for _ in range(ITER_MAX):
        aa += 1
        monom *= x / aa
        total += monom
        if monom < total * EPS:
            return total * math.exp(-x + a * math.log(x) - math.lgamma(a))
    return -1.0


def _fraction(x: float, a: float) -> float:
    gold, a0, a1, b0, b1, fac = 0.0, 1.0, x, 0.0, 1.0, 1.0
    for i in range(1, ITER_MAX + 1):
        ana = i - a
        a0 = (a1 + a0 * ana) * fac
        b0 = (b1 + b0 * ana) * fac
        anf = i * fac
        a1 = x * a0 + anf * a1
        b1 = x * b0 + anf * b1
        if a1 != 0.0:
            fac = 1 / a1
            g = b1 * fac
            if abs((g - gold) / g) < EPS:
                return g * math.exp(-x + a * math.log(x) - math.lgamma(a))
            gold = g
    return 2.0


def daily_weights(anum: float, bnum: float) -> list[float]:
    """Each half-hour bucket's share of arrivals, normalised to mean 1."""
    weights = [0.0] * BUCKETS
    total = 0.0
    for i in range(CYCLIC_DAY_START, BUCKETS + CYCLIC_DAY_START):
        w = gamma_cdf(i + 0.5, anum, bnum) - gamma_cdf(i - 0.5, anum, bnum)
        weights[(i - 1) % BUCKETS] = w
        total += w
    mean = total / BUCKETS
    return [w / mean for w in weights]


# ---- the generator -------------------------------------------------------------------
class _Arrivals:
    """Both types' arrival clocks (the program's ``calc_next_arrive`` state)."""

    def __init__(self, draws: _Draws, params: tuple[TypeParams, TypeParams],
                 start_hour: int, typed: bool, scale: float) -> None:
        self.draws, self.scale = draws, scale
        self.alpha = [p.aarr * p.arar for p in params]
        self.beta = [p.barr for p in params]
        self.weights = [daily_weights(p.anum, p.bnum) for p in params]
        self.bucket = [start_hour * BUCKETS // 24] * 2
        self.clock = [0, 0]
        self.points = [0.0, 0.0]
        self.remainder = [0.0, 0.0]
        self.advance(BATCH)
        self.advance(INTERACTIVE)
        if not typed:
            self.clock[BATCH] = _NEVER

    def advance(self, kind: int) -> None:
        while True:
            gam = self.draws.gamma(self.alpha[kind], self.beta[kind])
            if gam <= TOO_MUCH_ARRIVE_TIME:
                break
        weights, bucket = self.weights[kind], self.bucket[kind]
        points = self.points[kind] + math.exp(gam) * self.scale / SECONDS_IN_BUCKET
        wait = 0.0
        while points > weights[bucket]:  # pay each bucket's points, move on
            points -= weights[bucket]
            bucket = (bucket + 1) % BUCKETS
            wait += SECONDS_IN_BUCKET
        remainder = points / weights[bucket]
        wait += SECONDS_IN_BUCKET * (remainder - self.remainder[kind])
        self.points[kind], self.remainder[kind], self.bucket[kind] = points, remainder, bucket
        self.clock[kind] = int(self.clock[kind] + wait)  # C: unsigned long += double

    def next(self) -> tuple[int, int]:
        """(arrival, type) of the next job."""
        kind = BATCH if self.clock[BATCH] < self.clock[INTERACTIVE] else INTERACTIVE
        at = self.clock[kind]
        self.advance(kind)
        return at, kind


def generate(n: int, seed: int = 0, model: Lublin99 | None = None,
             rng: str = "numpy") -> list[Job]:
    """``n`` jobs of ``model`` (the program's defaults if none). ``rng``: ``numpy``
    or ``drand48`` (the C program's stream for this seed)."""
    if n < 0:
        raise ValueError(f"number of jobs must be >= 0, got {n}")
    model = model or Lublin99()
    if rng == "drand48":
        uniform: Callable[[], float] = Drand48(seed)
    elif rng == "numpy":
        uniform = numpy_uniforms(seed)
    else:
        raise ValueError(f"rng {rng!r}: expected numpy or drand48")
    draws = _Draws(uniform)
    params = model.params()
    arrivals = _Arrivals(draws, params, model.start_hour, model.typed, model.arrival_scale)
    jobs = []
    for _ in range(n):
        at, kind = arrivals.next()
        p = params[kind]
        nodes = _nodes(draws, p)
        jobs.append(Job(at, nodes, _runtime(draws, p, nodes, model.runtime_scale), kind))
    return jobs


def _nodes(draws: _Draws, p: TypeParams) -> int:
    u = draws.u()
    if u <= p.serial_prob:
        return 1
    par = draws.two_stage_uniform(p.ulow, p.umed, p.uhi, p.uprob)
    if u <= p.serial_prob + p.pow2_prob:
        par = float(int(par + 0.5))
    return int(math.pow(2, par) + 0.5)


def _runtime(draws: _Draws, p: TypeParams, nodes: int, scale: float = 1.0) -> int:
    first = min(1.0, max(0.0, p.pa * nodes + p.pb))
    while True:
        h = draws.hyper_gamma(p.a1, p.b1, p.a2, p.b2, first)
        if h <= TOO_MUCH_TIME:
            return int(math.exp(h) * scale)


# ---- what the model expects, and fitting it to another machine -------------------------
def expected_nodes(p: TypeParams) -> float:
    """The mean size of a job of this type, exactly (:func:`.jobs.expected_size`)."""
    return expected_size(p.serial_prob, p.pow2_prob, p.ulow, p.umed, p.uhi, p.uprob)


def fitted_sizes(p: TypeParams, nodes: int, mean: float) -> TypeParams:
    """``p`` for a machine of ``nodes``, as the program's comments advise: ``uhi =
    log2(nodes)``, the change point ``umed = uhi - 2.5``; then the share of the lower
    uniform ``uprob`` chosen (by bisection: the mean falls as it grows) so that jobs
    have ``mean`` nodes on average."""
    uhi = math.log2(nodes)
    base = replace(p, uhi=uhi, umed=max(p.ulow, uhi - 2.5))
    lo, hi = 0.0, 1.0
    if not expected_nodes(replace(base, uprob=hi)) <= mean <= expected_nodes(
            replace(base, uprob=lo)):
        raise ValueError(f"no share of small jobs gives a mean of {mean} nodes on {nodes} nodes")
    for _ in range(100):
        mid = (lo + hi) / 2
        if expected_nodes(replace(base, uprob=mid)) > mean:
            lo = mid
        else:
            hi = mid
    return replace(base, uprob=(lo + hi) / 2)


def to_swf(jobs: list[Job], model: Lublin99 | None = None) -> str:
    """The jobs as the program prints them: its SWF header, then one line per job.
    Run times and sizes are in fields 4 and 5 (allocated), the job type in 15."""
    model = model or Lublin99()
    largest = max(int(math.pow(2, p.uhi) + 0.5) for p in model.params())
    head = ["; Version: 2", "; Acknowledge: Uri Lublin, Hebrew University",
            "; Information: http://www.cs.huji.ac.il/labs/parallel/workload",
            f"; MaxJobs: {len(jobs)}", f"; MaxRecords: {len(jobs)}", f"; MaxNodes: {largest}",
            f"; MaxRuntime: {int(math.exp(TOO_MUCH_TIME))}"]
    return swf_text(jobs, head)
