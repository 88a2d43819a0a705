"""Typing jobs into leases (000 §7.2)."""

from __future__ import annotations

import math
from collections import Counter

import pytest

from leasehold.core.model import LeaseType, Origin
from leasehold_emulator.workloads.jobs import Job
from leasehold_emulator.workloads.lublin99 import PAPERS, generate
from leasehold_emulator.workloads.mix import DEADLINE_BOUND, TypeMix, requests

JOBS = generate(12_000, 4, PAPERS)


def share_ok(count: int, n: int, p: float) -> bool:
    return abs(count / n - p) <= 5 * math.sqrt(p * (1 - p) / n) + 1e-12


@pytest.mark.parametrize("mix", [
    TypeMix(),
    TypeMix(local=0.7, cancellable=0.1, suspendable=0.4, migratable=0.5, nonpreemptable=0),
    TypeMix(local=0, migratable=0, nonpreemptable=0),
])
def test_types_follow_the_mix(mix):
    reqs = requests(JOBS, mix, seed=1)
    n = len(reqs)
    local = [r for r in reqs if r.origin == Origin.LOCAL]
    assert share_ok(len(local), n, mix.local)
    assert all(r.type == LeaseType.DEADLINE_NON_PREEMPTABLE and r.deadline is None
               for r in local)
    external = Counter(r.type for r in reqs if r.origin == Origin.EXTERNAL)
    total = sum(mix.weights())
    for kind, weight in zip((LeaseType.BEST_EFFORT_CANCELLABLE,
                             LeaseType.BEST_EFFORT_SUSPENDABLE,
                             LeaseType.DEADLINE_MIGRATABLE,
                             LeaseType.DEADLINE_NON_PREEMPTABLE), mix.weights(), strict=True):
        assert share_ok(external[kind], n - len(local), weight / total), kind


def test_deadlines_follow_the_slack_rule_and_jobs_keep_their_shape():
    reqs = requests(JOBS, TypeMix(slack=(1.5, 3.0), cpu=2000, memory=512), seed=2)
    for job, r in zip(JOBS, reqs, strict=True):
        assert (r.vms, r.submitted, r.duration) == (job.nodes, job.arrival, max(job.runtime, 1))
        assert (r.shape.cpu, r.shape.memory) == (2000, 512)
        if r.origin == Origin.EXTERNAL and r.type in DEADLINE_BOUND:
            assert 1.5 * r.duration <= r.deadline - r.submitted <= 3.0 * r.duration
        else:
            assert r.deadline is None


def test_the_same_seed_types_the_same_way_and_another_differently():
    a, b, c = (requests(JOBS[:500], seed=s) for s in (7, 7, 8))
    assert a == b and a != c


def test_a_zero_runtime_becomes_one_second():
    [r] = requests([Job(0, 2, 0, 0)], TypeMix(local=1))
    assert r.duration == 1.0


@pytest.mark.parametrize(("mix", "message"), [
    (TypeMix(local=1.5), "local share must be between 0 and 1, got 1.5"),
    (TypeMix(cancellable=-1), "external type weights must be >= 0"),
    (TypeMix(cancellable=0, suspendable=0, migratable=0, nonpreemptable=0),
     "every external type has weight 0"),
    (TypeMix(slack=(0.5, 2.0)), "slack must satisfy 1 <= low <= high, got (0.5, 2.0)"),
    (TypeMix(memory=0), "cpu and memory must be > 0"),
])
def test_a_bad_mix_says_what_is_wrong(mix, message):
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        requests(JOBS[:3], mix)
