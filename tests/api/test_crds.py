"""The CRDs generated from the API models: committed files match, the schemas are
structural, and a real kubectl on the emulated cluster sees what users will see."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from leasehold.api.crds import crds, render

ROOT = Path(__file__).resolve().parents[2]


def test_the_committed_crds_are_what_leasehold_crds_writes():
    files = sorted(p.name for p in (ROOT / "crds").glob("*.yaml"))
    assert files == sorted(crds())
    for name, manifest in crds().items():
        assert (ROOT / "crds" / name).read_text() == render(manifest), \
            f"crds/{name} drifted from the models: run `leasehold crds`"


def _walk(schema: Any, path: str = ""):
    if isinstance(schema, dict):
        yield path, schema
        for key, value in schema.items():
            yield from _walk(value, f"{path}.{key}")
    elif isinstance(schema, list):
        for i, value in enumerate(schema):
            yield from _walk(value, f"{path}[{i}]")


@pytest.mark.parametrize("name", sorted(crds()))
def test_the_schemas_are_structural(name):
    schema = crds()[name]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    for path, node in _walk(schema):
        assert "$ref" not in node and "title" not in node, path
        assert node.get("type") != "null", path
        # pydantic's own names for bounds, which an API server does not know
        assert not {"ge", "gt", "le", "lt"} & set(node) or path.endswith(".properties"), path
        if "x-kubernetes-int-or-string" in node:
            assert "type" not in node and "anyOf" not in node, path
        if node.get("type") == "object" and not path.endswith("x-kubernetes-validations"):
            assert "properties" in node or "additionalProperties" in node \
                or node.get("x-kubernetes-preserve-unknown-fields"), path


def test_leasehold_crds_writes_them(tmp_path):
    r = subprocess.run([sys.executable, "-m", "leasehold.cli", "crds", "--out",
                        str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(crds())


def lease(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
            "metadata": {"name": name}, "spec": spec}


def status_fields(name: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every field under the status of CRD file ``name``, by its path."""
    schema = crds()[name]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    stack = [("status", schema["properties"]["status"])]
    while stack:
        path, node = stack.pop()
        yield path, node
        stack.extend((f"{path}.{k}", v) for k, v in (node.get("properties") or {}).items())
        if isinstance(node.get("items"), dict):
            stack.append((f"{path}[]", node["items"]))


@pytest.mark.parametrize("name", ["leases.leasehold.io.yaml", "nodepools.leasehold.io.yaml"])
def test_every_status_field_is_typed_and_described(name):
    # an open status explains nothing (kubectl explain lhl.status was empty)
    fields = dict(status_fields(name))
    for path, node in fields.items():
        assert not node.get("x-kubernetes-preserve-unknown-fields"), path
        assert node.get("type"), path
        # an array's items are described by the array (kubectl explain shows the field)
        assert path.endswith("[]") or node.get("description"), f"{path} has no description"
    if name.startswith("leases."):
        assert {"status.phase", "status.message", "status.reservation.start",
                "status.conditions[].lastTransitionTime"} <= set(fields)


STATUS = {"phase": "Pending", "origin": "external", "preemptions": 2, "message":
          "waiting for NodePool big: there is none (yet)", "reservation": {
              "pool": "rp", "start": "2026-11-22T10:00:00Z", "end": "2026-11-22T11:00:00Z",
              "nodes": None}}


def test_kubectl_sees_leases_with_their_columns(emulated):
    # `leasehold emulator up` installs the CRDs
    emulated.kubectl("wait", "--for=condition=Established", "crd/leases.leasehold.io")
    emulated.apply(lease("a", type="BestEffortSuspendable", vms=2, duration="1h"))
    emulated.kubectl("patch", "lhl", "a", "--subresource=status", "--type=merge", "-p",
                     json.dumps({"status": STATUS}))
    lines = emulated.kubectl("get", "lhl").stdout.splitlines()
    assert lines[0].split() == ["NAME", "TYPE", "ORIGIN", "VMS", "PHASE", "POOL", "START",
                                "AGE", "MESSAGE"]
    assert lines[1].split()[:6] == ["a", "BestEffortSuspendable", "external", "2", "Pending",
                                    "rp"]
    assert lines[1].endswith(STATUS["message"])  # why it is Pending, in full
    # START is a date, shown as a time since (as AGE), not the RFC 3339 text
    assert "2026-11-22T10:00:00Z" not in lines[1]
    wide = emulated.kubectl("get", "lhl", "-o", "wide").stdout.splitlines()
    assert wide[0].split() == ["NAME", "TYPE", "ORIGIN", "VMS", "PHASE", "POOL", "START",
                               "END", "PREEMPTIONS", "AGE", "MESSAGE"]
    assert wide[1].split()[7:9] == ["2026-11-22T11:00:00Z", "2"]
    # next to the built-in coordination Lease, by its full name
    assert "a" in emulated.kubectl("get", "leases.leasehold.io", "-o", "name").stdout
    assert "a" in emulated.kubectl("get", "leasehold", "-o", "name").stdout  # the category


