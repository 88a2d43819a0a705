"""The CRDs generated from the API models: committed files match, the schemas are
structural, and a real kubectl on the emulated cluster sees what users will see."""

from __future__ import annotations

import subprocess
import sys
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


def test_kubectl_sees_leases_with_their_columns(emulated):
    # `leasehold emulator up` installs the CRDs
    emulated.kubectl("wait", "--for=condition=Established", "crd/leases.leasehold.io")
    emulated.apply(lease("a", type="BestEffortSuspendable", vms=2, duration="1h"))
    emulated.kubectl("patch", "lhl", "a", "--subresource=status", "--type=merge", "-p",
                     '{"status":{"phase":"Queued","origin":"external"}}')
    lines = emulated.kubectl("get", "lhl").stdout.splitlines()
    assert lines[0].split() == ["NAME", "TYPE", "ORIGIN", "VMS", "PHASE", "POOL", "START", "AGE"]
    assert lines[1].split()[:5] == ["a", "BestEffortSuspendable", "external", "2", "Queued"]
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
