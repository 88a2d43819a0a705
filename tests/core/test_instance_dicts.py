"""The core's objects keep their attributes where CPython reads them fast (issue 20).

On CPython 3.11 an object of a class without ``__slots__`` keeps its attributes as
values beside keys its class shares with every instance, and ``self.x`` is a read
at a fixed index (LOAD_ATTR_INSTANCE_VALUE) — for up to 29 attributes. The 30th
turns the object's dict into a plain one: from then on every ``self.x`` is a
hinted dict lookup (LOAD_ATTR_WITH_HINT) and every ``self.m(...)`` a method load
that is never specialized. The planner had 30, and EASY, whose per-event paths are
the planner's own methods, paid for it at every event. Nothing else shows the cliff
(the schedules are the same), so it is checked here: every object of the core that a
scheduler reaches has fewer than 30 attributes in its dict, or none (slots).
"""

from __future__ import annotations

import gc

import pytest

from builders import BES, DM, config, exclusive, req, run, shared
from leasehold.core.model import PoolSpec, Request, SchedulerConfig
from leasehold.core.scheduler import Scheduler

#: the most attributes an instance dict holds before it stops sharing its keys
SHARED_KEYS = 29


def reachable(root: object) -> list[object]:
    """The objects of leasehold's own classes reachable from ``root``."""
    seen = {id(root)}
    out: list[object] = []
    todo = [root]
    while todo:
        obj = todo.pop()
        if type(obj).__module__.startswith("leasehold") and not isinstance(obj, type):
            out.append(obj)
        for ref in gc.get_referents(obj):
            if id(ref) not in seen and not isinstance(ref, type):
                seen.add(id(ref))
                todo.append(ref)
    return out


def workload() -> list[Request]:
    """Leases that queue, backfill, hold reservations and preempt."""
    return [req("a", 2, 50), req("b", 3, 40, at=1), req("c", 1, 10, at=2),
            req("d", 1, 100, at=3), req("e", 2, 20, at=4, type=DM, deadline=200),
            req("f", 4, 30, at=5, type=BES)]


CASES = [
    pytest.param([exclusive(4)], config("easy"), id="easy-one-exclusive"),
    pytest.param([exclusive(4)], config("conservative"), id="conservative-one-exclusive"),
    pytest.param([exclusive(4)], config("none"), id="fcfs-one-exclusive"),
    pytest.param([exclusive(2, "a"), shared(2, name="b")], config("easy", sbb=True),
                 id="easy-two-pools-holes"),
    pytest.param([shared(4)], config("conservative"), id="conservative-shared"),
]


@pytest.mark.parametrize(("pools", "cfg"), CASES)
def test_no_core_object_has_30_attributes_in_its_dict(pools: list[PoolSpec],
                                                      cfg: SchedulerConfig) -> None:
    sched: Scheduler = run(pools, workload(), cfg)
    crowded = {type(obj).__qualname__: len(vars(obj)) for obj in reachable(sched)
               if hasattr(obj, "__dict__") and len(vars(obj)) > SHARED_KEYS}
    assert crowded == {}
