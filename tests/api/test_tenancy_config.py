"""The admins' tenancy configuration as rules (operator/leasehold/api/tenancy.py):
which namespaces are local, and when a namespace is at its caps."""

from __future__ import annotations

import pytest

from leasehold.api.tenancy import Tenancy

LABEL_MODE = {"trustNamespaceLabels": True, "localNamespaceSelector": {
    "matchLabels": {"team": "owners"},
    "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["sandbox"]}]}}


@pytest.mark.parametrize(("config", "name", "labels", "local"), [
    ({}, "owners", {"leasehold.io/origin": "local"}, False),
    ({"localNamespaces": ["owners"]}, "owners", {}, True),
    ({"localNamespaces": ["owners"]}, "lab", {"leasehold.io/origin": "local"}, False),
    (LABEL_MODE, "lab", {"team": "owners"}, True),
    (LABEL_MODE, "lab", {"team": "owners", "tier": "sandbox"}, False),
    (LABEL_MODE, "lab", {"team": "lab"}, False),
    ({**LABEL_MODE, "localNamespaceSelector": {"matchExpressions": [
        {"key": "owned", "operator": "Exists"}]}}, "lab", {"owned": ""}, True),
], ids=["label-ignored", "listed", "other-labelled", "selected", "not-in", "not-matched",
        "exists"])
def test_which_namespaces_are_local(config, name, labels, local):
    assert Tenancy.model_validate(config).local(name, labels) is local


@pytest.mark.parametrize(("config", "leases", "vms", "more", "held"), [
    ({}, 10_000, 10_000, 1, None),
    ({"maxPendingLeases": 3}, 2, 2, 1, None),
    ({"maxPendingLeases": 3}, 3, 3, 1, "3 Leases pending, the most it may have"
                                       " (maxPendingLeases: 3)"),
    ({"maxPendingVMs": 8}, 2, 6, 2, None),
    ({"maxPendingVMs": 8}, 2, 6, 3, "6 VMs pending and this Lease asks for 3 more, over"
                                    " the most it may have (maxPendingVMs: 8)"),
    # a Lease larger than the cap enters once nothing of its namespace waits
    ({"maxPendingVMs": 8}, 0, 0, 20, None),
], ids=["no-caps", "under-leases", "at-leases", "under-vms", "over-vms", "alone-too-big"])
def test_a_namespace_at_its_caps_holds_its_next_lease(config, leases, vms, more, held):
    why = Tenancy.model_validate(config).over_cap(leases, vms, more)
    assert why == (None if held is None else f"its namespace has {held}")
