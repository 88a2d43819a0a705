"""A small asynchronous Kubernetes REST client: what the emulated nodes need to run
against any API server, the emulated one or a real one. It reads a kubeconfig
(bearer token or client certificate, CA or insecure) and lists, watches, creates,
patches and deletes objects as JSON."""

from __future__ import annotations

import base64
import importlib.metadata
import json
import os
import ssl
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import yaml

Obj = dict[str, Any]


class KubeError(Exception):
    """A failed request: ``code`` and the server's ``Status`` message."""

    def __init__(self, code: int, message: str, reason: str = "") -> None:
        super().__init__(f"{code} {reason}: {message}" if reason else f"{code}: {message}")
        self.code = code
        self.reason = reason
        #: the server's own words
        self.message = message


def _data_file(entry: dict[str, Any], key: str, directory: Path, temporary: list[str]
               ) -> str | None:
    """A kubeconfig's ``<key>`` path or ``<key>-data`` contents, as a file path; a
    file written for the contents is added to ``temporary``, for the caller to
    remove once it has read it (it may hold a private key)."""
    if entry.get(key):
        path = Path(entry[key])
        return str(path if path.is_absolute() else directory / path)
    data = entry.get(f"{key}-data")
    if not data:
        return None
    fd, name = tempfile.mkstemp(prefix="leasehold-kube-")
    temporary.append(name)
    with os.fdopen(fd, "wb") as fh:
        fh.write(base64.b64decode(data))
    return name


#: where Kubernetes mounts a pod's service account
SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
#: how the operator names itself to the API server (its field manager, and the
#: ``client`` the emulated server counts requests by)
AGENT = "leasehold-operator"


def kubeconfig_path(path: str | Path | None = None) -> Path | None:
    """The kubeconfig the operator reads: ``path`` when given (``--kubeconfig``), else
    $KUBECONFIG, else ~/.kube/config when it exists; None when there is none (in a
    pod: its service account). The operator's client and Kopf's login both ask here,
    so that they always reach the same cluster."""
    given = path or os.environ.get("KUBECONFIG")
    if given:
        return Path(given).expanduser()
    default = Path("~/.kube/config").expanduser()
    return default if default.exists() else None


@dataclass(frozen=True)
class Kubeconfig:
    """A kubeconfig's current context: its cluster's and its user's entries."""

    path: Path
    cluster: dict[str, Any]
    user: dict[str, Any]
    namespace: str | None = None

    @property
    def server(self) -> str:
        return str(self.cluster["server"])

    def file(self, entry: dict[str, Any], key: str) -> str | None:
        """``entry[key]`` (a certificate's or key's path): relative to the
        kubeconfig's directory, as kubectl reads it."""
        if not entry.get(key):
            return None
        path = Path(entry[key]).expanduser()
        return str(path if path.is_absolute() else self.path.parent / path)

    def token(self) -> str | None:
        """The user's bearer token: given, in a ``tokenFile``, or an auth provider's."""
        if self.user.get("token"):
            return str(self.user["token"])
        if self.user.get("tokenFile"):
            return Path(self.user["tokenFile"]).read_text().strip()
        token = ((self.user.get("auth-provider") or {}).get("config") or {}).get("access-token")
        return str(token) if token else None


def read_kubeconfig(path: str | Path) -> Kubeconfig:
    """Raises ValueError (one line) for a missing or unusable kubeconfig."""
    path = Path(path).expanduser()
    try:
        doc = yaml.safe_load(path.read_text())
        current = doc.get("current-context")
        context = next(c["context"] for c in doc["contexts"] if c["name"] == current)
        cluster = next(c["cluster"] for c in doc["clusters"]
                       if c["name"] == context["cluster"])
        user: dict[str, Any] = next((u["user"] for u in doc.get("users") or []
                                     if u["name"] == context.get("user")), {})
        if not isinstance(cluster.get("server"), str):
            raise KeyError("server")
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror}") from None
    except (yaml.YAMLError, AttributeError, KeyError, StopIteration, TypeError):
        raise ValueError(f"{path} is not a kubeconfig with a current context, its"
                         " cluster and user") from None
    return Kubeconfig(path, cluster, user or {}, context.get("namespace"))


def _version() -> str:
    try:
        return importlib.metadata.version("leasehold")
    except importlib.metadata.PackageNotFoundError:
        return "dev"


