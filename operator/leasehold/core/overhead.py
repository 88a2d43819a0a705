"""Time overheads of suspending, resuming, migrating and cancelling a lease (000 §5).

Suspension and resumption of a lease's VMs run one after another (shared storage,
000 §5), so per-VM times add up; migration overlaps the suspension of VM j with the
resumption of VM j-1 (eq. 8 read as a pipeline, DESIGN §2.4).
"""

from __future__ import annotations

from .model import OverheadParams, Request


def suspend_seconds(req: Request, p: OverheadParams) -> float:
    """s(L), eq. 5: pause every VM, then write each VM's memory at rate B."""
    v = req.vms
    return v * p.pause_seconds + v * req.shape.memory / p.suspend_rate


def resume_seconds(req: Request, p: OverheadParams) -> float:
    """r(L), eq. 6: read each VM's memory back at rate r, then unpause every VM."""
    v = req.vms
    return v * req.shape.memory / p.resume_rate + v * p.pause_seconds


def suspend_overhead(req: Request, p: OverheadParams) -> float:
    """h(L) of a suspendable lease, eq. 7: suspend + resume + rescheduling delta."""
    return suspend_seconds(req, p) + resume_seconds(req, p) + p.reschedule_seconds


def migrate_seconds(req: Request, p: OverheadParams) -> float:
    """Suspend, copy and resume phases of a migration, pipelined over the VMs (eq. 8)."""
    v, mem = req.vms, req.shape.memory
    t_s, t_r = mem / p.suspend_rate, mem / p.resume_rate
    copy = v * mem / p.bandwidth
    # identical VMs: t_s^1 + (v-1) * max(t_s, t_r) + t_r^v
    return copy + t_s + (v - 1) * max(t_s, t_r) + t_r


def migrate_overhead(req: Request, p: OverheadParams) -> float:
    """h(L) of a migratable lease, eq. 8: pipeline + pauses + rescheduling delta."""
    return migrate_seconds(req, p) + 2 * req.vms * p.pause_seconds + p.reschedule_seconds


def cancel_overhead(req: Request, p: OverheadParams) -> float:
    return p.stop_seconds
