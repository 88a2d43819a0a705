"""The free-capacity step function, against a brute-force array of instants."""

from __future__ import annotations

from math import inf

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from leasehold.core.profile import BlockProfile, Profile, lows_over

H = 60  # integer instants 0..H-1 are enough: all changes happen at integers


def brute(capacity, changes):
    arr = [capacity] * (H + 40)
    for s, e, d in changes:
        for t in range(s, e):
            arr[t] += d
    return arr


def brute_fit(arr, amount, duration, earliest, latest=None):
    for t in range(earliest, H + 1):
        if latest is not None and t > latest:
            return None
        if all(arr[x] >= amount for x in range(t, t + duration)):
            return t
    return None


def _feasible(raw):
    """Keep the bookings that fit: a real profile never goes below zero."""
    kept, arr = [], [6] * H
    for s, d, delta in raw:
        e = min(s + d, H)
        if all(arr[t] + delta >= 0 for t in range(s, e)):
            for t in range(s, e):
                arr[t] += delta
            kept.append((s, e, delta))
    return kept


changes_st = st.lists(
    st.tuples(st.integers(0, H - 2), st.integers(1, 20), st.integers(-3, -1)), max_size=8
).map(_feasible)


@settings(max_examples=300, deadline=None)
@given(changes=changes_st, amount=st.integers(1, 6), duration=st.integers(1, 25),
       earliest=st.integers(0, H - 1), latest=st.one_of(st.none(), st.integers(0, H)))
def test_profile_matches_brute_force(changes, amount, duration, earliest, latest):
    prof = Profile(6)
    for s, e, d in changes:
        prof.add(s, e, d)
    arr = brute(6, changes)
    assert [prof.at(t) for t in range(H)] == arr[:H]
    got = prof.fit(amount, duration, earliest, inf if latest is None else latest)
    assert got == brute_fit(arr, amount, duration, earliest, latest)
    assert prof.min_over(earliest, earliest + duration) == min(arr[earliest:earliest + duration])
    # the steps stay merged: no two neighbours are equal
    assert all(a != b for a, b in zip(prof.free, prof.free[1:], strict=False))


@settings(max_examples=300, deadline=None)
@given(changes=changes_st, pick=st.integers(0, 7), earliest=st.integers(0, H - 1))
def test_earlier_start_equals_removing_the_booking_and_fitting_again(changes, pick, earliest):
    if not changes:
        return
    s, e, d = changes[pick % len(changes)]
    amount = -d
    prof = Profile(6)
    for c in changes:
        prof.add(*c)
    without = brute(6, [c for i, c in enumerate(changes) if i != pick % len(changes)])
    want = brute_fit(without, amount, e - s, earliest, s - 1) if earliest < s else None
    assert prof.earlier_start(amount, earliest, s, e - s) == want


@pytest.mark.parametrize(
    ("changes", "amount", "t", "window", "since"),
    [
        ([], 1, 10, inf, -inf),
        ([(20, 30, -4)], 1, 10, 10, -inf),  # ends where the capacity drops
        ([(0, 10, -4)], 1, 15, inf, 10),  # free since the booking ended
        ([(0, 10, -4)], 1, 5, 0, 5),  # not free at all: since = t
        ([(0, 10, -2)], 2, 5, inf, -inf),  # 2 of 4 stay free
    ],
)
def test_window_and_free_since(changes, amount, t, window, since):
    prof = Profile(4)
    for c in changes:
        prof.add(*c)
    assert prof.window(amount, t) == window
    assert prof.free_since(amount, t) == since


def test_prune_forgets_the_past_but_not_the_present():
    prof = Profile(4)
    prof.add(0, 10, -1)
    prof.add(5, 20, -2)
    prof.prune(12)
    assert prof.times[0] == -inf and prof.at(12) == 2 and prof.at(25) == 4
    assert prof.mismatches(4, [(5, 20, 2)]) == []
    assert prof.mismatches(4, [(5, 20, 1)]) != []


@settings(max_examples=300, deadline=None)
@given(changes=changes_st, amount=st.integers(1, 6), start=st.integers(0, H - 1),
       length=st.integers(0, 30))
def test_runs_are_the_longest_spans_with_room(changes, amount, start, length):
    prof = Profile(6)
    for s, e, d in changes:
        prof.add(s, e, d)
    arr = brute(6, changes)
    end = start + length
    want, since = [], None
    for t in range(start, end):
        if arr[t] >= amount and since is None:
            since = t
        elif arr[t] < amount and since is not None:
            want.append((since, t))
            since = None
    if since is not None:
        want.append((since, end))
    assert prof.runs(amount, start, end) == want


# ---- BlockProfile: the same step function, in blocks -------------------------------------

ops_st = st.lists(
    st.one_of(
        st.tuples(st.just("book"), st.integers(0, H - 2), st.integers(1, 30), st.integers(1, 3)),
        st.tuples(st.just("book_open"), st.integers(0, H - 2), st.just(0), st.integers(1, 3)),
        st.tuples(st.just("give_back"), st.integers(0, 20), st.just(0), st.just(0)),
        st.tuples(st.just("prune"), st.integers(0, 15), st.just(0), st.just(0)),
    ),
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(ops=ops_st, block=st.integers(1, 4), group=st.integers(1, 4))
def test_block_profile_is_the_plain_profile_step_for_step(ops, block, group):
    """After any history of changes and prunes, a BlockProfile of any block and group
    size holds exactly the plain Profile's steps and gives the same answers."""
    plain, blocked = Profile(12), BlockProfile(12, block=block, group=group)
    held: list[tuple[float, float, int]] = []
    now = 0
    for op, a, b, c in ops:
        if op in ("book", "book_open"):
            start = max(a, now)
            end = inf if op == "book_open" else start + b
            if plain.min_over(start, end) < c:
                continue
            change = (start, end, -c)
        elif op == "give_back":
            if not held:
                continue
            s, e, d = held.pop(a % len(held))
            change = (s, e, -d)
        else:
            now = max(now, a)
            plain.prune(now)
            blocked.prune(now)
            assert blocked.steps() == (plain.times, plain.free)
            continue
        plain.add(*change)
        blocked.add(*change)
        if change[2] < 0:
            held.append(change)
        assert blocked.steps() == (plain.times, plain.free)
    for t in range(H + 5):
        assert blocked.at(t) == plain.at(t)
    # every amount, windows short and long, from every third instant: a window
    # then spans any number of blocks, short anywhere in it
    for amount in range(1, 13):
        for duration in (1, 4, 12, 40):
            for earliest in range(0, H, 3):
                for last in (inf, earliest + 5):
                    assert blocked.fit(amount, duration, earliest, last) == \
                        plain.fit(amount, duration, earliest, last)
    bookings = [(s, e, -d) for s, e, d in held]
    assert blocked.mismatches(12, bookings) == plain.mismatches(12, bookings)


@settings(max_examples=200, deadline=None)
@given(profiles=st.lists(changes_st, max_size=5), start=st.integers(-2, H),
       length=st.integers(-3, 30))
def test_lows_over_is_each_profiles_min_over(profiles, start, length):
    # empty and backward windows too: min_over reads the step at ``start`` then
    profs = []
    for changes in profiles:
        prof = Profile(6)
        for s, e, d in changes:
            prof.add(s, e, d)
        profs.append(prof)
    end = start + length
    assert lows_over(profs, start, end) == [p.min_over(start, end) for p in profs]
