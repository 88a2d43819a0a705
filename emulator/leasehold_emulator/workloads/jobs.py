"""What the synthetic workload models produce, and the size model they share.

Lublin99 and DAS-2 both draw a job's size the same way: one node with probability
``p_one``; otherwise ``2^u`` with ``u`` two-stage uniform (``[low, med]`` with
probability ``q``, else ``[med, high]``), ``u`` rounded first for a power of two
(probability ``p_pow2``), the size rounded to the nearest whole node.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Job:
    #: seconds from the start
    arrival: int
    nodes: int
    #: seconds
    runtime: int
    #: the model's job type (Lublin99: 0 interactive, 1 batch; DAS-2: 0)
    type: int = 0


def expected_size(p_one: float, p_pow2: float, low: float, med: float, high: float,
                  q: float) -> float:
    """The mean size, exactly: the model is two uniform draws, integrated piece by
    piece over the sizes they round to."""
    rounded = q * _mean_pow2(low, med) + (1 - q) * _mean_pow2(med, high)
    plain = q * _mean_size(low, med) + (1 - q) * _mean_size(med, high)
    return p_one + p_pow2 * rounded + (1 - p_one - p_pow2) * plain


def _mean_pow2(a: float, b: float) -> float:
    """E[2^round(u)] for u uniform on [a, b]."""
    if b <= a:
        return 2.0 ** math.floor(a + 0.5)
    total, r = 0.0, math.floor(a + 0.5)
    while r - 0.5 < b:
        total += (min(b, r + 0.5) - max(a, r - 0.5)) * 2.0**r
        r += 1
    return total / (b - a)


def _mean_size(a: float, b: float) -> float:
    """E[round(2^u)] for u uniform on [a, b]: size k for u in [log2(k-½), log2(k+½))."""
    if b <= a:
        return float(math.floor(2**a + 0.5))
    total, k = 0.0, math.floor(2**a + 0.5)
    while math.log2(k - 0.5) < b:
        total += (min(b, math.log2(k + 0.5)) - max(a, math.log2(k - 0.5))) * k
        k += 1
    return total / (b - a)


def swf_line(index: int, job: Job) -> str:
    """A job as ``m_lublin99.c`` prints it in SWF: submit time, run time and
    allocated processors (fields 2, 4, 5), status 1, the job type in field 15."""
    return (f"{index:5d} {job.arrival:7d} -1 {job.runtime:7d} {job.nodes:3d} -1 -1 -1 -1 -1"
            f" 1 -1 -1 -1 {job.type} -1 -1 -1")


def swf_text(jobs: list[Job], header: list[str]) -> str:
    """A whole SWF file: ``header`` comment lines, then one line per job."""
    return "\n".join([*header, *(swf_line(i + 1, job) for i, job in enumerate(jobs))]) + "\n"
