"""The emulated kubelet's image pulls (leasehold_emulator.imagepulls): table cases,
and properties on random pods checked against brute-force oracles over what the
model did:

* the link is never used by two transfers at once (every pair compared), and
  serves them first come, first served, idle only when nothing waits;
* with multicast, an image is never sent while a send of it is still under way or
  queued (the node joins that one); without, each send reaches one node;
* a disk never holds more than its size (replayed from the landings and evictions);
  an eviction takes the least recently used images no pod uses, and only as many
  as the new image needs; a pod waits for room only when no eviction could make it;
* a pod's image is on its node from its ready time until it leaves.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given, note, settings
from hypothesis import strategies as st

from leasehold_emulator.imagepulls import Need, Pulls, Repository, Transfer, repository

IMAGES = ("alpine", "centos", "debian", "fedora")


def pulls(bandwidth: float = 10, disk: float = 1000, multicast: bool = True,
          predeployed: tuple[str, ...] = (), everything: bool = False) -> Pulls:
    return Pulls(Repository(bandwidth, disk, multicast, frozenset(predeployed), everything))


# ---- table cases ----------------------------------------------------------------------
def test_a_pull_takes_size_over_bandwidth_and_the_next_one_waits_its_turn():
    p = pulls(bandwidth=10)
    assert p.need(0, "a", "n0", "centos", 600).ready == 60
    assert p.need(5, "b", "n1", "debian", 100).ready == 70  # FIFO behind centos
    assert [(t.image, t.start, t.end) for t in p.link] == [
        ("centos", 0, 60), ("debian", 60, 70)]


def test_a_second_pod_on_the_node_finds_the_image_there_or_on_its_way():
    p = pulls()
    assert p.need(0, "a", "n0", "centos", 600).ready == 60
    assert p.need(10, "b", "n0", "centos", 600).ready == 60  # the same pull
    assert p.need(90, "c", "n0", "centos", 600) == Need(90)  # cached: no transfer
    assert p.link == []  # the pull has ended, and no other was asked for


@pytest.mark.parametrize(("multicast", "ends"), [
    pytest.param(True, [60, 60], id="multicast: joins the pull under way"),
    pytest.param(False, [60, 120], id="unicast: one send per node"),
])
def test_two_nodes_pulling_one_image(multicast, ends):
    p = pulls(multicast=multicast)
    got = [p.need(0, "a", "n0", "centos", 600).ready, p.need(30, "b", "n1", "centos", 600).ready]
    assert got == ends


def test_lru_eviction_under_a_small_disk_keeps_images_in_use():
    p = pulls(bandwidth=100, disk=1000)
    p.need(0, "a", "n0", "alpine", 400)    # lands at 4
    p.need(0, "b", "n0", "centos", 400)    # lands at 8
    p.release(10, "b")                     # centos last used at 10, alpine at 4
    assert p.need(20, "c", "n0", "debian", 400).evicted == ("centos",)  # alpine is in use
    assert [i for i, _ in p.images("n0", 100)] == ["alpine", "debian"]


def test_a_pod_waits_for_room_until_a_pod_leaves():
    p = pulls(bandwidth=100, disk=1000)
    p.need(0, "a", "n0", "alpine", 600)
    waiting = p.need(10, "b", "n0", "centos", 600)
    assert waiting == Need(None, room=200)
    assert p.release(20, "a") == [("b", p.need_of("b"))]
    assert p.need_of("b") == Need(26, p.link[-1], evicted=("alpine",))


@pytest.mark.parametrize(("predeployed", "everything"), [
    pytest.param(("centos",), False, id="named"),
    pytest.param((), True, id="true: every image"),
])
def test_predeployed_images_need_no_pull_and_take_no_disk(predeployed, everything):
    p = pulls(disk=100, predeployed=predeployed, everything=everything)
    assert p.need(5, "a", "n0", "centos", 600) == Need(5)
    assert p.link == [] and p.used("n0") == 0


@pytest.mark.parametrize(("block", "message"), [
    pytest.param({"bandwidth": 10, "disk": 100, "cache": 200}, "spec.images.cache: is 200 MB,"
                 " more than the disk (100 MB)", id="cache over disk"),
    pytest.param({"bandwidth": 0, "disk": 100}, "spec.images.bandwidth: ", id="zero bandwidth"),
    pytest.param({"disk": 100}, "spec.images.bandwidth: required field is missing",
                 id="no bandwidth"),
    pytest.param("fast", "spec.images", id="not a mapping"),
])
def test_an_unreadable_images_block_says_what_and_where(block, message):
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        repository(block)


def test_an_images_block_becomes_the_kubelet_s_repository():
    assert repository({"bandwidth": 10, "disk": 4000, "multicast": False,
                       "predeployed": ["centos"], "reuse": False}) == Repository(
        10, 4000, False, frozenset({"centos"}), False)
    assert repository({"bandwidth": 10, "disk": 4000, "predeployed": True}).predeployed_all


# ---- properties -----------------------------------------------------------------------
@dataclass
class Batch:
    """One step's effect on one node's disk: what was on it before (begun, not
    evicted: image -> MB), which images pods on it used, the evictions, and the
    copies begun."""

    when: float
    node: str
    before: dict[str, float]
    #: when each copy there was begun
    began: dict[str, float]
    pinned: set[str]
    evicted: list[str]
    begun: list[float]


@dataclass
class Run:
    """What the harness saw."""

    repo: Repository
    sizes: dict[str, float]
    #: user -> [node, image, asked at, left at or None]
    pods: dict[str, list] = field(default_factory=dict)
    #: user -> the need it ended with
    needs: dict[str, Need] = field(default_factory=dict)
    #: (when, node, image, MB) of each copy the model began bringing to a node
    copies: list[tuple[float, str, str, float]] = field(default_factory=list)
    #: (when, node, image, order) of each use: landed, asked for while there or on its
    #: way, left while there; order: 2k before step k (the k-th batch), 2k+1 in it
    touches: list[tuple[float, str, str, int]] = field(default_factory=list)
    batches: list[Batch] = field(default_factory=list)
    #: every transfer, in the order asked; (when, node, image) of every eviction
    transfers: list[Transfer] = field(default_factory=list)
    evictions: list[tuple[float, str, str]] = field(default_factory=list)


@st.composite
def runs(draw):
    """A pool of two nodes and four images on a small disk, with pods coming and
    leaving often: room is short, and evictions and waits are common."""
    bandwidth = draw(st.sampled_from([1.0, 5.0, 10.0]))
    sizes = {i: bandwidth * draw(st.integers(1, 4)) for i in IMAGES}
    repo = Repository(bandwidth, bandwidth * draw(st.integers(2, 10)), draw(st.booleans()),
                      frozenset(draw(st.lists(st.sampled_from(IMAGES), max_size=1))))
    ops = draw(st.lists(st.tuples(st.integers(0, 4), st.sampled_from(["need", "leave"]),
                                  st.integers(0, 1), st.sampled_from(IMAGES),
                                  st.integers(0, 30)), min_size=10, max_size=60))
    return repo, sizes, ops


def play(repo: Repository, sizes: dict[str, float], ops) -> tuple[Pulls, Run]:
    """Drive the model with ``ops`` as the kubelet does (a waiting pod retried when
    a pull lands on its node), keeping the oracle's own account of each disk."""
    p, run = Pulls(repo), Run(repo, sizes)
    disks: dict[str, dict[str, float]] = {}  # the oracle's: copies begun, not evicted
    began: dict[tuple[str, str], float] = {}
    now = 0.0

    def took(t: float, user: str, need: Need) -> None:
        node, image = run.pods[user][0], run.pods[user][1]
        run.needs[user] = need
        run.evictions += [(t, node, gone) for gone in need.evicted]
        if need.transfer is not None and all(x is not need.transfer for x in run.transfers):
            run.transfers.append(need.transfer)
        if need.ready is None or p.present(image):
            return
        if image not in disks.setdefault(node, {}):
            assert need.transfer is not None and need.transfer.end > t
            disks[node][image] = need.transfer.size
            began[(node, image)] = t
            run.copies.append((t, node, image, need.transfer.size))
        run.touches.append((t, node, image, 2 * len(run.batches) + 1))

    def step(t: float, node: str, act) -> None:
        before = dict(disks.get(node, {}))
        k, c = len(run.evictions), len(run.copies)
        act()
        evicted = run.evictions[k:]
        assert all(w == t and n == node for w, n, _ in evicted), evicted
        for _, _, image in evicted:
            del disks[node][image]
        pinned = {life[1] for life in run.pods.values() if life[0] == node and life[3] is None}
        run.batches.append(Batch(t, node, before, {i: began[(node, i)] for i in before},
                                 pinned, [i for _, _, i in evicted],
                                 [s for _, _, _, s in run.copies[c:]]))
        on_disk = sum(disks.get(node, {}).values())
        assert on_disk <= repo.disk, f"{node}'s disk over-full at {t}: {on_disk}"
        assert p.used(node) == on_disk

    def landings(upto: float) -> None:
        for t in sorted({x.end for x in run.transfers if now < x.end <= upto}):
            for transfer in [x for x in run.transfers if x.end == t]:
                for node in transfer.nodes:
                    run.touches.append((t, node, transfer.image, 2 * len(run.batches)))
                    step(t, node, lambda t=t, node=node: [
                        took(t, u, n) for u, n in p.retry(t, node)])

    for index, (dt, kind, node_i, image, pick) in enumerate(ops):
        landings(now + dt)
        now += dt
        alive = [u for u, life in run.pods.items() if life[3] is None]
        if kind == "need" or not alive:
            again = alive and pick % 5 == 0
            user = alive[pick % len(alive)] if again else f"u{index}"
            if not again:
                run.pods[user] = [f"n{node_i}", image, now, None]
            node, image = run.pods[user][0], run.pods[user][1]

            def ask(user=user, node=node, image=image, again=again, now=now) -> None:
                before = p.need_of(user)
                need = p.need(now, user, node, image, sizes[image])
                if again:
                    assert need == before, "asked again: where it stands"
                else:
                    took(now, user, need)
                if need.room is not None and not again:  # no eviction could have made room
                    pinned = {life[1] for life in run.pods.values()
                              if life[0] == node and life[3] is None}
                    on = disks.get(node, {})
                    free = sum(s for i, s in on.items() if i not in pinned and max(
                        x.end for x in run.transfers if x.image == i and node in x.nodes) <= now)
                    assert need.room == sum(on.values()) - free + sizes[image] - repo.disk > 0
            step(now, node, ask)
        else:
            user = alive[pick % len(alive)]
            node, image = run.pods[user][0], run.pods[user][1]
            run.pods[user][3] = now
            if run.needs[user].ready is not None and p.on_node(node, image, now) \
                    and not p.present(image):
                run.touches.append((now, node, image, 2 * len(run.batches)))
            step(now, node, lambda user=user, t=now: [took(t, u, n)
                                                      for u, n in p.release(t, user)])
    landings(float("inf"))
    return p, run


