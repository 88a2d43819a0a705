"""The pools as the cluster has them now: NodePools and their nodes, read whenever one
of them changes (issue 16: capacity is an input).

A pool's nodes have stable indices in the core: an emulated pool's node ``<pool>-i``
is index ``i``; a pool of real nodes keeps the order it first saw its nodes in
(sorted by name), and a node that joins later gets the next index; each node is of
its own allocatable size, taken when the pool first has it (a pool of mixed sizes),
except in an exclusive pool, whose nodes count as large as the smallest first seen.
A node that is missing, cordoned, NotReady or smaller than when it was taken is
*down* at its index: the core loses what ran there
(:meth:`leasehold.core.lifecycle.Lifecycle.lose`) and places nothing there until it
is back."""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from leasehold.api.podpolicy import RESTRICTED, PodPolicy
from leasehold.api.resources import (
    GROUP,
    POOL_LABEL,
    VERSION,
    LeaseInputError,
    node_selector,
    node_size,
    pod_policy,
    pool_from_nodes,
    pool_problems,
    pool_spec,
    sized_pool,
    usable,
)
from leasehold.core.model import Capacity, PoolSpec

from .client import KubeClient, Obj

log = logging.getLogger("leasehold.operator")


@dataclass(frozen=True, slots=True)
class ClusterPool:
    """A pool now: its spec (``nodes``: its index space), the cluster's node name at
    each index, the indices that are down, what its Leases' pods may have, and what
    of its NodePool could not be read and is done without (its ``dispatch``,
    ``images`` or ``vm`` block: :data:`~leasehold.api.resources.OPTIONAL_BLOCKS`)."""

    spec: PoolSpec
    names: tuple[str, ...]
    down: frozenset[int]
    policy: PodPolicy = RESTRICTED
    problems: tuple[str, ...] = ()

    @property
    def capacity(self) -> Capacity:
        return Capacity(self.spec, self.down)

    @property
    def up(self) -> int:
        return self.spec.nodes - len(self.down)


#: what a pool is scheduled without, by the block of its NodePool that cannot be read
WITHOUT = {"dispatch": "with its dispatch statistics estimated",
           "images": "without images (its Leases' images are not deployed ahead: their"
                     " pods pull them at their start)",
           "vm": "without the VM model (no slowdown, boot or shutdown)",
           "volatile": "as not volatile (its Leases are not checkpointed every epoch)"}


async def read_pools(client: KubeClient, before: dict[str, ClusterPool]) -> list[ClusterPool]:
    """Every NodePool the operator can read, in name order; ``before``: the pools as
    last read (their indices and shapes are kept). A NodePool it cannot read is left
    out, with a warning that names the field. One whose ``dispatch``, ``images`` or
    ``vm`` block it cannot read is kept, scheduled as without that block (its
    statistics estimated; no images deployed ahead, its Leases' pods pulling them at
    their start; no VM model): a typo there must not take the pool's nodes away; the
    warning names the field and what the pool does without it, once while the
    block stays as it is."""
    listing = await client.get(f"/apis/{GROUP}/{VERSION}/nodepools")
    out = []
    for item in sorted(listing.get("items", []), key=lambda x: x["metadata"]["name"]):
        name = item["metadata"]["name"]
        try:
            nodes = (await client.get("/api/v1/nodes", labelSelector=node_selector(item))
                     ).get("items", [])
            pool = replace(_pool(item, nodes, before.get(name)), policy=pod_policy(item),
                           problems=tuple(pool_problems(item)))
        except LeaseInputError as exc:
            log.warning("NodePool %s left out: %s", name, exc)
            continue
        was = before.get(name)
        if pool.problems and (was is None or was.problems != pool.problems):
            for block, without in WITHOUT.items():
                lines = [p for p in pool.problems if p.startswith(f"NodePool {name}: spec."
                                                                  f"{block}")]
                if lines:
                    log.warning("%s; spec.%s not used: NodePool %s is scheduled %s, as"
                                " without the block", "; ".join(lines), block, name, without)
        out.append(pool)
    return out


def _pool(item: Obj, nodes: list[Obj], before: ClusterPool | None) -> ClusterPool:
    live = {n["metadata"]["name"]: n for n in nodes if usable(n)}
    if (item.get("spec") or {}).get("emulated"):
        spec = pool_spec(item)
        names = tuple(spec.node_names())
        if before is not None and before.spec.nodes > spec.nodes:  # indices never go
            names = before.names
            spec = replace(spec, nodes=len(names))
        # an emulated node carries the pool's label; one that is not there is down
        down = frozenset(i for i, n in enumerate(names)
                         if n not in live or (live[n]["metadata"].get("labels") or {})
                         .get(POOL_LABEL) != item["metadata"]["name"])
        return ClusterPool(spec, names, down)
    if before is None or before.spec.nodes == 0:
        spec, real = pool_from_nodes(item, list(live.values()))
        return ClusterPool(spec, tuple(real), frozenset())
    joined = tuple(sorted(n for n in live if n not in before.names))
    names = before.names + joined
    # a node keeps the size it was first seen with (its index's, for good); one that
    # joins is of its own size, unless the pool is exclusive (of one size)
    sizes = before.spec.sizes()
    exclusive = bool((item.get("spec") or {}).get("exclusive"))
    for n in joined:
        sizes.append(before.spec.size if exclusive else node_size(live[n]))
    spec = sized_pool(item, sizes) if not exclusive else pool_spec(
        item, nodes=len(names), cpu=before.spec.cpu, memory=before.spec.memory,
        extended=before.spec.extended)
    lost: set[int] = set()
    for i, n in enumerate(names):
        node = live.get(n)
        if node is None:
            lost.add(i)
            continue
        # in any resource: a node whose GPUs are gone from its allocatable (a device
        # plugin down) holds no GPU lease
        if not sizes[i].fits_in(node_size(node)):
            log.warning("node %s is smaller than when NodePool %s took it (%s): unused",
                        n, spec.name, sizes[i].describe())
            lost.add(i)
    return ClusterPool(spec, names, frozenset(lost))


def changes(core_pools: dict[str, PoolSpec], core_down: dict[str, frozenset[int]],
            now: list[ClusterPool]) -> list[Capacity]:
    """What differs between the core's pools and the cluster's: a pool added or
    changed (its spec or its down nodes), a pool gone (all its nodes down)."""
    out = []
    for pool in now:
        if core_pools.get(pool.spec.name) != pool.spec \
                or core_down.get(pool.spec.name, frozenset()) != pool.down:
            out.append(pool.capacity)
    names = {pool.spec.name for pool in now}
    for name, spec in core_pools.items():
        if name not in names and len(core_down.get(name, frozenset())) < spec.nodes:
            out.append(Capacity(spec, frozenset(range(spec.nodes)), removed=True))
    return out
