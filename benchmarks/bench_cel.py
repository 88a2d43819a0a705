"""What the CRDs' CEL rules cost the emulated API server per write (issue 18).

Checks a Lease against the Lease CRD's schema in this process, as the server does
on each create and each update (a label changed: the transition rule compares the
spec with the old one, the other rules are ratcheted), with the CRD's compiled
rules and without them. Prints CPU microseconds per write (process time, which the
shared machine's noise moves less than wall time), best of a few rounds.
"""

from __future__ import annotations

import argparse
import copy
import time
from typing import Any

from leasehold.api.crds import lease_crd
from leasehold_emulator.apiserver.rules import compile_schema
from leasehold_emulator.apiserver.schema import validate

LEASE: dict[str, Any] = {
    "apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
    "metadata": {"name": "a", "namespace": "default", "labels": {"team": "a"}},
    "spec": {"type": "BestEffortSuspendable", "vms": 2, "duration": "1h",
             "resources": {"cpu": "1", "memory": "1Gi"}}}


def per_write(schema: dict[str, Any], rules: Any, old: dict[str, Any] | None, n: int
              ) -> float:
    """CPU microseconds per validation of a fresh copy of the Lease."""
    objs = [copy.deepcopy(LEASE) for _ in range(n)]
    start = time.process_time()
    for obj in objs:
        validate(obj, schema, False, old, rules, old is not None)
    return (time.process_time() - start) / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--writes", type=int, default=5000, help="writes per round (5000)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds; the best is shown (5)")
    args = ap.parse_args()
    schema = lease_crd()["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    rules, _ = compile_schema(schema)
    labelled = copy.deepcopy(LEASE)
    labelled["metadata"]["labels"]["team"] = "b"
    for what, old in (("create", None), ("update", labelled)):
        bare = min(per_write(schema, None, old, args.writes) for _ in range(args.rounds))
        ruled = min(per_write(schema, rules, old, args.writes) for _ in range(args.rounds))
        print(f"Lease {what}: schema {bare:.1f} us, schema and CEL rules {ruled:.1f} us"
              f" (the rules: {ruled - bare:.1f} us)")


if __name__ == "__main__":
    main()
