"""replay's background inputs (a volatile pool's failures, drawn by the simulator):
merged in time order, given while inputs or timers are left, and after that only
while the background says they are wanted."""

from __future__ import annotations

import pytest

from builders import config, exclusive, lease, req
from leasehold.core.model import Capacity
from leasehold.core.replay import Input, replay
from leasehold.core.scheduler import Scheduler

POOL = exclusive(2)


class Listed:
    """A background of given inputs; ``wanted`` as told."""

    def __init__(self, items: list[Input], wanted: bool) -> None:
        self.items, self.want, self.given = list(items), wanted, 0

    def next_time(self) -> float | None:
        return self.items[0].time if self.items else None

    def pop(self) -> Input:
        self.given += 1
        return self.items.pop(0)

    def wanted(self, scheduler: Scheduler) -> bool:
        return self.want


def changes(*times: float) -> list[Input]:
    return [Input.capacity_change(Capacity(POOL, frozenset({0} if i % 2 == 0 else set())), t)
            for i, t in enumerate(times)]


@pytest.mark.parametrize(("wanted", "given", "last"), [
    (False, 2, 150),   # p-0 down at 50 (A starts over on p-1), back at 70; 500 never comes
    (True, 3, 500),    # told it matters: given, though nothing is left to do
], ids=["ends-with-its-leases", "wanted"])
def test_background_inputs_never_keep_a_run_going_unless_wanted(wanted, given, last):
    sched = Scheduler([POOL], config())
    bg = Listed(changes(50, 70, 500), wanted)
    steps = list(replay(sched, [Input.submit(req("A", 1, 100))], background=bg))
    assert bg.given == given and steps[-1].time == last
    assert lease(sched, "A").end == 150

