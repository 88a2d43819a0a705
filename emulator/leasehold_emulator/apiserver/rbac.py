"""Who is asking and what they may do, as kube-apiserver decides it: bearer tokens
(the admin token, and a static token file in kube-apiserver's ``--token-auth-file``
format) and the RBAC authorizer over the Roles, ClusterRoles and bindings the server
stores; plus the reviews clients ask about themselves (``kubectl auth can-i``,
``kubectl auth can-i --list``, ``kubectl auth whoami``).

What the server does not do: aggregated ClusterRoles, impersonation, anonymous
requests (a request without a known token is 401, as with ``--anonymous-auth=false``),
bound service-account tokens (a requested token is not tied to a pod or secret)."""

from __future__ import annotations

import csv
import hmac
import io
import os
import time
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from leasehold.api.clock import rfc3339

from .errors import ApiError, not_found
from .kubeconfig import new_token
from .resources import Resource
from .store import Obj, Store

RBAC = "rbac.authorization.k8s.io"
#: what every authenticated user gets from kube-apiserver's bootstrap policy
#: (system:discovery, system:public-info-viewer, system:basic-user): discovery, the
#: version and health paths, and the reviews of oneself
AUTHENTICATED = "system:authenticated"
MASTERS = "system:masters"
BOOTSTRAP: tuple[Obj, ...] = (
    {"verbs": ["get"], "nonResourceURLs": [
        "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/readyz", "/version",
        "/version/", "/openapi", "/openapi/*"]},
    {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
     "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]},
    {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"],
     "resources": ["selfsubjectreviews"]},
)
#: the rules a member of system:masters holds (as kube-apiserver's cluster-admin)
EVERYTHING: tuple[Obj, ...] = (
    {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
    {"verbs": ["*"], "nonResourceURLs": ["*"]},
)
#: a namespace's subresources that are not resources of their own in a path
NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


@dataclass(frozen=True, slots=True)
class User:
    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""

    def info(self) -> Obj:
        return {"username": self.name, "uid": self.uid, "groups": list(self.groups)}


#: the holder of the admin token: a member of system:masters, as kind's admin is
ADMIN = User("kubernetes-admin", (MASTERS, AUTHENTICATED))
#: who sent the request being served (None: the server itself, e.g. installing CRDs)
REQUESTER: ContextVar[User | None] = ContextVar("requester", default=None)


def service_account(namespace: str, name: str) -> User:
    """The user a service account's token authenticates as."""
    return User(f"system:serviceaccount:{namespace}:{name}",
                ("system:serviceaccounts", f"system:serviceaccounts:{namespace}",
                 AUTHENTICATED))


#: a known token: its bytes, its user, when it expires (None: never)
Known = tuple[bytes, User, float | None]


class Tokens:
    """Bearer tokens to users: the admin token, and the lines of a token file
    (``token,user,uid,"group1,group2"``, kube-apiserver's static token file, and a
    fifth column of ours that kube-apiserver ignores: when a token from the
    TokenRequest API expires), read again whenever it changes so that tokens minted
    while the server runs work."""

    def __init__(self, admin: str | None, path: Path | None = None) -> None:
        self.admin = admin
        self.path = path
        self._stamp: tuple[int, int] | None = None
        self._users: list[Known] = []
        #: tokens given while there is no file to keep them in
        self._given: list[Known] = []

    def add(self, token: str, user: User, expires: float | None = None) -> None:
        """A new token, kept where the others are (so it outlives a restart)."""
        if self.path is None:
            self._given.append((token.encode(), user, expires))
            return
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        with os.fdopen(fd, "a") as fh:
            fh.write(token_line(token, user, expires))

    def _load(self) -> list[Known]:
        if self.path is None:
            return self._given
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._stamp, self._users = None, []
            return []
        stamp = (st.st_mtime_ns, st.st_size)
        if stamp != self._stamp:
            self._users = parse_token_file(self.path.read_text())
            self._stamp = stamp
        return self._users

    def authenticate(self, header: str | None) -> User | None:
        """The user of an ``Authorization`` header; None for no or an unknown token.
        The scheme is matched in any case (``bearer``, as kube-apiserver), and the
        token compared with every known one in constant time, so that the time taken
        tells nothing about how much of a guess was right."""
        if self.admin is None:
            return ADMIN  # a server without a token: everyone is the admin
        parts = (header or "").split(" ")
        if len(parts) < 2 or parts[0].lower() != "bearer" or not parts[1]:
            return None
        # bytes: compare_digest refuses str with non-ASCII characters
        given = parts[1].encode("utf-8", "surrogateescape")
        if hmac.compare_digest(given, self.admin.encode()):
            return ADMIN  # nearly every request: no look at the file
        found = None
        now = time.time()
        for token, user, expires in self._load():
            if hmac.compare_digest(given, token) and found is None and (
                    expires is None or now < expires):
                found = user
        return found


def parse_token_file(text: str) -> list[Known]:
    """The users of a static token file; a malformed line is skipped (the file is the
    owner of the server's, checked where it is written)."""
    out: list[Known] = []
    for row in csv.reader(io.StringIO(text)):
        if len(row) < 2 or not row[0].strip() or row[0].startswith("#"):
            continue
        groups = [g for g in (row[3].split(",") if len(row) > 3 else []) if g]
        try:
            expires = float(row[4]) if len(row) > 4 and row[4] else None
        except ValueError:
            continue
        out.append((row[0].strip().encode(), User(row[1], (*groups, AUTHENTICATED),
                                                  row[2] if len(row) > 2 else ""), expires))
    return out


def token_line(token: str, user: User, expires: float | None = None) -> str:
    """A line of the static token file for ``user``."""
    groups = [g for g in user.groups if g != AUTHENTICATED]
    row = [token, user.name, user.uid, ",".join(groups)]
    if expires is not None:
        row.append(f"{expires:.3f}")
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(row)
    return buf.getvalue()


# ---- request attributes -------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Attributes:
    """What a request asks to do (kube-apiserver's RequestInfo): a verb on a
    resource, or on a non-resource path."""

    verb: str
    resource_request: bool = True
    group: str = ""
    version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""


def attributes(method: str, path: str, query: Any) -> Attributes:
    """A request's attributes from its method and path alone, before routing, as
    kube-apiserver derives them (so that a request for a resource that does not
    exist is refused, not told so, when its user may not see it)."""
    parts = [p for p in path.split("/") if p]
    http_verb = {"GET": "get", "HEAD": "get", "POST": "create", "PUT": "update",
                 "PATCH": "patch", "DELETE": "delete"}.get(method, method.lower())
    if parts[:1] == ["api"] and len(parts) >= 2:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 3:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        rest = []
    if not rest:
        return Attributes(http_verb, resource_request=False, path=path)
    namespace = ""
    if rest[0] == "namespaces" and len(rest) > 1:
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    verb = http_verb
    if not name and method in ("GET", "HEAD"):
        verb = "watch" if query.get("watch") in ("1", "true", "True") else "list"
        # a list or watch of one object by its name is authorized as that object
        selector = query.get("fieldSelector") or ""
        if selector.startswith("metadata.name=") and "," not in selector:
            name = selector.removeprefix("metadata.name=")
    elif not name and method == "DELETE":
        verb = "deletecollection"
    return Attributes(verb, True, group, version, resource, subresource, namespace, name)


# ---- the RBAC authorizer ------------------------------------------------------------
@dataclass(slots=True)
class Decision:
    allowed: bool
    #: why, as kube-apiserver's RBAC authorizer says it when it allows
    reason: str = ""
    rules: list[Obj] = field(default_factory=list)


def _strings(value: Any) -> list[str]:
    """The strings of a list in a rule; anything else counts as nothing: roles and
    bindings are stored as written, and one of the wrong shape must grant nothing
    rather than break every request."""
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _subjects(binding: Obj) -> list[Obj]:
    subjects = binding.get("subjects")
    return [s for s in subjects if isinstance(s, dict)] if isinstance(subjects, list) else []


def _applies(subject: Obj, user: User, namespace: str) -> bool:
    kind, name = subject.get("kind"), subject.get("name")
    if not isinstance(name, str):
        return False
    if kind == "User":
        return bool(name == user.name)
    if kind == "Group":
        return name in user.groups
    if kind == "ServiceAccount":
        ns = subject.get("namespace") or namespace
        return isinstance(ns, str) and f"system:serviceaccount:{ns}:{name}" == user.name
    return False


def _has(values: Any, wanted: str) -> bool:
    strings = _strings(values)
    return wanted in strings or "*" in strings


def rule_allows(rule: Obj, a: Attributes) -> bool:
    """One PolicyRule against a request (kube-apiserver's RuleAllows)."""
    if not _has(rule.get("verbs"), a.verb):
        return False
    if not a.resource_request:
        for url in _strings(rule.get("nonResourceURLs")):
            if url == "*" or url == a.path or (
                    url.endswith("*") and a.path.startswith(url[:-1])):
                return True
        return False
    if not _has(rule.get("apiGroups"), a.group):
        return False
    combined = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
    resources = _strings(rule.get("resources"))
    if not any(r in ("*", combined) or (a.subresource and r == f"*/{a.subresource}")
               for r in resources):
        return False
    names = _strings(rule.get("resourceNames"))
    return not names or a.name in names


class Authorizer:
    """RBAC over the objects in ``store``: a request is allowed when a rule of a
    role bound to its user allows it; there are no denials."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def _role(self, binding: Obj, namespace: str) -> tuple[str, list[Obj]]:
        ref = binding.get("roleRef")
        kind, name = (ref.get("kind"), ref.get("name")) if isinstance(ref, dict) else ("", "")
        role = None
        if isinstance(name, str) and kind in ("ClusterRole", "Role"):
            role = self.store.get(f"{RBAC}/clusterroles", "", name) if kind == "ClusterRole" \
                else self.store.get(f"{RBAC}/roles", namespace, name)
        rules = (role or {}).get("rules")
        return f"{kind} \"{name}\"", [r for r in rules if isinstance(r, dict)] \
            if isinstance(rules, list) else []

    def bound(self, user: User, namespace: str) -> list[tuple[str, list[Obj]]]:
        """(where from, rules) of every role bound to ``user`` that counts in
        ``namespace`` ("" for cluster-scoped requests): the built-in ones first."""
        out: list[tuple[str, list[Obj]]] = []
        if MASTERS in user.groups:
            out.append((f"Group \"{MASTERS}\"", list(EVERYTHING)))
        if AUTHENTICATED in user.groups:
            out.append(("the bootstrap policy", list(BOOTSTRAP)))
        for binding in self.store.items(f"{RBAC}/clusterrolebindings"):
            if any(_applies(s, user, "") for s in _subjects(binding)):
                role, rules = self._role(binding, "")
                out.append((f"ClusterRoleBinding \"{binding['metadata']['name']}\" of {role}",
                            rules))
        if namespace:
            for binding in self.store.items(f"{RBAC}/rolebindings", namespace):
                if any(_applies(s, user, namespace) for s in _subjects(binding)):
                    role, rules = self._role(binding, namespace)
                    out.append((f"RoleBinding \"{binding['metadata']['name']}/{namespace}\""
                                f" of {role}", rules))
        return out

    def authorize(self, user: User, a: Attributes) -> Decision:
        if MASTERS in user.groups:
            return Decision(True, f"allowed: User \"{user.name}\" is in Group \"{MASTERS}\"")
        for where, rules in self.bound(user, a.namespace):
            if any(rule_allows(rule, a) for rule in rules):
                return Decision(True, f"RBAC: allowed by {where} to User \"{user.name}\"")
        return Decision(False)

    def rules(self, user: User, namespace: str) -> tuple[list[Obj], list[Obj]]:
        """(resource rules, non-resource rules) of ``user`` in ``namespace``, as a
        SelfSubjectRulesReview lists them."""
        resource, non_resource = [], []
        for _, rules in self.bound(user, namespace):
            for rule in rules:
                keep = {k: _strings(rule.get(k)) for k in (
                    "verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs")}
                if not keep["verbs"]:
                    continue
                if keep["nonResourceURLs"]:
                    non_resource.append({"verbs": keep["verbs"],
                                         "nonResourceURLs": keep["nonResourceURLs"]})
                if keep["resources"]:
                    resource.append({k: v for k, v in keep.items()
                                     if v and k != "nonResourceURLs"})
        return resource, non_resource


    def admit(self, r: Resource, obj: Obj, old: Obj | None = None) -> None:
        """kube-apiserver's escalation check on a role or binding being written: its
        writer may grant only rules they hold themselves, unless they may ``escalate``
        (roles) or ``bind`` (the role a binding refers to)."""
        user = REQUESTER.get()
        if user is None or MASTERS in user.groups or r.group != RBAC:
            return
        meta = obj.get("metadata") or {}
        ns, name = meta.get("namespace") or "", meta.get("name", "")
        if r.plural in ("roles", "clusterroles"):
            if self.authorize(user, Attributes("escalate", True, RBAC, r.version, r.plural,
                                               "", ns, name)).allowed:
                return
            rules = obj.get("rules")
            granted = [x for x in rules if isinstance(x, dict)] if isinstance(rules, list) \
                else []
        elif r.plural in ("rolebindings", "clusterrolebindings"):
            ref = obj.get("roleRef")
            kind, role = (ref.get("kind"), ref.get("name")) if isinstance(ref, dict) \
                else ("", "")
            plural = "clusterroles" if kind == "ClusterRole" else "roles"
            if isinstance(role, str) and self.authorize(user, Attributes(
                    "bind", True, RBAC, r.version, plural, "", ns, role)).allowed:
                return
            granted = self._role(obj, ns)[1]
        else:
            return
        held = [rule for _, rules in self.bound(user, ns) for rule in rules]
        missing = [a for a in _atomic(granted) if not any(rule_allows(h, a) for h in held)]
        if missing:
            groups = " ".join(f'"{g}"' for g in user.groups)
            raise ApiError(403, f'{r.plural}.{RBAC} "{name}" is forbidden: user "{user.name}"'
                                f" (groups=[{groups}]) is attempting to grant RBAC permissions"
                                f" not currently held:\n{_compact(missing)}",
                           details={"name": name, "group": RBAC, "kind": r.plural})


def _atomic(rules: list[Obj]) -> list[Attributes]:
    """Rules broken into one verb on one thing each (as kube-apiserver checks
    coverage: a wildcard granted is covered only by a wildcard held)."""
    out: list[Attributes] = []
    for rule in rules:
        verbs = _strings(rule.get("verbs"))
        for url in _strings(rule.get("nonResourceURLs")):
            out.extend(Attributes(v, False, path=url) for v in verbs)
        for group in _strings(rule.get("apiGroups")):
            for resource in _strings(rule.get("resources")):
                plural, _, sub = resource.partition("/")
                for name in _strings(rule.get("resourceNames")) or [""]:
                    out.extend(Attributes(v, True, group, "", plural, sub, "", name)
                               for v in verbs)
    return out


def _compact(missing: list[Attributes]) -> str:
    """The rules not held, one line per thing with its verbs, as Go prints them."""
    verbs: dict[tuple[bool, str, str, str], list[str]] = {}
    for a in missing:
        resource = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
        verbs.setdefault((a.resource_request, a.group, resource if a.resource_request
                          else a.path, a.name), []).append(a.verb)

    def quoted(values: list[str]) -> str:
        return "[" + " ".join(f'"{v}"' for v in values) + "]"
    lines = []
    for (is_resource, group, what, name), vs in verbs.items():
        if not is_resource:
            lines.append(f"{{NonResourceURLs:{quoted([what])}, Verbs:{quoted(vs)}}}")
            continue
        names = f", ResourceNames:{quoted([name])}" if name else ""
        lines.append(f"{{APIGroups:{quoted([group])}, Resources:{quoted([what])}{names},"
                     f" Verbs:{quoted(vs)}}}")
    return "\n".join(lines)


def forbidden(user: User, a: Attributes) -> ApiError:
    """403 in kube-apiserver's words: who may not do what, where."""
    if not a.resource_request:
        return ApiError(403, f'forbidden: User "{user.name}" cannot {a.verb} path'
                             f' "{a.path}"', details={})
    combined = f"{a.resource}/{a.subresource}" if a.subresource else a.resource
    where = f'in the namespace "{a.namespace}"' if a.namespace else "at the cluster scope"
    cause = (f'User "{user.name}" cannot {a.verb} resource "{combined}" in API group'
             f' "{a.group}" {where}')
    qualified = f"{a.resource}.{a.group}" if a.group else a.resource
    what = f'{qualified} "{a.name}"' if a.name else qualified
    return ApiError(403, f"{what} is forbidden: {cause}",
                    details={"name": a.name, "group": a.group, "kind": a.resource}
                    if a.name else {"group": a.group, "kind": a.resource})


# ---- reviews of oneself ---------------------------------------------------------------
def _spec(body: Any, kind: str) -> Obj:
    if not isinstance(body, dict) or not isinstance(body.get("spec", {}), dict):
        raise ApiError(400, f"{kind}: the body must be an object with a spec object")
    spec: Obj = body.get("spec") or {}
    return spec


def _string(values: Obj, key: str, where: str) -> str:
    value = values.get(key, "")
    if not isinstance(value, str):
        raise ApiError(422, f"{where}.{key}: Invalid value: must be a string")
    return value


def access_review(authorizer: Authorizer, user: User, body: Any) -> Obj:
    """A SelfSubjectAccessReview answered (``kubectl auth can-i``)."""
    kind = "SelfSubjectAccessReview"
    spec = _spec(body, kind)
    res, non = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if (res is None) == (non is None) or not isinstance(res if non is None else non, dict):
        raise ApiError(422, f"{kind}.authorization.k8s.io \"\" is invalid: spec: Invalid"
                            " value: exactly one of nonResourceAttributes or"
                            " resourceAttributes must be specified", "Invalid")
    if res is not None:
        where = "spec.resourceAttributes"
        a = Attributes(_string(res, "verb", where), True, _string(res, "group", where),
                       _string(res, "version", where), _string(res, "resource", where),
                       _string(res, "subresource", where), _string(res, "namespace", where),
                       _string(res, "name", where))
    else:
        assert isinstance(non, dict)
        where = "spec.nonResourceAttributes"
        a = Attributes(_string(non, "verb", where), False, path=_string(non, "path", where))
    decision = authorizer.authorize(user, a)
    status: Obj = {"allowed": decision.allowed}
    if decision.reason:
        status["reason"] = decision.reason
    return {"kind": kind, "apiVersion": "authorization.k8s.io/v1",
            "metadata": {"creationTimestamp": None}, "spec": spec, "status": status}


def rules_review(authorizer: Authorizer, user: User, body: Any) -> Obj:
    """A SelfSubjectRulesReview answered (``kubectl auth can-i --list``)."""
    kind = "SelfSubjectRulesReview"
    spec = _spec(body, kind)
    namespace = _string(spec, "namespace", "spec")
    resource, non_resource = authorizer.rules(user, namespace)
    return {"kind": kind, "apiVersion": "authorization.k8s.io/v1",
            "metadata": {"creationTimestamp": None}, "spec": spec,
            "status": {"resourceRules": resource, "nonResourceRules": non_resource,
                       "incomplete": False}}


def self_review(user: User) -> Obj:
    """A SelfSubjectReview answered (``kubectl auth whoami``)."""
    return {"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"creationTimestamp": None}, "status": {"userInfo": user.info()}}


#: the shortest and the default life of a requested token (kube-apiserver's)
TOKEN_MIN_SECONDS = 600
TOKEN_DEFAULT_SECONDS = 3600
#: the longest we give (a year; kube-apiserver's --service-account-max-token-expiration
#: is unset by default)
TOKEN_MAX_SECONDS = 365 * 24 * 3600


def token_request(tokens: Tokens, store: Store, namespace: str, name: str, body: Any
                  ) -> Obj:
    """A TokenRequest answered (``kubectl create token``): a new token of the
    service account, which must exist."""
    if store.get("/serviceaccounts", namespace, name) is None:
        raise not_found("serviceaccounts", name)
    spec = _spec(body if body is not None else {}, "TokenRequest")
    seconds = spec.get("expirationSeconds", TOKEN_DEFAULT_SECONDS)
    if seconds is None:
        seconds = TOKEN_DEFAULT_SECONDS
    if not isinstance(seconds, int) or isinstance(seconds, bool):
        raise ApiError(422, "TokenRequest.authentication.k8s.io \"\" is invalid:"
                            " spec.expirationSeconds: Invalid value: must be an integer")
    if seconds < TOKEN_MIN_SECONDS:
        raise ApiError(422, "TokenRequest.authentication.k8s.io \"\" is invalid:"
                            f" spec.expirationSeconds: Invalid value: {seconds}: may not"
                            " specify a duration less than 10 minutes")
    seconds = min(seconds, TOKEN_MAX_SECONDS)
    audiences = _strings(spec.get("audiences"))
    token = new_token()
    expires = time.time() + seconds
    tokens.add(token, service_account(namespace, name), expires)
    return {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1",
            "metadata": {"name": name, "namespace": namespace,
                         "creationTimestamp": rfc3339()},
            "spec": {"audiences": audiences, "expirationSeconds": seconds,
                     "boundObjectRef": spec.get("boundObjectRef")},
            "status": {"token": token, "expirationTimestamp": rfc3339(expires)}}


#: the review resources: (group, version, plural) -> what answers them
REVIEWS = {
    ("authorization.k8s.io", "v1", "selfsubjectaccessreviews"): access_review,
    ("authorization.k8s.io", "v1", "selfsubjectrulesreviews"): rules_review,
}
SELF_REVIEW = ("authentication.k8s.io", "v1", "selfsubjectreviews")
