"""The emulated API server against a hostile tenant (issue 17): bodies parsed with
limits, metadata validated as kube-apiserver validates it, malformed requests
answered with a 4xx Status (never a 500), slow headers cut off, and the data
directory private."""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import stat
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from emulated import CRD, Emulated, until
from leasehold_emulator.apiserver.server import serve
from leasehold_emulator.apiserver.store import Store

CMS = "/api/v1/namespaces/default/configmaps"
PODS = "/api/v1/namespaces/default/pods"
WIDGETS = "/apis/example.io/v1/namespaces/default/widgets"
JSON = "application/json"
YAML = "application/yaml"


def raw(cluster: Emulated, method: str, path: str, body: bytes | None = None,
        ctype: str = JSON) -> tuple[int, Any]:
    ctx = ssl.create_default_context(cafile=str(cluster.data / "pki" / "ca.crt"))
    req = urllib.request.Request(f"{cluster.url}{path}", data=body, method=method, headers={
        "Authorization": f"Bearer {cluster.token()}", "Content-Type": ctype})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def cm(name: str, **meta: Any) -> bytes:
    return json.dumps({"metadata": {"name": name, **meta}, "data": {"a": "1"}}).encode()


#: the 607-byte "billion laughs": nine aliases of nine, nine levels deep
BOMB = "data:\n  a: &a [" + ",".join(['"lol"'] * 9) + "]\n" + "".join(
    f"  {c}: &{c} [{','.join([f'*{p}'] * 9)}]\n"
    for p, c in zip("abcdefgh", "bcdefghi", strict=True))
BOMB = "metadata: {name: bomb}\n" + BOMB


def pod(name: str, requests: dict[str, Any], limits: dict[str, Any]) -> bytes:
    return json.dumps({"metadata": {"name": name}, "spec": {"containers": [{
        "name": "c", "image": "busybox",
        "resources": {"requests": requests, "limits": limits}}]}}).encode()


def widget(name: str, api_version: Any = "example.io/v1") -> bytes:
    return json.dumps({"apiVersion": api_version, "kind": "Widget",
                       "metadata": {"name": name}, "spec": {"size": 1}}).encode()


