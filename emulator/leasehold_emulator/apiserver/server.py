"""The HTTP face of the emulated API server (aiohttp): authentication, routing of
the Kubernetes REST paths, content types, watches, and errors as ``Status``
objects. What happens to objects is :mod:`.objects`'s business."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, NoReturn

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    generate_latest,
)

from . import bodies, discovery, protobuf, rbac, streams
from .errors import ApiError
from .objects import Cluster
from .resources import Resource
from .selectors import SelectorError, field_selector, label_selector
from .store import Change, Gone, Obj, Store
from .table import table

log = logging.getLogger("leasehold.apiserver")

#: the real server's default limit on a request body
MAX_BODY = 3 * 1024 * 1024
PATCH_TYPES = {
    "application/merge-patch+json": "merge",
    "application/json-patch+json": "json",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
    "application/apply-patch+cbor": None,
}
#: seconds a connection has to send its first complete request header (kube-apiserver's
#: ReadHeaderTimeout): a connection that sends nothing, or its headers a byte at a
#: time, is closed then instead of being held for as long as the client likes
HEADER_TIMEOUT = 32.0
#: seconds an idle keep-alive connection is kept (kube-apiserver's IdleTimeout)
IDLE_TIMEOUT = 90.0
#: a watcher that falls this far behind has its stream ended (it resumes from the last
#: change it got, or re-lists if that is compacted away)
WATCH_BACKLOG = 50_000
#: at most this many events in one write of a watch stream
WATCH_BATCH = 500


#: what a resource request is, for apiserver_request_total: verb, group, resource,
#: subresource
COUNTED = web.RequestKey("counted", tuple)
#: who sent a request (set once its token is known)
USER = web.RequestKey("user", rbac.User)


class _OneLine(logging.Filter):
    """aiohttp logs a request its parser refuses (a NUL in a header, say) with the
    parser's traceback: the client's mistake, answered 400, is worth one line."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, HttpProcessingError):
            record.msg = f"{record.getMessage()}: {exc.code} {exc.message!r}"
            record.args = ()
            record.exc_info = None
            record.exc_text = None
        return True


_ONE_LINE = _OneLine()


def _json(data: Any, status: int = 200) -> web.Response:
    return web.Response(body=json.dumps(data, separators=(",", ":")).encode(), status=status,
                        content_type="application/json")


