"""Plain data types of the scheduling core.

The core works on these frozen dataclasses, never on pydantic models: validation
happens once at the edge (`leasehold.api`), and the hot paths stay cheap to
construct and compare. Times are seconds (floats) on the caller's clock; cpu is in
millicores and memory in MiB (ints), so capacity arithmetic is exact.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Protocol, TypeVar


class LeaseType(StrEnum):
    BEST_EFFORT_CANCELLABLE = "BestEffortCancellable"
    BEST_EFFORT_SUSPENDABLE = "BestEffortSuspendable"
    DEADLINE_MIGRATABLE = "DeadlineMigratable"
    DEADLINE_NON_PREEMPTABLE = "DeadlineNonPreemptable"
    ADVANCE_RESERVATION = "AdvanceReservation"

    @property
    def best_effort(self) -> bool:
        return self in (LeaseType.BEST_EFFORT_CANCELLABLE, LeaseType.BEST_EFFORT_SUSPENDABLE)

    @property
    def guaranteed(self) -> bool:
        """Admitted only with a slot that ends by the deadline (it holds a reservation)."""
        return not self.best_effort


class Origin(StrEnum):
    LOCAL = "local"
    EXTERNAL = "external"


class Phase(StrEnum):
    PENDING = "Pending"
    QUEUED = "Queued"
    SCHEDULED = "Scheduled"
    RUNNING = "Running"
    SUSPENDING = "Suspending"
    SUSPENDED = "Suspended"
    RESUMING = "Resuming"
    MIGRATING = "Migrating"
    COMPLETED = "Completed"
    CANCELLED = "Cancelled"
    REJECTED = "Rejected"
    FAILED = "Failed"

    @property
    def terminal(self) -> bool:
        return self in (Phase.COMPLETED, Phase.CANCELLED, Phase.REJECTED, Phase.FAILED)


class Backfilling(StrEnum):
    CONSERVATIVE = "conservative"
    EASY = "easy"
    #: Strict first-come first-served, no backfilling: the reference baseline.
    NONE = "none"


#: the resources every :class:`Shape` has, in order (its first fields): the amounts
#: of a VM and the capacity of a node. Extended resources (``nvidia.com/gpu``, issue
#: 24) are further, named ones, in :attr:`Shape.extended`
RESOURCES: tuple[str, ...] = ("cpu", "memory")

#: a shape's extended resources: ``(name, count)`` pairs sorted by name, no count 0
#: (so equal amounts make equal, equally hashed shapes)
Extended = tuple[tuple[str, int], ...]


def extended_of(counts: Mapping[str, int] | Iterable[tuple[str, int]]) -> Extended:
    """Extended resources in :attr:`Shape.extended`'s form: sorted by name, the
    zero counts left out."""
    items = counts.items() if isinstance(counts, Mapping) else counts
    return tuple(sorted((name, n) for name, n in items if n))


def _merge(a: Extended, b: Extended, how: Callable[[int, int], int]) -> Extended:
    out = dict(a)
    for name, n in b:
        out[name] = how(out.get(name, 0), n)
    return extended_of(out)


@dataclass(frozen=True, slots=True)
class Shape:
    """Resources of one VM, or a node's capacity: cpu in millicores, memory in MiB,
    and integer counts of extended resources (devices such as ``nvidia.com/gpu``).
    A shape with no extended resources (the common case) pays for them only a test
    of an empty tuple: the hot paths read ``cpu`` and ``memory`` directly, and look
    at ``extended`` only when it is not empty."""

    cpu: int
    memory: int
    #: extended resources (:data:`Extended`; build it with :func:`extended_of`)
    extended: Extended = ()

    def amounts(self) -> tuple[int, ...]:
        """The amount of each of :data:`RESOURCES`, in order, then of each extended
        resource, by name."""
        return (self.cpu, self.memory, *(n for _, n in self.extended))

    def amount(self, name: str) -> int:
        """The amount of resource ``name`` (0 if the shape has none of it)."""
        if name == "cpu":
            return self.cpu
        if name == "memory":
            return self.memory
        for own, n in self.extended:
            if own == name:
                return n
        return 0

    def fits_in(self, size: Shape) -> bool:
        """Every resource at most ``size``'s: one VM of this shape fits a node that
        large (when it is empty)."""
        if self.cpu > size.cpu or self.memory > size.memory:
            return False
        return not self.extended or all(n <= size.amount(name) for name, n in self.extended)

    def times(self, n: int) -> Shape:
        """``n`` of this shape, resource by resource."""
        ext = self.extended
        return Shape(self.cpu * n, self.memory * n,
                     tuple((name, k * n) for name, k in ext) if ext and n else ())

    def plus(self, other: Shape) -> Shape:
        ext = self.extended if not other.extended else other.extended if not self.extended \
            else _merge(self.extended, other.extended, int.__add__)
        return Shape(self.cpu + other.cpu, self.memory + other.memory, ext)

    def most(self, other: Shape) -> Shape:
        """The larger amount of each resource (of two shapes, perhaps of neither)."""
        ext = self.extended if not other.extended else other.extended if not self.extended \
            else _merge(self.extended, other.extended, max)
        return Shape(max(self.cpu, other.cpu), max(self.memory, other.memory), ext)

    def describe(self) -> str:
        """In a user's words: ``2 cpu and 1024 MiB`` (and ``1 nvidia.com/gpu``)."""
        words = f"{self.cpu / 1000:g} cpu and {self.memory} MiB"
        return words + "".join(f" and {n} {name}" for name, n in self.extended)


