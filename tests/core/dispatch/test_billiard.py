"""RTDP's billiard sequence (003 eq. 20), hand-computed."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leasehold.core.dispatch.billiard import Clock, fastest, next_pool, sequence

# (X_j + Y_j) / P_j, X = 1 for the fastest pool, the least wins, ties to the first:
#  P = (1/2, 1/4, 1/4), fastest 0: Y = 000: (2, 0, 0) -> 1; 010: (2, 4, 0) -> 2;
#  011: (2, 4, 4) -> 0; 111: (4, 4, 4) -> 0; 211: (6, 4, 4) -> 1; 221: (6, 8, 4) -> 2;
#  222: (6, 8, 8) -> 0; 322: (8, 8, 8) -> 0
CASES = [
    pytest.param([0.5, 0.25, 0.25], 0, [1, 2, 0, 0, 1, 2, 0, 0], id="half-quarter-quarter"),
    #  P = (1/4, 3/4), fastest 1: 00: (0, 4/3) -> 0; 10: (4, 4/3) -> 1; 11: (4, 8/3) -> 1;
    #  12: (4, 4) -> 0; 22: (8, 4) -> 1; 23: (8, 16/3) -> 1; 24: (8, 20/3) -> 1; 25: (8, 8) -> 0
    pytest.param([0.25, 0.75], 1, [0, 1, 1, 0, 1, 1, 1, 0], id="quarter-three-quarters"),
    #  a pool with no share never gets one: P = (0, 1), fastest 0: always 1
    pytest.param([0.0, 1.0], 0, [1, 1, 1], id="no-share"),
    #  equal shares, fastest 2: (0, 0, 3) -> 0; (3, 0, 3) -> 1; (3, 3, 3) -> 0;
    #  (6, 3, 3) -> 1; (6, 6, 3) -> 2; (6, 6, 6) -> 0
    pytest.param([1 / 3] * 3, 2, [0, 1, 0, 1, 2, 0], id="equal-shares"),
]


@pytest.mark.parametrize(("shares", "fast", "want"), CASES)
def test_sequences(shares, fast, want):
    assert sequence(shares, fast, len(want)) == want


def test_fastest_is_the_least_theta_first_of_equals():
    assert fastest([3.0, 1.0, 1.0, 2.0]) == 1


def test_a_pool_not_allowed_is_passed_over():
    assert next_pool([0.5, 0.5], [0, 0], [0, 0], allowed=[False, True]) == 1
    assert next_pool([0.5, 0.5], [0, 0], [0, 0], allowed=[False, False]) is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 20), min_size=1, max_size=6).filter(lambda w: sum(w) > 0),
       st.integers(0, 5), st.integers(1, 400))
def test_each_pool_gets_its_share_of_the_sequence(weights, fast, n):
    """Over any prefix of n leases, pool j got n·P_j of them, give or take what the
    offsets leave: with m the value (X_j + Y_j)/P_j of the n-th pick, every pool has
    m·P_j − X_j ≤ Y_j ≤ m·P_j − X_j + 1 (picks come in rising m); summing over the N
    pools with a share, m − n ∈ [ΣX − N, ΣX], so Y_j − n·P_j lies in
    [(ΣX − N)·P_j − X_j, ΣX·P_j − X_j + 1]. (A bound of 2 each way, first written
    here, is false from four pools on: the fastest pool, X = 1, waits while the
    others take their first lease; the property test found it.)"""
    shares = [w / sum(weights) for w in weights]
    fast = fast % len(shares)
    got = sequence(shares, fast, n)
    live = [j for j, p in enumerate(shares) if p > 0]
    x = [1 if j == fast else 0 for j in range(len(shares))]
    sx = sum(x[j] for j in live)
    for j, p in enumerate(shares):
        off = got.count(j) - n * p
        assert (sx - len(live)) * p - x[j] - 1e-9 <= off <= sx * p - x[j] + 1 + 1e-9, (j, p)
        if p == 0:
            assert j not in got


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 20), min_size=1, max_size=6).filter(lambda w: sum(w) > 0),
       st.integers(0, 5), st.integers(1, 200))
def test_the_clocked_sequence_is_the_billiard_sequence_while_the_shares_stand(
        weights, fast, n):
    """Kept as each pool's next value (X_j + Y_j)/P_j, advanced by 1/P_j when it is
    chosen, the sequence is eq. 20's own as long as the shares do not change."""
    shares = [w / sum(weights) for w in weights]
    fast = fast % len(shares)
    offsets = [1 if j == fast else 0 for j in range(len(shares))]
    clock = Clock()
    got = [clock.next(shares, offsets) for _ in range(n)]
    assert got == sequence(shares, fast, n)


