"""The epoch scheduler of seed 002 (Algorithm 1): admission, one assignment per
epoch, progress, checkpoints, failures and migrations.

Each epoch of ``epoch`` seconds (002's δ) is two calls:

* :meth:`EpochScheduler.begin` admits the jobs that arrived since the last epoch
  (in arrival order, then by name, while the round-robin queue holds fewer than
  ``threshold``; the rest are refused), asks the scheme for the queue's new order
  (:mod:`.schemes`) and places it: the first p jobs on the p private nodes, each
  other job on volatile (public) nodes — k replicas under a replicated scheme, else
  one. It returns the :class:`Plan`, whose :attr:`Plan.public_nodes` are the
  volatile nodes that run this epoch.
* :meth:`EpochScheduler.end` runs the epoch given each public node's :class:`Fate`
  — the share of a private node's capacity it delivers, and when in the epoch it
  fails, if it does. The fates are drawn outside the core (seeded) and given to it:
  the core draws nothing.

What happens in an epoch (the choices where 002 is silent are docs/volatile.md's):

* Work is counted in seconds of a private node (a job's ``work`` takes that long
  there); a job's share B_j scales both what it is owed and what it receives, so
  the costs and compliance are computed in these units and B_j weighs only the
  penalty (:attr:`JobState.shortfall` × B_j).
* A private node delivers 1 per second, a public node its fate's share; both from
  the end of the job's downtime: ``migration`` seconds when it has just moved
  between private and public, or when a replica is started afresh to replace a
  failed one (a job's first placement costs nothing).
* Progress is checkpointed at the end of every epoch: a job's progress grows by
  its best surviving replica's work (002 §III-C: V_jn = V_j(n−1) + max_k v_jnk),
  and every replica carries on from that checkpoint. A replica that fails loses the
  epoch's work, unless it finished the job before failing; all failed replicas of
  a job still on public nodes are replaced at the next epoch, each a *failure
  migration*, on fresh nodes (002's public pool is unlimited: a failed node is
  never used again).
* A move between private and public is a *preemptive migration* (one per move,
  whatever the number of replicas).
* The SLA window of a job starts with its admission and lasts ``window`` seconds
  (a whole number of epochs); at its end the job is compliant when it received at
  least ρ·T (:func:`.costs.compliant`), HUC is updated and the window starts
  again. A job that completes mid-window is judged on the time it was there.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from ..model import UtilityScheme
from .costs import compliant, current_cost, historic_cost, total_cost, unsatisfactory_factor
from .schemes import Standing, order

#: work and time are compared to this much: 10 epochs of 0.1 s add up to 0.9999...
_EPS = 1e-9


@dataclass(frozen=True, slots=True)
class Job:
    """One job (one VM): ``work`` seconds on a private node, its share B_j of a
    private node, its priority a_j ∈ (1, 2] (002 §III-C)."""

    name: str
    arrival: float
    work: float
    share: float = 1.0
    priority: float = 2.0

    def __post_init__(self) -> None:
        if not self.work > 0:
            raise ValueError(f"job {self.name}: work must be > 0, got {self.work:g}")
        if not 0 < self.share <= 1:
            raise ValueError(f"job {self.name}: share must be in (0, 1], got {self.share:g}")
        if not 1 < self.priority <= 2:
            raise ValueError(f"job {self.name}: priority must be in (1, 2],"
                             f" got {self.priority:g}")


@dataclass(frozen=True, slots=True)
class Settings:
    """The utility mode's parameters (a scenario's ``config.utility``)."""

    scheme: UtilityScheme
    #: the private (dedicated) nodes, in the order they are handed out
    private_nodes: tuple[str, ...]
    #: the public pool's name: its nodes are named ``<pool>-<n>``, n counting up
    public_pool: str
    #: δ, seconds
    epoch: float = 10.0
    #: T, seconds: a whole number of epochs
    window: float = 100.0
    #: most jobs in the round-robin queue
    threshold: int = 500
    #: ρ
    service_ratio: float = 0.8
    #: k: replicas of a job on public nodes under a replicated scheme
    replicas: int = 1
    #: seconds of downtime of a migration
    migration: float = 1.0

    def __post_init__(self) -> None:
        if not self.epoch > 0:
            raise ValueError(f"epoch must be > 0, got {self.epoch:g}")
        epochs = self.window / self.epoch
        if not self.window > 0 or abs(epochs - round(epochs)) > 1e-6 or round(epochs) < 1:
            raise ValueError(f"window must be a whole number of epochs ({self.epoch:g} s),"
                             f" got {self.window:g}")
        if self.threshold < 0:
            raise ValueError(f"threshold must be >= 0, got {self.threshold}")
        if not 0 < self.service_ratio <= 1:
            raise ValueError(f"serviceRatio must be in (0, 1], got {self.service_ratio:g}")
        if self.replicas < 1:
            raise ValueError(f"replicas must be >= 1, got {self.replicas}")
        if not 0 <= self.migration <= self.epoch:
            raise ValueError(f"migrationSeconds must be in [0, epoch ({self.epoch:g})],"
                             f" got {self.migration:g}")

    @property
    def window_epochs(self) -> int:
        return round(self.window / self.epoch)

    @property
    def k(self) -> int:
        """Replicas of a job on public nodes."""
        return self.replicas if self.scheme.replicated else 1


@dataclass(frozen=True, slots=True)
class Fate:
    """What one public node does in one epoch: it delivers ``share`` of a private
    node's capacity (for the job's B_j: share × B_j) and fails at ``fails_at`` (a
    fraction of the epoch, in [0, 1)) or not at all (``None``)."""

    share: float
    fails_at: float | None = None


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a job runs this epoch: one private node, or public nodes (its
    replicas); ``downtimes``, per node, the seconds before it runs."""

    job: str
    private: bool
    nodes: tuple[str, ...]
    downtimes: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class Plan:
    """One epoch's decisions (:meth:`EpochScheduler.begin`)."""

    epoch: int
    start: float
    admitted: tuple[str, ...]
    refused: tuple[str, ...]
    #: in the queue's new order: the private ones first
    placements: tuple[Placement, ...]

    @property
    def public_nodes(self) -> tuple[str, ...]:
        """The public nodes running this epoch, in placement order: each needs a
        :class:`Fate`."""
        return tuple(n for p in self.placements if not p.private for n in p.nodes)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What an epoch did (:meth:`EpochScheduler.end`)."""

    completed: tuple[str, ...]
    #: the public nodes that failed
    failed: tuple[str, ...]


@dataclass(slots=True)
class JobState:
    """A job as the scheduler keeps it; progress and window amounts in seconds of a
    private node."""

    job: Job
    admitted: float
    #: the checkpoint: work done and kept
    progress: float = 0.0
    #: epochs of the current window run, and work received in them (V_jn)
    window_epochs: int = 0
    window_received: float = 0.0
    window_start: float = 0.0
    cuc: float = 0.0
    huc: int = 0
    #: the private node it runs on, or ``None``
    private_node: str | None = None
    #: the public nodes it runs on (surviving replicas)
    replicas: tuple[str, ...] = ()
    #: placed at least once (a first placement is no migration)
    placed: bool = False
    #: replicas that failed in the last epoch, to replace
    lost: int = 0
    preemptive_migrations: int = 0
    failure_migrations: int = 0
    #: SLA windows judged, and how many were compliant
    windows: int = 0
    compliant_windows: int = 0
    #: what the job fell short of ρ·T, summed over its windows (private-node seconds)
    shortfall: float = 0.0
    #: epochs on a private node, on public ones
    private_epochs: int = 0
    public_epochs: int = 0
    end: float | None = None
    downtimes: dict[str, float] = field(default_factory=dict)

    @property
    def tuc(self) -> float:
        return total_cost(self.cuc, self.huc)

    @property
    def remaining(self) -> float:
        return self.job.work - self.progress


class EpochScheduler:
    """002 Algorithm 1; see the module's docstring."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        #: the round-robin queue: the jobs admitted and not finished, in its order
        self.queue: list[str] = []
        self.jobs: dict[str, JobState] = {}
        self.finished: dict[str, JobState] = {}
        self.refused: list[Job] = []
        self.epoch = -1
        self._plan: Plan | None = None
        self._minted = 0

    # ---- reading ------------------------------------------------------------------
    def state(self, name: str) -> JobState:
        """A job admitted, running or finished."""
        return self.jobs[name] if name in self.jobs else self.finished[name]

    @property
    def idle(self) -> bool:
        return not self.queue

    # ---- one epoch ----------------------------------------------------------------
    def begin(self, epoch: int, arrivals: Sequence[Job]) -> Plan:
        """Epoch ``epoch`` starts (at epoch × δ): admit ``arrivals`` (every job
        arrived since the last epoch began), rank, place."""
        if self._plan is not None:
            raise ValueError("begin: the epoch begun before has not ended")
        if epoch <= self.epoch:
            raise ValueError(f"begin: epoch {epoch} is not after epoch {self.epoch}")
        s = self.settings
        start = epoch * s.epoch
        for j in arrivals:
            if j.arrival > start + _EPS:
                raise ValueError(f"job {j.name} arrives at {j.arrival:g}, after epoch {epoch}"
                                 f" begins ({start:g})")
            if j.name in self.jobs or j.name in self.finished:
                raise ValueError(f"job {j.name} given twice")
        self.epoch = epoch
        admitted: list[str] = []
        refused: list[str] = []
        for j in sorted(arrivals, key=lambda j: (j.arrival, j.name)):
            if len(self.queue) < s.threshold:
                self.queue.append(j.name)
                self.jobs[j.name] = JobState(job=j, admitted=start, window_start=start)
                admitted.append(j.name)
            else:
                self.refused.append(j)
                refused.append(j.name)
        standings = [Standing(n, self.jobs[n].tuc, self.jobs[n].job.arrival,
                              self.jobs[n].private_node is not None) for n in self.queue]
        p = len(s.private_nodes)
        self.queue = list(order(s.scheme, standings, p))
        chosen = set(self.queue[:p])
        kept = {st.private_node for n in chosen
                if (st := self.jobs[n]).private_node is not None}
        free = iter(node for node in s.private_nodes if node not in kept)
        placements = [self._place(self.jobs[n], n in chosen, free) for n in self.queue]
        self._plan = Plan(epoch, start, tuple(admitted), tuple(refused), tuple(placements))
        return self._plan

    def _place(self, st: JobState, private: bool, free: Iterator[str]) -> Placement:
        s = self.settings
        was_private = st.private_node is not None
        moved = st.placed and was_private != private
        if moved:
            st.preemptive_migrations += 1
        cost = s.migration if moved else 0.0
        if private:
            if st.private_node is None:
                st.private_node = next(free)
            st.replicas = ()
            st.downtimes = {st.private_node: cost}
        else:
            st.private_node = None
            kept = () if moved else st.replicas
            if st.placed and not moved:
                st.failure_migrations += st.lost
                cost = s.migration  # fresh replicas replacing failed ones
            fresh = tuple(self._mint() for _ in range(s.k - len(kept)))
            st.replicas = kept + fresh
            st.downtimes = {**{node: 0.0 for node in kept}, **{node: cost for node in fresh}}
        st.lost = 0
        st.placed = True
        nodes = tuple(st.downtimes)
        return Placement(st.job.name, private, nodes, tuple(st.downtimes.values()))

    def _mint(self) -> str:
        name = f"{self.settings.public_pool}-{self._minted}"
        self._minted += 1
        return name

    def end(self, fates: Mapping[str, Fate]) -> Outcome:
        """Run the epoch begun, each public node doing as its fate says."""
        plan = self._plan
        if plan is None:
            raise ValueError("end: no epoch begun")
        missing = [n for n in plan.public_nodes if n not in fates]
        if missing:
            raise ValueError(f"end: no fate for public nodes {', '.join(missing)}")
        s = self.settings
        completed: list[str] = []
        failed: list[str] = []
        for place in plan.placements:
            st = self.jobs[place.job]
            gained, end = self._run(st, place, fates, failed)
            st.progress = min(st.job.work, st.progress + gained)
            st.window_epochs += 1
            st.window_received += gained
            if place.private:
                st.private_epochs += 1
            else:
                st.public_epochs += 1
            if end is not None:
                st.end = end
                self._judge(st, end - st.window_start)
                completed.append(place.job)
                continue
            st.cuc = current_cost(st.job.priority, unsatisfactory_factor(
                st.window_received, st.window_epochs, s.epoch))
            if st.window_epochs >= s.window_epochs:
                self._judge(st, s.window)
                st.window_epochs, st.window_received = 0, 0.0
                st.window_start = plan.start + s.epoch
        for name in completed:
            self.queue.remove(name)
            st = self.jobs.pop(name)
            st.private_node, st.replicas = None, ()
            self.finished[name] = st
        self._plan = None
        return Outcome(tuple(completed), tuple(failed))

    def _run(self, st: JobState, place: Placement, fates: Mapping[str, Fate],
             failed: list[str]) -> tuple[float, float | None]:
        """The work ``st`` keeps this epoch, and its end if it completes."""
        s = self.settings
        start = s.epoch * self.epoch
        remaining = st.remaining
        best = 0.0
        finish: float | None = None
        survivors = []
        for node, down in zip(place.nodes, place.downtimes, strict=True):
            fate = Fate(1.0) if place.private else fates[node]
            run = s.epoch - down
            if fate.share > 0 and remaining / fate.share <= run + _EPS:
                at = down + remaining / fate.share
                if fate.fails_at is None or at <= fate.fails_at * s.epoch + _EPS:
                    finish = at if finish is None else min(finish, at)
            if fate.fails_at is not None:
                failed.append(node)
                st.lost += 1
                continue
            survivors.append(node)
            best = max(best, fate.share * run)
        if not place.private:
            st.replicas = tuple(survivors)
        if finish is not None:
            return remaining, start + finish
        return min(best, remaining), None

    def _judge(self, st: JobState, seconds: float) -> None:
        """The SLA window that ends (after ``seconds`` of it): compliance, HUC."""
        s = self.settings
        ok = compliant(st.window_received + _EPS, s.service_ratio, 1.0, seconds)
        st.shortfall += max(0.0, s.service_ratio * seconds - st.window_received)
        st.huc = historic_cost(st.huc, ok)
        st.windows += 1
        st.compliant_windows += ok