@dataclass(frozen=True, slots=True)
class Request:
    """A validated lease request as the core sees it.

    ``ready`` is the earliest start; ``deadline`` the latest end (``None`` for
    best-effort); ``start`` the exact start of an advance reservation. ``runtime`` is
    how long the lease really runs (simulations only; the scheduler plans with
    ``duration`` and never peeks at ``runtime``). Both are work, seconds at speed 1.0:
    a pool of speed ``s`` runs them in ``work / s`` (an advance reservation's are wall
    time; :func:`leasehold.core.lease.pace`).

    ``vms`` is what the lease books, every copy counted: a lease asking for
    ``replicas`` copies of each of its :attr:`originals` VMs (seed 002's RRR-k) books
    ``originals × replicas`` VMs, real capacity like any other. Booked VM ``j`` is copy
    ``j // originals`` of VM ``j % originals`` (:func:`copy_of`); the shells multiply
    at their edge.
    """

    name: str
    type: LeaseType
    vms: int
    shape: Shape
    duration: float
    submitted: float
    origin: Origin = Origin.EXTERNAL
    ready: float | None = None
    deadline: float | None = None
    start: float | None = None
    runtime: float | None = None
    pool: str | None = None
    #: size of the VM image (MB): the Haizea overhead model copies it on migration
    image_mb: float = 0.0
    #: the image its VMs boot from (DESIGN §2.6): on a pool with ``images`` a VM
    #: starts only once this image is on its node; ``None``: no image to deploy
    image: str | None = None
    #: copies of each VM (``vms`` counts them all); 1: no replicas
    replicas: int = 1

    @property
    def originals(self) -> int:
        """The lease's own VMs, not counting copies."""
        return self.vms // self.replicas

    @property
    def earliest(self) -> float:
        if self.start is not None:
            return self.start
        return self.submitted if self.ready is None else max(self.ready, self.submitted)

    @property
    def actual_runtime(self) -> float:
        return self.duration if self.runtime is None else min(self.runtime, self.duration)

    @property
    def may_preempt(self) -> bool:
        """Local users come first, and a reservation's start is a promise: these
        preempt external leases when they do not fit."""
        return self.origin == Origin.LOCAL or self.type == LeaseType.ADVANCE_RESERVATION


def copy_of(req: Request, slot: int) -> tuple[int, int]:
    """(VM, copy) of the lease's booked VM ``slot`` (:class:`Request`)."""
    return slot % req.originals, slot // req.originals


@dataclass(frozen=True, slots=True)
class OverheadParams:
    """Per-pool cost parameters of 000 §5 (defaults of DESIGN §2.4)."""

    suspend_rate: float = 6.36  # MB/s written when suspending (B)
    resume_rate: float = 8.12  # MB/s read back when resuming (r)
    bandwidth: float = 1024 / 160.2  # MB/s migration copy (b): 1024 MB in 160.2 s
    pause_seconds: float = 0.005  # t_p
    reschedule_seconds: float = 2.3  # delta
    stop_seconds: float = 0.0
    #: "intergrid" (000 §5, per-VM sequential) or "haizea" (004 §3.1, all VMs at once)
    model: str = "intergrid"