#: (method, path, body, content type, code, words of the message)
REFUSED = [
    pytest.param("POST", CMS, BOMB.encode(), YAML, 400, "expands its aliases",
                 id="yaml-alias-bomb"),
    pytest.param("POST", CMS, b"[" * 100_000 + b"]" * 100_000, JSON, 400, "nests deeper",
                 id="json-100000-deep"),
    pytest.param("POST", CMS, b"a: " + b"[" * 5_000 + b"]" * 5_000, YAML, 400, "nests deeper",
                 id="yaml-5000-deep"),
    pytest.param("POST", CMS, b'{"metadata": {"name": "big"}, "n": ' + b"9" * 5000 + b"}", JSON,
                 400, "64 bits", id="json-5000-digit-integer"),
    pytest.param("POST", CMS, b"metadata: {name: big}\nn: " + b"9" * 5000, YAML, 400, "64 bits",
                 id="yaml-5000-digit-integer"),
    pytest.param("POST", CMS, b'{"metadata": {"name": "nan"}, "n": NaN}', JSON, 400,
                 "not a JSON number", id="json-nan"),
    pytest.param("POST", CMS, b'{"metadata": {"name": "inf"}, "n": 1e999}', JSON, 400,
                 "not finite", id="json-infinity"),
    pytest.param("POST", CMS, b"metadata: {name: inf}\nn: .inf", YAML, 400, "not finite",
                 id="yaml-infinity"),
    pytest.param("POST", CMS, cm("lbl", labels="app=x"), JSON, 422, "metadata.labels",
                 id="labels-a-string"),
    pytest.param("POST", CMS, cm("lbl", labels={"a": 1}), JSON, 422, "metadata.labels[a]",
                 id="label-value-not-a-string"),
    pytest.param("POST", CMS, cm("lbl", labels={"k" * 64: "v"}), JSON, 422, "metadata.labels",
                 id="label-key-64-chars"),
    pytest.param("POST", CMS, cm("lbl", labels={"k": "v" * 64}), JSON, 422,
                 f'metadata.labels: Invalid value: "{"v" * 64}": must be no more than 63'
                 " characters",
                 id="label-value-64-chars"),
    pytest.param("POST", CMS, cm("lbl", labels={"k": "a b"}), JSON, 422,
                 "metadata.labels: Invalid value: \"a b\": a valid label must be an empty"
                 " string or consist of alphanumeric characters",
                 id="label-value-syntax"),
    pytest.param("POST", CMS, cm("lbl", labels={"Bad_Prefix/k": "v"}), JSON, 422, "prefix",
                 id="label-key-prefix"),
    pytest.param("POST", CMS, cm("ann", annotations={"a": "x" * (300 * 1024)}), JSON, 422,
                 "metadata.annotations: Too long", id="annotations-over-256k"),
    pytest.param("POST", CMS, cm("ann", annotations=["a"]), JSON, 422, "metadata.annotations",
                 id="annotations-a-list"),
    pytest.param("POST", CMS, cm("own", ownerReferences=["x"]), JSON, 422,
                 "metadata.ownerReferences[0]", id="owner-reference-a-string"),
    pytest.param("POST", CMS, cm("fin", finalizers="x"), JSON, 422, "metadata.finalizers",
                 id="finalizers-a-string"),
    pytest.param("POST", CMS, cm("Caps"), JSON, 422, "metadata.name", id="name-with-capitals"),
    pytest.param("POST", CMS, json.dumps({"metadata": {"name": "d"}, "data": ["x"]}).encode(),
                 JSON, 422, "data", id="configmap-data-a-list"),
    pytest.param("POST", PODS, json.dumps({"metadata": {"name": "s"}, "spec": []}).encode(),
                 JSON, 422, "spec", id="pod-spec-a-list"),
    pytest.param("POST", CMS, json.dumps({"apiVersion": 5, "metadata": {"name": "v"}}).encode(),
                 JSON, 400, "apiVersion", id="api-version-a-number"),
    pytest.param("POST", WIDGETS, widget("w9", "example.io/v9"), JSON, 400, "apiVersion",
                 id="custom-resource-unserved-version"),
    pytest.param("POST", WIDGETS, widget("wg", "example.io"), JSON, 400, "apiVersion",
                 id="custom-resource-version-missing"),
    pytest.param("POST", PODS, pod("over", {"cpu": "2"}, {"cpu": "1"}), JSON, 422,
                 "must be less than or equal to cpu limit", id="pod-request-above-limit"),
    pytest.param("POST", PODS, pod("over", {"memory": "2Gi"}, {"memory": "1500Mi"}), JSON, 422,
                 "must be less than or equal to memory limit", id="pod-memory-above-limit"),
    pytest.param("POST", PODS, pod("q", {"cpu": "lots"}, {}), JSON, 422, "quantity",
                 id="pod-request-not-a-quantity"),
    pytest.param("DELETE", f"{CMS}/victim?propagationPolicy=Bogus", None, JSON, 422,
                 "propagationPolicy: Unsupported value", id="propagation-policy-bogus"),
    pytest.param("DELETE", f"{CMS}/victim", b"[1]", JSON, 400, "DeleteOptions",
                 id="delete-options-a-list"),
    pytest.param("DELETE", f"{CMS}/victim", b'{"gracePeriodSeconds": "x"}', JSON, 422,
                 "gracePeriodSeconds", id="delete-grace-a-string"),
    pytest.param("PATCH", f"{CMS}/victim", b'[{"op": "remove", "path": "/metadata/name"}]',
                 "application/json-patch+json", 422, "metadata.name: Required value",
                 id="json-patch-removes-the-name"),
    pytest.param("PATCH", f"{CMS}/victim", b'{"metadata": "x"}', "application/merge-patch+json",
                 400, "metadata must be an object", id="merge-patch-metadata-a-string"),
    pytest.param("POST", PODS, json.dumps({"metadata": {"name": "n"}, "spec": {
        "nodeName": {}, "containers": [{"name": "c", "image": "i"}]}}).encode(), JSON, 422,
        "spec.nodeName", id="pod-node-name-an-object"),
    pytest.param("POST", PODS, json.dumps({"metadata": {"name": "g"}, "spec": {
        "terminationGracePeriodSeconds": "x", "containers": [{"name": "c", "image": "i"}]}}
    ).encode(), JSON, 422, "spec.terminationGracePeriodSeconds", id="pod-grace-a-string"),
    pytest.param("DELETE", f"{CMS}/victim?gracePeriodSeconds={10**30}", None, JSON, 422,
                 "gracePeriodSeconds", id="delete-grace-beyond-int64"),
    pytest.param("GET", f"{CMS}?limit=1&continue="
                 + base64.urlsafe_b64encode(b'{"after": [1, 2]}').decode(), None, JSON, 400,
                 "continue token", id="continue-token-of-numbers"),
    pytest.param("GET", f"{CMS}/a%0Ab", None, JSON, 400, "invalid path", id="newline-in-path"),
    pytest.param("GET", "/api/v1/namespaces/%0A/configmaps", None, JSON, 400, "invalid path",
                 id="newline-in-namespace"),
]


