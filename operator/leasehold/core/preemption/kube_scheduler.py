"""``kube-scheduler``: the default scheduler's preemption, as a baseline
(kubernetes/kubernetes: ``SelectVictimsOnNode``, ``MoreImportantPod``,
``pickOneNodeForPreemption``).

The preemptor's VMs are placed one at a time, like the pods of a Job. For the next
VM, on every node (bin) where candidates run: remove all of them (every external
lease has lower priority than a local one), and if the VM then fits, put them back
most important first — the earliest started first, as ``MoreImportantPod`` does at
equal priority — keeping out only those without which it does not fit. Among the
nodes, pick the one with the fewest victims, then the latest earliest-start among
its victims, then the lowest node index (kube-scheduler: map order). An exclusive
pool is one bin, so its VMs are placed all at once. Removed leases stay removed for
the following VMs; nothing is minimised at the end.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..model import SchedulerConfig
from .choice import NONE, Choice
from .instance import Evaluator, Instance


def _node_victims(inst: Instance, ev: Evaluator, on_bin: list[int], want: int) -> list[int] | None:
    """Victims on one node for ``want`` VMs to fit: all removed, then reprieved."""
    for i in on_bin:
        ev.add(i)
    if ev.total < want:
        for i in on_bin:
            ev.remove(i)
        return None
    cands = inst.candidates
    victims = []
    for i in sorted(on_bin, key=lambda i: (cands[i].victim.since, cands[i].name)):
        ev.remove(i)
        if ev.total < want:
            ev.add(i)
            victims.append(i)
    for i in victims:
        ev.remove(i)
    return victims


def per_node(inst: Instance) -> tuple[tuple[int, ...], int] | None:
    cands = inst.candidates
    by_bin: dict[int, list[int]] = {}
    for i, c in enumerate(cands):
        for part in c.parts:
            by_bin.setdefault(part.bin, []).append(i)
    ev = Evaluator(inst)
    chosen: set[int] = set()
    weighed = 0
    while ev.total < inst.need:
        want = (inst.need if len(inst.bins) == 1 else ev.total + 1)
        best: tuple[tuple[int, float, int], list[int]] | None = None
        for b in sorted(by_bin):
            on_bin = [i for i in by_bin[b] if i not in chosen]
            if not on_bin:
                continue
            victims = _node_victims(inst, ev, on_bin, want)
            if victims is None:
                continue
            weighed += 1
            earliest = min(cands[i].victim.since for i in victims)
            key = (len(victims), -earliest, b)
            if best is None or key < best[0]:
                best = (key, victims)
        if best is None:
            return None
        for i in best[1]:
            ev.add(i)
            chosen.add(i)
    return tuple(sorted(chosen)), weighed


def decide(instances: Sequence[Instance], config: SchedulerConfig) -> Choice:
    for k, inst in enumerate(instances):
        found = per_node(inst)
        if found and found[0]:
            return Choice(k, found[0], found[1], True)
    return NONE
