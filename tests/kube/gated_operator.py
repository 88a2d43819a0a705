"""``leasehold operator`` as some tests need to see into it: run as
``python gated_operator.py operator [flags]`` (the arguments of ``leasehold``).

- With ``$LEASEHOLD_GATE`` (``namespace/name,...``), the operator builds its shell only
  once Kopf has shown every Lease named there to a handler. Those Leases are then
  first seen by Kopf before the shell exists: the order that, with a per-object memo
  copied too early, made their later events (a deletion) go nowhere (issue 15).
  The gate wraps :func:`leasehold.kube.handlers.build_shell`; Kopf, the API server
  and the operator are otherwise the real ones.
- With ``$LEASEHOLD_FAIL_RECOVERY`` (a path), the shell's recovery raises
  ``RuntimeError("injected")`` while that file exists: an error the operator must
  log, retry and show on ``/healthz`` (issue 16).
- On exit it prints ``KUBECONFIG=<value>``: what the process's environment holds
  then, which the operator must not have changed.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import kopf

from leasehold import cli
from leasehold.api.resources import GROUP, VERSION
from leasehold.kube import handlers
from leasehold.kube.shell import Shell

GATE = {name for name in os.environ.get("LEASEHOLD_GATE", "").split(",") if name}
seen: set[str] = set()
opened = asyncio.Event()


@kopf.on.event(GROUP, VERSION, "leases", registry=handlers.registry)
async def note(namespace: str, name: str, **_: Any) -> None:
    # Kopf has made this object's memo before it calls any of its handlers
    seen.add(f"{namespace}/{name}")
    if seen >= GATE:
        opened.set()


build_shell = handlers.build_shell


async def gated(memo: Any) -> Any:
    if GATE:
        await opened.wait()
        print(f"gate: Kopf has seen {', '.join(sorted(GATE))}; building the shell",
              flush=True)
    return await build_shell(memo)


handlers.build_shell = gated  # type: ignore[assignment]

FAIL_RECOVERY = os.environ.get("LEASEHOLD_FAIL_RECOVERY")
recover = Shell.recover


async def failing(self: Shell, *args: Any) -> None:
    if FAIL_RECOVERY and Path(FAIL_RECOVERY).exists():
        raise RuntimeError("injected")
    await recover(self, *args)


Shell.recover = failing  # type: ignore[method-assign]

if __name__ == "__main__":
    try:
        code = cli.main(sys.argv[1:])
    finally:
        print(f"KUBECONFIG={os.environ.get('KUBECONFIG')}", flush=True)
    sys.exit(code)
