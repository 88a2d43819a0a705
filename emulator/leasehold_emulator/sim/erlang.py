"""002's baseline (§V-A): m dedicated nodes and no queue — a job that finds every node
busy is refused — under Poisson arrivals, the loss system M/M/m/m.

Its blocking probability is Erlang's loss formula B(m, a) for an offered load of ``a``
Erlangs (arrival rate × mean work on a node: the jobs that would run at once with
nodes enough). It holds for any law of the work (M/G/m/m: Erlang B is insensitive to
it), so the baseline does not depend on the job-length law an experiment chooses.
Computed by the textbook recursion ``B(0) = 1``, ``B(k) = a·B(k−1) / (k + a·B(k−1))``:
exact, stable for every m and a (the closed form's ``a^m / m!`` overflows at m = 500),
O(m). scipy has no Erlang B; the tests check it against the truncated Poisson law it
is (scipy's), B(m, a) = P(N = m) / P(N ≤ m) for N ~ Poisson(a).
"""

from __future__ import annotations

import math


def erlang_b(servers: int, load: float) -> float:
    """The share of jobs an M/M/``servers``/``servers`` system refuses at ``load``
    Erlangs; ValueError for a negative or non-finite argument."""
    if servers < 0 or not math.isfinite(load) or load < 0:
        raise ValueError(f"Erlang B needs servers >= 0 and a finite load >= 0,"
                         f" got {servers} and {load}")
    blocking = 1.0
    for k in range(1, servers + 1):
        blocking = load * blocking / (k + load * blocking)
    return blocking


def loss_throughput(servers: int, load: float, mean_work: float) -> float:
    """Jobs an M/M/``servers``/``servers`` system completes per hour at ``load``
    Erlangs of jobs of ``mean_work`` seconds on average: the admitted arrival rate
    (in the steady state every admitted job completes)."""
    if not mean_work > 0:
        raise ValueError(f"mean work must be > 0 seconds, got {mean_work}")
    return 3600 * load / mean_work * (1 - erlang_b(servers, load))
