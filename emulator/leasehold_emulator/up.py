"""``leasehold up``: the embedded default, in one foreground command — the emulated
cluster (API server and nodes), the operator and its metrics endpoint."""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

import yaml

#: the pool an empty cluster gets, so that Leases have somewhere to run
DEFAULT_POOL = {"apiVersion": "leasehold.io/v1alpha1", "kind": "NodePool",
                "metadata": {"name": "default"},
                "spec": {"emulated": {"nodes": 4, "cpu": 4, "memory": "8Gi"}}}


class UpError(Exception):
    """Why it could not come up: one line."""


def start(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    """``leasehold <args>`` in the background, its output appended to ``log``."""
    return subprocess.Popen([sys.executable, "-m", "leasehold.cli", *args],
                            stdout=log.open("ab"), stderr=subprocess.STDOUT)


def stop(proc: subprocess.Popen[bytes] | None) -> None:
    """SIGTERM, and SIGKILL after 20 s."""
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def wait_for(path: Path, proc: subprocess.Popen[bytes], what: str, log: Path) -> None:
    """Until ``proc`` has written ``path``; its last log line if it stops first."""
    deadline = time.monotonic() + 30
    while not path.exists():
        if proc.poll() is not None:
            tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
            raise UpError(f"{what} stopped: {tail[0]}")
        if time.monotonic() > deadline:
            raise UpError(f"{what} did not start within 30 s (see {log})")
        time.sleep(0.1)


def serving(port: int, proc: subprocess.Popen[bytes], log: Path) -> None:
    """Until the operator listens on ``port``; its last log line if it stops first."""
    deadline = time.monotonic() + 30
    while True:
        if proc.poll() is not None:
            tail = log.read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
            raise UpError(f"the operator stopped: {tail[0]}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return
        if time.monotonic() > deadline:
            raise UpError(f"the operator did not listen on port {port} within 30 s (see {log})")
        time.sleep(0.1)


def up(data: Path, port: int, time_scale: float, policy: str, metrics_port: int,
       pools: Path | None, local: Sequence[str] = ("owners",), dispatch: str = "earliest"
       ) -> None:
    """``local``: the namespaces the operator takes for local (its admins' say; the
    testbed's ``owners`` by default); ``dispatch``: the operator's dispatch strategy."""
    data.mkdir(parents=True, exist_ok=True)
    log = data / "leasehold.log"
    if metrics_port:
        try:
            # where the operator binds it: this machine only
            socket.create_server(("127.0.0.1", metrics_port)).close()
        except OSError as exc:
            raise UpError(f"--metrics-port {metrics_port}: cannot listen there:"
                          f" {exc.strerror or exc}; choose another port (0: no metrics)"
                          ) from None
    if pools is None and not (data / "state.db").exists():
        pools = data / "default-pool.yaml"
        pools.write_text(yaml.safe_dump(DEFAULT_POOL))
    (data / "server.json").unlink(missing_ok=True)
    emulator = start(["emulator", "up", "--port", str(port), "--data", str(data),
                      "--time-scale", f"{time_scale:g}",
                      *(["--pools", str(pools)] if pools else [])], log)
    operator: subprocess.Popen[bytes] | None = None
    stopping = []

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopping.append(signum)
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        wait_for(data / "server.json", emulator, "the emulated cluster", log)
        url = json.loads((data / "server.json").read_text())["url"]
        kubeconfig = data / "kubeconfig"
        operator = start(["operator", "--kubeconfig", str(kubeconfig), "--policy", policy,
                          "--dispatch", dispatch,
                          "--metrics-port", str(metrics_port),
                          *(a for ns in local for a in ("--local-namespace", ns))], log)
        if metrics_port:
            serving(metrics_port, operator, log)
        metrics = f"http://127.0.0.1:{metrics_port}/metrics" if metrics_port else "off"
        print(f"leasehold is up: the emulated cluster at {url}, the operator with policy"
              f" {policy} and dispatch {dispatch}, time scale {time_scale:g}\n"
              f"  kubeconfig: {kubeconfig}\n"
              f"  metrics:    {metrics}\n"
              f"  local namespaces: {', '.join(local) or 'none'}\n"
              f"  logs:       {log}\n"
              f"next:\n"
              f"  export KUBECONFIG={kubeconfig}\n"
              f"  kubectl get nodes,nodepools\n"
              # the README's tour; tests/test_tour.py runs these lines as printed
              f"  kubectl apply -f examples/testbed/   # in a checkout: namespaces, a pool,"
              f" 7 Leases\n"
              f"  kubectl get lhl -A -w\n"
              f"Ctrl-C stops everything.", flush=True)
        while not stopping:
            if emulator.poll() is not None:
                raise UpError(f"the emulated cluster stopped (see {log})")
            if operator.poll() is not None:
                raise UpError(f"the operator stopped (see {log})")
            time.sleep(0.2)
    finally:
        stop(operator)
        stop(emulator)
