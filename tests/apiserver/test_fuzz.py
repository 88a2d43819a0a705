"""Schemathesis against the emulated API server's own OpenAPI: stateless (examples,
coverage, fuzzing) and stateful (links from a created object to the operations on
it), with a fixed seed. Every answer must be a 4xx or better and the server's log
must hold no traceback.

``make test`` runs a bounded pass (about two minutes); ``make fuzz`` a longer one
(FUZZ=full; FUZZ_SEED=n, FUZZ_SECONDS=s)."""

from __future__ import annotations

import json
import os
import shutil
import ssl
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from emulated import Emulated, until

FULL = os.environ.get("FUZZ") == "full"
SEED = int(os.environ.get("FUZZ_SEED", "17"))
#: the bounded pass: examples per operation, and a time budget it never exceeds
EXAMPLES = 400 if FULL else 6
SECONDS = int(os.environ.get("FUZZ_SECONDS", "1200")) if FULL else 100
ST = shutil.which("st", path=str(Path(sys.executable).parent))


def _get(cluster: Emulated, path: str) -> Any:
    ctx = ssl.create_default_context(cafile=str(cluster.data / "pki" / "ca.crt"))
    req = urllib.request.Request(f"{cluster.url}{path}",
                                 headers={"Authorization": f"Bearer {cluster.token()}"})
    with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
        return json.loads(r.read())


def _links(doc: dict[str, Any]) -> None:
    """OpenAPI links from each create to the operations on the object it made, so
    that the stateful phase works on objects that exist (names and namespaces a
    fuzzer draws at random are almost never found)."""
    for path, item in doc["paths"].items():
        post = item.get("post")
        if post is None:
            continue
        params = {"name": "$response.body#/metadata/name"}
        if "{namespace}" in path:
            params["namespace"] = "$response.body#/metadata/namespace"
        links = {}
        for suffix in ("/{name}", "/{name}/status"):
            for method, op in doc["paths"].get(path + suffix, {}).items():
                if method != "parameters":
                    links[op["operationId"]] = {"operationId": op["operationId"],
                                                "parameters": params}
        post["responses"]["201"]["links"] = links


def _examples(doc: dict[str, Any]) -> None:
    """An example for each path parameter, which the examples phase starts from: a
    namespace that exists, so that requests get past the namespace to the object."""
    for item in doc["paths"].values():
        for param in item.get("parameters", []):
            param.setdefault("example", {"namespace": "default"}.get(param["name"], "fuzz"))


def openapi(cluster: Emulated) -> dict[str, Any]:
    """Every group-version's OpenAPI v3 document the server serves, as one."""
    merged: dict[str, Any] = {"openapi": "3.0.0", "paths": {},
                              "components": {"schemas": {}}}
    for entry in _get(cluster, "/openapi/v3")["paths"].values():
        doc = _get(cluster, entry["serverRelativeURL"])
        merged["info"] = doc["info"]
        merged["paths"].update(doc["paths"])
        merged["components"]["schemas"].update(doc["components"]["schemas"])
    _links(merged)
    _examples(merged)
    return merged


def _creatable(doc: dict[str, Any]) -> dict[str, Any]:
    """The document for the stateful phase: objects named validly in the namespace
    that exists, so that creates succeed and their links lead somewhere (drawn from
    the whole document, nearly every create is refused)."""
    doc = json.loads(json.dumps(doc))
    for item in doc["paths"].values():
        for param in item.get("parameters", []):
            if param["name"] == "namespace":
                param["schema"] = {"type": "string", "enum": ["default"]}
    for schema in doc["components"]["schemas"].values():
        meta = schema.get("properties", {}).get("metadata")
        if meta is not None:
            meta = schema["properties"]["metadata"] = json.loads(json.dumps(meta))
            meta["properties"]["name"] = {"type": "string", "pattern": "^[a-z][a-z0-9]{0,15}$"}
            meta["required"] = ["name"]
            for key in ("labels", "annotations"):
                meta["properties"][key] = {"type": "object", "additionalProperties": {
                    "type": "string", "pattern": "^[a-z0-9]{0,10}$"},
                    "propertyNames": {"pattern": "^[a-z][a-z0-9]{0,10}$"}}
        schema.get("required", []).append("metadata")
        schema.setdefault("required", ["metadata"])
    return doc


