"""A Lease's memory is a Kubernetes quantity (a bare number is bytes, unlike a
scenario's MiB): one below 1Mi is Rejected, its status naming the field and what the
user likely meant; a NodePool's is left out with the same words (issue 18).

On the emulated cluster, with the real kubectl and the operator."""

from __future__ import annotations

from operated import Operated

#: as a user writes it: `memory: 256`, meaning MiB as in a scenario
LEASES = """
apiVersion: leasehold.io/v1alpha1
kind: Lease
metadata: {name: bytes, namespace: lab}
spec:
  type: BestEffortSuspendable
  vms: 1
  duration: 1h
  resources: {cpu: 500m, memory: 256}
---
apiVersion: leasehold.io/v1alpha1
kind: Lease
metadata: {name: mebibytes, namespace: lab}
spec:
  type: BestEffortSuspendable
  vms: 1
  duration: 1h
  resources: {cpu: 500m, memory: 256Mi}
"""

POOL = """
apiVersion: leasehold.io/v1alpha1
kind: NodePool
metadata: {name: tiny}
spec:
  emulated: {nodes: 1, cpu: 1, memory: 4096}
"""


def phase(c: Operated, name: str) -> str | None:
    return (c.lease("lab", name).get("status") or {}).get("phase")


def test_a_lease_memory_in_bytes_below_1mi_is_rejected_with_a_suggestion(small):
    small.kubectl("apply", "-f", "-", stdin=LEASES)
    small.until(lambda: phase(small, "bytes") == "Rejected"
                and phase(small, "mebibytes") == "Running")
    message = small.lease("lab", "bytes")["status"]["message"]
    assert "spec.resources.memory: 256 bytes is below 1Mi, the least leasehold accepts (a bare" \
           " number is bytes, as in Kubernetes); did you mean 256Mi?" in message, message
    # what `kubectl get lhl` shows a user: the phase, and the reason in `describe`
    shown = small.kubectl("describe", "lhl", "-n", "lab", "bytes").stdout
    assert "did you mean 256Mi?" in shown, shown


def test_a_nodepool_memory_in_bytes_below_1mi_is_left_out_saying_why(small):
    small.kubectl("apply", "-f", "-", stdin=POOL)
    small.until(lambda: "NodePool tiny left out: NodePool tiny: spec.emulated.memory: 4096"
                        " bytes is below 1Mi" in (small.data / "operator.log").read_text()
                and "did you mean 4096Mi?" in (small.data / "operator.log").read_text())