def test_a_share_that_grows_is_served_from_then_on_not_made_up_for():
    """PAP's shares are re-estimated as leases come (003 gives them once): counting
    from the start, a pool whose share grows from 0.1 to 0.5 after 100 leases had
    ~10 and is owed ~40, so eq. 20 sends it the next ~80 leases in a row (seen in
    the 003 pilot: bursts of 173 leases an hour to the 64-node pool). The clock
    serves the new shares from the change on."""
    clock = Clock()
    for _ in range(100):
        clock.next([0.1, 0.9], [0, 1])
    after = [clock.next([0.5, 0.5], [0, 1]) for _ in range(20)]
    assert 8 <= after.count(0) <= 12, after
    # eq. 20 counting from the start: all 20 to pool 0
    counts = [sequence([0.1, 0.9], 1, 100).count(j) for j in (0, 1)]
    burst = []
    for _ in range(20):
        j = next_pool([0.5, 0.5], [0, 1], counts)
        assert j is not None
        counts[j] += 1
        burst.append(j)
    assert burst.count(0) == 20


def test_a_pool_passed_over_or_without_a_share_gets_no_credit_meanwhile():
    """A pool that could not hold the leases (or had no share) for a while is not
    owed them afterwards: it joins at the value the others have reached."""
    clock = Clock()
    for _ in range(50):
        clock.next([0.5, 0.5], [0, 0], allowed=[False, True])
    after = [clock.next([0.5, 0.5], [0, 0]) for _ in range(10)]
    assert 4 <= after.count(0) <= 6, after


def test_a_pool_chosen_under_a_tiny_share_is_not_kept_away_once_its_share_grows():
    """003-vms, seed 2 (docs/dispatch.md, "Shares that change"): in the first minute
    PAP's estimated share of c128 was 5.6e-5 when it took a DeadlineMigratable lease,
    and that choice advanced its value by 1/P = 18,000 leases; kept as it was when the
    share grew to 0.38, it kept c128 from every later lease of that type (1 of 799
    in six hours; the others went to c256, whose non-preemptable leases were then
    rejected, 15% against PAP-RND's 5%). The wait for the next lease is rescaled to
    the new share, as stride scheduling does when a client's tickets change."""
    clock = Clock()
    assert clock.next([1e-4, 1 - 1e-4], [0, 1]) == 0
    after = [clock.next([0.4, 0.6], [0, 1]) for _ in range(100)]
    assert 38 <= after.count(0) <= 42, after.count(0)


#: shares of up to four pools (some tiny, some none) and which of them may take it
_STEP = st.lists(st.tuples(st.sampled_from([0.0, 1e-6, 1e-3, 0.05, 0.3, 1.0, 7.0]),
                           st.booleans()), min_size=4, max_size=4)


@settings(max_examples=300, deadline=None)
@given(st.lists(_STEP, max_size=40),
       st.lists(st.integers(0, 20), min_size=4, max_size=4).filter(lambda w: sum(w) > 0),
       st.integers(1, 300))
def test_whatever_came_before_the_shares_in_force_are_served_from_then_on(
        history, weights, n):
    """Any history of shares (re-estimated at every lease, tiny ones too) and pools
    passed over leaves each pool at most one lease of its current share from its
    next turn (its value above the last choice's at most 1/P_j): over the next n
    leases under shares P that stand, pool j gets n·P_j of them within N·P_j + 1
    (eq. 20's sequence with offsets in [0, 1]: with T the last choice's value above
    the one at the change, T·P_j − r_j ≤ Y_j ≤ T·P_j − r_j + 1 and T − n in
    [Σr − N, Σr], N the pools with a share)."""
    clock = Clock()
    offsets = [0, 1, 0, 0]
    for step in history:
        clock.next([p for p, _ in step], offsets, [ok for _, ok in step])
    shares = [w / sum(weights) for w in weights]
    got = [clock.next(shares, offsets) for _ in range(n)]
    live = sum(p > 0 for p in shares)
    for j, p in enumerate(shares):
        assert abs(got.count(j) - n * p) <= live * p + 1 + 1e-6, (j, p, got.count(j))


#: equal shares as PAP computes them for equal pools: 1/3 give or take the last bit,
#: which way depending on the arrival times the rates were estimated from (the
#: operator's and a replay's differ by microseconds: `submittedAt` is rounded)
NOISY = [(1 / 3, 1 / 3, 1 / 3), (1 / 3, 1 / 3 + 2 ** -54, 1 / 3),
         (1 / 3 - 2 ** -54, 1 / 3, 1 / 3 + 2 ** -54)]


@pytest.mark.parametrize("shares", NOISY, ids=["exact", "second-a-bit-more", "spread"])
def test_shares_equal_but_for_rounding_tie_as_equal_shares_do(shares):
    """Ties go to the pool listed first: shares that differ only in their last bits are
    a tie, not a preference, or the same leases are dispatched otherwise by a replay."""
    assert sequence(shares, 0, 9) == sequence((1 / 3,) * 3, 0, 9)
    clock, want = Clock(), Clock()
    assert [clock.next(shares, (1, 0, 0)) for _ in range(9)] == [
        want.next((1 / 3,) * 3, (1, 0, 0)) for _ in range(9)]
