"""The Pod Security Standards checker (tests/pss.py) can fail: each rule fails a pod
that breaks it, and passes the smallest pod that meets "restricted"."""

from __future__ import annotations

import pytest

import pss


@pytest.mark.parametrize("rule", pss.RESTRICTED)
def test_the_checker_fails_a_pod_breaking_the_rule(rule):
    assert pss.RESTRICTED[rule](pss.breaking(rule)), rule
    assert not pss.RESTRICTED[rule](pss.compliant())


def test_every_rule_the_standard_lists_has_a_checker():
    assert list(pss.RESTRICTED) == [
        "host_process", "host_namespaces", "privileged_containers", "capabilities",
        "hostpath_volumes", "host_ports", "apparmor", "selinux", "proc_mount_type", "seccomp",
        "sysctls", "host_probes_lifecycle_hooks", "volume_types", "privilege_escalation",
        "running_as_non_root", "running_as_non_root_user", "seccomp_restricted",
        "capabilities_restricted"]