@pytest.fixture(scope="module")
def cluster(emulated: Emulated) -> Emulated:
    emulated.apply(CRD)
    until(lambda: raw(emulated, "GET", "/apis/example.io/v1")[0] == 200)
    assert raw(emulated, "POST", CMS, cm("victim"))[0] == 201
    return emulated


@pytest.mark.parametrize(("method", "path", "body", "ctype", "code", "words"), REFUSED)
def test_a_malformed_request_gets_a_4xx_status(cluster, method, path, body, ctype, code, words):
    status, doc = raw(cluster, method, path, body, ctype)
    assert (status, doc.get("kind"), doc.get("code")) == (code, "Status", code), doc
    assert words in doc["message"], doc["message"]
    # nothing of it was stored, and the server still lists every kind with selectors
    assert raw(cluster, "GET", f"{CMS}/victim")[0] == 200
    assert raw(cluster, "GET", "/api/v1/configmaps?labelSelector=app%3Dx")[0] == 200
    assert "bomb" not in json.dumps(raw(cluster, "GET", CMS)[1])


@pytest.mark.parametrize(("body", "ctype"), [
    pytest.param(b"metadata: {name: when}\ndata: {at: 2020-01-01, b: 'y'}", YAML, id="yaml"),
    pytest.param(cm("shared", labels={"example.com/app": "a.b_c-d", "e": ""}), JSON,
                 id="qualified-label-keys"),
])
def test_valid_bodies_still_pass(cluster, body, ctype):
    status, doc = raw(cluster, "POST", CMS, body, ctype)
    assert status == 201, doc


def test_a_timestamp_in_yaml_stays_the_string_it_was(cluster):
    raw(cluster, "POST", CMS, b"metadata: {name: stamp}\ndata: {at: 2020-01-01}", YAML)
    assert raw(cluster, "GET", f"{CMS}/stamp")[1]["data"] == {"at": "2020-01-01"}


def test_a_status_put_without_a_status_leaves_the_namespace_deletable(cluster):
    assert raw(cluster, "POST", "/api/v1/namespaces",
               json.dumps({"metadata": {"name": "nostatus"}}).encode())[0] == 201
    status, doc = raw(cluster, "PUT", "/api/v1/namespaces/nostatus/status",
                      json.dumps({"metadata": {"name": "nostatus"}}).encode())
    assert status == 200, doc
    assert doc["status"]["phase"] == "Active"
    status, doc = raw(cluster, "DELETE", "/api/v1/namespaces/nostatus")
    assert status == 200, doc
    until(lambda: raw(cluster, "GET", "/api/v1/namespaces/nostatus")[0] == 404)


def test_a_namespace_phase_is_not_set_by_hand(cluster):
    assert raw(cluster, "POST", "/api/v1/namespaces",
               json.dumps({"metadata": {"name": "phased"}}).encode())[0] == 201
    status, doc = raw(cluster, "PUT", "/api/v1/namespaces/phased/status", json.dumps(
        {"metadata": {"name": "phased"}, "status": {"phase": "Terminating"}}).encode())
    assert (status, doc["code"]) == (422, 422), doc
    assert "status.phase" in doc["message"]