@dataclass(frozen=True, slots=True)
class ImagesSpec:
    """A pool's image repository and node disks (004 §3.1-3.2, DESIGN §2.6).

    Images travel from the repository over one link of ``bandwidth`` MB/s (a
    resource with its own bookings); each node has ``disk`` MB, of which ``cache`` MB
    (004's D_p; default half the disk) hold cached images and the rest (D_w) the VMs'
    working copies. ``reuse``: a cached image is used again without a transfer (LRU
    eviction, reference counts); off, every start transfers its image (004 VM-MULT).
    ``multicast``: one transfer serves all the nodes it is sent to at once (s_I / B).
    ``piggyback`` (with ``multicast``; unicast ignores it): a lease whose image is
    on its way in a transfer that has not begun rides on it when it ends in time
    instead of booking its own (Haizea's avoid-redundant-transfers).
    ``predeployed``: images already on every node (``predeployed_all``: all images,
    004 VM-PREDEPLOY), never transferred."""

    bandwidth: float
    disk: float
    cache: float | None = None
    reuse: bool = True
    multicast: bool = True
    piggyback: bool = True
    predeployed: tuple[str, ...] = ()
    predeployed_all: bool = False

    def __post_init__(self) -> None:
        if not self.bandwidth > 0:
            raise ValueError(f"images: bandwidth must be > 0 MB/s, got {self.bandwidth}")
        if not self.disk > 0:
            raise ValueError(f"images: disk must be > 0 MB, got {self.disk}")
        if self.cache is not None and not 0 <= self.cache <= self.disk:
            raise ValueError(f"images: cache must be between 0 and the disk ({self.disk} MB),"
                             f" got {self.cache}")

    @property
    def cache_mb(self) -> float:
        """D_p: the disk that holds cached images (half of it unless given)."""
        return self.disk / 2 if self.cache is None else self.cache


@dataclass(frozen=True, slots=True)
class VmModel:
    """How running a lease in VMs costs (004 §4.4): its run time is ``1 + slowdown``
    times longer, and each start and end takes ``boot`` and ``shutdown`` seconds
    (004: 5% and at most 20 s together). A pool without one runs leases bare."""

    slowdown: float = 0.0
    boot: float = 0.0
    shutdown: float = 0.0

    def __post_init__(self) -> None:
        for name in ("slowdown", "boot", "shutdown"):
            value = getattr(self, name)
            if not value >= 0:
                raise ValueError(f"vm: {name} must be >= 0, got {value}")


@dataclass(frozen=True, slots=True)
class Volatility:
    """A volatile pool's law (seed 002 §III-A, §V-A; DESIGN §2.7): donated or spot
    nodes that fail and come back, and deliver a varying share of their capacity.

    Each node up fails with hazard ``failure_rate`` per ``epoch`` (002: 0.3 per 10-s
    epoch: a mean time to failure of epoch / failure_rate seconds) and stays down
    for ``recovery`` seconds on average (002 §IV's 1/μ). A lease running here
    checkpoints at every epoch boundary of its run, so a lost node costs it the work
    since the last one. The capacity a node delivers in an epoch is a share of its
    nominal capacity drawn from a normal law of mean ``capacity_mean`` and deviation
    ``capacity_sigma``, clipped to [``capacity_min``, ``capacity_max``] (002's
    P_bmin ≤ P_bmax ≤ P_r, as shares of P_r). The draws are the simulator's and the
    emulated cluster's (seeded); the core only reads the law."""

    failure_rate: float
    recovery: float
    epoch: float = 10.0
    capacity_mean: float = 1.0
    capacity_sigma: float = 0.0
    capacity_min: float = 0.0
    capacity_max: float = 1.0

    def __post_init__(self) -> None:
        if not self.failure_rate >= 0:
            raise ValueError(f"volatile: failureRate must be >= 0, got {self.failure_rate}")
        if not self.recovery >= 0:
            raise ValueError(f"volatile: recoverySeconds must be >= 0, got {self.recovery}")
        if not self.epoch > 0:
            raise ValueError(f"volatile: epoch must be > 0, got {self.epoch}")
        if not 0 <= self.capacity_min <= self.capacity_max <= 1:
            raise ValueError("volatile: capacity needs 0 <= min <= max <= 1, got"
                             f" min {self.capacity_min}, max {self.capacity_max}")
        if not self.capacity_sigma >= 0:
            raise ValueError(f"volatile: capacity sigma must be >= 0, got {self.capacity_sigma}")

    @property
    def mean_up(self) -> float:
        """Mean seconds a node stays up (1/λ); infinite when nodes never fail."""
        return self.epoch / self.failure_rate if self.failure_rate > 0 else float("inf")