def check_link(run: Run) -> None:
    ts, repo = run.transfers, run.repo
    for a in range(len(ts)):
        for b in range(a + 1, len(ts)):
            assert ts[a].end <= ts[b].start or ts[b].end <= ts[a].start, (ts[a], ts[b])
    previous_end = 0.0
    for t in ts:  # first come, first served, and never idle while a send waits
        assert t.start == max(t.requested, previous_end), t
        assert t.end == t.start + t.size / repo.bandwidth
        previous_end = t.end
    for b, later in enumerate(ts):
        assert len(later.nodes) == len(set(later.nodes))
        if not repo.multicast:
            assert len(later.nodes) == 1
        else:
            assert not any(e.image == later.image and e.end > later.requested
                           for e in ts[:b]), f"{later} should have joined a send under way"


def presence(run: Run) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """(node, image) -> the intervals it was on the node: from the end of the send
    that brought it to its eviction."""
    spans: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for when, node, image, _ in run.copies:
        landed = min(t.end for t in run.transfers
                     if t.image == image and node in t.nodes and t.end > when)
        gone = min((e for e, n, i in run.evictions if n == node and i == image and e > when),
                   default=float("inf"))
        spans.setdefault((node, image), []).append((landed, gone))
    return spans


def check_pods(p: Pulls, run: Run) -> None:
    spans = presence(run)
    for user, (node, image, asked, left) in run.pods.items():
        need = run.needs[user]
        if need.ready is None:
            continue
        assert need.ready >= (asked if need.transfer is None else need.transfer.requested)
        if p.present(image):
            continue
        until = left if left is not None else float("inf")
        assert any(a <= need.ready and until <= b for a, b in spans.get((node, image), [])), (
            f"{user}'s {image} not on {node} from {need.ready} to {until}: "
            f"{spans.get((node, image))}")


