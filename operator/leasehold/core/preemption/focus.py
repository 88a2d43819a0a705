"""Large shared pools: narrow the candidates to the most promising nodes.

On a 1,000-node pool with thousands of running leases every one of them is a
candidate, and neither enumeration nor a greedy pass over all of them fits in a
decision's time. But the preemptor needs a handful of nodes: the sets worth looking
at free room on few nodes. :func:`pick` ranks the nodes twice — by overhead per VM
of room gained if every candidate on the node went (cheap nodes), and by the number
of candidates per VM gained (nodes freed by few leases) — takes nodes from the top
of each ranking until each has twice the missing room, and keeps only the candidates
on those nodes. Every other node contributes its room as it is, a constant.

It runs at two places, both in :mod:`.instance`:

* :func:`~.instance.narrow`, on an instance, with the exact room each node would gain;
* :func:`~.instance.build`, on the slot table itself, before any bin is made
  (1,000 bins cost more than the whole decision may). The gain is then estimated
  as if every candidate's usage on the node fell at the node's busiest instant of
  the window, which can only overstate it; the instance built from the chosen
  nodes is exact.

The sets found on a narrowed instance are candidate sets of the full one (the
removal of the same leases frees the same room), but not all of them: decisions on
a narrowed instance are marked ``exact: false``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

#: instances with more candidates than this are narrowed
NARROW_ABOVE = 40
#: each ranking takes nodes until it has this many times the missing room
SLACK = 2


def pick(gain: Sequence[int] | np.ndarray, cost: Sequence[int], count: Sequence[int],
         missing: int) -> set[int]:
    """The nodes to keep, given per node (by index) the room all its candidates
    would free (``gain``), their summed overhead and their number. Ties go to the
    lower node. Vectorised: on the slot table it ranks a thousand nodes."""
    gains = np.asarray(gain, dtype=np.int64)
    useful = np.flatnonzero(gains > 0)
    g = gains[useful]
    chosen: set[int] = set()
    for weight in (cost, count):
        ratio = np.asarray(weight, dtype=np.int64)[useful] / g
        order = np.lexsort((useful, ratio))  # by ratio, then by node
        # take nodes while those taken before free less than the slack asks
        before = np.cumsum(g[order]) - g[order]
        chosen.update(useful[order[before < SLACK * missing]].tolist())
    return chosen


def kept(nodes: set[int], on_node: Mapping[int, Sequence[int]] | Sequence[Sequence[int]]
         ) -> tuple[int, ...]:
    """The candidates on ``nodes``, ascending."""
    return tuple(sorted({i for n in nodes for i in on_node[n]}))