@dataclass(frozen=True, slots=True)
class NodeGroup:
    """``nodes`` nodes of one size in a pool of mixed sizes."""

    nodes: int
    cpu: int
    memory: int
    #: extended resources per node (:data:`Extended`)
    extended: Extended = ()

    @property
    def size(self) -> Shape:
        return Shape(self.cpu, self.memory, self.extended)


@dataclass(frozen=True, slots=True)
class PoolStatistics:
    """A pool's dispatch statistics as given (003 Table 1, §5.2), each ``None`` when
    it is to be estimated from the leases the core sees (:mod:`leasehold.core.dispatch`).
    Rates in leases per second, durations in seconds at speed 1."""

    #: λ_j: local leases per second
    local_rate: float | None = None
    #: ζ̄_j: mean VMs of a local lease
    local_vms: float | None = None
    #: ε̄_j: mean duration of a local lease
    local_duration: float | None = None
    #: Λ̄_j: external leases per second first aimed at this pool; the gateway's rate
    #: Λ is their sum over the pools that give one
    external_rate: float | None = None
    #: v̄_j: mean VMs of an external lease
    external_vms: float | None = None
    #: d̄_j: mean duration of an external lease
    external_duration: float | None = None
    #: α_j: coefficient of variation of the external service time (003 §5.2: 0.5)
    external_cv: float = 0.5
    #: β_j: coefficient of variation of the local service time (003 §5.2: 0.1)
    local_cv: float = 0.1

    def __post_init__(self) -> None:
        for name in ("local_rate", "local_vms", "local_duration", "external_rate",
                     "external_vms", "external_duration", "external_cv", "local_cv"):
            value = getattr(self, name)
            if value is not None and not value >= 0:
                raise ValueError(f"pool statistics: {name} must be >= 0, got {value}")