class ApiServer:
    def __init__(self, store: Store, token: str | None = None, max_body: int = MAX_BODY,
                 bookmark_seconds: float = 30.0, seed: int | None = None,
                 tokens_file: Path | None = None,
                 header_timeout: float = HEADER_TIMEOUT) -> None:
        self.store = store
        self.cluster = Cluster(store, seed)
        self.token = token
        self.tokens = rbac.Tokens(token, tokens_file)
        self.authorizer = rbac.Authorizer(store)
        self.cluster.admission.append(self.authorizer.admit)
        self.max_body = max_body
        self.bookmark_seconds = bookmark_seconds
        self.address = "127.0.0.1:6443"
        self._watchers: set[asyncio.Task[Any]] = set()
        self.metrics = CollectorRegistry()
        self.requests = Counter("apiserver_request", "Requests, by verb, resource and client",
                                ["verb", "group", "resource", "subresource", "code",
                                 "client"], registry=self.metrics)
        self.longrunning = Gauge("apiserver_longrunning_requests",
                                 "Requests in progress that last (watches), by client",
                                 ["verb", "group", "resource", "subresource", "client"],
                                 registry=self.metrics)
        self._stopping = asyncio.Event()
        self.header_timeout = header_timeout
        #: connections that have not yet sent a complete request: id -> their deadline
        self._fresh: dict[int, asyncio.TimerHandle] = {}

    def protocol(self, factory: Callable[[], asyncio.Protocol]) -> Callable[[], asyncio.Protocol]:
        """``factory``'s connections, each closed unless it sends a complete request
        header within :attr:`header_timeout`."""
        loop = asyncio.get_running_loop()

        def expire(handler: Any, again: bool) -> None:
            self._fresh.pop(id(handler), None)
            transport = handler.transport
            if transport is not None:
                transport.abort()
            elif again:  # still in its TLS handshake (which has a deadline of its own)
                self._fresh[id(handler)] = loop.call_later(self.header_timeout, expire,
                                                           handler, False)

        def guarded() -> asyncio.Protocol:
            handler = factory()
            self._fresh[id(handler)] = loop.call_later(self.header_timeout, expire, handler,
                                                       True)
            return handler
        return guarded

    def app(self) -> web.Application:
        app = web.Application(client_max_size=self.max_body,
                              middlewares=[self._count, self._errors, self._auth])
        # every path reaches _route, control characters included (which it refuses)
        app.router.add_route("*", r"/{path:[\s\S]*}", self._route)
        app.on_shutdown.append(self._shutdown)
        return app

    async def _shutdown(self, app: web.Application) -> None:
        self._stopping.set()

    # ---- middlewares --------------------------------------------------------------
    @web.middleware
    async def _count(self, request: web.Request,
                     handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                     ) -> web.StreamResponse:
        """``apiserver_request_total`` as the real server has it, and one more label:
        ``client``, the user agent's name (what benchmarks count an operator's
        writes by)."""
        deadline = self._fresh.pop(id(request.protocol), None)
        if deadline is not None:
            deadline.cancel()
        response = await handler(request)
        target = request.get(COUNTED)
        if target is not None:
            self.requests.labels(*target, str(response.status), _agent(request)).inc()
        return response

    @web.middleware
    async def _errors(self, request: web.Request,
                      handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                      ) -> web.StreamResponse:
        try:
            return await handler(request)
        except ApiError as exc:
            return _json(exc.status(), exc.code)
        except web.HTTPRequestEntityTooLarge:
            return _json(ApiError(413, f"the request body is larger than {self.max_body} bytes"
                                  ).status(), 413)
        except web.HTTPException as exc:  # aiohttp's own answers, as a Status too
            if exc.status < 400:
                raise
            return _json(ApiError(exc.status, exc.reason).status(), exc.status)
        except (ConnectionResetError, asyncio.CancelledError):
            raise
        except Exception as exc:  # a bug of ours: the client still gets a Status
            log.exception("internal error on %s %s", request.method, request.path)
            return _json(ApiError(500, f"internal error: {exc}").status(), 500)

    @web.middleware
    async def _auth(self, request: web.Request,
                    handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                    ) -> web.StreamResponse:
        """Authentication (a bearer token per subject), then authorization (RBAC),
        from the request's method and path alone, as kube-apiserver does both before
        it routes."""
        user = self.tokens.authenticate(request.headers.get("Authorization"))
        if user is None:
            raise ApiError(401, "Unauthorized")
        # system:masters may do anything, before any lookup (as in kube-apiserver): the
        # admin's requests, nearly all of a benchmark's, cost what they did before RBAC
        attributes = None if rbac.MASTERS in user.groups else \
            rbac.attributes(request.method, request.path, request.query)
        if attributes is not None and not self.authorizer.authorize(user, attributes).allowed:
            if attributes.resource_request:  # counted, as kube-apiserver counts its 403s
                request[COUNTED] = (_verb(request.method, attributes.name or None,
                                          request.query, request.content_type),
                                    attributes.group, attributes.resource,
                                    attributes.subresource)
            raise rbac.forbidden(user, attributes)
        request[USER] = user
        # the requester, for the checks of what it writes (rbac.Authorizer.admit)
        token = rbac.REQUESTER.set(user)
        try:
            return await handler(request)
        finally:
            rbac.REQUESTER.reset(token)

    # ---- routing ------------------------------------------------------------------
    async def _route(self, request: web.Request) -> web.StreamResponse:
        raw = request.path
        parts = [p for p in raw.split("/") if p]
        if any(p in (".", "..") or "\\" in p for p in parts) or "//" in raw.rstrip("/") \
                or any(ord(c) < 0x20 or c == "\x7f" for c in raw):
            raise ApiError(400, f"invalid path {raw!r}")
        if request.method == "GET" and parts == ["metrics"]:
            return web.Response(body=generate_latest(self.metrics),
                                headers={"Content-Type": CONTENT_TYPE_LATEST})
        if request.method == "GET":
            static = self._static(parts)
            if static is not None:
                return _json(static)
        if request.method == "POST" and len(parts) == 7 and parts[:3] == [
                "api", "v1", "namespaces"] and parts[4:7:2] == ["serviceaccounts", "token"]:
            body = await self._body(request, optional=True)
            return _json(rbac.token_request(self.tokens, self.store, parts[3], parts[5],
                                            body), 201)
        if request.method == "POST" and len(parts) == 4 and parts[0] == "apis":
            review = self._review(request, (parts[1], parts[2], parts[3]))
            if review is not None:
                return _json(await review, 201)
        if len(parts) >= 2 and parts[0] == "api" and parts[1] == "v1":
            return await self._resource_request(request, "", "v1", parts[2:])
        if len(parts) >= 3 and parts[0] == "apis":
            return await self._resource_request(request, parts[1], parts[2], parts[3:])
        raise ApiError(404, "the server could not find the requested resource")

    def _review(self, request: web.Request, where: tuple[str, str, str]
                ) -> Awaitable[Obj] | None:
        """The answer to a review of the requester itself (``kubectl auth can-i``,
        ``kubectl auth whoami``), if ``where`` is a review resource."""
        user = request[USER]
        answer = rbac.REVIEWS.get(where)
        if answer is None and where != rbac.SELF_REVIEW:
            return None

        async def review() -> Obj:
            if answer is None:
                return rbac.self_review(user)
            return answer(self.authorizer, user, await self._body(request))
        return review()

    def _static(self, parts: list[str]) -> Obj | None:
        reg = self.cluster.registry
        match parts:
            case ["version"]:
                return discovery.VERSION
            case ["healthz"] | ["livez"] | ["readyz"]:
                return {"status": "ok"}
            case ["api"]:
                return discovery.api_versions(self.address)
            case ["apis"]:
                return discovery.api_groups(reg)
            case ["apis", group]:
                return self._or_404(discovery.api_group(reg, group))
            case ["api", "v1"]:
                return discovery.resource_list(reg, "", "v1")
            case ["apis", group, version]:
                return self._or_404(discovery.resource_list(reg, group, version))
            case ["openapi", "v3"]:
                return discovery.openapi_index(reg)
            case ["openapi", "v3", "api", "v1"]:
                return discovery.openapi_document(reg, "", "v1")
            case ["openapi", "v3", "apis", group, version]:
                return self._or_404(discovery.openapi_document(reg, group, version))
        return None

    @staticmethod
    def _or_404(doc: Obj | None) -> Obj:
        if doc is None:
            raise ApiError(404, "the server could not find the requested resource")
        return doc

    def _target(self, group: str, version: str, rest: list[str]
                ) -> tuple[Resource, str | None, str | None, str | None]:
        """(resource, namespace, name, subresource) of a resource path."""
        reg = self.cluster.registry

        def resource(plural: str) -> Resource:
            r = reg.get(group, version, plural)
            if r is None:
                raise ApiError(404, "the server could not find the requested resource")
            return r
        if len(rest) >= 3 and rest[0] == "namespaces":
            candidate = reg.get(group, version, rest[2])
            if (candidate is not None and candidate.namespaced) or len(rest) > 3:
                r = resource(rest[2])
                if not r.namespaced:
                    raise ApiError(404, "the server could not find the requested resource")
                return r, rest[1], rest[3] if len(rest) > 3 else None, \
                    rest[4] if len(rest) > 4 else None
        if not 1 <= len(rest) <= 3:
            raise ApiError(404, "the server could not find the requested resource")
        r = resource(rest[0])
        name = rest[1] if len(rest) > 1 else None
        if name is not None and r.namespaced:
            raise ApiError(404, "the server could not find the requested resource")
        return r, None, name, rest[2] if len(rest) > 2 else None

    async def _resource_request(self, request: web.Request, group: str, version: str,
                                rest: list[str]) -> web.StreamResponse:
        r, ns, name, sub = self._target(group, version, rest)
        if sub in streams.STREAMED and (r.group, r.plural) == ("", "pods") and name:
            self._streamed(request, r, ns, name, sub)
        if sub is not None and not (sub == "status" and r.status):
            raise ApiError(404, "the server could not find the requested resource")
        q = request.query
        method = request.method
        request[COUNTED] = (_verb(method, name, q, request.content_type), r.group,
                            r.plural, sub or "")
        dry_run = q.get("dryRun") == "All"
        strict = q.get("fieldValidation") == "Strict"
        manager = q.get("fieldManager")
        if method == "GET":
            if name is None:
                if q.get("watch") in ("1", "true", "True"):
                    return await self._watch(request, r, ns, None)
                return self._list(request, r, ns)
            obj = self.cluster.get(r, ns, name)
            return self._reply(request, r, obj)
        if method == "POST" and name is None:
            obj = self.cluster.create(r, ns, await self._body(request), dry_run, strict,
                                      manager or _agent(request), owned=True)
            return self._reply(request, r, obj, 201)
        if method == "PUT" and name is not None:
            obj = self.cluster.update(r, ns, name, await self._body(request), sub, dry_run,
                                      strict, manager or _agent(request), owned=True)
            return self._reply(request, r, obj)
        if method == "PATCH" and name is not None:
            ctype = request.content_type
            kind = PATCH_TYPES.get(ctype)
            if kind is None:
                raise ApiError(415, f"the body of the request was in an unknown format -"
                                    f" accepted media types include: "
                                    f"{', '.join(t for t, k in PATCH_TYPES.items() if k)}")
            body = await self._body(request, yaml_ok=kind == "apply")
            if kind == "apply" and not manager:
                raise ApiError(400, "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager:"
                                    " Required value: is required for apply patch")
            obj, created = self.cluster.patch(
                r, ns, name, kind, body, sub, dry_run, strict, manager or _agent(request),
                q.get("force") == "true")
            return self._reply(request, r, obj, 201 if created else 200)
        if method == "DELETE":
            options = await self._body(request, optional=True) or {}
            if not isinstance(options, dict):
                raise ApiError(400, "the body of a deletion must be a DeleteOptions object")
            if "gracePeriodSeconds" in q:
                options["gracePeriodSeconds"] = _int(q["gracePeriodSeconds"], "gracePeriodSeconds")
            if "propagationPolicy" in q:
                options["propagationPolicy"] = q["propagationPolicy"]
            if options.pop("orphanDependents", False):
                options.setdefault("propagationPolicy", "Orphan")
            if name is None:
                return self._delete_collection(request, r, ns, options, dry_run)
            obj = self.cluster.delete(r, ns, name, options, dry_run)
            return self._reply(request, r, obj)
        raise ApiError(405, f"{method} is not supported here", "MethodNotAllowed")

    def _streamed(self, request: web.Request, r: Resource, ns: str | None, name: str,
                  sub: str) -> NoReturn:
        """A pod's log, exec, attach or port-forward: a 400 saying why there is nothing
        to stream here (:mod:`.streams`), or 404 for a pod that does not exist."""
        # counted as the real server counts them: logs are read, the others connected
        request[COUNTED] = ("GET" if sub == "log" else "CONNECT", r.group, r.plural, sub)
        if request.method not in streams.STREAMED[sub][0]:
            raise ApiError(405, f"{request.method} is not supported on pods/{sub}",
                           "MethodNotAllowed")
        raise streams.no_containers(self.cluster.get(r, ns, name), sub, self.cluster.registry)

    async def _body(self, request: web.Request, yaml_ok: bool = True,
                    optional: bool = False) -> Any:
        raw = await request.read()
        if not raw.strip():
            if optional:
                return None
            raise ApiError(400, "the request has no body")
        ctype = request.content_type
        if ctype == protobuf.CONTENT_TYPE:
            try:
                decoded = protobuf.decode(raw)
            except (protobuf.ProtobufError, UnicodeDecodeError) as exc:
                raise ApiError(415, str(exc), "UnsupportedMediaType") from None
            bodies.check(decoded)
            return decoded
        if ctype in ("application/yaml", "application/apply-patch+yaml") and yaml_ok:
            return bodies.parse_yaml(raw)
        if ctype in ("application/json", "application/merge-patch+json",
                     "application/json-patch+json", "application/strategic-merge-patch+json",
                     "", "application/octet-stream", "text/plain"):
            return bodies.parse_json(raw)
        raise ApiError(415, f"unsupported media type {ctype!r}", "UnsupportedMediaType")

    def _reply(self, request: web.Request, r: Resource, obj: Obj, status: int = 200
               ) -> web.Response:
        if _wants_table(request):
            return _json(table(r, [obj], obj["metadata"].get("resourceVersion", ""),
                               request.query.get("includeObject", "Metadata")), status)
        return _json(obj, status)

    # ---- lists --------------------------------------------------------------------
    def _matching(self, request: web.Request, r: Resource) -> Callable[[Obj], bool]:
        try:
            labels = label_selector(request.query.get("labelSelector"))
            fields = field_selector(request.query.get("fieldSelector"), r.kind)
        except SelectorError as exc:
            raise ApiError(400, str(exc)) from None
        return lambda obj: labels(obj) and fields(obj)

    def _list(self, request: web.Request, r: Resource, ns: str | None) -> web.Response:
        match = self._matching(request, r)
        items = [o for o in self.cluster.list(r, ns) if match(o)]
        q = request.query
        cont = None
        if q.get("continue"):
            try:
                after = tuple(json.loads(base64.urlsafe_b64decode(q["continue"]))["after"])
                if len(after) != 2 or not all(isinstance(x, str) for x in after):
                    raise ValueError(after)  # compared with (namespace, name) below
            except (ValueError, KeyError, TypeError):
                raise ApiError(400, "the continue token is not valid") from None
            items = [o for o in items if (o["metadata"].get("namespace", ""),
                                          o["metadata"]["name"]) > after]
        limit = _int(q["limit"], "limit") if q.get("limit") else 0
        if limit > 0 and len(items) > limit:
            items = items[:limit]
            last = items[-1]["metadata"]
            cont = base64.urlsafe_b64encode(json.dumps(
                {"after": [last.get("namespace", ""), last["name"]]}).encode()).decode()
        rv = str(self.store.rv)
        if _wants_table(request):
            return _json(table(r, items, rv, q.get("includeObject", "Metadata"), cont))
        meta: Obj = {"resourceVersion": rv}
        if cont:
            meta["continue"] = cont
        return _json({"kind": r.list_kind, "apiVersion": r.api_version, "metadata": meta,
                      "items": items})

    def _delete_collection(self, request: web.Request, r: Resource, ns: str | None,
                           options: Obj, dry_run: bool) -> web.Response:
        match = self._matching(request, r)
        gone = [self.cluster.delete(r, o["metadata"].get("namespace"), o["metadata"]["name"],
                                    options, dry_run)
                for o in self.cluster.list(r, ns) if match(o)]
        return _json({"kind": r.list_kind, "apiVersion": r.api_version,
                      "metadata": {"resourceVersion": str(self.store.rv)}, "items": gone})

    # ---- watches ------------------------------------------------------------------
    async def _watch(self, request: web.Request, r: Resource, ns: str | None,
                     name: str | None) -> web.StreamResponse:
        q = request.query
        match = self._matching(request, r)
        as_table = _wants_table(request)
        bookmarks = q.get("allowWatchBookmarks") in ("true", "1")
        timeout = _int(q["timeoutSeconds"], "timeoutSeconds") if q.get("timeoutSeconds") \
            else 1800
        since = q.get("resourceVersion", "")
        queue: asyncio.Queue[Change | None] = asyncio.Queue()

        def wanted(obj: Obj) -> bool:
            meta = obj["metadata"]
            return (ns is None or meta.get("namespace") == ns) and match(obj)

        def listener(change: Change) -> None:
            if change.key == r.key:
                if queue.qsize() > WATCH_BACKLOG:
                    queue.put_nowait(None)
                else:
                    queue.put_nowait(change)

        # registering and reading the backlog happen without an await in between, so
        # no change falls between them
        self.store.listeners.add(listener)
        expired = False
        # counted in apiserver_request_total when it ends; meanwhile, as on a real
        # server, among the long-running requests
        running = self.longrunning.labels("WATCH", r.group, r.plural, "", _agent(request))
        running.inc()
        try:
            if since in ("", "0"):
                backlog: list[tuple[str, Obj, str | None]] = [
                    ("ADDED", o, None) for o in self.cluster.list(r, ns)]
            else:
                try:
                    backlog = [(c.kind, c.obj, c.body) for c in
                               self.store.changes_since(_int(since, "resourceVersion"))
                               if c.key == r.key]
                except Gone:
                    backlog, expired = [], True
            response = web.StreamResponse(headers={"Content-Type": "application/json",
                                                   "Cache-Control": "no-cache"})
            await response.prepare(request)

            def line(kind: str, obj: Obj, body: str | None) -> bytes:
                if as_table:
                    rows = table(r, [obj], obj["metadata"].get("resourceVersion", ""),
                                 q.get("includeObject", "Object"))
                    return _event(kind, json.dumps(rows, separators=(",", ":")))
                if body is None or obj.get("apiVersion") != r.api_version:
                    body = json.dumps(self.cluster._as(r, obj), separators=(",", ":"))
                return _event(kind, body)

            if expired:
                gone = ApiError(410, f"too old resource version: {since}"
                                     f" ({self.store.compacted})", "Expired").status()
                await response.write(json.dumps({"type": "ERROR", "object": gone}).encode()
                                     + b"\n")
                return response
            for start in range(0, len(backlog), WATCH_BATCH):
                lines = [line(*b) for b in backlog[start:start + WATCH_BATCH] if wanted(b[1])]
                if lines:
                    await response.write(b"".join(lines))
            loop = asyncio.get_running_loop()
            deadline = loop.time() + timeout
            while not self._stopping.is_set():
                left = deadline - loop.time()
                if left <= 0:
                    break
                try:
                    change = queue.get_nowait() if not queue.empty() else \
                        await asyncio.wait_for(queue.get(), min(left, self.bookmark_seconds))
                except TimeoutError:
                    # a bookmark says every change up to its version was sent: not
                    # while one waits in the queue (made as the wait gave up), or a
                    # stream that ends now would have its watcher resume past it
                    if bookmarks and queue.empty():
                        await response.write(json.dumps({"type": "BOOKMARK", "object": {
                            "kind": r.kind, "apiVersion": r.api_version,
                            "metadata": {"resourceVersion": str(self.store.rv)}}}).encode()
                            + b"\n")
                    continue
                # what else is queued goes in the same write: under a burst of
                # changes a watcher keeps up at one write per turn of the loop,
                # not one per change
                batch = [change]
                while batch[-1] is not None and len(batch) < WATCH_BATCH \
                        and not queue.empty():
                    batch.append(queue.get_nowait())
                lines = [line(c.kind, c.obj, c.body) for c in batch
                         if c is not None and wanted(c.obj)]
                if lines:
                    await response.write(b"".join(lines))
                if batch[-1] is None:
                    # fell too far behind: the stream ends before the first change
                    # dropped, and the client resumes from there (or re-lists)
                    break
            return response
        except (ConnectionResetError, asyncio.CancelledError):
            return web.StreamResponse()
        finally:
            running.dec()
            self.store.listeners.discard(listener)