class KubeClient:
    def __init__(self, server: str, token: str | None, ssl_context: ssl.SSLContext | bool,
                 agent: str = AGENT) -> None:
        self.server = server.rstrip("/")
        self.headers = {"User-Agent": f"{agent}/{_version()}"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self.ssl = ssl_context
        self._session: aiohttp.ClientSession | None = None

    @classmethod
    def from_kubeconfig(cls, path: str | Path | None = None, agent: str = AGENT
                        ) -> KubeClient:
        """The cluster of the kubeconfig at ``path`` (default: $KUBECONFIG, else
        ~/.kube/config). Raises ValueError (one line) for a missing or unusable one."""
        config = read_kubeconfig(kubeconfig_path(path) or "~/.kube/config")
        cluster, user = config.cluster, config.user
        context_ssl: ssl.SSLContext | bool = False
        if config.server.startswith("https") and not cluster.get("insecure-skip-tls-verify"):
            directory = config.path.parent
            temporary: list[str] = []
            try:
                ca = _data_file(cluster, "certificate-authority", directory, temporary)
                context_ssl = ssl.create_default_context(cafile=ca)
                cert = _data_file(user, "client-certificate", directory, temporary)
                key = _data_file(user, "client-key", directory, temporary)
                if cert and key:
                    context_ssl.load_cert_chain(cert, key)
            finally:  # read into the context: the copies on disk are not needed
                for name in temporary:
                    os.unlink(name)
        return cls(config.server, config.token(), context_ssl, agent)

    @classmethod
    def in_cluster(cls, directory: Path = SERVICE_ACCOUNT, agent: str = AGENT
                   ) -> KubeClient | None:
        """The pod's service account (its token and CA, and $KUBERNETES_SERVICE_HOST),
        or None outside a pod."""
        host = os.environ.get("KUBERNETES_SERVICE_HOST")
        token = directory / "token"
        if not host or not token.exists():
            return None
        port = os.environ.get("KUBERNETES_SERVICE_PORT", "443")
        host = f"[{host}]" if ":" in host else host
        context = ssl.create_default_context(cafile=str(directory / "ca.crt"))
        return cls(f"https://{host}:{port}", token.read_text().strip(), context, agent)

    @classmethod
    def from_environment(cls, kubeconfig: str | Path | None = None, agent: str = AGENT
                         ) -> KubeClient:
        """A kubeconfig when one is given or found ($KUBECONFIG, ~/.kube/config), else
        the pod's service account: how the operator finds its cluster."""
        path = kubeconfig_path(kubeconfig)
        if path is None:
            client = cls.in_cluster(agent=agent)
            if client is not None:
                return client
        return cls.from_kubeconfig(path, agent)

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(
                headers=self.headers, connector=aiohttp.TCPConnector(ssl=self.ssl))
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def request(self, method: str, path: str, body: Any = None,
                      content_type: str = "application/json", **params: Any) -> Obj:
        data = json.dumps(body) if body is not None else None
        query = {k: str(v) for k, v in params.items() if v is not None}
        async with self.session().request(method, self.server + path, data=data, params=query,
                                          headers={"Content-Type": content_type}) as r:
            text = await r.text()
            if r.status >= 400:
                try:
                    status = json.loads(text)
                    raise KubeError(r.status, status.get("message", text), status.get("reason", ""))
                except json.JSONDecodeError:
                    raise KubeError(r.status, text) from None
            return json.loads(text) if text else {}

    async def text(self, path: str) -> str:
        """A GET whose answer is not JSON (``/metrics``)."""
        async with self.session().get(self.server + path) as r:
            if r.status >= 400:
                raise KubeError(r.status, await r.text())
            return await r.text()

    async def get(self, path: str, **params: Any) -> Obj:
        return await self.request("GET", path, **params)

    async def create(self, path: str, body: Obj) -> Obj:
        return await self.request("POST", path, body)

    async def merge_patch(self, path: str, patch: Obj) -> Obj:
        return await self.request("PATCH", path, patch, "application/merge-patch+json")

    async def json_patch(self, path: str, operations: list[Obj]) -> Obj:
        return await self.request("PATCH", path, operations, "application/json-patch+json")

    async def delete(self, path: str, **params: Any) -> Obj:
        return await self.request("DELETE", path, **params)

    async def watch(self, path: str, resource_version: str, timeout: int = 300,
                    **params: Any) -> AsyncIterator[Obj]:
        """The events after ``resource_version`` until the server ends the stream; an
        ``ERROR`` event (410: too old) raises :class:`KubeError`."""
        query = {"watch": "true", "resourceVersion": resource_version,
                 "allowWatchBookmarks": "true", "timeoutSeconds": str(timeout),
                 **{k: str(v) for k, v in params.items() if v is not None}}
        async with self.session().get(self.server + path, params=query,
                                      timeout=aiohttp.ClientTimeout(total=None,
                                                                    sock_read=timeout + 30)
                                      ) as r:
            if r.status >= 400:
                raise KubeError(r.status, await r.text())
            async for line in r.content:
                if not line.strip():
                    continue
                event = json.loads(line)
                if event["type"] == "ERROR":
                    status = event["object"]
                    raise KubeError(status.get("code", 500), status.get("message", ""),
                                    status.get("reason", ""))
                yield event