@dataclass(frozen=True, slots=True)
class PoolSpec:
    """A pool of nodes of ``cpu`` millicores and ``memory`` MiB each, or of mixed sizes.

    ``groups``, when given, are the sizes of the first nodes, in index order (node 0
    is the first group's first node); nodes past them (a pool grown by a capacity
    change) are of ``cpu`` and ``memory``. A node's index fixes its size for good.

    ``exclusive`` pools give every VM a whole node (the papers' one-VM-per-node
    model); the slot table then plans with a node-count profile, which is exact for
    that model and much faster than per-node packing. They have one size.
    """

    name: str
    nodes: int
    cpu: int
    memory: int
    exclusive: bool = False
    overhead: OverheadParams = field(default_factory=OverheadParams)
    groups: tuple[NodeGroup, ...] = ()
    #: relative speed: a lease's run time on this pool is its duration (work) divided
    #: by it; overheads do not scale (seed 003's MIPS, written relative to its
    #: 2000-MIPS pool; docs/semantics.md, "Pool speed")
    speed: float = 1.0
    #: what the dispatch strategies know of the pool beforehand (003 Table 1); what
    #: it leaves out is estimated from the leases submitted (DESIGN §2.5)
    statistics: PoolStatistics | None = None
    #: the pool's image repository and disks (DESIGN §2.6); ``None``: images need no
    #: deployment (as before images were modelled)
    images: ImagesSpec | None = None
    #: the VM model of 004 (slowdown, boot, shutdown); ``None``: leases run bare
    vm: VmModel | None = None
    #: nodes that fail and come back (seed 002; DESIGN §2.7); ``None``: nodes fail only
    #: when the cluster says so (a capacity change)
    volatile: Volatility | None = None
    #: extended resources of each node past ``groups`` (:data:`Extended`: e.g. 8
    #: ``nvidia.com/gpu``), as ``cpu`` and ``memory`` are
    extended: Extended = ()

    @property
    def size(self) -> Shape:
        """The size of the nodes past ``groups`` (every node of a one-size pool)."""
        return Shape(self.cpu, self.memory, self.extended)

    def extended_names(self) -> tuple[str, ...]:
        """The extended resources some node of the pool has, sorted."""
        return tuple(sorted({name for size, _ in self.distinct() for name, _ in size.extended}))

    def __post_init__(self) -> None:
        if not self.speed > 0:
            raise ValueError(f"pool {self.name}: speed must be > 0, got {self.speed}")
        if self.groups and self.exclusive:
            raise ValueError(f"pool {self.name}: an exclusive pool has nodes of one size")
        if sum(g.nodes for g in self.groups) > self.nodes:
            raise ValueError(f"pool {self.name}: its groups hold more than {self.nodes} nodes")

    def node_names(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(self.nodes)]

    def sizes(self) -> list[Shape]:
        """Every node's capacity, by index."""
        out = [g.size for g in self.groups for _ in range(g.nodes)]
        out += [self.size] * (self.nodes - len(out))
        return out

    def distinct(self) -> list[tuple[Shape, int]]:
        """Each node size the pool has and how many nodes are that size, in the order
        the sizes first appear by index (a pool of one size: one entry)."""
        counts: dict[Shape, int] = {}
        for g in self.groups:
            counts[g.size] = counts.get(g.size, 0) + g.nodes
        rest = self.nodes - sum(g.nodes for g in self.groups)
        if rest > 0 or not self.groups:
            size = self.size
            counts[size] = counts.get(size, 0) + rest
        return list(counts.items())

    def total(self) -> Shape:
        """The whole pool's capacity, resource by resource."""
        out = Shape(0, 0)
        for size, n in self.distinct():
            out = out.plus(size.times(n))
        return out

    def largest(self) -> Shape:
        """The most of each resource any node has (one node may not have them all)."""
        sizes = [size for size, _ in self.distinct()]
        out = sizes[0]
        for size in sizes[1:]:
            out = out.most(size)
        return out

    def largest_nodes(self) -> list[Shape]:
        """The node sizes no other size of the pool is as large as in every resource
        (the largest nodes, one size when one is largest in all), in order of
        :meth:`distinct`."""
        sizes = [size for size, n in self.distinct()]
        return [s for s in sizes
                if not any(o != s and s.fits_in(o) for o in sizes)]


@dataclass(frozen=True, slots=True)
class Capacity:
    """What a pool holds from an instant on: its spec (``nodes``: how many node
    indices it has; a pool not seen before is added, in the cluster's order after the
    others) and the indices that are down (deleted, cordoned, NotReady). A node going
    down loses what runs on it (:meth:`Lifecycle.lose`); a node coming back is free."""

    pool: PoolSpec
    down: frozenset[int] = frozenset()
    #: the pool itself is gone (its NodePool deleted), not only its nodes: what was
    #: written out there (suspended VMs) is lost with it
    removed: bool = False

    @classmethod
    def count(cls, pool: PoolSpec, nodes: int) -> Capacity:
        """``nodes`` of the pool up from now on: indices ``0 .. nodes-1`` (the index
        space never shrinks: the ones above are down)."""
        size = max(pool.nodes, nodes)
        return cls(replace(pool, nodes=size), frozenset(range(nodes, size)))


@dataclass(frozen=True, slots=True)
class Absence:
    """The shell was away (an operator restarted) from the instant this is given
    until ``until``: nothing it did not make happen happened. The ``idle`` leases,
    started by the core before it went, never got their pods: their runs did not
    begin (:meth:`Lifecycle.unstart`). Until ``until`` no lease starts, resumes or
    lands and nothing is planned; the work of the leases that kept running counts,
    and they end, are suspended or cancelled at their times. Then every lease due
    meanwhile is placed again, from ``until``. An absence that ends where it begins
    only undoes the idle starts: a live shell that could not make their pods."""

    until: float
    idle: tuple[str, ...] = ()


# ---- preemption policies, declared once ---------------------------------------------
#: how a set policy ranks candidate sets, from ``(leases, VMs freed, overhead in
#: microseconds, ...)``: the least key wins; sets with equal keys are ranked by their
#: sorted lease names, then by pool order (DESIGN §2.4)
SetOrder = Callable[[tuple[int, ...]], tuple[int, ...]]