def test_a_request_within_its_limit_is_taken(cluster):
    status, doc = raw(cluster, "POST", PODS, pod("fits", {"cpu": "500m", "memory": "1Gi"},
                                                  {"cpu": "1", "memory": "1024Mi"}))
    assert status == 201, doc


def test_a_custom_resource_under_its_served_version_is_taken(cluster):
    status, doc = raw(cluster, "POST", WIDGETS, widget("w1"))
    assert status == 201, doc


def test_connections_that_send_no_complete_header_are_closed():
    """Slowloris: 200 connections, half silent, half sending a header a byte at a time;
    each is closed within the header timeout while a real client is still served."""
    async def main() -> None:
        runner, server = await serve(Store(), port=0, header_timeout=0.5)
        host, port = server.address.rsplit(":", 1)
        try:
            conns = [await asyncio.open_connection(host, int(port)) for _ in range(200)]
            for i, (_, writer) in enumerate(conns):
                if i % 2:
                    writer.write(b"GET /version HTTP/1.1\r\nHost: x\r\n")
            loop = asyncio.get_running_loop()
            started = loop.time()

            async def closed(trickle: bool, reader: asyncio.StreamReader,
                             writer: asyncio.StreamWriter) -> None:
                while True:  # until the server closes the connection
                    if trickle and not writer.is_closing():
                        writer.write(b"X")
                    try:
                        if await asyncio.wait_for(reader.read(100), 0.1) == b"":
                            return
                    except TimeoutError:
                        continue
                    except ConnectionError:
                        return
            await asyncio.wait_for(asyncio.gather(
                *(closed(bool(i % 2), r, w) for i, (r, w) in enumerate(conns))), 10)
            assert loop.time() - started < 5
            reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n")
            assert (await reader.readline()).startswith(b"HTTP/1.1 200")
            writer.close()
        finally:
            await runner.cleanup()
    asyncio.run(main())


def test_the_data_directory_and_its_database_are_private(tmp_path):
    data = tmp_path / "cluster"
    data.mkdir(mode=0o755)
    (data / "state.db").touch(mode=0o644)  # as an older version left them
    cluster = Emulated(data)
    cluster.start()
    try:
        raw(cluster, "POST", CMS, cm("w"))  # the WAL holds a write
        files = {p.name: stat.S_IMODE(p.stat().st_mode) for p in data.iterdir()
                 if p.name.startswith("state.db")}
    finally:
        cluster.stop()
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    assert set(files) >= {"state.db", "state.db-wal", "state.db-shm"}, files
    assert files == dict.fromkeys(files, 0o600), files


def test_the_store_alone_makes_its_files_private(tmp_path: Path):
    store = Store(tmp_path / "s.db")
    store.write("/configmaps", {"metadata": {"name": "a", "namespace": "d"}}, "ADDED")
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir()}
    store.close()
    assert modes == dict.fromkeys(modes, 0o600), modes


def test_a_request_the_http_parser_refuses_is_one_line_in_the_log(caplog):
    """The fuzzer's NUL byte in a header: aiohttp answers 400 and used to log the
    parser's traceback; the log now says it in one line."""
    async def main() -> bytes:
        runner, server = await serve(Store(), port=0)
        host, port = server.address.rsplit(":", 1)
        try:
            reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(b"GET /version HTTP/1.1\r\nHost: x\r\nX-Probe: \x00\r\n\r\n")
            line = await reader.readline()
            writer.close()
            return line
        finally:
            await runner.cleanup()
    with caplog.at_level("DEBUG", logger="aiohttp.server"):
        assert b" 400 " in asyncio.run(main())
    logged = [r for r in caplog.records if r.name == "aiohttp.server"]
    assert logged, "aiohttp logged nothing"
    assert all(r.exc_info is None for r in logged), [r.getMessage() for r in logged]
