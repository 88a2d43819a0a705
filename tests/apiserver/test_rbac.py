"""Authentication and RBAC on the emulated server, as kube-apiserver does them: one
bearer token per subject (`leasehold emulator token`), the scheme in any case, the
token compared in constant time; Roles, ClusterRoles and their bindings enforced, a
403 saying who may not do what; `kubectl auth can-i` (and `--list`, `whoami`)."""

from __future__ import annotations

import pytest
import yaml

from emulated import Emulated

RBAC = "rbac.authorization.k8s.io/v1"


def role(kind: str, name: str, rules: list[dict], namespace: str | None = None) -> dict:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": RBAC, "kind": kind, "metadata": meta, "rules": rules}


def binding(kind: str, name: str, role_kind: str, role_name: str, subjects: list[dict],
            namespace: str | None = None) -> dict:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": RBAC, "kind": kind, "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind,
                        "name": role_name},
            "subjects": subjects}


def user(name: str) -> dict:
    return {"kind": "User", "name": name, "apiGroup": "rbac.authorization.k8s.io"}


NAMESPACES = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}
              for n in ("lab", "other", "ops")]
POLICY = [
    # alice: Leases in lab (a ClusterRole bound by a RoleBinding), no status
    role("ClusterRole", "tenant", [{"apiGroups": ["leasehold.io"], "resources": ["leases"],
                                    "verbs": ["create", "get", "list", "watch", "delete"]}]),
    binding("RoleBinding", "alice", "ClusterRole", "tenant", [user("alice")], "lab"),
    # bob: one named ConfigMap, and only its status-like subresources elsewhere
    role("Role", "one-config", [{"apiGroups": [""], "resources": ["configmaps"],
                                 "resourceNames": ["settings"], "verbs": ["get", "update"]}],
         "lab"),
    binding("RoleBinding", "bob", "Role", "one-config", [user("bob")], "lab"),
    role("ClusterRole", "statuses", [{"apiGroups": ["*"], "resources": ["*/status"],
                                      "verbs": ["patch"]}]),
    binding("ClusterRoleBinding", "bob-statuses", "ClusterRole", "statuses", [user("bob")]),
    # the group "ops": everything in everything (wildcards, a ClusterRoleBinding)
    role("ClusterRole", "all", [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]),
    binding("ClusterRoleBinding", "ops", "ClusterRole", "all",
            [{"kind": "Group", "name": "ops", "apiGroup": "rbac.authorization.k8s.io"}]),
    # a service account: node reads cluster-wide, and /metrics
    role("ClusterRole", "nodes-and-metrics", [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
        {"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]),
    binding("ClusterRoleBinding", "robot", "ClusterRole", "nodes-and-metrics",
            [{"kind": "ServiceAccount", "name": "robot", "namespace": "ops"}]),
    # a RoleBinding cannot grant what is cluster-scoped, even with a ClusterRole
    binding("RoleBinding", "carol", "ClusterRole", "nodes-and-metrics", [user("carol")], "lab"),
]


@pytest.fixture(scope="module")
def cluster(emulated: Emulated) -> Emulated:
    emulated.apply(*NAMESPACES)
    emulated.apply(*POLICY)
    return emulated


@pytest.fixture(scope="module")
def subjects(cluster: Emulated) -> dict[str, Emulated]:
    return {"alice": cluster.as_subject("--user", "alice"),
            "bob": cluster.as_subject("--user", "bob"),
            "carol": cluster.as_subject("--user", "carol"),
            "ops": cluster.as_subject("--user", "dave", "--group", "ops"),
            "robot": cluster.as_subject("--service-account", "ops/robot"),
            "admin": cluster}


# (subject, kubectl auth can-i arguments, allowed)
CAN_I = [
    ("alice", "create leases.leasehold.io -n lab", True),
    ("alice", "delete leases.leasehold.io/x -n lab", True),
    ("alice", "watch leases.leasehold.io -n lab", True),
    ("alice", "patch leases.leasehold.io --subresource=status -n lab", False),
    ("alice", "update leases.leasehold.io -n lab", False),
    ("alice", "create leases.leasehold.io -n other", False),
    ("alice", "list leases.leasehold.io -A", False),
    ("alice", "list pods -n lab", False),
    ("alice", "get /metrics", False),
    ("alice", "get /version", True),
    ("bob", "get configmaps/settings -n lab", True),
    ("bob", "update configmaps/settings -n lab", True),
    ("bob", "get configmaps/other -n lab", False),
    ("bob", "list configmaps -n lab", False),
    ("bob", "get configmaps/settings -n other", False),
    ("bob", "patch leases.leasehold.io --subresource=status -n other", True),
    ("bob", "patch pods --subresource=status -n lab", True),
    ("bob", "patch pods -n lab", False),
    ("carol", "list nodes", False),
    ("carol", "get /metrics", False),
    ("ops", "delete nodes/n1", True),
    ("ops", "create secrets -n kube-system", True),
    ("ops", "get /metrics", False),
    ("robot", "list nodes", True),
    ("robot", "get /metrics", True),
    ("robot", "delete nodes/n1", False),
    ("robot", "list pods -A", False),
    ("admin", "delete nodes/n1", True),
    ("admin", "get /anything", True),
]


@pytest.mark.parametrize("who,args,allowed", CAN_I,
                         ids=[f"{w}: {a}" for w, a, _ in CAN_I])
def test_roles_and_bindings_decide_what_kubectl_auth_can_i_answers(subjects, who, args,
                                                                    allowed):
    r = subjects[who].kubectl("auth", "can-i", *args.split(), check=False)
    assert (r.stdout.strip(), r.returncode) == (("yes", 0) if allowed else ("no", 1)), \
        r.stderr


# (subject, what kubectl does, the error kube-apiserver would print)
REFUSED = [
    ("alice", "get pods -n lab",
     'pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the'
     ' namespace "lab"'),
    ("alice", "get lhl x -n other",
     'leases.leasehold.io "x" is forbidden: User "alice" cannot get resource "leases" in'
     ' API group "leasehold.io" in the namespace "other"'),
    ("alice", "get nodes",
     'nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the'
     ' cluster scope'),
    # kubectl patch reads the object first
    ("alice", "patch lhl x -n lab --subresource=status --type=merge -p {}",
     'leases.leasehold.io "x" is forbidden: User "alice" cannot get resource'
     ' "leases/status" in API group "leasehold.io" in the namespace "lab"'),
    ("alice", "get --raw /metrics", 'forbidden: User "alice" cannot get path "/metrics"'),
    ("robot", "delete node n1",
     'nodes "n1" is forbidden: User "system:serviceaccount:ops:robot" cannot delete resource'
     ' "nodes" in API group "" at the cluster scope'),
]


@pytest.mark.parametrize("who,args,message", REFUSED, ids=[f"{w}: {a}" for w, a, _ in REFUSED])
def test_a_refusal_is_a_403_saying_who_may_not_do_what(subjects, who, args, message):
    r = subjects[who].kubectl(*args.split(), check=False)
    assert r.returncode != 0
    assert f"Error from server (Forbidden): {message}" in r.stderr


def test_a_forbidden_status_is_kube_apiservers(subjects):
    code, body = subjects["alice"].request("GET", "/api/v1/namespaces/lab/secrets/s")
    assert code == 403
    assert body == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'secrets "s" is forbidden: User "alice" cannot get resource "secrets" in'
                   ' API group "" in the namespace "lab"',
        "reason": "Forbidden", "details": {"name": "s", "group": "", "kind": "secrets"},
        "code": 403}


def test_what_can_i_allows_is_done_and_what_it_refuses_is_not(subjects):
    alice = subjects["alice"]
    lease = {"apiVersion": "leasehold.io/v1alpha1", "kind": "Lease",
             "metadata": {"name": "mine", "namespace": "lab"},
             "spec": {"type": "BestEffortCancellable", "vms": 1, "duration": "10m",
                      "resources": {"cpu": 1, "memory": "256Mi"}}}
    alice.kubectl("create", "-f", "-", stdin=yaml.safe_dump(lease))
    assert alice.get("lhl", "-n", "lab", "mine")["metadata"]["name"] == "mine"
    refused = alice.kubectl("patch", "lhl", "mine", "-n", "lab", "--subresource=status",
                            "--type=merge", "-p", '{"status":{"submittedAt":1e9}}',
                            check=False)
    assert "(Forbidden)" in refused.stderr
    # counted as kube-apiserver counts refusals: apiserver_request_total{code="403"}
    assert subjects["admin"].requests()[("GET", "leasehold.io", "leases", "status", "403",
                                         "kubectl")] >= 1
    assert "submittedAt" not in subjects["admin"].get("lhl", "-n", "lab", "mine").get(
        "status", {})
    alice.kubectl("delete", "lhl", "mine", "-n", "lab", "--wait=false")


def test_can_i_list_shows_the_subjects_rules(subjects):
    out = subjects["alice"].kubectl("auth", "can-i", "--list", "-n", "lab").stdout
    rows = {line.split()[0]: line.split("]", 2)[-1].strip() for line in out.splitlines()[1:]
            if not line.startswith(" ")}
    assert rows["leases.leasehold.io"] == "[create get list watch delete]"
    assert "pods" not in rows
    elsewhere = subjects["alice"].kubectl("auth", "can-i", "--list", "-n", "other").stdout
    assert "leases.leasehold.io" not in elsewhere


@pytest.mark.parametrize("who,name,groups", [
    ("alice", "alice", ["system:authenticated"]),
    ("ops", "dave", ["ops", "system:authenticated"]),
    ("robot", "system:serviceaccount:ops:robot",
     ["system:serviceaccounts", "system:serviceaccounts:ops", "system:authenticated"]),
    ("admin", "kubernetes-admin", ["system:masters", "system:authenticated"]),
], ids=["user", "user with a group", "service account", "admin"])
def test_each_token_is_its_subject(subjects, who, name, groups):
    code, body = subjects[who].request(
        "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    assert code == 201
    assert body["status"]["userInfo"] == {"username": name, "uid": "", "groups": groups}
    assert f"Username    {name}" in subjects[who].kubectl("auth", "whoami").stdout


@pytest.mark.parametrize("header,code", [
    ("Bearer {token}", 200),
    ("bearer {token}", 200),
    ("BEARER {token}", 200),
    ("Bearer {token} trailing", 200),
    ("", 401),
    ("Bearer", 401),
    ("Bearer ", 401),
    ("Bearer {token}x", 401),
    ("Basic {token}", 401),
    ("Bearer ünïcödé", 401),
    ("Bearer  {token}", 401),
], ids=["Bearer", "bearer", "BEARER", "a third part ignored", "none", "no token",
        "empty token", "a longer token", "another scheme", "non-ASCII", "two spaces"])
def test_the_scheme_is_any_case_and_the_token_exact(cluster, header, code):
    sent = header.format(token=cluster.token())
    got, body = cluster.request("GET", "/api/v1/namespaces", token="",
                                headers={"Authorization": sent} if sent else {})
    assert got == code, body
    if code == 401:
        assert (body["reason"], body["code"]) == ("Unauthorized", 401)


def test_a_token_minted_while_the_server_runs_is_taken_at_once(cluster):
    erin = cluster.as_subject("--user", "erin")
    assert erin.request("GET", "/version")[0] == 200
    assert erin.request("GET", "/api/v1/namespaces")[0] == 403
    # what holds tokens is its owner's alone
    for path in (cluster.data / "tokens.csv", erin.kubeconfig):
        assert path.stat().st_mode & 0o777 == 0o600, path


@pytest.mark.parametrize("body,code", [
    ({}, 422),
    ({"spec": []}, 400),
    ([1], 400),
    ({"spec": {"resourceAttributes": {"verb": "get"}, "nonResourceAttributes": {}}}, 422),
    ({"spec": {"resourceAttributes": "pods"}}, 422),
    ({"spec": {"resourceAttributes": {"verb": 7}}}, 422),
], ids=["no spec", "spec not an object", "not an object", "both kinds", "not attributes",
        "a verb not a string"])
def test_a_malformed_access_review_is_a_4xx(subjects, body, code):
    got, status = subjects["alice"].request(
        "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body)
    assert (got, status["kind"]) == (code, "Status"), status


@pytest.mark.parametrize("args,error", [
    (["--user", "x", "--service-account", "a/b"], "not allowed with argument"),
    (["--service-account", "nobody"], "expected NAMESPACE/NAME"),
    (["--group", "g"], "one of the arguments --user --service-account is required"),
], ids=["both", "no namespace", "neither"])
def test_emulator_token_says_what_is_wrong(cluster, args, error):
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-m", "leasehold.cli", "emulator", "token", "--data",
                        str(cluster.data), *args], capture_output=True, text=True)
    assert r.returncode != 0 and error in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("create,can_i", [
    (["clusterrole", "frank-nodes", "--verb=get", "--resource=nodes"], ["get", "nodes/n1"]),
    (["role", "frank-maps", "-n", "lab", "--verb=list", "--resource=configmaps"],
     ["list", "configmaps", "-n", "lab"]),
], ids=["clusterrole and clusterrolebinding", "role and rolebinding"])
def test_kubectl_create_role_and_binding_grant_what_they_say(cluster, create, can_i):
    """`kubectl create role|rolebinding|...` (protobuf bodies, as the chart's README
    tells admins to bind the tenant role) are stored as written and enforced."""
    frank = cluster.as_subject("--user", "frank")
    assert frank.kubectl("auth", "can-i", *can_i, check=False).stdout.strip() == "no"
    cluster.kubectl("create", *create)
    kind, name = create[0], create[1]
    if kind == "clusterrole":
        cluster.kubectl("create", "clusterrolebinding", name, f"--clusterrole={name}",
                        "--user=frank")
    else:
        cluster.kubectl("create", "rolebinding", name, "-n", "lab", f"--role={name}",
                        "--user=frank")
    assert frank.kubectl("auth", "can-i", *can_i, check=False).stdout.strip() == "yes"


MALFORMED = [
    binding("ClusterRoleBinding", "bad-ref", "ClusterRole", "all", [user("gina")]) | {
        "roleRef": "all"},
    binding("ClusterRoleBinding", "bad-subjects", "ClusterRole", "all", []) | {
        "subjects": "gina"},
    binding("RoleBinding", "bad-subject", "ClusterRole", "all", [], "lab") | {
        "subjects": ["gina", {"kind": 7, "name": ["gina"]}]},
    role("ClusterRole", "bad-rules", [{"nonResourceURLs": ["/metrics"]}, "get",
                                      {"verbs": "get", "apiGroups": "", "resources": "pods",
                                       "resourceNames": "x"}]),
    binding("ClusterRoleBinding", "bad-rules", "ClusterRole", "bad-rules", [user("gina")]),
    role("Role", "no-rules", [], "lab") | {"rules": "everything"},
    binding("RoleBinding", "no-rules", "Role", "no-rules", [user("gina")], "lab"),
]


def test_malformed_roles_and_bindings_grant_nothing_and_break_nothing(cluster):
    """Roles and bindings are stored as written (the server checks no schema for
    them): one of the wrong shape grants nothing, and every other request is still
    answered, never with a 500."""
    cluster.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(MALFORMED))
    gina = cluster.as_subject("--user", "gina")
    for args in (["get", "pods", "-n", "lab"], ["get", "--raw", "/metrics"],
                 ["get", "pods/x", "-n", "lab"], ["get", "ns"]):
        r = gina.kubectl(*args, check=False)
        assert "(Forbidden)" in r.stderr, (args, r.stderr)
    listed = gina.kubectl("auth", "can-i", "--list", "-n", "lab")
    assert "pods" not in listed.stdout
    assert gina.kubectl("auth", "can-i", "get", "pods/x", "-n", "lab",
                        check=False).stdout.strip() == "no"
    cluster.kubectl("delete", "-f", "-", stdin=yaml.safe_dump_all(MALFORMED))


#: hank may manage RBAC objects in lab, and Leases there, not their status
HANK = [
    role("Role", "lab-admin", [
        {"apiGroups": ["rbac.authorization.k8s.io"],
         "resources": ["roles", "rolebindings"], "verbs": ["create", "update", "get"]},
        {"apiGroups": ["leasehold.io"], "resources": ["leases"], "verbs": ["*"]}], "lab"),
    binding("RoleBinding", "hank", "Role", "lab-admin", [user("hank")], "lab"),
    role("ClusterRole", "lease-writer", [
        {"apiGroups": ["leasehold.io"], "resources": ["leases", "leases/status"],
         "verbs": ["get", "patch"]}]),
    role("ClusterRole", "lease-reader", [
        {"apiGroups": ["leasehold.io"], "resources": ["leases"], "verbs": ["get", "list"]}]),
]
NOT_HELD = ('is attempting to grant RBAC permissions not currently held:\n'
            '{APIGroups:["leasehold.io"], Resources:["leases/status"], Verbs:["get" "patch"]}')
# (what hank writes in lab, the answer: None if allowed, else what the 403 says)
ESCALATIONS = [
    (binding("RoleBinding", "to-writer", "ClusterRole", "lease-writer", [user("hank")], "lab"),
     'rolebindings.rbac.authorization.k8s.io "to-writer" is forbidden: user "hank" (groups=['
     '"system:authenticated"]) ' + NOT_HELD),
    (role("Role", "writer", HANK[2]["rules"], "lab"),
     'roles.rbac.authorization.k8s.io "writer" is forbidden: user "hank" (groups=['
     '"system:authenticated"]) ' + NOT_HELD),
    (binding("RoleBinding", "to-reader", "ClusterRole", "lease-reader", [user("ivan")], "lab"),
     None),
    (role("Role", "reader", HANK[3]["rules"], "lab"), None),
]


@pytest.mark.parametrize("obj,refusal", ESCALATIONS, ids=[
    "a binding to a role with more", "a role with more", "a binding to a role held",
    "a role held"])
def test_no_one_grants_what_they_do_not_hold(cluster, obj, refusal):
    """kube-apiserver's escalation check: whoever may write roles and bindings may
    grant only what they hold themselves (or what `escalate` and `bind` allow)."""
    cluster.apply(*HANK)
    hank = cluster.as_subject("--user", "hank")
    try:
        r = hank.kubectl("create", "-f", "-", stdin=yaml.safe_dump(obj), check=False)
        if refusal is None:
            assert r.returncode == 0, r.stderr
        else:
            assert f"Error from server (Forbidden): error when creating \"STDIN\": {refusal}" \
                in r.stderr
            assert hank.kubectl("auth", "can-i", "patch", "leases.leasehold.io",
                                "--subresource=status", "-n", "lab",
                                check=False).stdout.strip() == "no"
    finally:
        cluster.kubectl("delete", "-f", "-", "--ignore-not-found", stdin=yaml.safe_dump(obj))


def test_bind_and_escalate_allow_what_is_not_held(cluster):
    cluster.apply(*HANK, role("ClusterRole", "binder", [
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"],
         "verbs": ["bind"], "resourceNames": ["lease-writer"]},
        {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"],
         "verbs": ["escalate"]}]),
        binding("RoleBinding", "hank-binds", "ClusterRole", "binder", [user("hank")], "lab"))
    hank = cluster.as_subject("--user", "hank")
    granted = [binding("RoleBinding", "to-writer", "ClusterRole", "lease-writer",
                       [user("ivan")], "lab"),
               role("Role", "writer", HANK[2]["rules"], "lab")]
    try:
        hank.kubectl("create", "-f", "-", stdin=yaml.safe_dump_all(granted))
    finally:
        cluster.kubectl("delete", "-f", "-", "--ignore-not-found",
                        stdin=yaml.safe_dump_all(granted))
        cluster.kubectl("delete", "rolebinding", "hank-binds", "-n", "lab")


