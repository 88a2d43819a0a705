"""``leasehold emulator up | down | status``: the emulated cluster's lifecycle.

A data directory holds everything: ``state.db`` (the objects), ``pki/`` (the CA and
the server certificate), ``token`` (the bearer token), ``kubeconfig``, and
``server.pid`` / ``server.json`` while the server runs."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import signal
import ssl
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from .kubeconfig import new_token, write_kubeconfig
from .server import serve
from .store import Store
from .tls import ensure_certificates

DEFAULT_DATA = Path.home() / ".leasehold" / "cluster"
DEFAULT_PORT = 6443
#: the ConfigMap both sides read emulated time from (DESIGN §4)
CLOCK = ("kube-system", "leasehold-clock")


class EmulatorError(Exception):
    """Why the emulator cannot start or be reached: one line."""


@dataclass(frozen=True, slots=True)
class Running:
    pid: int
    url: str
    kubeconfig: Path


def _token(data: Path) -> str:
    path = data / "token"
    if path.exists():
        return path.read_text().strip()
    token = new_token()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(token + "\n")
    return token


def running(data: Path) -> Running | None:
    """The server of ``data`` if one is up (its pid alive)."""
    info = data / "server.json"
    if not info.exists():
        return None
    try:
        doc = json.loads(info.read_text())
        os.kill(doc["pid"], 0)
    except (ValueError, KeyError, ProcessLookupError, PermissionError):
        return None
    return Running(doc["pid"], doc["url"], data / "kubeconfig")


async def _serve(data: Path, host: str, port: int, time_scale: float,
                 ready: asyncio.Event | None = None) -> None:
    data.mkdir(parents=True, exist_ok=True)
    if running(data):
        raise EmulatorError(f"an emulated cluster already runs on {data}"
                            f" (leasehold emulator down --data {data})")
    store = Store(data / "state.db")
    certs = ensure_certificates(data / "pki")
    try:
        runner, server = await serve(store, host, port, _token(data),
                                     ssl_context=certs.server_context())
    except OSError as exc:
        store.close()
        if exc.errno == errno.EADDRINUSE:
            raise EmulatorError(f"port {port} on {host} is in use; choose another with"
                                " --port") from None
        raise EmulatorError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    url = f"https://{server.address}"
    kubeconfig = write_kubeconfig(data / "kubeconfig", url, _token(data), certs.ca)
    _set_clock(server, time_scale)
    (data / "server.json").write_text(json.dumps({"pid": os.getpid(), "url": url}))
    print(f"emulated cluster up at {url} (data in {data})\n"
          f"  export KUBECONFIG={kubeconfig}\n"
          f"  kubectl get nodes\n"
          f"stop it with Ctrl-C or: leasehold emulator down --data {data}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if ready:
        ready.set()
    try:
        await stop.wait()
    finally:
        await runner.cleanup()
        store.close()
        with contextlib.suppress(FileNotFoundError):
            (data / "server.json").unlink()


def _set_clock(server: object, time_scale: float) -> None:
    """Write the clock ConfigMap (time scale and the wall-clock origin of emulated
    time, kept across restarts so emulated time never jumps back)."""
    from .server import ApiServer

    assert isinstance(server, ApiServer)
    cluster = server.cluster
    cm = cluster.registry.get("", "v1", "configmaps")
    assert cm is not None
    ns, name = CLOCK
    current = server.store.get(cm.key, ns, name)
    data = {"timeScale": f"{time_scale:g}",
            "origin": (current or {}).get("data", {}).get("origin", f"{time.time():.3f}")}
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": ns}, "data": data}
    if current is None:
        cluster.create(cm, ns, body, manager="leasehold-emulator")
    elif current.get("data") != data:
        cluster.update(cm, ns, name, body, manager="leasehold-emulator")


def up(data: Path = DEFAULT_DATA, host: str = "127.0.0.1", port: int = DEFAULT_PORT,
       time_scale: float = 1.0) -> None:
    """Serve in the foreground until SIGINT or SIGTERM."""
    if time_scale <= 0:
        raise EmulatorError(f"--time-scale must be > 0, got {time_scale:g}")
    asyncio.run(_serve(data, host, port, time_scale))


def down(data: Path = DEFAULT_DATA, wait: float = 10.0) -> int:
    """Stop the server of ``data``; returns its pid."""
    r = running(data)
    if r is None:
        raise EmulatorError(f"no emulated cluster runs on {data}")
    os.kill(r.pid, signal.SIGTERM)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            os.kill(r.pid, 0)
        except ProcessLookupError:
            return r.pid
        time.sleep(0.05)
    raise EmulatorError(f"the server (pid {r.pid}) did not stop within {wait:g} s")


def status(data: Path = DEFAULT_DATA) -> str:
    """One line each: where it runs, and whether it answers."""
    r = running(data)
    if r is None:
        raise EmulatorError(f"no emulated cluster runs on {data}")
    ctx = ssl.create_default_context(cafile=str(data / "pki" / "ca.crt"))
    request = urllib.request.Request(f"{r.url}/version", headers={
        "Authorization": f"Bearer {_token(data)}"})
    try:
        with urllib.request.urlopen(request, context=ctx, timeout=5) as response:
            version = json.loads(response.read())["gitVersion"]
    except OSError as exc:
        raise EmulatorError(f"the server (pid {r.pid}) at {r.url} does not answer: {exc}"
                            ) from None
    return (f"emulated cluster at {r.url}: up (pid {r.pid}, {version})\n"
            f"  export KUBECONFIG={r.kubeconfig}")
