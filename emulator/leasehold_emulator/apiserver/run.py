"""``leasehold emulator up | down | status``: the emulated cluster's lifecycle.

A data directory holds everything: ``state.db`` (the objects), ``pki/`` (the CA and
the server certificate), ``token`` (the admin's bearer token), ``tokens.csv`` (the
other subjects' tokens, kube-apiserver's static token file: ``leasehold emulator token``
adds to it), ``kubeconfig``, and ``server.pid`` / ``server.json`` while the server runs."""

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
from typing import Any

import yaml

from leasehold.api.crds import crds
from leasehold.api.scenario import yaml_problem
from leasehold.kube.client import KubeClient

from ..nodes import KUBELET, NodeEmulator
from .errors import ApiError
from .kubeconfig import new_token, write_kubeconfig
from .rbac import User, service_account, token_line
from .server import MAX_BODY, ApiServer, serve
from .store import Store
from .tls import ensure_certificates

DEFAULT_DATA = Path.home() / ".leasehold" / "cluster"
DEFAULT_PORT = 6443
#: the tokens of subjects other than the admin (users, service accounts)
TOKENS = "tokens.csv"
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


def mint(data: Path, user: User, kubeconfig: Path | None = None) -> str:
    """A new bearer token for ``user`` (a running server takes it at once), and if
    asked a kubeconfig that uses it: how tests and people act as a tenant or as the
    operator's service account rather than as the admin."""
    if not user.name or any(c in user.name for c in "\n\r\x00"):
        raise EmulatorError(f"not a user name: {user.name!r}")
    server = None
    if kubeconfig is not None:
        admin = data / "kubeconfig"
        try:
            doc = yaml.safe_load(admin.read_text())
            server = doc["clusters"][0]["cluster"]["server"]
        except (OSError, yaml.YAMLError, KeyError, IndexError, TypeError):
            raise EmulatorError(f"no emulated cluster's kubeconfig in {data} (start it"
                                f" with: leasehold emulator up --data {data})") from None
    data.mkdir(parents=True, exist_ok=True)
    token = new_token()
    fd = os.open(data / TOKENS, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    with os.fdopen(fd, "a") as fh:
        fh.write(token_line(token, user))
    if kubeconfig is not None and server is not None:
        write_kubeconfig(kubeconfig, server, token, data / "pki" / "ca.crt")
    return token


def subject(user: str | None, groups: list[str], account: str | None) -> User:
    """The user of ``--user NAME --group G`` or ``--service-account NAMESPACE/NAME``."""
    if account is not None:
        namespace, _, name = account.partition("/")
        if not namespace or not name or "/" in name or ":" in account:
            raise EmulatorError(f"--service-account: expected NAMESPACE/NAME, got {account!r}")
        return service_account(namespace, name)
    if not user:
        raise EmulatorError("give --user NAME or --service-account NAMESPACE/NAME")
    return User(user, tuple(groups))


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


#: kube-apiserver's --event-ttl default: an event goes an hour after its last write
EVENT_TTL = 3600.0
EVENTS = "/events"


async def _expire(store: Store, ttl: float) -> None:
    """Events go ``ttl`` seconds after their last write, looked for every tenth of
    it (at most every minute)."""
    while True:
        await asyncio.sleep(min(max(ttl / 10, 0.05), 60.0))
        store.expire()


async def _serve(data: Path, host: str, port: int, time_scale: float,
                 pools: Path | None = None, with_nodes: bool = True,
                 max_body: int = MAX_BODY, event_ttl: float = EVENT_TTL) -> None:
    data.mkdir(parents=True, exist_ok=True, mode=0o700)
    # its owner's only: the state holds Secrets, the token is the cluster's key
    data.chmod(0o700)
    if running(data):
        raise EmulatorError(f"an emulated cluster already runs on {data}"
                            f" (leasehold emulator down --data {data})")
    store = Store(data / "state.db")
    store.ttl[EVENTS] = store.ttl["events.k8s.io/events"] = event_ttl
    certs = ensure_certificates(data / "pki")
    try:
        runner, server = await serve(store, host, port, _token(data),
                                     ssl_context=certs.server_context(), max_body=max_body,
                                     tokens_file=data / TOKENS)
    except OSError as exc:
        store.close()
        if exc.errno == errno.EADDRINUSE:
            raise EmulatorError(f"port {port} on {host} is in use; choose another with"
                                " --port") from None
        raise EmulatorError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    url = f"https://{server.address}"
    kubeconfig = write_kubeconfig(data / "kubeconfig", url, _token(data), certs.ca)
    try:
        _set_clock(server, time_scale)
        install_crds(server)
        if pools is not None:
            apply_pools(server, pools)
    except EmulatorError:
        await runner.cleanup()
        store.close()
        raise
    # written whole, then renamed into place: `leasehold up`, `demo` and the tests poll
    # for the file and read it as soon as it exists, so it must never be half-written
    part = data / "server.json.part"
    part.write_text(json.dumps({"pid": os.getpid(), "url": url}))
    part.replace(data / "server.json")
    # the emulated nodes talk to the server as any client would (`leasehold emulator
    # nodes` runs the same against another cluster)
    client = KubeClient.from_kubeconfig(kubeconfig, agent=KUBELET)
    nodes = NodeEmulator(client, time_scale)
    nodes_task = asyncio.create_task(nodes.run()) if with_nodes else None
    expiry = asyncio.create_task(_expire(store, event_ttl))
    print(f"emulated cluster up at {url} (data in {data})\n"
          f"  export KUBECONFIG={kubeconfig}\n"
          f"  kubectl get nodes\n"
          f"stop it with Ctrl-C or: leasehold emulator down --data {data}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        await stop.wait()
    finally:
        expiry.cancel()
        if nodes_task is not None:
            nodes_task.cancel()
        await nodes.stop()
        await client.close()
        await runner.cleanup()
        store.close()
        with contextlib.suppress(FileNotFoundError):
            (data / "server.json").unlink()


def _set_clock(server: ApiServer, time_scale: float) -> None:
    """Write the clock ConfigMap (time scale and the wall-clock origin of emulated
    time, kept across restarts so emulated time never jumps back)."""
    ns, name = CLOCK
    current = server.store.get("/configmaps", ns, name)
    data = {"timeScale": f"{time_scale:g}",
            "origin": (current or {}).get("data", {}).get("origin", f"{time.time():.3f}")}
    _put(server, ("", "v1", "configmaps"), {"apiVersion": "v1", "kind": "ConfigMap",
                                            "metadata": {"name": name, "namespace": ns},
                                            "data": data})


def _put(server: ApiServer, where: tuple[str, str, str], body: dict[str, Any]) -> None:
    """Create the object, or replace the one there. Replacing with the same content
    writes nothing (the server keeps the version and sends no event)."""
    resource = server.cluster.registry.get(*where)
    assert resource is not None
    meta = body["metadata"]
    ns, name = meta.get("namespace"), meta.get("name", "")
    if server.store.get(resource.key, ns or "", name) is None:
        server.cluster.create(resource, ns, body, manager="leasehold-emulator")
    else:
        server.cluster.update(resource, ns, name, body, manager="leasehold-emulator")


def up(data: Path = DEFAULT_DATA, host: str = "127.0.0.1", port: int = DEFAULT_PORT,
       time_scale: float = 1.0, pools: Path | None = None, with_nodes: bool = True,
       max_body: int = MAX_BODY, event_ttl: float = EVENT_TTL) -> None:
    """Serve in the foreground until SIGINT or SIGTERM, with emulated nodes."""
    if time_scale <= 0:
        raise EmulatorError(f"--time-scale must be > 0, got {time_scale:g}")
    if pools is not None:
        read_pools(pools)  # a bad file stops us before anything starts
    asyncio.run(_serve(data, host, port, time_scale, pools, with_nodes, max_body, event_ttl))


def install_crds(server: ApiServer) -> None:
    """leasehold's CRDs, created or brought up to date."""
    for body in crds().values():
        _put(server, ("apiextensions.k8s.io", "v1", "customresourcedefinitions"), body)


def read_pools(path: Path) -> list[dict[str, Any]]:
    """The NodePool manifests of a YAML file (one or more documents)."""
    try:
        docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    except OSError as exc:
        raise EmulatorError(f"cannot read {path}: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise EmulatorError(yaml_problem(str(path), exc)) from None
    for i, doc in enumerate(docs):
        kind = doc.get("kind") if isinstance(doc, dict) else None
        if kind != "NodePool" or doc.get("apiVersion") != "leasehold.io/v1alpha1":
            raise EmulatorError(f"{path}: document {i + 1} is not a leasehold.io/v1alpha1"
                                f" NodePool (kind: {kind})")
    return docs


def apply_pools(server: ApiServer, path: Path) -> None:
    """Create or replace the file's NodePools; schema errors name the pool and field."""
    for doc in read_pools(path):
        doc.setdefault("metadata", {})
        try:
            _put(server, ("leasehold.io", "v1alpha1", "nodepools"), doc)
        except ApiError as exc:
            raise EmulatorError(f"{path}: {exc.message}") from None


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
