"""Every policy against a brute-force oracle on random small instances.

The oracle knows nothing of the implementation: it computes room from the instance's
raw numbers, enumerates every subset of the candidates, keeps the feasible ones none
of whose proper subsets is feasible, and applies the definitions of DESIGN §2.4.
Instances mix exclusive pools (one count bin) and shared ones (several nodes with cpu
and memory), queued reservations (a candidate covering part of the window),
multi-VM leases across nodes (parts on several bins), and lease types (overheads
from a small set, so ties are common).
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import replace
from itertools import combinations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builders import config
from leasehold.core.model import POLICY_NAMES, PREEMPTION_POLICIES, preemption_policy
from leasehold.core.preemption import decide, sweep
from leasehold.core.preemption.instance import (
    NARROW_TO,
    Bin,
    Candidate,
    Instance,
    Part,
    Victim,
    narrow,
    one_bin_rank,
)
from leasehold.core.preemption.sets import minimal_sets, sample_sets

ACTIONS = ("cancel", "suspend", "migrate", "replan")


@st.composite
def instances(draw) -> Instance:
    shared = draw(st.booleans())
    if shared:
        demand = (draw(st.sampled_from([1, 2, 3])), draw(st.sampled_from([1, 2])))
        n_bins = draw(st.integers(1, 3))
    else:
        demand, n_bins = (1,), 1
    bins, widths = [], []
    for _ in range(n_bins):
        width = draw(st.integers(1, 4))
        free = tuple(tuple(draw(st.lists(st.integers(0, 3), min_size=width, max_size=width)))
                     for _ in demand)
        bins.append(Bin(free, demand))
        widths.append(width)
    cands = []
    n = draw(st.integers(1, 8))
    for i in range(n):
        parts = []
        for b in sorted(draw(st.sets(st.integers(0, n_bins - 1), min_size=1, max_size=n_bins))):
            lo = draw(st.integers(0, widths[b] - 1))
            hi = draw(st.integers(lo + 1, widths[b]))
            amount = tuple(draw(st.integers(1, 4)) for _ in demand)
            parts.append(Part(b, lo, hi, amount))
        cost = draw(st.sampled_from([0, 2, 5, 5, 9, 12]))
        victim = Victim(
            name=f"l{i}", action=draw(st.sampled_from(ACTIONS)), vms=draw(st.integers(1, 4)),
            overhead=cost / 1e6, vacate=0.0, since=draw(st.integers(0, 5)),
            submitted=draw(st.integers(0, 5)), seq=i,
        )
        cands.append(Candidate(victim, cost, tuple(parts)))
    need = draw(st.integers(1, 6))
    base = draw(st.integers(0, 2)) if shared else 0
    return Instance("p", need, base, tuple(bins), tuple(cands), now=0.0)


# ---- the oracle ---------------------------------------------------------------------
def room(inst: Instance, chosen: frozenset[int]) -> int:
    total = inst.base
    for b, bin_ in enumerate(inst.bins):
        fits = []
        for d, (free, per_vm) in enumerate(zip(bin_.free, bin_.demand, strict=True)):
            level = list(free)
            for i in chosen:
                for p in inst.candidates[i].parts:
                    if p.bin == b:
                        for x in range(p.lo, p.hi):
                            level[x] += p.amount[d]
            fits.append(max(0, min(level)) // per_vm)
        total += min(fits)
    return total


def oracle_sets(inst: Instance) -> list[tuple[int, ...]]:
    n = len(inst.candidates)
    feasible = [frozenset(c) for k in range(n + 1) for c in combinations(range(n), k)
                if room(inst, frozenset(c)) >= inst.need]
    minimal = [s for s in feasible if not any(o < s for o in feasible)]
    return sorted(tuple(sorted(s)) for s in minimal)


def stats(inst: Instance, s: tuple[int, ...]) -> tuple[int, int, int, tuple[str, ...]]:
    c = inst.candidates
    return (len(s), sum(c[i].victim.vms for i in s), sum(c[i].cost for i in s),
            tuple(c[i].name for i in s))


def oracle_choice(inst: Instance, policy: str, alpha: str | float = "median") -> tuple[int, ...]:
    sets = [s for s in oracle_sets(inst) if s]
    if not sets or policy == "nop":
        return ()
    rows = {s: stats(inst, s) for s in sets}
    if policy == "mlip":
        return min(sets, key=lambda s: (rows[s][0], -rows[s][1], rows[s][2], rows[s][3]))
    if policy == "mov":
        return min(sets, key=lambda s: (rows[s][2], rows[s][0], rows[s][3]))
    costs = sorted(rows[s][2] for s in sets)
    if alpha == "median":
        limit = statistics.median(costs)
    elif isinstance(alpha, str):
        q = int(alpha[1:])
        limit = costs[0] if len(costs) == 1 else statistics.quantiles(
            costs, n=100, method="inclusive")[q - 1]
    else:
        limit = alpha * 1e6
    under = [s for s in sets if rows[s][2] <= limit]
    if not under:
        return ()
    return min(under, key=lambda s: (rows[s][0], rows[s][2], rows[s][3]))


# ---- the properties -------------------------------------------------------------------
EXAMPLES = settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@EXAMPLES
@given(instances())
def test_exact_enumeration_finds_exactly_the_minimal_sets(inst):
    assert minimal_sets(inst) == oracle_sets(inst)


@EXAMPLES
@given(instances(), st.sampled_from(["nop", "mlip", "mov", "moml"]))
def test_set_policies_choose_what_their_definition_chooses(inst, policy):
    choice = decide(preemption_policy(policy), [inst], config(policy=policy))
    want = oracle_choice(inst, policy)
    assert choice.members == want
    if want:
        assert choice.exact and choice.instance == 0
        assert choice.candidate_sets == len([s for s in oracle_sets(inst) if s])


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), st.sampled_from(["p25", "p50", "p90", 0.000005, 0.00001]))
def test_moml_alpha_as_a_percentile_or_seconds(inst, alpha):
    choice = decide(preemption_policy("moml"), [inst], config(policy="moml", alpha=alpha))
    assert choice.members == oracle_choice(inst, "moml", alpha)


def pooled_choice(insts: list[Instance], policy: str) -> tuple[int, tuple[int, ...]] | None:
    """The oracle over several pools: one policy over the union of their sets
    (ties between pools: the pool listed first)."""
    rows = [(stats(inst, s), k, s) for k, inst in enumerate(insts)
            for s in oracle_sets(inst) if s]
    if not rows:
        return None
    if policy == "mlip":
        key = lambda r: (r[0][0], -r[0][1], r[0][2], r[0][3], r[1])  # noqa: E731
    elif policy == "mov":
        key = lambda r: (r[0][2], r[0][0], r[0][3], r[1])  # noqa: E731
    else:
        limit = statistics.median(r[0][2] for r in rows)
        rows = [r for r in rows if r[0][2] <= limit]
        key = lambda r: (r[0][0], r[0][2], r[0][3], r[1])  # noqa: E731
    best = min(rows, key=key)
    return best[1], best[2]


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), instances(), st.sampled_from(["mlip", "mov", "moml"]))
def test_several_pools_are_one_choice_among_all_their_sets(a, b, policy):
    b = Instance("q", b.need, b.base, b.bins, b.candidates, 0.0)
    choice = decide(preemption_policy(policy), [a, b], config(policy=policy))
    want = pooled_choice([a, b], policy)
    if want is None:
        assert choice.members == ()
    else:
        assert (choice.instance, choice.members) == want
        assert choice.candidate_sets == sum(len([s for s in oracle_sets(i) if s]) for i in (a, b))


@EXAMPLES
@given(instances())
def test_sampled_sets_are_minimal_candidate_sets(inst):
    assert set(sample_sets(inst)) <= set(oracle_sets(inst))


@EXAMPLES
@given(instances())
def test_kueue_removes_newest_first_then_fills_back_to_a_minimal_set(inst):
    choice = decide(preemption_policy("kueue"), [inst], config(policy="kueue"))
    sets = oracle_sets(inst)
    if not any(sets) or sets == [()]:
        assert choice.members == ()
        return
    assert choice.members in sets  # fill-back leaves a minimal set
    c = inst.candidates
    order = sorted(range(len(c)), key=lambda i: (-min(c[i].victim.since, inst.now), c[i].name))
    k = next(k for k in range(1, len(order) + 1) if room(inst, frozenset(order[:k])) >= inst.need)
    assert set(choice.members) <= set(order[:k])  # only leases removed before it fitted
    assert order[k - 1] in choice.members  # the one that made it fit is never given back


@EXAMPLES
@given(instances())
def test_haizea_takes_the_oldest_until_it_fits_and_keeps_them_all(inst):
    choice = decide(preemption_policy("haizea"), [inst], config(policy="haizea"))
    c = inst.candidates
    order = sorted(range(len(c)), key=lambda i: (c[i].victim.submitted, c[i].victim.seq))
    if room(inst, frozenset()) >= inst.need or room(inst, frozenset(order)) < inst.need:
        assert choice.members == ()
        return
    k = next(k for k in range(1, len(order) + 1) if room(inst, frozenset(order[:k])) >= inst.need)
    assert choice.members == tuple(sorted(order[:k]))


@EXAMPLES
@given(instances())
def test_kube_scheduler_victims_let_the_preemptor_fit(inst):
    choice = decide(preemption_policy("kube-scheduler"), [inst], config(policy="kube-scheduler"))
    sets = oracle_sets(inst)
    if not any(sets) or sets == [()]:
        assert choice.members == ()
        return
    assert room(inst, frozenset(choice.members)) >= inst.need
    # every victim was needed when its node was chosen: on one bin, it is minimal
    if len(inst.bins) == 1:
        assert choice.members in sets


def test_every_configurable_policy_is_carried_out():
    from leasehold.api.scenario import POLICIES

    assert set(POLICY_NAMES) == set(POLICIES)
    inst = Instance("p", 1, 0, (Bin(((0,),), (1,)),), ())
    for policy in PREEMPTION_POLICIES:  # nothing to choose from: each says so
        assert decide(policy, [inst], config(policy=policy.name)).members == ()


def oracle_frontier(inst: Instance, sets):
    """The sweep's frontier by brute force: per (VMs, victims), the cheapest of
    ``sets`` (ties by names) with its cost and names."""
    want = {}
    for s in sets:
        n, v, cost, names = stats(inst, s)
        if (n, v) not in want or (cost, names) < want[(n, v)][:2]:
            want[(n, v)] = (cost, names, s)
    return want


@EXAMPLES
@given(instances().filter(sweep.applies))
def test_sweep_counts_and_ranks_every_minimal_set_of_an_exclusive_pool(inst):
    sets = [s for s in oracle_sets(inst) if s]
    best, hist = sweep.frontier(inst)
    assert hist == Counter(stats(inst, s)[2] for s in sets)
    assert best == oracle_frontier(inst, sets)


def mirrored(inst: Instance) -> Instance:
    """The same problem with time running backwards."""
    width = len(inst.bins[0].free[0])
    return replace(inst, bins=(Bin(tuple(f[::-1] for f in inst.bins[0].free), (1,)),),
                   candidates=tuple(replace(c, parts=tuple(
                       replace(p, lo=width - p.hi, hi=width - p.lo) for p in c.parts))
                       for c in inst.candidates))


def scaled(inst: Instance, k: int) -> Instance:
    """The same problem counted in units ``k`` times smaller: the same sets fit."""
    return replace(inst, need=inst.need * k,
                   bins=(Bin(tuple(tuple(x * k for x in f) for f in inst.bins[0].free), (1,)),),
                   candidates=tuple(replace(c, parts=tuple(
                       replace(p, amount=tuple(a * k for a in p.amount)) for p in c.parts))
                       for c in inst.candidates))


@EXAMPLES
@given(instances().filter(sweep.applies), st.sampled_from(["all", "moml", "mlip", "mov"]))
def test_the_sweep_gives_the_same_answer_walking_time_backwards(inst, mode):
    # the sweep picks its direction from the instance: mirroring flips the choice
    keep = sweep.ALL if mode == "all" else sweep.summary(preemption_policy(mode))
    assert sweep.frontier(mirrored(inst), keep=keep) == sweep.frontier(inst, keep=keep)


@EXAMPLES
@given(instances().filter(sweep.applies), st.sampled_from([7, 1000, 123_457]))
def test_the_sweep_packs_large_node_counts_without_overflow(inst, k):
    assert sweep.frontier(scaled(inst, k)) == sweep.frontier(inst)


@EXAMPLES
@given(instances())
def test_narrowing_keeps_the_room_of_every_set_it_keeps(inst):
    view, back = narrow(inst)
    assert list(back) == sorted(back)  # name order kept
    assert [c.name for c in view.candidates] == [inst.candidates[i].name for i in back]
    n = len(view.candidates)
    for k in range(n + 1):
        for s in combinations(range(n), k):
            assert view.room(s) == room(inst, frozenset(back[i] for i in s))
    # the candidates it keeps can still make room when all of them can
    if room(inst, frozenset(range(len(inst.candidates)))) >= inst.need:
        assert view.room(range(n)) >= inst.need or room(inst, frozenset()) >= inst.need


# ---- the sweep on queues: many short reservations, a few long leases --------------------
@st.composite
def queues(draw) -> Instance:
    """An exclusive pool as the papers probes meet it: a few running leases over the
    whole window and queued reservations of every span, so that several chosen
    leases wait at once to be critical, with different deadlines."""
    width = draw(st.integers(3, 8))
    free = tuple(draw(st.lists(st.integers(0, 2), min_size=width, max_size=width)))
    cands = []
    for i in range(draw(st.integers(4, 10))):
        if draw(st.integers(0, 3)) == 0:  # running: from the window's start on
            lo, hi = 0, draw(st.sampled_from([width, width, draw(st.integers(1, width))]))
        else:
            lo = draw(st.integers(0, width - 1))
            hi = draw(st.integers(lo + 1, min(width, lo + 3)))
        nodes = draw(st.integers(1, 4))
        cost = draw(st.sampled_from([0, 3, 3, 7, 10]))
        victim = Victim(name=f"l{i}", action="replan", vms=nodes, overhead=cost / 1e6,
                        vacate=0.0, since=0, submitted=0, seq=i)
        cands.append(Candidate(victim, cost, (Part(0, lo, hi, (nodes,)),)))
    need = draw(st.integers(3, 9))
    return Instance("p", need, 0, (Bin((free,), (1,)),), tuple(cands), now=0.0)


def minimal_by_mask(inst: Instance) -> list[tuple[int, ...]]:
    """The oracle's minimal sets, by bit mask (every subset's room once; minimal:
    feasible, and infeasible without any one member)."""
    n = len(inst.candidates)
    ok = [room(inst, frozenset(i for i in range(n) if m >> i & 1)) >= inst.need
          for m in range(1 << n)]
    return [tuple(i for i in range(n) if m >> i & 1) for m in range(1, 1 << n)
            if ok[m] and not any(ok[m & ~(1 << i)] for i in range(n) if m >> i & 1)]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queues(), st.sampled_from(["all", "moml", "mlip", "mov"]))
def test_the_sweep_on_queues_of_reservations_matches_the_oracle(inst, mode):
    sets = minimal_by_mask(inst)
    keep = sweep.ALL if mode == "all" else sweep.summary(preemption_policy(mode))
    best, hist = sweep.frontier(inst, keep=keep)
    if mode in ("all", "moml"):
        assert hist == Counter(stats(inst, s)[2] for s in sets)
    else:
        assert sum(hist.values()) == len(sets)
    if mode == "all":
        assert best == oracle_frontier(inst, sets)
    else:
        policy = preemption_policy(mode)
        assert decide(policy, [inst], config(policy=mode)).members == oracle_choice(inst, mode)


# ---- narrowing a counted pool's one-bin instance ----------------------------------------
@st.composite
def counted_pools(draw) -> Instance:
    """A counted pool as a local wave meets it: one bin, more candidates than a
    narrowed instance keeps, running ones over the whole window and queued ones
    over part of it."""
    width = draw(st.integers(1, 6))
    free = tuple(draw(st.lists(st.integers(0, 2), min_size=width, max_size=width)))
    cands = []
    for i in range(draw(st.integers(41, 90))):
        lo = 0 if draw(st.booleans()) else draw(st.integers(0, width - 1))
        hi = draw(st.integers(lo + 1, width))
        vms = draw(st.integers(1, 4))
        cost = draw(st.sampled_from([0, 3, 3, 7, 10, 40]))
        victim = Victim(name=f"l{i:03d}", action="suspend", vms=vms, overhead=cost / 1e6,
                        vacate=0.0, since=0, submitted=0, seq=i)
        cands.append(Candidate(victim, cost, (Part(0, lo, hi, (vms,)),)))
    need = draw(st.integers(1, 60))
    return Instance("p", need, 0, (Bin((free,), (1,)),), tuple(cands), now=0.0)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(counted_pools(), st.randoms(use_true_random=False))
def test_a_counted_pools_instance_is_narrowed_to_its_cheapest_candidates(inst, rng):
    view, back = narrow(inst)
    everyone = frozenset(range(len(inst.candidates)))
    missing = room(inst, frozenset()) < inst.need
    if not missing:
        assert len(back) == len(inst.candidates)
        return
    assert list(back) == sorted(back)
    assert [c.name for c in view.candidates] == [inst.candidates[i].name for i in back]
    # rooms of the sets it keeps are theirs in the whole instance
    for _ in range(20):
        s = [i for i in range(len(back)) if rng.random() < 0.3]
        assert view.room(s) == room(inst, frozenset(back[i] for i in s))
    # it can make room when the whole instance can; and stops once it can: past the
    # 40 it keeps at least, the candidates it keeps but its last by rank do not make
    # room (all of them may be needed: 47 candidates, every one, once)
    if room(inst, everyone) >= inst.need:
        assert view.room(range(len(back))) >= inst.need
        if len(back) > NARROW_TO:
            last = max(back, key=one_bin_rank(inst))
            assert room(inst, frozenset(back) - {last}) < inst.need
    # what it leaves out costs no less a VM than anything it keeps
    per_vm = [c.cost / c.victim.vms for c in inst.candidates]
    left = [per_vm[i] for i in everyone - set(back)]
    if left:
        assert min(left) >= max(per_vm[i] for i in back)
