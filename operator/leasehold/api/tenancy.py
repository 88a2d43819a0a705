"""What the cluster's admins say about tenants: the ``tenancy`` block of the
operator's configuration (the chart's ConfigMap; docs/operator.md, DESIGN §2.1).

- **Which namespaces are local.** Named ones (``localNamespaces``), and, only where
  the admins turn it on, those whose labels a selector matches. A namespace's labels
  are written by whoever may create or label it: on a cluster with self-service
  namespaces any tenant could make itself local, so the selector is refused unless
  ``trustNamespaceLabels: true`` says that only admins can.
- **How much one namespace may have waiting** (``maxPendingLeases``,
  ``maxPendingVMs`` per namespace): beyond it a Lease waits at the edge, Pending,
  and is not given to the core, so that one tenant's flood is not planned before
  another's Lease.
- **What a tenant is told of the others** (``discloseOtherTenants``): by default a
  preempted Lease's events and status do not name a Lease of another namespace.

Pure data and rules: no cluster here."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import Field, model_validator

from .fields import Spec

#: a namespace's name: a DNS label (RFC 1123), as the API server requires
NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
#: a label key: an optional DNS-subdomain prefix and a name (as kube-apiserver checks)
LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?"
                       r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")

Count = Annotated[int, Field(strict=True, ge=1)]


def _label_problems(key: str, values: list[str]) -> list[str]:
    problems = [] if LABEL_KEY.match(key) else [
        f"{key!r} is not a label key (an optional DNS prefix/, then at most 63 letters,"
        " digits, '-', '_' or '.')"]
    problems += [f"{v!r} is not a label value (at most 63 letters, digits, '-', '_' or '.')"
                 for v in values if not LABEL_VALUE.match(v)]
    return problems


class Requirement(Spec):
    """One of a selector's ``matchExpressions``, as in Kubernetes' LabelSelector."""

    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _check(self) -> Requirement:
        problems = _label_problems(self.key, self.values)
        if self.operator in ("In", "NotIn") and not self.values:
            problems.append(f"operator {self.operator} needs values")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            problems.append(f"operator {self.operator} takes no values")
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def matches(self, labels: dict[str, str]) -> bool:
        if self.operator == "Exists":
            return self.key in labels
        if self.operator == "DoesNotExist":
            return self.key not in labels
        inside = self.key in labels and labels[self.key] in self.values
        return inside if self.operator == "In" else not inside


class NamespaceSelector(Spec):
    """Kubernetes' LabelSelector (``matchLabels`` and ``matchExpressions``, all of
    them required), applied to namespaces' labels."""

    match_labels: dict[str, str] = Field(default_factory=dict, alias="matchLabels")
    match_expressions: list[Requirement] = Field(default_factory=list,
                                                 alias="matchExpressions")

    @model_validator(mode="after")
    def _check(self) -> NamespaceSelector:
        if not self.match_labels and not self.match_expressions:
            # Kubernetes reads an empty selector as "everything": every namespace local
            raise ValueError("an empty selector would make every namespace local: give"
                             " matchLabels or matchExpressions")
        problems = [p for k, v in self.match_labels.items() for p in _label_problems(k, [v])]
        if problems:
            raise ValueError("; ".join(problems))
        return self

    def matches(self, labels: dict[str, str]) -> bool:
        return all(labels.get(k) == v for k, v in self.match_labels.items()) \
            and all(r.matches(labels) for r in self.match_expressions)


class Tenancy(Spec):
    """The ``tenancy`` block of the operator's configuration."""

    local_namespaces: list[str] = Field(default_factory=list, alias="localNamespaces")
    #: the opt-in to the label mode: only admins can create or label namespaces here
    trust_namespace_labels: Annotated[bool, Field(strict=True)] = Field(
        default=False, alias="trustNamespaceLabels")
    local_namespace_selector: NamespaceSelector | None = Field(
        default=None, alias="localNamespaceSelector")
    #: per namespace, the Leases and the VMs admitted and waiting (None: no cap)
    max_pending_leases: Count | None = Field(default=None, alias="maxPendingLeases")
    max_pending_vms: Count | None = Field(default=None, alias="maxPendingVMs")
    #: a preempted Lease's events and status may name its preemptor's namespace and
    #: name (and the preemptor's, its victims') when they are another namespace's
    disclose_other_tenants: Annotated[bool, Field(strict=True)] = Field(
        default=False, alias="discloseOtherTenants")

    @model_validator(mode="after")
    def _check(self) -> Tenancy:
        bad = [n for n in self.local_namespaces if not NAMESPACE.match(n)]
        if bad:
            raise ValueError(f"localNamespaces: {', '.join(map(repr, bad))}: not a"
                             " namespace name (lower-case letters, digits and '-', at most"
                             " 63)")
        if self.local_namespace_selector is not None and not self.trust_namespace_labels:
            raise ValueError(
                "localNamespaceSelector reads namespace labels, which whoever may create or"
                " label a namespace writes: set trustNamespaceLabels: true only if tenants"
                " cannot (docs/operator.md), else list localNamespaces")
        return self

    def local(self, name: str, labels: dict[str, str] | None) -> bool:
        """Whether the namespace ``name``, with ``labels``, is local."""
        if name in self.local_namespaces:
            return True
        selector = self.local_namespace_selector
        return selector is not None and self.trust_namespace_labels \
            and selector.matches(labels or {})

    def over_cap(self, leases: int, vms: int, more_vms: int) -> str | None:
        """Why a namespace with ``leases`` Leases and ``vms`` VMs pending may not have
        one more of ``more_vms`` VMs pending now (None: it may)."""
        if self.max_pending_leases is not None and leases >= self.max_pending_leases:
            return (f"its namespace has {leases} Leases pending, the most it may have"
                    f" (maxPendingLeases: {self.max_pending_leases})")
        # a Lease larger than the cap alone still enters once none of its namespace's wait
        if self.max_pending_vms is not None and vms and vms + more_vms > self.max_pending_vms:
            return (f"its namespace has {vms} VMs pending and this Lease asks for"
                    f" {more_vms} more, over the most it may have (maxPendingVMs:"
                    f" {self.max_pending_vms})")
        return None
