"""One pool's image deployment: its repository link, its nodes' caches, and the
transfers and cache references of its leases (004 §3.1–3.2, DESIGN §2.6).

What a lease needs: its image on each of its nodes when its booking begins. It has
it without a transfer when the image is predeployed, or (``reuse``) when every node
of the pool has it cached when the lease is booked — nodes are bound when a booking
begins (:meth:`~leasehold.core.slots.PoolTable.occupy`), so only an image on every
node is sure to be on the lease's. Otherwise one transfer is booked on the link:
``image_mb / bandwidth`` seconds with ``multicast`` (one send reaches every node
of the pool at once), ``vms`` times that without (one send per VM's node).

Piggybacking (``piggyback``, with ``multicast`` only: a unicast transfer reaches only
its own lease's nodes, bound when it starts): a lease that would book a transfer
rides instead on the transfer of its image that has not begun by now and ends
earliest (ties: start, then the owner's name), if that one ends by its booking's
start. It then relies on that transfer as its owner does: the transfer is taken off
the link only when every lease it serves has given its booking back before it
began (the first rider takes it over from an owner that leaves), and a reservation's
transfer, once ridden on, may move earlier under EDF, never later (its deadline
becomes its end: every rider needs the image by then).

Cache references: from its booking until its start, a lease that relies on an
image pins it on every node of the pool (it may be bound to any of them); from its
start until its booking is given back, each of its VMs holds a reference on its
node's copy. A multicast transfer is cached on every node when it ends; a unicast
one on the lease's nodes when it starts. Where the cache cannot make room (its
images all in use), the image is not cached: the lease's VMs run from the copy the
transfer brought into their working space (D_w, not modelled: 004 copies it there
copy-on-write, at no cost)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model import ImagesSpec, LeaseType, PoolSpec, Request
from .cache import NodeCache
from .link import Link, Transfer


@dataclass(slots=True)
class Held:
    """The cache references a started lease holds: its image on these nodes (one
    entry per VM whose node had it cached)."""

    image: str
    booking: object
    nodes: tuple[int, ...]


@dataclass(slots=True)
class Depot:
    spec: PoolSpec
    link: Link = field(default_factory=Link)
    caches: list[NodeCache] = field(default_factory=list)
    #: each lease's transfer, from its booking until its start (kept while a
    #: lease whose transfer has begun is placed again: it is not sent twice)
    transfers: dict[str, Transfer] = field(default_factory=dict)
    #: multicast transfers not yet cached on the nodes, by end
    undelivered: list[Transfer] = field(default_factory=list)
    #: the same, by image (the transfers a lease may ride on are among them)
    on_the_way: dict[str, list[Transfer]] = field(default_factory=dict)
    #: per image, how many booked leases that have not started rely on it
    planned: dict[str, int] = field(default_factory=dict)
    #: the image each such lease relies on
    relying: dict[str, str] = field(default_factory=dict)
    #: the references of started leases
    held: dict[str, Held] = field(default_factory=dict)
    #: every transfer booked (or ridden on) and not given back before it began, by
    #: lease, in booking order (the simulator's output)
    log: dict[str, list[Transfer]] = field(default_factory=dict)
    #: each start whose VMs found their image nowhere on their node (none when sound)
    violations: list[str] = field(default_factory=list)
    #: per image, how many nodes cache it (every lease's booking asks whether all do)
    copies: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.resize(self.spec)

    @property
    def images(self) -> ImagesSpec:
        images = self.spec.images
        assert images is not None
        return images

    def resize(self, spec: PoolSpec) -> None:
        """The pool's nodes changed: new indices come with empty caches (a node's
        cache outlives its being down)."""
        self.spec = spec
        cap = self.images.cache_mb
        while len(self.caches) < spec.nodes:
            self.caches.append(NodeCache(cap))

    # ---- what a lease needs --------------------------------------------------------
    def predeployed(self, image: str) -> bool:
        images = self.images
        return images.predeployed_all or image in images.predeployed

    def cached_everywhere(self, image: str) -> bool:
        return self.copies.get(image, 0) >= self.spec.nodes

    def needs_transfer(self, req: Request, resuming: bool) -> bool:
        """Whether booking the lease now would book a transfer."""
        image = req.image
        if image is None or resuming or req.name in self.transfers \
                or self.predeployed(image):
            return False
        return not (self.images.reuse and self.cached_everywhere(image))

    def length(self, req: Request) -> float:
        """How long its transfer holds the link."""
        images = self.images
        one = req.image_mb / images.bandwidth
        return one if images.multicast else one * req.vms

    def ready(self, req: Request, resuming: bool, now: float) -> float:
        """The earliest its image can be on its nodes, as things stand: now, or the
        end of its transfer (booked, ridden on, or the earliest the link allows)."""
        tr = self.transfers.get(req.name)
        if tr is not None:
            return tr.end
        if not self.needs_transfer(req, resuming):
            return now
        length = self.length(req)
        fresh = self.link.earliest(length, now) + length
        ride = self._ride(req, fresh, now)
        return fresh if ride is None else ride.end

    def in_time(self, req: Request, by: float, now: float) -> bool:
        """Whether an advance reservation's transfer can end by ``by`` (its booking's
        start) with every other reservation's still ending by theirs."""
        if req.name in self.transfers:
            return self.transfers[req.name].end <= by
        if self._ride(req, by, now) is not None:
            return True
        length = self.length(req)
        probe = Transfer(req.name, req.image or "", req.image_mb, by - length, by, by)
        return self.link.edf(probe, now) is not None

    # ---- bookings --------------------------------------------------------------------
    def booked(self, req: Request, resuming: bool, start: float, now: float
               ) -> list[tuple[str, Transfer]]:
        """The lease holds a booking from ``start``: its image is pinned and its
        transfer, if it needs one, booked (or ridden on). Returns the transfers
        booked, ridden on or moved, each with every lease it serves."""
        image = req.image
        if image is None or resuming:
            return []
        out: list[tuple[str, Transfer]] = []
        ride = self._ride(req, start, now) if self.needs_transfer(req, resuming) else None
        if ride is not None:
            ride.riders.append(req.name)
            if ride.deadline is not None:
                ride.deadline = ride.end
            self.transfers[req.name] = ride
            self.log.setdefault(req.name, []).append(ride)
            out.append((req.name, ride))
        elif self.needs_transfer(req, resuming):
            length = self.length(req)
            if req.type is LeaseType.ADVANCE_RESERVATION:
                tr = Transfer(req.name, image, req.image_mb, start - length, start, start)
                layout = self.link.edf(tr, now)
                if layout is not None:
                    moved = [t for t, s in layout.items() if t is not tr and s != t.start]
                    self.link.apply(layout)
                    out.extend((lease, t) for t in moved for lease in (t.lease, *t.riders))
                else:  # placement checked it: only a caller that did not ask lands here
                    tr.deadline = None
                    tr.start = self.link.earliest(length, now)
                    tr.end = tr.start + length
            else:
                t0 = self.link.earliest(length, now)
                tr = Transfer(req.name, image, req.image_mb, t0, t0 + length)
            self.link.book(tr)
            self.transfers[req.name] = tr
            self.log.setdefault(req.name, []).append(tr)
            if self.images.multicast:
                self.undelivered.append(tr)
                self.on_the_way.setdefault(image, []).append(tr)
            out.append((req.name, tr))
        if req.name not in self.relying and not self.predeployed(image):
            self.relying[req.name] = image
            self.planned[image] = self.planned.get(image, 0) + 1
        return out

    def started(self, req: Request, booking: object, nodes: tuple[int, ...],
                now: float) -> None:
        """The lease's booking began on ``nodes``: its VMs take their image there."""
        image = req.image
        if image is None:
            return
        self.deliver(now)
        tr = self.transfers.pop(req.name, None)
        self._unrely(req.name)
        if self.predeployed(image):
            return
        pinned = self._pinned()
        if tr is not None and tr.end > now:
            self.violations.append(f"{req.name} started at t={now} before its image"
                                   f" {image} arrived (t={tr.end})")
        if tr is not None and not self.images.multicast:
            for i in sorted(set(nodes)):
                self._cache(i, image, req.image_mb, now, pinned)
        acquired: list[int] = []
        for i in nodes:
            cache = self.caches[i]
            if cache.has(image):
                cache.acquire(image, now)
                acquired.append(i)
            elif tr is None:
                self.violations.append(f"{req.name} started at t={now} on node {i}"
                                       f" without its image {image}")
        self.held[req.name] = Held(image, booking, tuple(acquired))

    def given_back(self, lease: str, booking: object, now: float) -> None:
        """The lease's booking left the table: its references go, and its transfer
        if it has not begun (one that has is kept for its next booking)."""
        held = self.held.get(lease)
        if held is not None and held.booking is booking:
            del self.held[lease]
            for i in held.nodes:
                self.caches[i].release(held.image, now)
            return
        self._unrely(lease)
        tr = self.transfers.get(lease)
        if tr is not None and tr.start > now:
            del self.transfers[lease]
            log = self.log[lease]
            log.remove(tr)
            if not log:
                del self.log[lease]
            if lease in tr.riders:
                tr.riders.remove(lease)
            elif tr.riders:  # still needed: the first rider takes it over
                tr.lease = tr.riders.pop(0)
                self.link.apply({})
            else:
                self.link.unbook(tr)
                if tr in self.undelivered:
                    self.undelivered.remove(tr)
                    self.on_the_way[tr.image].remove(tr)

    def deliver(self, now: float) -> None:
        """Cache every multicast transfer over by ``now`` on every node, in order of
        their ends (ties: start, then lease name)."""
        if not self.undelivered:
            return
        done = sorted((t for t in self.undelivered if t.end <= now),
                      key=lambda t: (t.end, t.start, t.lease))
        if not done:
            return
        self.undelivered = [t for t in self.undelivered if t.end > now]
        for image in {t.image for t in done}:
            left = [t for t in self.on_the_way[image] if t.end > now]
            if left:
                self.on_the_way[image] = left
            else:
                del self.on_the_way[image]
        for tr in done:
            pinned = self._pinned()
            for i in range(self.spec.nodes):
                self._cache(i, tr.image, tr.size, tr.end, pinned)

    # ---- helpers ------------------------------------------------------------------------
    def _ride(self, req: Request, by: float, now: float) -> Transfer | None:
        """The transfer the lease would ride on if it needed its image by ``by``: of
        its image, not begun by ``now``, ending by ``by``, the earliest to end (ties:
        start, then owner) — with ``multicast`` and ``piggyback`` only."""
        images = self.images
        if not (images.piggyback and images.multicast) or req.image is None:
            return None
        best: Transfer | None = None
        for tr in self.on_the_way.get(req.image, ()):
            if tr.start > now and tr.end <= by and (
                    best is None
                    or (tr.end, tr.start, tr.lease) < (best.end, best.start, best.lease)):
                best = tr
        return best

    def _cache(self, node: int, image: str, size: float, now: float,
               pinned: frozenset[str]) -> None:
        """Into the node's cache, keeping :attr:`copies`."""
        cache = self.caches[node]
        had = cache.has(image)
        copies = self.copies
        for gone in cache.add(image, size, now, pinned):
            copies[gone] -= 1
        if not had and cache.has(image):
            copies[image] = copies.get(image, 0) + 1

    def _unrely(self, lease: str) -> None:
        image = self.relying.pop(lease, None)
        if image is not None:
            n = self.planned[image] - 1
            if n:
                self.planned[image] = n
            else:
                del self.planned[image]

    def _pinned(self) -> frozenset[str]:
        return frozenset(self.planned)