@dataclass(frozen=True, slots=True)
class PreemptionPolicy:
    """A preemption policy (DESIGN §2.4). The scenario schema, the CLI, the CRDs and
    the chart's values, the benchmarks and the docs read :data:`PREEMPTION_POLICIES`;
    :mod:`leasehold.core.preemption` carries each one out."""

    name: str
    #: what it does, in one line (help texts and docs)
    summary: str
    #: a *set policy* chooses among all minimal candidate sets, by this ranking;
    #: ``None``: a baseline that builds its one set its own way
    order: SetOrder | None = None
    #: only the sets whose overhead is at most α may be chosen (MOML's threshold);
    #: the ranking must then be by leases first, then overhead
    threshold: bool = False
    #: must be shown every candidate of a large pool: the baselines mimic systems
    #: that look at every node, so the candidates are not narrowed for them first
    sees_all: bool = False


NOP = PreemptionPolicy("nop", "never preempt (the baseline of 000 §8.3)")
MLIP = PreemptionPolicy(
    "mlip", "fewest leases (000 eq. 10); ties: more VMs freed, then less overhead",
    order=lambda s: (s[0], -s[1], s[2]))
MOV = PreemptionPolicy(
    "mov", "least total overhead (000 eq. 9); ties: fewer leases", order=lambda s: (s[2], s[0]))
MOML = PreemptionPolicy(
    "moml", "fewest leases among the sets of overhead at most alpha (000 Algorithm 1);"
    " ties: less overhead", order=lambda s: (s[0], s[2]), threshold=True)
KUEUE = PreemptionPolicy(
    "kueue", "Kueue's classical preemption: newest first until it fits, then fill back",
    sees_all=True)
KUBE_SCHEDULER = PreemptionPolicy(
    "kube-scheduler", "the default scheduler's: per node all lower-priority pods out, then"
    " reprieve; fewest victims", sees_all=True)
HAIZEA = PreemptionPolicy(
    "haizea", "Haizea 1.0's: oldest submission first until it fits", sees_all=True)
#: every policy, in the order help texts and docs list them
PREEMPTION_POLICIES: tuple[PreemptionPolicy, ...] = (
    NOP, MLIP, MOV, MOML, KUEUE, KUBE_SCHEDULER, HAIZEA)
POLICY_NAMES: tuple[str, ...] = tuple(p.name for p in PREEMPTION_POLICIES)


class _Named(Protocol):
    @property
    def name(self) -> str: ...


_N = TypeVar("_N", bound=_Named)


def _named(name: str, choices: tuple[_N, ...], what: str) -> _N:
    """The one of ``choices`` called ``name``; ValueError naming them if there is none
    (the registries below: policies, dispatch strategies, utility schemes)."""
    for choice in choices:
        if choice.name == name:
            return choice
    raise ValueError(f"unknown {what} {name!r}; expected one of"
                     f" {', '.join(c.name for c in choices)}")


def preemption_policy(name: str) -> PreemptionPolicy:
    """The policy called ``name``; ValueError naming the choices if there is none."""
    return _named(name, PREEMPTION_POLICIES, "preemption policy")


# ---- dispatch strategies, declared once -------------------------------------------


@dataclass(frozen=True, slots=True)
class DispatchStrategy:
    """How an external lease that names no pool gets one (DESIGN §2.5, 003 §4,
    §5.2.1). The scenario schema, the operator's configuration, the chart's values
    and the docs read :data:`DISPATCH_STRATEGIES`; :mod:`leasehold.core.dispatch`
    carries each one out."""

    name: str
    #: what it does, in one line (help texts and docs)
    summary: str


EARLIEST = DispatchStrategy(
    "earliest", "no dispatch: the lease is planned over every pool and goes where it"
    " starts first (ties: the pool listed first)")
RR = DispatchStrategy(
    "rr", "round robin (003 eq. 25): the k-th external lease without a pool goes to"
    " the pool listed (k mod N)-th")
LRF = DispatchStrategy(
    "lrf", "least rate first (003 eq. 26, normalised): drawn at random, fewer local"
    " arrivals, more external leases")
BCF = DispatchStrategy(
    "bcf", "biggest cluster first (003 eq. 27): drawn at random in proportion to the"
    " pool's computing power (nodes x speed)")
PAP_RND = DispatchStrategy(
    "pap-rnd", "preemption-aware allocation (003 Algorithm 1), drawn at random by its"
    " rates")
