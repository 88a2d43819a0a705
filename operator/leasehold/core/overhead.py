"""Time overheads of suspending, resuming, migrating and cancelling a lease.

Two models, chosen per pool (``OverheadParams.model``):

* ``intergrid`` (default, 000 §5): the VMs of a lease are paused, then written out
  one after another to shared storage, so per-VM times add up (eq. 5, 6, 7);
  migration overlaps the suspension of VM j with the resumption of VM j-1 (eq. 8
  read as a pipeline, DESIGN §2.4); every preemption costs a rescheduling ``δ``.
* ``haizea`` (004 §3.1): all VMs of a lease suspend and resume simultaneously
  (NTP-synchronised), so a lease takes ``m/H_w`` and ``m/H_r`` whatever its size,
  and a migration copies each VM's image and memory, ``(s_I + m)/B``, in parallel.
  Pauses do not apply; ``δ`` still does (it is the scheduler's own cost).

Every function returns seconds as a float. :func:`preemption_overhead` is ``h(L)``,
what a policy minimises.
"""

from __future__ import annotations

from .model import OverheadParams, Request

HAIZEA = "haizea"


def suspend_seconds(req: Request, p: OverheadParams) -> float:
    """s(L) without δ: from the order to suspend until the VMs have left their nodes."""
    v, mem = req.vms, req.shape.memory
    if p.model == HAIZEA:
        return mem / p.suspend_rate
    # eq. 5: pause every VM, then write each VM's memory at rate B
    return v * p.pause_seconds + v * mem / p.suspend_rate


def resume_seconds(req: Request, p: OverheadParams) -> float:
    """r(L), eq. 6: read each VM's memory back at rate r, then unpause every VM."""
    v, mem = req.vms, req.shape.memory
    if p.model == HAIZEA:
        return mem / p.resume_rate
    return v * mem / p.resume_rate + v * p.pause_seconds


def suspend_overhead(req: Request, p: OverheadParams) -> float:
    """h(L) of a suspendable lease, eq. 7: suspend + resume + rescheduling δ."""
    return suspend_seconds(req, p) + resume_seconds(req, p) + p.reschedule_seconds


def migrate_seconds(req: Request, p: OverheadParams) -> float:
    """Suspend, copy and resume phases of a migration (eq. 8 without pauses and δ)."""
    v, mem = req.vms, req.shape.memory
    t_s, t_r = mem / p.suspend_rate, mem / p.resume_rate
    if p.model == HAIZEA:
        return t_s + (req.image_mb + mem) / p.bandwidth + t_r
    copy = v * mem / p.bandwidth
    # identical VMs: t_s^1 + (v-1) * max(t_s, t_r) + t_r^v
    return copy + t_s + (v - 1) * max(t_s, t_r) + t_r


def migrate_leave_seconds(req: Request, p: OverheadParams) -> float:
    """From the order to migrate until the VMs have left their source nodes."""
    return suspend_seconds(req, p)


def migrate_run_seconds(req: Request, p: OverheadParams) -> float:
    """From the order to migrate until the VMs run again on the target."""
    pauses = 0.0 if p.model == HAIZEA else 2 * req.vms * p.pause_seconds
    return migrate_seconds(req, p) + pauses


def migrate_overhead(req: Request, p: OverheadParams) -> float:
    """h(L) of a migratable lease, eq. 8: pipeline + pauses + rescheduling δ."""
    return migrate_run_seconds(req, p) + p.reschedule_seconds


def cancel_overhead(req: Request, p: OverheadParams) -> float:
    return p.stop_seconds


def replan_overhead(req: Request, p: OverheadParams) -> float:
    """h(L) of a queued reservation that has not started: it is only re-planned (δ)."""
    return p.reschedule_seconds