def _st(cluster: Emulated, out: Path, name: str, doc: dict[str, Any], phases: str,
        seconds: int) -> tuple[list[Any], str, int]:
    """One schemathesis run: its requests (from its HAR report), output and exit code."""
    schema = out / f"{name}.json"
    schema.write_text(json.dumps(doc))
    har = out / f"{name}.har"
    cmd = [ST, "run", str(schema), "--url", cluster.url,
           "-H", f"Authorization: Bearer {cluster.token()}",
           "--tls-verify", str(cluster.data / "pki" / "ca.crt"), "--phases", phases,
           "--seed", str(SEED), "--max-examples", str(EXAMPLES), "--max-time", str(seconds),
           "--workers", "1", "--checks", "not_a_server_error", "--request-timeout", "20",
           "--suppress-health-check", "all", "--no-shrink", "--warnings", "off",
           "--report", "har", "--report-har-path", str(har)]
    # in ``out``: schemathesis keeps a cache of its own in its working directory
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 120, cwd=out,
                         env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"})
    entries = json.loads(har.read_text())["log"]["entries"] if har.exists() else []
    return entries, run.stdout + run.stderr, run.returncode


def fuzz(cluster: Emulated, out: Path) -> dict[str, Any]:
    """Stateless, then stateful; the requests made (method, path, status) counted."""
    doc = openapi(cluster)
    started = time.monotonic()
    stateless = _st(cluster, out, "stateless", doc, "examples,coverage,fuzzing",
                    SECONDS * 3 // 4)
    stateful = _st(cluster, out, "stateful", _creatable(doc), "stateful", SECONDS // 4)
    elapsed = time.monotonic() - started
    entries = stateless[0] + stateful[0]
    answers = Counter(e["response"]["status"] for e in entries)
    errors = Counter(f"{e['request']['method']} {e['request']['url']}"
                     for e in entries if e["response"]["status"] >= 500)
    return {"requests": len(entries), "stateful": len(stateful[0]), "seconds": elapsed,
            "answers": answers, "errors": errors, "output": stateless[1] + stateful[1],
            "code": stateless[2] or stateful[2]}


class Logged(Emulated):
    """An emulated cluster whose output goes to a file: a pipe nobody reads would
    stop the server once its log filled the pipe's buffer."""

    def start(self, port: int = 0, *options: str) -> None:
        self.log = self.data / "server.log"
        self.data.mkdir(parents=True, exist_ok=True)
        with self.log.open("w") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "leasehold.cli", "emulator", "up", "--port", str(port),
                 "--data", str(self.data), *options], stdout=out, stderr=subprocess.STDOUT,
                text=True)
        url = until(lambda: self.served() or self.proc.poll() is not None, timeout=30)
        if self.proc.poll() is not None:
            raise RuntimeError(f"the emulator did not start: {self.log.read_text()}")
        self.url = url


@pytest.mark.skipif(ST is None, reason="schemathesis is not installed (pip install -e .[dev])")
def test_the_fuzzer_gets_no_500_and_the_server_logs_no_traceback(tmp_path):
    cluster = Logged(tmp_path / "cluster")
    cluster.start(0, "--no-nodes")
    try:
        found = fuzz(cluster, tmp_path)
    finally:
        cluster.stop()
        log = cluster.log.read_text()
    summary = (f"{found['requests']} requests ({found['stateful']} stateful) in"
               f" {found['seconds']:.0f} s,"
               f" answers {dict(sorted(found['answers'].items()))}")
    print(summary)
    (Path(os.environ.get("FUZZ_REPORT", tmp_path)) / "fuzz-summary.txt").write_text(
        f"{summary}\n\n== 5xx answers\n"
        + "\n".join(f"{n} {k}" for k, n in found["errors"].most_common())
        + f"\n\n== schemathesis\n{found['output']}\n\n== the server's log\n{log}")
    assert found["requests"] > 0, found["output"][-3000:]
    assert not found["errors"], f"{summary}\n{found['errors'].most_common(20)}\n{log[-5000:]}"
    assert "Traceback" not in log, log[-5000:]
    assert found["code"] == 0, found["output"][-5000:]