PAP_RTDP = DispatchStrategy(
    "pap-rtdp", "preemption-aware allocation (003 Algorithm 1), dispatched by a"
    " billiard sequence per lease type (003 Algorithm 2)")
#: every strategy, in the order help texts and docs list them
DISPATCH_STRATEGIES: tuple[DispatchStrategy, ...] = (EARLIEST, RR, LRF, BCF, PAP_RND, PAP_RTDP)
DISPATCH_NAMES: tuple[str, ...] = tuple(d.name for d in DISPATCH_STRATEGIES)


def dispatch_strategy(name: str) -> DispatchStrategy:
    """The strategy called ``name``; ValueError naming the choices if there is none."""
    return _named(name, DISPATCH_STRATEGIES, "dispatch strategy")


# ---- the utility mode's schemes, declared once ----------------------------------


@dataclass(frozen=True, slots=True)
class UtilityScheme:
    """How the utility mode (seed 002 Algorithm 2; DESIGN §2.7) shares the private
    nodes among the jobs of its round-robin queue each epoch. The scenario schema and
    the docs read :data:`UTILITY_SCHEMES`; :mod:`leasehold.core.utility.schemes`
    carries each one out."""

    name: str
    #: what it does, in one line (help texts and docs)
    summary: str
    #: a job on volatile nodes runs as k replicas (else as one)
    replicated: bool = False


ROUND_ROBIN = UtilityScheme(
    "rr", "round robin: the jobs on private nodes go to the end of the queue, the first p"
    " get the private nodes, the rest one volatile node each")
RANKED_ROUND_ROBIN = UtilityScheme(
    "rrr", "ranked round robin: the p jobs of highest total unsatisfactory cost (TUC) get"
    " the private nodes, the rest one volatile node each")
RANKED_REPLICATED = UtilityScheme(
    "rrr-k", "ranked round robin with k replicas: as rrr, and a job on volatile nodes runs"
    " as k replicas, its progress the best one's", replicated=True)
#: every scheme, in the order help texts and docs list them
UTILITY_SCHEMES: tuple[UtilityScheme, ...] = (ROUND_ROBIN, RANKED_ROUND_ROBIN,
                                              RANKED_REPLICATED)
UTILITY_SCHEME_NAMES: tuple[str, ...] = tuple(s.name for s in UTILITY_SCHEMES)


def utility_scheme(name: str) -> UtilityScheme:
    """The scheme called ``name``; ValueError naming the choices if there is none."""
    return _named(name, UTILITY_SCHEMES, "utility scheme")


@dataclass(frozen=True, slots=True)
class SchedulerConfig:
    #: a name in :data:`POLICY_NAMES`
    policy: str = "moml"
    #: MOML's threshold: "median", a percentile "pNN", or seconds
    alpha: str | float = "median"
    backfilling: Backfilling = Backfilling.CONSERVATIVE
    suspend_before_blocking: bool = False
    #: how an external lease that names no pool gets one (DESIGN §2.5): a registered
    #: dispatch strategy's name; ``earliest`` is the pool where it starts first
    dispatch: str = "earliest"
    #: the seed of the random dispatch strategies (``lrf``, ``bcf``, ``pap-rnd``): the
    #: same seed and the same submissions give the same pools
    dispatch_seed: int = 0
    #: what a best-effort lease that must give way undergoes (Haizea's option, 004
    #: §4.4): ``all``: it is preempted by its type (suspended, migrated, cancelled);
    #: ``none``: no suspension: it is cancelled and re-queued, to run again from the
    #: start (004 NOVM-NOSR)
    suspension: str = "all"

    def __post_init__(self) -> None:
        if self.suspension not in SUSPENSION_NAMES:
            raise ValueError(f"unknown suspension {self.suspension!r};"
                             f" expected one of {', '.join(SUSPENSION_NAMES)}")


#: the values of :attr:`SchedulerConfig.suspension`
SUSPENSION_NAMES = ("all", "none")


# ---- actions: what the core asks its shell to do ---------------------------------
# Not frozen: a frozen dataclass pays object.__setattr__ per field on every
# construction, and the core creates several actions per lease. Treat them as values.


@dataclass(slots=True)
class Action:
    time: float
    lease: str

    @property
    def kind(self) -> str:
        return type(self).__name__


@dataclass(slots=True)
class Admit(Action):
    pass


