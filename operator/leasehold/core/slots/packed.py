"""Packed pools: nodes with cpu and memory capacity that hold several VMs, pinned.

Every booking is placed on concrete nodes when it is made, and capacity is checked
per node and per resource at every instant of the window. Node choice: best fit in
time — nodes that have had room only since shortly before the booking's start
first, then node index — filling a node before moving on.

At scale a booking reads only nodes that may hold it: per shape and searched start,
a max segment tree over the nodes holding when each node's room for a VM runs out
(a bound from above, learnt as nodes are read, forgotten where capacity is given
back; a new start's is copied from a neighbouring start's, the nodes that change in
between through an index of the instants nodes change at not known), and the nodes
given capacity back by an instant (the only ones best fit in time ranks; the rest
follow by index, off the tree, lazily).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections import Counter
from collections.abc import Callable, Iterable
from math import inf, nextafter

from ..model import PoolSpec, Shape
from ..profile import BlockProfile, Profile
from .booking import Booking
from .maxtree import MaxTree
from .pool import PoolTable, fit_count, fit_extended, fit_in
from .rooms import Rooms, levels
from .statement import Statement

#: the most VMs of one shape per node whose spans are kept (beyond, a node's levels
#: are too many to sweep, and a compression searches every window in full)
_LEVELS_MAX = 64
#: the starts a search fails at before it sweeps the nodes' levels for the first
#: start that may hold its VMs
_SWEEP_AFTER = 3
#: the shape-and-start node indexes kept (least recently used forgotten first): each
#: holds two floats per node (a 5,000-node pool: 128 KiB each), and all of them at
#: most this many floats (32 MiB): as many as fit, at least 256 and at most 4,096 (a
#: compression tries the same few thousand starts for thousands of reservations,
#: each a tree; a prune brings every tree up to date)
_TREES_MIN, _TREES_MAX = 256, 4096
_TREE_CELLS = 4_000_000


class PackedPool(PoolTable):
    """Bookings on concrete nodes. Each node has a free-cpu and a free-memory
    profile: the VMs of a shape that fit on a node throughout a window are
    ``min(min free cpu // cpu, min free memory // memory)`` over the window, two
    C-level ``min`` calls."""

    def __init__(self, spec: PoolSpec) -> None:
        super().__init__(spec)
        #: each node's capacity, by index (a pool may have nodes of several sizes)
        self.sizes = spec.sizes()
        self._distinct = spec.distinct()
        #: each node's size as its index in ``_distinct``
        self._kind = [[size for size, _ in self._distinct].index(size) for size in self.sizes]
        self.node_cpu = [Profile(size.cpu) for size in self.sizes]
        self.node_mem = [Profile(size.memory) for size in self.sizes]
        #: per extended resource some node has, each node's free-count profile (a
        #: node without it: capacity 0). Read only for shapes that ask for one: the
        #: cpu-and-memory paths below stay as they were, and their answers that a
        #: node may have room (never that it has) are checked by :meth:`room`
        self.node_extended = {name: [Profile(size.amount(name)) for size in self.sizes]
                              for name in spec.extended_names()}
        self._ends: list[float] = []  # sorted booking ends: candidate start times
        # pool-wide free cpu and memory: a necessary condition checked before the
        # exact per-node packing, which costs a pass over the nodes. In blocks: they
        # have a step per booking end, and a lease that starts now spans most of them
        total = spec.total()
        self.cpu_free = BlockProfile(total.cpu)
        self.mem_free = BlockProfile(total.memory)
        #: per shape, the compression trials that found no earlier start, while no
        #: capacity was given back where they looked: (VMs, length, earliest) -> the
        #: latest booking start
        self._no_earlier: dict[Shape, dict[tuple[int, float, float], float]] = {}
        #: the spans given back, numbered: a booking made takes room and proves no
        #: failed search wrong; one given back may give room where one found none.
        #: (number, start, end, booking); spans that end before the pool's present
        #: can matter to no search and are dropped
        self._given: list[tuple[int, float, float, Booking]] = []
        #: the same spans per node given capacity back: (number, start, end)
        self._given_on: dict[int, list[tuple[int, float, float]]] = {}
        self._given_count = 0
        self._given_kept = 64  # spans kept at the last sweep of those that ended
        self._now = -inf
        #: the first span number ``_no_earlier`` has not been checked against
        self._no_earlier_seen = 0
        #: per booking, what a search proved when it was placed or last failed to move
        #: it: (spans given before, earliest, length): no start in ``[earliest, its
        #: start)`` for as many VMs of its shape that long. Only a window that
        #: overlaps a span given back since can be one now
        self._proofs: dict[Booking, tuple[int, float, float]] = {}
        #: the last successful search: (VMs, shape, length, start, earliest, spans
        #: given before); the booking made from it inherits its proof
        self._found: tuple[int, Shape, float, float, float, int] | None = None
        #: per shape, the spans of time (from the present on) in which each node
        #: holds a VM of the shape, kept until the node's bookings change
        self._rooms: dict[Shape, Rooms] = {}
        #: the nodes' capacity changes, indexed by instant: the distinct instants
        #: (sorted) at which a booking starts or ends on some node, and per instant
        #: those nodes (with multiplicity). A node's room at two instants differs only
        #: if it changes between them: a new start's tree is copied from a
        #: neighbouring start's, the few nodes that change in between not known.
        #: Plain dicts of ints, not ``Counter``s: a dict of ints alone is not tracked
        #: by the garbage collector (a ``Counter`` always is: 46,000 of the 5,000-node
        #: state's objects, passed over by every full collection)
        self._step_times: list[float] = []
        self._steps_on: dict[float, dict[int, int]] = {}
        #: the same for booking ends alone: only a node given capacity back at or
        #: before a start can have had room only since some instant (best fit in time
        #: ranks just those; every other node with room has had it always)
        self._end_times: list[float] = []
        self._ends_on: dict[float, dict[int, int]] = {}
        #: per shape and start, nodes with room there found short of a window: when
        #: their room runs out (a bound from above, the node's version then). A
        #: booking made only shortens room, so the bound holds until the node is
        #: given capacity back (its version bumped). A node that has room at a start
        #: but not for a window is passed over in one look, not a scan of its steps
        #: (the nodes a future reservation blocks were looked at by every booking:
        #: a tenth of the pool each, in the preemption benchmark's state)
        self._short: dict[tuple[Shape, float], dict[int, tuple[float, int]]] = {}
        self._short_kept = 64
        #: the same per shape alone: per node, its version then and the instants at
        #: which it was found to have no room for a VM (sorted), in one tuple of
        #: numbers: the garbage collector stops tracking such a tuple at the first
        #: collection it survives, so the full collections of a large pool do not
        #: pass over them (as a tuple and a list, then as an ``array``, they were
        #: most of the 5,000-node state's objects: 194,000 of 434,000, and a full
        #: collection's time grows with the objects tracked). No window that
        #: contains one can use the node until it is given capacity back, whatever
        #: its start: a new start learns from them what earlier starts found (each
        #: queued reservation of the preemption benchmark's state searches a new
        #: start, and scanned the steps of every node an earlier one blocks)
        self._full_at: dict[Shape, dict[int, tuple[float, ...]]] = {}
        self._version = [0] * spec.nodes
        #: per shape and start, over the nodes by index, when each node's room for a
        #: VM runs out from the start (a bound from above: the first instant from the
        #: start at which it was found to have none, ``-inf`` if at the start, ``inf``
        #: if not known): the next node by index that may hold a VM for a whole window
        #: is found without reading those that cannot (the nodes a future reservation
        #: blocks were read one by one by every booking before it: 0.15 N a booking in
        #: the preemption benchmark's state). A booking made only shortens room, so a
        #: bound holds until its node is given capacity back: a tree brings its nodes
        #: back to ``inf`` (not known) from the capacity given back since it was last
        #: read (``_gains``, numbered from ``_gains_base``) before it is read
        self._trees: dict[tuple[Shape, float], MaxTree] = {}
        self._trees_max = max(_TREES_MIN,
                              min(_TREES_MAX, _TREE_CELLS // (2 * max(spec.nodes, 1))))
        self._tree_seen: dict[tuple[Shape, float], int] = {}
        #: the starts that have trees (sorted), and the shapes of each's
        self._tree_starts: list[float] = []
        self._tree_shapes: dict[float, list[Shape]] = {}
        #: per shape, the starts with a tree of it (sorted)
        self._shape_starts: dict[Shape, list[float]] = {}
        self._gains: list[tuple[float, tuple[int, ...]]] = []
        self._gains_base = 0
        #: the nodes no booking holds (each holds its full size over any window)
        self._idle = set(range(spec.nodes))

    def room(self, node: int, shape: Shape, start: float, end: float) -> int:
        """VMs of ``shape`` that fit on ``node`` throughout ``[start, end)``."""
        cpu, mem = self.node_cpu[node], self.node_mem[node]
        # most nodes of a busy pool are full at ``start``: one bisect says so
        if cpu.at(start) < shape.cpu or mem.at(start) < shape.memory:
            return 0
        most = fit_count(cpu.min_over(start, end), mem.min_over(start, end), shape)
        if shape.extended and most > 0:
            ext = self.node_extended

            def free(name: str) -> int:
                own = ext.get(name)
                return 0 if own is None else own[node].min_over(start, end)

            return fit_extended(most, free, shape)
        return most

    def fit(
        self, vms: int, shape: Shape, duration: float, earliest: float,
        latest_start: float = inf,
    ) -> float | None:
        # The earliest start is ``earliest`` or a booking end: between ends, usage
        # only rises. Candidates where the pool as a whole lacks cpu or memory are
        # skipped on the aggregate profiles; the survivors are checked node by node.
        # Where a few fail, a sweep over the nodes' levels says from when the nodes
        # may hold the VMs (a fragmented pool failed a dozen starts in a row). Not
        # at the first: the sweep brings every node changed since the last one's
        # levels up to date, for each shape asked, and most searches succeed at
        # the second or third start (sweeping at the first failure was two thirds
        # of the scale benchmark's CPU under EASY).
        if vms > self.max_vms(shape):
            return None
        need_cpu, need_mem = vms * shape.cpu, vms * shape.memory
        cpu, mem, ends = self.cpu_free, self.mem_free, self._ends
        t = earliest
        failed = 0
        while True:
            while True:
                a = cpu.fit(need_cpu, duration, t, latest_start)
                if a is None:
                    return None
                b = mem.fit(need_mem, duration, a, latest_start)
                if b is None:
                    return None
                if b == a:
                    break
                t = b
            if self._room_total(vms, shape, a, a + duration) >= vms:
                self._found = (vms, shape, duration, a, earliest, self._given_count)
                return a
            i = bisect_right(ends, a)
            # past the last end the pool is empty (cannot happen); past
            # ``latest_start`` nothing is asked (an EASY backfill asks at ``now`` alone)
            if i == len(ends) or ends[i] > latest_start:
                return None
            failed += 1
            if failed == _SWEEP_AFTER:
                first = self._rooms_of(shape).first(vms, a, latest_start, duration)
                if first is None:
                    return None
                if first > a:
                    t = first
                    continue
            t = ends[i]

    def _room_total(self, vms: int, shape: Shape, start: float, end: float) -> int:
        """The VMs of ``shape`` the nodes hold throughout ``[start, end)``, counted
        until there are ``vms`` (in no set order: a caller asks only whether there
        are ``vms``)."""
        # the idle nodes first, whole: the pool's least booked part (a booking fills
        # nodes by index) answers most searches of a filling pool at once, where the
        # nodes with room were read in index order, busy ones first (the preemption
        # benchmark's reservations each read every node an earlier one blocks)
        # (the start's tree is made even so: the booking made from this search
        # places its VMs off it)
        tree = self._tree(shape, start)
        sizes, total = self.sizes, 0
        for node in self._idle:
            total += fit_in(sizes[node], shape)
            if total >= vms:
                return total
        # then every node the tree does not know short of the window
        look = self._looker(shape, start, end, tree)
        total, at = 0, 0
        while (found := tree.first_at_least(at, end)) is not None:
            at = found + 1
            total += look(found)
            if total >= vms:
                break
        return total

    def _full_in(self, full_at: dict[int, tuple[float, ...]],
                 short: dict[int, tuple[float, int]], node: int, start: float,
                 end: float) -> bool:
        """Whether ``node`` is known to have no room for a VM at some instant of
        ``[start, end)`` (from any start's search); the first such instant from
        ``start`` on is noted for ``start`` (``short``, the start's)."""
        seen, version = full_at.get(node), self._version[node]
        if seen is None or seen[0] != version:
            return False
        k = bisect_left(seen, start, 1)
        if k == len(seen):
            return False
        short[node] = (seen[k], version)
        return seen[k] < end

    def _short_of(self, full_at: dict[int, tuple[float, ...]],
                  short: dict[int, tuple[float, int]], node: int, shape: Shape,
                  start: float) -> bool:
        """For a node that cannot hold a VM of ``shape`` throughout a window from
        ``start``: notes the first instant from ``start`` on at which it has no room
        (for ``start`` and for the shape), and says whether that is ``start``."""
        until = self._room_until(node, shape, start)
        version = self._version[node]
        known = full_at.get(node)
        if known is None or known[0] != version:
            full_at[node] = (version, until)
        else:
            k = bisect_left(known, until, 1)
            if k == len(known) or known[k] != until:
                full_at[node] = (*known[:k], until, *known[k:])
        if until <= start:
            return True
        short[node] = (until, version)
        return False

    def _room_until(self, node: int, shape: Shape, start: float) -> float:
        """When ``node``, with room for a VM of ``shape`` at ``start``, first has none."""
        until = min(self.node_cpu[node].drops_below(shape.cpu, start),
                    self.node_mem[node].drops_below(shape.memory, start))
        for name, n in shape.extended:
            own = self.node_extended.get(name)
            until = min(until, start if own is None else own[node].drops_below(n, start))
        return until

    def _ended_by(self, start: float, limit: int) -> set[int] | None:
        """The nodes on which some booking ends at or before ``start``; ``None`` when
        they come from more than ``limit`` instants (cheaper to ask each node)."""
        k = bisect_right(self._end_times, start)
        if k > limit:
            return None
        # gathered in C, ``map`` over the instants (a generator's interpreted loop
        # over them, 178 a reservation at 5,000 nodes, 36 at 1,000, was most of it)
        return set().union(*map(self._ends_on.__getitem__, self._end_times[:k]))

    def move_earlier(self, booking: Booking, earliest: float, length: float) -> float | None:
        # A compression tries thousands of bookings, most of which cannot move, on a
        # table that changes little meanwhile. Two kinds of proof spare the search:
        #
        # - the booking's own: when it was placed at the earliest start a search
        #   found, or last failed to move, no earlier start existed. Bookings made
        #   since took room and proved nothing wrong; a start found now must use a
        #   node given capacity back since, within the window, and that node must
        #   hold a VM throughout it. Only those starts are searched, found on those
        #   nodes alone (the first compression after the scale benchmark's local
        #   wave, 2,119 trials on 500 nodes, took 17 s of CPU when each trial
        #   searched its booking's whole past, 2.5 s so; the next ones, after one
        #   lease ended early, 2-10 s, now 0.02-2 s);
        # - another booking's failed trial: one that found no start in [earliest, its
        #   start) proves there is none either for a booking of the same shape with
        #   as many VMs or more and at least as long, at the starts whose window ends
        #   before that booking's own start (there its trial freed nothing, and the
        #   earlier trial had more room everywhere). Forgotten where capacity was
        #   given back since.
        self._forget_where_given()
        shape, vms, start = booking.shape, booking.vms, booking.start
        proof = self._proofs.get(booking)
        if proof is not None and (proof[1] > earliest or proof[2] > length):
            proof = None
        # the booking's own nodes given capacity back: its own room then counts, so
        # the windows are looked for once it is taken out for the trial
        own = proof is not None and bool(
            self._gained(proof[0], booking.nodes or (), earliest, start, length))
        windows = [(earliest, start)] if proof is None else [] if own \
            else self._room_windows(proof[0], shape, length, earliest, start)
        tried = self._no_earlier.setdefault(shape, {})
        if windows or own:
            since = earliest
            for (v, n, e), upto in tried.items():
                if v <= vms and n <= length and e <= earliest:
                    since = max(since, min(upto, start - length))
            # only starts strictly before its own are searched: at its own it moves
            # nothing
            before = nextafter(start, -inf)
            with Statement(self) as trial:
                trial.unbook(booking)
                if own:
                    assert proof is not None
                    windows = self._room_windows(proof[0], shape, length, earliest, start)
                rooms = self._rooms_of(shape)
                for low, high in windows:
                    # where the nodes cannot hold the VMs in the window at all, the
                    # search is spared; elsewhere it begins where they may
                    high = min(high, before)
                    first = rooms.first(vms, max(low, since), high, length)
                    if first is None:
                        continue
                    t = self.fit(vms, shape, length, first, high)
                    if t is not None:
                        trial.commit()
                        # the windows before ``t`` had no start: so had the others
                        self._found = (vms, shape, length, t, earliest,
                                       self._given_count)
                        return t
        self._proofs[booking] = (self._given_count, earliest, length)
        key = (vms, length, earliest)
        tried[key] = max(tried.get(key, start), start)
        return None

    def _gained(self, since: int, nodes: Iterable[int], earliest: float, start: float,
                length: float) -> dict[int, tuple[float, float]]:
        """Of ``nodes``, those given capacity back by span number ``since`` or later,
        where a window of ``length`` starting in ``[earliest, start)`` may overlap
        it: each with the span that covers what it was given."""
        gained: dict[int, tuple[float, float]] = {}
        for node in nodes:
            spans = self._given_on.get(node)
            if not spans:
                continue
            low, high = inf, -inf
            for _, a, b in spans[bisect_left(spans, (since,)):]:
                if b <= earliest or a - length >= start:
                    continue
                low, high = min(low, a), max(high, b)
            if low != inf:
                gained[node] = (low, high)
        return gained

    def _room_windows(self, since: int, shape: Shape, length: float, earliest: float,
                      start: float) -> list[tuple[float, float]]:
        """The starts ``t`` in ``[earliest, start]`` at which a node given capacity
        back by span number ``since`` or later holds a VM throughout
        ``[t, t + length)``, a window that overlaps what it was given: ``[low, high]``
        ranges, in order, not overlapping. Only the few nodes that hold a VM that
        long anywhere in the range are looked at one by one."""
        rooms = self._rooms_of(shape)
        out: list[tuple[float, float]] = []
        holding = rooms.holding(earliest, start, length)
        for node, (a, b) in self._gained(since, holding, earliest, start, length).items():
            low, high = max(earliest, a - length), min(b, start)
            if low >= high:
                continue
            runs = rooms.runs(node)
            until = high + length
            for i in range(bisect_right(runs[1], low), len(runs[0])):
                x, y = max(runs[0][i], low), min(runs[1][i], until)
                if x >= until:
                    break
                # a window that starts only at the booking's own start moves nothing
                if y - x >= length and x < start:
                    out.append((x, y - length))
        out.sort()
        merged: list[tuple[float, float]] = []
        for low, high in out:
            if merged and low <= merged[-1][1]:
                if high > merged[-1][1]:
                    merged[-1] = (merged[-1][0], high)
            else:
                merged.append((low, high))
        return merged

    def _rooms_of(self, shape: Shape) -> Rooms:
        rooms = self._rooms.get(shape)
        if rooms is None:
            # the most VMs any node holds: the levels above are empty everywhere.
            # The levels read cpu and memory alone: for a shape with extended
            # resources they may say a node holds VMs where it does not (a bound
            # from above, which is all their readers take them for)
            top = max(fit_in(size, shape) for size, _ in self._distinct)
            rooms = self._rooms[shape] = Rooms(
                self.spec.nodes, lambda node: levels(
                    self.node_cpu[node], self.node_mem[node], shape, min(top, _LEVELS_MAX),
                    self._now),
                complete=top <= _LEVELS_MAX)
        return rooms

    def _forget_where_given(self) -> None:
        """A failed trial (VMs, length ``n``, earliest ``e``) up to ``upto`` looked at
        windows within ``[e, upto + n)``: those that overlap a span given back are
        forgotten."""
        given = self._given[bisect_left(self._given, (self._no_earlier_seen,)):]
        self._no_earlier_seen = self._given_count
        if not given:
            return
        for tried in self._no_earlier.values():
            for key in [k for k, upto in tried.items()
                        if any(a < upto + k[1] and b > k[2] for _, a, b, _ in given)]:
                del tried[key]

    def free_window(self, vms: int, shape: Shape, t: float) -> float:
        if self.fit(vms, shape, 0.0, t, t) is None:
            return 0.0
        # the window can only end where some node's free capacity drops; the VMs
        # must keep their nodes, so test the whole span [t, q) up to the next step.
        # The instants bookings start or end on nodes (indexed) are every node's
        # steps, and maybe more: a span between two of them is as one step
        times = self._step_times
        bounds = times[bisect_right(times, t):]
        for k, p in enumerate(bounds):
            q = bounds[k + 1] if k + 1 < len(bounds) else p + 1
            if self.fit(vms, shape, q - t, t, t) is None:
                return p - t
        return inf

    def place(self, vms: int, shape: Shape, start: float, end: float) -> tuple[int, ...]:
        """Concrete nodes for a booking that :meth:`fit` said is feasible.

        Best fit in time: nodes that had room for a VM only since shortly before
        ``start`` come first, so a future reservation does not pin nodes that are
        idle now and could take backfilled work until it begins (first fit by index
        fragments the plan: +35% mean wait on the SDSC Blue trace, conservative).
        Ties: node index. A node is filled before the next is used."""
        # Only nodes the start's tree does not know short of the window are looked
        # at, and of those, lazily in rank order, only until the VMs are placed:
        # every node read each booking was 15 of the 26 CPU-s of building the
        # preemption benchmark's 1,000-node state, growing as the square of the
        # nodes. A node that has had room only since some instant must have been
        # given capacity back then: a booking on it ends at or before ``start``.
        # Only those are ranked by that instant; every other node with room has had
        # it always and comes after them, by index.
        cpu, mem, c, m = self.node_cpu, self.node_mem, shape.cpu, shape.memory
        # the shape and start's tree: only nodes whose room may last until ``end`` are
        # read; what is learnt of the others is noted in it (sorting the nodes with
        # room and passing over the nodes known short one by one was most of a
        # booking's node choice at 5,000 nodes, and ranking every node given
        # capacity back by some instant most of the rest). A node ranked here may
        # have no room at ``start`` (the tree may not know it yet): it is read and
        # holds nothing, so the order of those that have room is the rule's
        tree = self._tree(shape, start)
        bound, width = tree.t, tree.width
        ended = self._ended_by(start, self.spec.nodes)
        ranked = sorted(
            (-since, node) for node in (range(self.spec.nodes) if ended is None else ended)
            if bound[width + node] >= end
            and (since := max(cpu[node].free_since(c, start),
                              mem[node].free_since(m, start))) != -inf)
        first = {node for _, node in ranked}
        look = self._looker(shape, start, end, tree)
        picked: list[int] = []
        for _, node in ranked:
            room = look(node)
            if room > 0:
                picked.extend([node] * min(room, vms - len(picked)))
                if len(picked) == vms:
                    return tuple(picked)
        # the rest in index order, off the tree
        at = 0
        while (found := tree.first_at_least(at, end)) is not None:
            node, at = found, found + 1
            if node in first:
                continue
            room = look(node)
            if room > 0:
                picked.extend([node] * min(room, vms - len(picked)))
                if len(picked) == vms:
                    return tuple(picked)
        raise RuntimeError(f"slot table inconsistent: no room for {vms} VMs at {start}")

    def _looker(self, shape: Shape, start: float, end: float, tree: MaxTree
                ) -> Callable[[int], int]:
        """A reader of nodes for a window: a node's room throughout it, if it may have
        some; else 0, with what was learnt noted in ``tree`` (the start's) and in the
        records of instants without room."""
        short = self._short.setdefault((shape, start), {})
        full_at = self._full_at.setdefault(shape, {})
        version = self._version

        def look(node: int) -> int:
            known = short.get(node)
            if known is not None and known[0] < end and known[1] == version[node]:
                tree.set(node, known[0])
                return 0
            if known is None and self._full_in(full_at, short, node, start, end):
                tree.set(node, short[node][0])
                return 0
            room = self.room(node, shape, start, end)
            if room <= 0:
                if self._short_of(full_at, short, node, shape, start):
                    tree.set(node, -inf)
                else:
                    tree.set(node, short[node][0])
            return room

        return look

    def _tree(self, shape: Shape, start: float) -> MaxTree:
        """The shape and start's tree (see ``_trees``), brought up to date with the
        capacity given back since it was last read; made if there is none."""
        key = (shape, start)
        trees = self._trees
        tree = trees.pop(key, None)
        if tree is None:
            tree = self._new_tree(shape, start)
            if len(trees) >= self._trees_max:  # the least recently read goes
                self._drop_tree(next(iter(trees)))
            at = self._tree_shapes.get(start)
            if at is None:
                at = self._tree_shapes[start] = []
                insort(self._tree_starts, start)
            at.append(shape)
            insort(self._shape_starts.setdefault(shape, []), start)
        trees[key] = tree  # the most recently read last
        self._catch_up(key, tree)
        return tree

    def _drop_tree(self, key: tuple[Shape, float]) -> None:
        del self._trees[key], self._tree_seen[key]
        at = self._tree_shapes[key[1]]
        at.remove(key[0])
        own = self._shape_starts[key[0]]
        del own[bisect_left(own, key[1])]
        if not at:
            del self._tree_shapes[key[1]]
            starts = self._tree_starts
            del starts[bisect_left(starts, key[1])]

    def _new_tree(self, shape: Shape, start: float) -> MaxTree:
        """A tree for a start that has none (its ``_tree_seen`` is set): a copy of the
        tree of a near start, on either side, of this shape or of one that fits in it
        (room for a VM of this shape is room for one of that shape: when the latter's
        runs out bounds the former's), those of its nodes that change between the two
        starts asked whether they have room at ``start`` and if so not known; else
        every node with room at ``start`` not known, every other one without room
        there (a pass over every node: only the first start of a shape, or one far
        from any other, reads every node)."""
        starts, times = self._tree_starts, self._step_times
        i = bisect_left(starts, start)
        # on each side, the nearest start with a tree of this shape and the nearest
        # with one of a shape that fits, if fewer than a quarter of the nodes'
        # changes away (the changes only grow outwards). This shape's is taken
        # unless the other is nearer by more than a 64th of the nodes: a smaller
        # shape's tree does not know the nodes that hold its VMs but not this
        # shape's, and a search reads each (EASY asks many shapes at each new
        # present: copied from a small shape's tree there, a large one's searches
        # read most of the pool, +40% CPU), while each change in between is a node
        # asked again (the preemption benchmark's reservations, each a start of its
        # own, find their own shape's tree far more often than a neighbour's). Not
        # only the next few starts: the smallest shapes have only their own trees
        # to copy, and each start without one read every node (a twentieth of the
        # preemption benchmark's reservations, each an O(nodes) pass)
        # This shape's nearest starts on either side are found by bisection (walking
        # every start with a tree to them was ~40 starts a reservation of the
        # preemption state); the walk for another shape's stops where it could no
        # longer be taken (the same choice, the left side's first on ties)
        most, prefer = self.spec.nodes // 4, self.spec.nodes // 64
        own: tuple[int, float, Shape] | None = None
        other: tuple[int, float, Shape] | None = None
        mine = self._shape_starts.get(shape, ())
        p = bisect_left(mine, start)
        for q in (p - 1, p):
            if 0 <= q < len(mine):
                near = mine[q]
                low, high = min(near, start), max(near, start)
                count = bisect_right(times, high) - bisect_right(times, low)
                if count <= most and (own is None or count < own[0]):
                    own = (count, near, shape)
        for side in (range(i - 1, -1, -1), range(i, len(starts))):
            for j in side:
                near = starts[j]
                low, high = min(near, start), max(near, start)
                count = bisect_right(times, high) - bisect_right(times, low)
                if count > most or (own is not None and count + prefer >= own[0]):
                    break
                at = self._tree_shapes[near]
                if other is None or count < other[0]:
                    source = next((s for s in at if s.fits_in(shape)), None)
                    if source is not None:
                        other = (count, near, source)
        best = other if other is not None and (
            own is None or other[0] + prefer < own[0]) else own
        if best is None:
            self._tree_seen[(shape, start)] = self._gains_base + len(self._gains)
            # an idle node holds its size: it is not read
            cpu, mem, c, m = self.node_cpu, self.node_mem, shape.cpu, shape.memory
            idle, kind = self._idle, self._kind
            holds = [fit_in(size, shape) > 0 for size, _ in self._distinct]
            return MaxTree([inf if (holds[kind[n]] if n in idle else
                                    cpu[n].at(start) >= c and mem[n].at(start) >= m)
                            else -inf for n in range(self.spec.nodes)])
        # a node that does not change between the two starts has the same room at
        # both (and a first instant without room after the later one is one after the
        # earlier one): its bound holds for either. Those that change are not known
        _, near, source = best
        tree = self._trees[(source, near)]
        self._catch_up((source, near), tree)
        tree = tree.copy()
        self._tree_seen[(shape, start)] = self._tree_seen[(source, near)]
        low, high = min(near, start), max(near, start)
        changed: set[int] = set().union(*map(
            self._steps_on.__getitem__, times[bisect_right(times, low):bisect_right(times, high)]))
        # each is asked whether it has room at ``start`` (two bisects): if not, that
        # is known (a search would read it in full, and at every new present EASY
        # asks, the nodes that changed since the last one are most of what it reads);
        # if so, the first instant from ``start`` on at which some search found it
        # without room (the shape's record, while its version holds) bounds when its
        # room runs out. Else each was read by the start's first search only to be
        # passed over on that record: two thirds of the nodes a queued reservation
        # of the 5,000-node preemption state read, more as the pool grows (the
        # farther the start copied from, the more nodes change in between)
        cpu, mem, c, m = self.node_cpu, self.node_mem, shape.cpu, shape.memory
        full_at, version = self._full_at.get(shape, {}), self._version
        # A changed node whose bound is at or after both starts keeps it: the bound
        # is an instant found without room (or ``inf``), so the node's room runs out
        # by then from the later start, which is before it, and from the earlier one
        # too (its room there runs out before the later start, or lasts past it and
        # runs out where that one's does). Only a bound before a start may hide room
        # the node gained in between. The 10,000-node preemption state's queued
        # reservations kept 78% of their changed nodes' bounds (57 of 73 each),
        # which were asked again, each two bisects and a tree update
        leaves, width = tree.t, tree.width
        for node in changed:
            if leaves[width + node] >= high:
                continue
            if cpu[node].at(start) < c or mem[node].at(start) < m:
                tree.set(node, -inf)
                continue
            seen = full_at.get(node)
            if seen is not None and seen[0] == version[node]:
                k = bisect_left(seen, start, 1)
                tree.set(node, seen[k] if k < len(seen) else inf)
            else:
                tree.set(node, inf)
        return tree

    def _catch_up(self, key: tuple[Shape, float], tree: MaxTree) -> None:
        """Forget in ``tree`` (not known again) the nodes given capacity back since
        it was last brought up to date, where that can give them room from its
        start on; those still without room at its start are known so (two bisects:
        under EASY a lease that ends gives its nodes back at every tree, and most
        have no room for the shape anyway: not known, each was read in full by the
        next search)."""
        seen, base = self._tree_seen[key], self._gains_base
        gains = self._gains
        if seen - base == len(gains):
            return
        shape, start = key
        cpu, mem, c, m = self.node_cpu, self.node_mem, shape.cpu, shape.memory
        for end, given in gains[max(seen - base, 0):]:
            if end > start:
                for node in given:
                    tree.set(node, inf if cpu[node].at(start) >= c
                             and mem[node].at(start) >= m else -inf)
        self._tree_seen[key] = base + len(gains)

    def _charge(self, b: Booking, sign: int) -> None:
        """Add (sign -1) or give back (sign +1) a booking's capacity."""
        cpu, mem = b.shape.cpu, b.shape.memory
        self.cpu_free.add(b.start, b.end, sign * b.vms * cpu)
        self.mem_free.add(b.start, b.end, sign * b.vms * mem)
        nodes = Counter(b.nodes or ())
        self._index(self._step_times, self._steps_on, b.start, nodes, sign)
        if b.end != inf:
            self._index(self._step_times, self._steps_on, b.end, nodes, sign)
            self._index(self._end_times, self._ends_on, b.end, nodes, sign)
        idle, ext, extended = self._idle, self.node_extended, b.shape.extended
        for node, count in nodes.items():
            if sign > 0:
                self._version[node] += 1
            node_cpu, node_mem = self.node_cpu[node], self.node_mem[node]
            node_cpu.add(b.start, b.end, sign * count * cpu)
            node_mem.add(b.start, b.end, sign * count * mem)
            for name, n in extended:
                # a pool whose nodes lost the resource (a capacity change) keeps the
                # bookings started on them: they show as over-committed, not a crash
                own = ext.get(name) or ext.setdefault(name, [Profile(0) for _ in self.sizes])
                own[node].add(b.start, b.end, sign * count * n)
            if sign < 0:
                idle.discard(node)
            elif len(node_cpu.times) == 1 and len(node_mem.times) == 1 and (
                    not ext or all(len(p[node].times) == 1 for p in ext.values())):
                idle.add(node)
        for rooms in self._rooms.values():
            rooms.forget_all(nodes)
        if sign > 0 and self._trees:
            self._gains.append((b.end, tuple(nodes)))

    @staticmethod
    def _index(times: list[float], on: dict[float, dict[int, int]], t: float,
               nodes: Counter[int], sign: int) -> None:
        """Note (sign -1) or forget (sign +1) a change of ``nodes`` at ``t``."""
        got = on.get(t)
        if sign < 0:
            if got is None:
                got = on[t] = {}
                insort(times, t)
            for node in nodes:
                got[node] = got.get(node, 0) + 1
            return
        assert got is not None
        for node in nodes:
            left = got[node] - 1
            if left > 0:
                got[node] = left
            else:
                del got[node]
        if not got:
            del on[t]
            del times[bisect_left(times, t)]

    def book(self, booking: Booking) -> None:
        given = self._given
        if given and given[-1][3] is booking \
                and (given[-1][1], given[-1][2]) == (booking.start, booking.end):
            given.pop()  # a trial's booking put back: nothing was given after all
            for node in set(booking.nodes or ()):
                self._given_on[node].pop()
        found = self._found
        if found is not None and found[:2] == (booking.vms, booking.shape) \
                and found[3] == booking.start and found[3] + found[2] == booking.end:
            self._proofs[booking] = (found[5], found[4], found[2])
        if booking.nodes is None:
            booking.nodes = self.place(booking.vms, booking.shape, booking.start, booking.end)
        self.bookings[booking] = None
        self._charge(booking, -1)
        if booking.end != inf:
            insort(self._ends, booking.end)

    def unbook(self, booking: Booking) -> None:
        del self.bookings[booking]
        self._proofs.pop(booking, None)
        if booking.end > self._now:
            self._given.append((self._given_count, booking.start, booking.end, booking))
            for node in set(booking.nodes or ()):
                self._given_on.setdefault(node, []).append(
                    (self._given_count, booking.start, booking.end))
            self._given_count += 1
        self._charge(booking, +1)
        if booking.end != inf:
            i = bisect_left(self._ends, booking.end)
            if i < len(self._ends) and self._ends[i] == booking.end:  # may have been pruned
                del self._ends[i]

    def occupy(self, booking: Booking, now: float) -> tuple[int, ...]:
        assert booking.nodes is not None  # shared bookings are always placed
        return booking.nodes

    def prune(self, now: float) -> None:
        # Per-node profiles are not pruned: unbooking a finished lease merges its
        # steps away, so they stay as short as the live bookings on the node.
        self._now = now
        i = bisect_right(self._ends, now)
        if i:
            del self._ends[:i]
        if len(self._given) > 2 * self._given_kept:
            self._given = [g for g in self._given if g[2] > now]
            self._given_kept = max(len(self._given), 64)
            self._given_on = {node: kept for node, spans in self._given_on.items()
                              if (kept := [g for g in spans if g[2] > now])}
        if len(self._short) > 2 * self._short_kept:
            self._short = {key: v for key, v in self._short.items() if key[1] >= now}
            self._short_kept = max(len(self._short), 64)
        self.cpu_free.prune(now)
        self.mem_free.prune(now)
        self._prune_trees(now)

    def _prune_trees(self, now: float) -> None:
        """Of the trees of starts before ``now``, each shape's latest stays and the
        others go (the next present's tree of the shape is copied from it, else each
        EASY step, which asks at ``now`` alone, read every node again); the capacity
        given back is forgotten once every tree has caught up with it."""
        starts = self._tree_starts
        i = bisect_left(starts, now)
        if i > 1:
            kept: set[Shape] = set()
            for t in starts[i - 1::-1]:
                for shape in list(self._tree_shapes[t]):
                    if shape in kept:
                        self._drop_tree((shape, t))
                    else:
                        kept.add(shape)
        if len(self._gains) > 256:
            for key, tree in self._trees.items():
                self._catch_up(key, tree)
            self._gains_base += len(self._gains)
            self._gains.clear()

    def usage_violations(self) -> list[str]:
        spec, bookings, total = self.spec, list(self.bookings), self.spec.total()
        out = [f"{spec.name} cpu: {m}" for m in self.cpu_free.mismatches(
            total.cpu, [(b.start, b.end, b.vms * b.shape.cpu) for b in bookings])]
        out += [f"{spec.name} memory: {m}" for m in self.mem_free.mismatches(
            total.memory, [(b.start, b.end, b.vms * b.shape.memory) for b in bookings])]
        for node, size in enumerate(self.sizes):
            for resource, prof, cap in (("cpu", self.node_cpu[node], size.cpu),
                                        ("memory", self.node_mem[node], size.memory)):
                counted = [(b.start, b.end, (b.nodes or ()).count(node)
                            * (b.shape.cpu if resource == "cpu" else b.shape.memory))
                           for b in bookings]
                out += [f"{spec.name}-{node} {resource}: {m}"
                        for m in prof.mismatches(cap, counted)]
            for name, profs in self.node_extended.items():
                counted = [(b.start, b.end, (b.nodes or ()).count(node) * b.shape.amount(name))
                           for b in bookings]
                out += [f"{spec.name}-{node} {name}: {m}"
                        for m in profs[node].mismatches(size.amount(name), counted)]
        return out