def _event(kind: str, body: str) -> bytes:
    """One line of a watch stream, around an object already encoded."""
    return f'{{"type":"{kind}","object":{body}}}\n'.encode()


def _agent(request: web.Request) -> str:
    """The default field manager: the client's name, as the real server derives it."""
    agent = request.headers.get("User-Agent", "unknown")
    return agent.split("/")[0] or "unknown"


def _verb(method: str, name: str | None, query: Any, content_type: str) -> str:
    """The real server's ``verb`` label."""
    if method == "GET":
        if name is not None:
            return "GET"
        return "WATCH" if query.get("watch") in ("1", "true", "True") else "LIST"
    if method == "POST":
        return "POST"
    if method == "PATCH" and content_type == "application/apply-patch+yaml":
        return "APPLY"
    if method == "DELETE" and name is None:
        return "DELETECOLLECTION"
    return method


def _int(value: str, what: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise ApiError(400, f"{what}: expected an integer, got {value!r}") from None


def _wants_table(request: web.Request) -> bool:
    accept = request.headers.get("Accept", "")
    return "as=Table" in accept.split(",")[0]


async def serve(store: Store, host: str = "127.0.0.1", port: int = 6443,
                token: str | None = None, ssl_context: ssl.SSLContext | None = None,
                **options: Any) -> tuple[web.AppRunner, ApiServer]:
    """Start serving (returns once listening; port 0 picks a free one); stop with
    ``await runner.cleanup()``."""
    logging.getLogger("aiohttp.server").addFilter(_ONE_LINE)
    server = ApiServer(store, token, **options)
    app = server.app()
    listening: list[asyncio.Server] = []

    async def close(app: web.Application) -> None:
        for s in listening:
            s.close()
    app.on_shutdown.insert(0, close)
    # open keep-alive connections and watches get one second to close on shutdown
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0,
                           keepalive_timeout=IDLE_TIMEOUT)
    await runner.setup()
    assert runner.server is not None
    # aiohttp's TCPSite, but with each connection's header deadline (aiohttp has none)
    # and the TLS handshake held to the same bound
    listening.append(await asyncio.get_running_loop().create_server(
        server.protocol(runner.server), host, port, ssl=ssl_context,
        ssl_handshake_timeout=server.header_timeout if ssl_context else None,
        reuse_address=True))
    bound = listening[0].sockets[0].getsockname()
    server.address = f"{bound[0]}:{bound[1]}"
    return runner, server