@pytest.mark.parametrize(("spec", "message"), [
    ({"type": "BestEffortSuspendable", "vms": 0, "duration": "1h"},
     "spec.vms: Invalid value: 0: spec.vms in body should be greater than or equal to 1"),
    ({"type": "Whenever", "vms": 1, "duration": "1h"}, 'spec.type: Unsupported value:'
                                                        ' "Whenever"'),
    ({"type": "BestEffortSuspendable", "vms": 1}, "spec.duration: Required value"),
    ({"type": "BestEffortSuspendable", "vms": 1, "duration": "1h", "pool": "Bad_Pool"},
     "spec.pool: Invalid value: \"Bad_Pool\""),
    ({"type": "BestEffortSuspendable", "vms": 1, "duration": "1h", "origin": "owner"},
     'spec.origin: Unsupported value: "owner"'),
])
def test_malformed_leases_are_refused_at_the_api(emulated, spec, message):
    r = emulated.kubectl("apply", "-f", "-", stdin=yaml.safe_dump(lease("bad", **spec)),
                         check=False)
    assert r.returncode != 0 and message in r.stderr, r.stderr


def explained(emulated, *args: str) -> str:
    """``kubectl explain``'s answer, its lines joined (kubectl wraps descriptions)."""
    return " ".join(emulated.kubectl("explain", *args).stdout.split())


@pytest.mark.parametrize(("args", "wanted"), [
    pytest.param(("lhl.status.reservation",),
                 ["FIELD: reservation <Object>", "Its current booking; null while it has"
                  " none.", "end <string>", "nodes <[]string>", "pool <string>",
                  "start <string>"], id="short-name"),
    pytest.param(("leases.status.reservation", "--api-version=leasehold.io/v1alpha1"),
                 ["GROUP: leasehold.io KIND: Lease VERSION: v1alpha1",
                  "FIELD: reservation <Object>", "Its current booking"], id="full-name"),
    pytest.param(("lhl.status",), ["conditions <[]Object>", "message <string>",
                                   "observedGeneration <integer>", "phase <string>",
                                   "progress <Object>", "reservation <Object>"],
                 id="status"),
    pytest.param(("lhl.status.phase",), ["ENUM: Pending Queued Scheduled Running"],
                 id="phase-enum"),
    pytest.param(("lhl.status.conditions.reason",), ["NamespaceCap", "PoolMissing"],
                 id="condition-reason"),
    pytest.param(("lhnp.status",), ["the operator writes no NodePool status"],
                 id="nodepool"),
])
def test_kubectl_explain_describes_the_status(emulated, args, wanted):
    text = explained(emulated, *args)
    for want in wanted:
        assert want in text, text


@pytest.mark.parametrize(("field", "wanted"), [
    pytest.param("lhl.spec.duration", "FIELD: duration <IntOrString>", id="duration"),
    pytest.param("lhl.spec.resources", "cpu <IntOrString>", id="cpu"),
    pytest.param("lhl.spec.resources", "memory <IntOrString>", id="memory"),
    pytest.param("lhl.spec.runtime", "FIELD: runtime <IntOrString>", id="runtime"),
    pytest.param("lhnp.spec.emulated", "cpu <IntOrString>", id="nodepool-cpu"),
])
def test_kubectl_explain_shows_int_or_string_fields_as_such(emulated, field, wanted):
    text = explained(emulated, field)
    assert wanted in text, text


@pytest.mark.parametrize(("status", "message"), [
    pytest.param({"sequence": "x"}, "status.sequence: Invalid value: \"string\": status.sequence"
                 " in body must be of type integer", id="sequence"),
    pytest.param({"phase": 7}, "status.phase: Invalid value: \"integer\"", id="phase"),
    pytest.param({"submittedAt": 729.77}, "status.submittedAt: Invalid value: \"number\"",
                 id="time-as-seconds"),
    pytest.param({"phase": "Done"}, 'status.phase: Unsupported value: "Done"', id="phase-enum"),
    pytest.param({"reservation": "soon"}, "status.reservation: Invalid value: \"string\"",
                 id="reservation"),
    pytest.param({"conditions": "none"}, "status.conditions: Invalid value: \"string\"",
                 id="conditions"),
    pytest.param({"progress": None}, "status.progress: Invalid value: \"null\"",
                 id="null-where-never-written"),
])
def test_a_status_of_the_wrong_types_is_refused(emulated, status, message):
    # a tenant with leases/status rights writes only what the schema says (issue 17
    # had the operator survive "abc" in submittedAt; the API server now refuses it)
    emulated.apply(lease("typed", type="BestEffortSuspendable", vms=1, duration="1h"))
    # the whole status replaced, as the operator writes it (a merge patch's null deletes)
    r = emulated.kubectl("patch", "lhl", "typed", "--subresource=status", "--type=json",
                         "-p", json.dumps([{"op": "add", "path": "/status", "value": status}]),
                         check=False)
    assert r.returncode != 0 and message in r.stderr, r.stderr