def check_disk(p: Pulls, run: Run) -> None:
    """Each step's evictions: of images landed that no pod on the node used, the
    least recently used first (ties by name), no more than needed (that a pod which
    waits for room could not have had it is checked as it is asked, in :func:`play`)."""
    for k, b in enumerate(run.batches):
        def last_use(image: str, b=b, k=k) -> float:
            return max(t for t, n, i, order in run.touches if n == b.node and i == image
                       and order <= 2 * k)

        def landed(image: str, b=b) -> bool:  # the copy there now
            return min(t.end for t in run.transfers if t.image == image
                       and b.node in t.nodes and t.end > b.began[image]) <= b.when
        candidates = sorted((last_use(i), i) for i in b.before
                            if i not in b.pinned and landed(i))
        assert [i for _, i in candidates[:len(b.evicted)]] == b.evicted, (b, candidates)
        used = sum(b.before.values())
        freed = [b.before[i] for i in b.evicted]
        if b.evicted:
            assert used - sum(freed) + sum(b.begun) <= run.repo.disk
            assert used - sum(freed[:-1]) + sum(b.begun) > run.repo.disk, "evicted too many"


@settings(max_examples=300, deadline=None)
@given(runs())
def test_the_link_the_disks_and_the_pods_keep_their_rules(case):
    repo, sizes, ops = case
    p, run = play(repo, sizes, ops)
    note(f"transfers {run.transfers}\nevictions {run.evictions}")
    check_link(run)
    check_pods(p, run)
    check_disk(p, run)