@dataclass(slots=True)
class Reserve(Action):
    start: float
    end: float
    pool: str


@dataclass(slots=True)
class Deploy(Action):
    """The lease's image ``image`` is sent from ``pool``'s repository to its nodes
    over ``[start, until)`` (DESIGN §2.6): planned now, like a :class:`Reserve`;
    the lease's VMs start no earlier than ``until``. A later Deploy of the lease
    replaces it (an advance reservation's transfer moves earlier when another one
    must end before it, 004's EDF). ``nodes``: empty, as the lease's nodes are
    bound when its booking begins (its :class:`Start` names them); a multicast
    transfer reaches every node of the pool."""

    pool: str
    image: str
    start: float
    until: float
    nodes: tuple[str, ...] = ()


@dataclass(slots=True)
class Dispatch(Action):
    """An external lease that named no pool was sent to ``pool`` by the dispatch
    strategy ``policy``; ``reason`` says why, in a user's words."""

    pool: str
    policy: str
    reason: str


@dataclass(slots=True)
class Start(Action):
    nodes: tuple[str, ...]
    #: on a pool with a VM model, when its run begins, once its VMs have booted
    #: (``None``: at once)
    running: float | None = None


@dataclass(slots=True)
class Suspend(Action):
    """VMs are being suspended; they vacate at ``vacated``."""

    vacated: float
    reason: str


@dataclass(slots=True)
class Resume(Action):
    nodes: tuple[str, ...]
    running: float  # when the resumed VMs run again


@dataclass(slots=True)
class Migrate(Action):
    """VMs move to ``nodes`` (none yet: they land later, in a reservation that a
    :class:`Resume` opens), where they run again at ``running``; they have left their
    source nodes at ``vacated``."""

    nodes: tuple[str, ...]
    running: float
    vacated: float


@dataclass(slots=True)
class Cancel(Action):
    reason: str
    #: when its VMs have stopped and left the nodes of its booking: ``time`` if it
    #: held none or stops at once (a migration's source nodes go at the
    #: :class:`Migrate`'s ``vacated`` whatever)
    vacated: float


@dataclass(slots=True)
class Requeue(Action):
    """No suspension (:attr:`SchedulerConfig.suspension` ``none``, 004 NOVM-NOSR): a
    best-effort lease that gave way to a preemptor is cancelled and re-queued, to run
    again from the start in its original queue position. Its VMs stop and have left
    its nodes at ``vacated`` (it is placed again from then on); ``lost``: the work its
    run had done, lost (seconds at speed 1.0)."""

    reason: str
    vacated: float
    lost: float


#: why a lease was rejected, for counting: its spec (the shell's, or a name taken),
#: capacity no pool has, or a deadline (or a reservation's start) it cannot meet
REJECT_CAUSES = ("spec", "capacity", "deadline")


@dataclass(slots=True)
class Reject(Action):
    reason: str
    #: one of :data:`REJECT_CAUSES`
    cause: str = "capacity"


@dataclass(slots=True)
class Lost(Action):
    """Nodes of the lease went down: its VMs there are gone, and with them the lease's
    run (it is re-queued, re-planned or cancelled by its type; ``reason`` says which).
    ``lost``: the work done since what it goes back to (its last checkpoint, or its
    start), lost (seconds at speed 1.0)."""

    nodes: tuple[str, ...]
    reason: str
    lost: float = 0.0


@dataclass(slots=True)
class ReplicaLost(Action):
    """Nodes of a lease with replicas went down, but every VM of it still has a copy
    on a node that is up: it runs on, on ``kept`` (its copies left); the copies on
    ``nodes`` are gone and their capacity given back. They are not replaced."""

    nodes: tuple[str, ...]
    kept: tuple[str, ...]
    reason: str
    #: the copies lost (several may have shared a node of a packed pool)
    copies: int = 1


@dataclass(slots=True)
class Unstart(Action):
    """The lease's latest start did not happen (:class:`Absence`: its pods were never
    made): it waits again, nothing credited for that run."""

    reason: str


@dataclass(slots=True)
class Fail(Action):
    """The lease could not run (its shell reported why): its VMs are gone at once."""

    reason: str


@dataclass(slots=True)
class Complete(Action):
    #: on a pool with a VM model, when its VMs have shut down and left its nodes
    #: (``None``: at once)
    vacated: float | None = None
