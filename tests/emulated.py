"""A real emulated cluster for tests: ``leasehold emulator up`` in a subprocess,
reached by the real kubectl; and the objects the tests apply to it."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

KUBECTL = shutil.which("kubectl")


def until(check: Any, timeout: float = 15.0, step: float = 0.05,
          explain: Any = None) -> Any:
    """``check()``'s first truthy value, polled every ``step`` seconds; after
    ``timeout`` an AssertionError with ``explain()`` (e.g. a log's tail), if given."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(step)
    extra = f":\n{explain()}" if explain is not None else ""
    raise AssertionError(f"not within {timeout} s: {check.__doc__ or 'the condition'}{extra}")


class Emulated:
    def __init__(self, data: Path) -> None:
        self.data = data
        self.kubeconfig = data / "kubeconfig"
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""

    def start(self, port: int = 0, *options: str) -> None:
        """Start ``leasehold emulator up`` with ``options`` (e.g. ``--time-scale``)."""
        (self.data / "server.json").unlink(missing_ok=True)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "leasehold.cli", "emulator", "up", "--port", str(port),
             "--data", str(self.data), *options], stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 30
        while not (url := self.served()):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                out = self.proc.stdout.read() if self.proc.stdout else ""
                raise RuntimeError(f"the emulator did not start: {out}")
            time.sleep(0.05)
        self.url = url

    def served(self) -> str | None:
        """The server's URL once its ``server.json`` is whole, else None: the server
        writes the file in place, so a read can find it made and not yet written
        (seen under load: an empty file, a JSONDecodeError in the test's setup)."""
        try:
            return str(json.loads((self.data / "server.json").read_text())["url"])
        except (FileNotFoundError, ValueError, KeyError):
            return None

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=15)
        self.proc = None

    def kubectl(self, *args: str, stdin: str | None = None, check: bool = True,
                timeout: float = 30) -> subprocess.CompletedProcess[str]:
        assert KUBECTL
        r = subprocess.run([KUBECTL, "--kubeconfig", str(self.kubeconfig), *args],
                           input=stdin, capture_output=True, text=True, timeout=timeout,
                           env={**os.environ, "KUBECTL_KUBERC": "false"})
        if check and r.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed:\n{r.stderr}")
        return r

    def apply(self, *docs: dict[str, Any], server_side: bool = False
              ) -> subprocess.CompletedProcess[str]:
        text = yaml.safe_dump_all(docs)
        return self.kubectl("apply", *(["--server-side"] if server_side else []), "-f", "-",
                            stdin=text)

    def requests(self) -> dict[tuple[str, ...], float]:
        """apiserver_request_total from the server's /metrics, through kubectl:
        (verb, group, resource, subresource, code, client) -> count."""
        from prometheus_client.parser import text_string_to_metric_families
        out = {}
        for family in text_string_to_metric_families(
                self.kubectl("get", "--raw", "/metrics").stdout):
            for sample in family.samples:
                if sample.name == "apiserver_request_total":
                    labels = sample.labels
                    out[tuple(labels[k] for k in ("verb", "group", "resource", "subresource",
                                                  "code", "client"))] = sample.value
        return out

    def get(self, *args: str) -> Any:
        return json.loads(self.kubectl("get", *args, "-o", "json").stdout)

    def token(self) -> str:
        return (self.data / "token").read_text().strip()

    def as_subject(self, *who: str) -> Emulated:
        """The cluster as another subject sees it: a new token minted with
        ``leasehold emulator token`` (``who``: ``--user NAME [--group G]`` or
        ``--service-account NS/NAME``), and a kubeconfig that uses it."""
        other = Emulated(self.data)
        other.url = self.url
        name = "-".join(w.strip("-").replace("/", "-") for w in who)
        other.kubeconfig = self.data / f"kubeconfig-{name}"
        subprocess.run([sys.executable, "-m", "leasehold.cli", "emulator", "token", "--data",
                        str(self.data), *who, "--kubeconfig", str(other.kubeconfig)],
                       check=True, capture_output=True, text=True)
        return other

    def subject_token(self) -> str:
        """The bearer token of this view's kubeconfig."""
        return str(yaml.safe_load(self.kubeconfig.read_text())["users"][0]["user"]["token"])

    def request(self, method: str, path: str, body: Any = None, token: str | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, Any]:
        """(status, decoded JSON body, or the text of one that is not JSON) of a
        raw HTTPS request with this view's token (or ``token``; "" for none): what
        kubectl cannot send."""
        import ssl
        import urllib.error
        import urllib.request
        ctx = ssl.create_default_context(cafile=str(self.data / "pki" / "ca.crt"))
        token = self.subject_token() if token is None else token
        sent = {"Content-Type": "application/json", **(headers or {})}
        if token and "Authorization" not in sent:
            sent["Authorization"] = f"Bearer {token}"
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=sent)
        def decoded(raw: bytes) -> Any:
            try:
                return json.loads(raw or b"null")
            except ValueError:
                return raw.decode(errors="replace")  # a watch's stream of events
        try:
            with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
                return r.status, decoded(r.read())
        except urllib.error.HTTPError as exc:
            return exc.code, decoded(exc.read())


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.io"},
    "spec": {
        "group": "example.io", "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                  "shortNames": ["wd"], "categories": ["all"]},
        "versions": [{
            "name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
            "additionalPrinterColumns": [
                {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
                {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}],
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "required": ["size"], "properties": {
                    "size": {"type": "integer", "minimum": 1},
                    "color": {"type": "string", "enum": ["red", "blue"]}}},
                # Kopf keeps handler results and progress in the status
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                           "properties": {"phase": {"type": "string"}}},
            }}},
        }],
    },
}


def widget(name: str, size: int = 3, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.io/v1", "kind": "Widget",
            "metadata": {"name": name, "labels": {"app": "demo"}},
            "spec": {"size": size, **spec}}


def pod(name: str, node: str | None = None, **meta: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox",
                                            "env": [{"name": "A", "value": "1"}]}]}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, **meta},
            "spec": spec}