def test_kubectl_create_token_gives_a_service_account_its_own_token(cluster):
    """The TokenRequest API (`kubectl create token`): a token for a service account
    that exists, as the admin (or whoever may create serviceaccounts/token) asks."""
    cluster.apply({"apiVersion": "v1", "kind": "ServiceAccount",
                   "metadata": {"name": "robot", "namespace": "ops"}})
    token = cluster.kubectl("create", "token", "robot", "-n", "ops", "--duration=15m"
                            ).stdout.strip()
    code, body = cluster.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                                 {"kind": "SelfSubjectReview"}, token=token)
    assert (code, body["status"]["userInfo"]["username"]) == (
        201, "system:serviceaccount:ops:robot")
    # its rights are the service account's: nodes, not pods
    assert cluster.request("GET", "/api/v1/nodes", token=token)[0] == 200
    assert cluster.request("GET", "/api/v1/pods", token=token)[0] == 403
    missing = cluster.kubectl("create", "token", "nobody", "-n", "ops", check=False)
    assert 'serviceaccounts "nobody" not found' in missing.stderr
    short = cluster.kubectl("create", "token", "robot", "-n", "ops", "--duration=1m",
                            check=False)
    assert "may not specify a duration less than 10 minutes" in short.stderr
    # and only whoever may create serviceaccounts/token gets one
    alice = cluster.as_subject("--user", "alice")
    refused = alice.kubectl("create", "token", "robot", "-n", "ops", check=False)
    assert 'cannot create resource "serviceaccounts/token"' in refused.stderr


def test_an_expired_token_is_refused(cluster):
    cluster.apply({"apiVersion": "v1", "kind": "ServiceAccount",
                   "metadata": {"name": "robot", "namespace": "ops"}})
    code, body = cluster.request(
        "POST", "/api/v1/namespaces/ops/serviceaccounts/robot/token",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
         "spec": {"expirationSeconds": 600}})
    assert code == 201, body
    token = body["status"]["token"]
    assert cluster.request("GET", "/api/v1/nodes", token=token)[0] == 200
    # the tokens file's fifth column is when a requested token expires: move it back
    path = cluster.data / "tokens.csv"
    lines = path.read_text().splitlines()
    lines = [line.rsplit(",", 1)[0] + ",1.0" if line.startswith(token) else line
             for line in lines]
    path.write_text("\n".join(lines) + "\n")
    assert cluster.request("GET", "/api/v1/nodes", token=token)[0] == 401
