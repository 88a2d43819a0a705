"""The README's tour, the chart's README and its NOTES, pasted as written: every shell
command of theirs is run through bash, in order, against `leasehold up`, and must
succeed the first time (no retries). Also the steps `leasehold up` prints and
docs/operator.md's first block (the cluster and the operator started with `&`). And
no doc or hint lists leasehold's Leases as a bare `lease`, which is the built-in
coordination Lease.

The few commands not run, and the few paths put in place of the docs' own, are listed
below with why."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from emulated import KUBECTL, until
from operated import free_port

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
CHART = ROOT / "charts" / "leasehold"
BIN = Path(sys.executable).parent
HELM = shutil.which("helm") or shutil.which(str(BIN / "helm"))
SHARED = Path(os.environ.get("LEASEHOLD_SHARED_DATA", ROOT.parent / "shared" / "data"))

#: commands of the tour not run here (by how they begin), each with why
NOT_RUN = {
    "make demo": "about 3 minutes: four policies, each on a cluster of its own; its parts"
                 " (the cluster, the operator, the testbed) are what the tour's cluster"
                 " blocks run here",
}
#: commands of the NOTES not run here (by what they contain), each with why
NOTES_NOT_RUN = {
    "/proxy/metrics": "the metrics Service's endpoint is the chart's operator pod, and"
                      " the emulated cluster runs no containers (tests/charts/"
                      "test_install.py runs that operator as a process and scrapes it)",
    "port-forward": "the same: no pod to forward to",
}
#: the NOTES' placeholders, filled as a user would: a node of theirs (not an emulated
#: one, which its NodePool labels), the chart where they have it
PLACEHOLDERS = {"<node>": "node-1", "<chart>": "charts/leasehold"}
NODE = {"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "node-1", "labels": {"kubernetes.io/hostname": "node-1"}}}
#: the testbed's Leases: what `kubectl apply -f examples/testbed/` must have created
TESTBED_LEASES = {f"lease-{i}" for i in range(1, 8)}


def substituted(command: str, data: Path) -> str:
    """What is the user's in a command, put where this test has it: the data directory
    (a real /tmp/lh is left alone), the virtualenv (this test's: the checkout's .venv
    under `make test`), the workload traces (LEASEHOLD_SHARED_DATA), and the metrics
    port of `leasehold up` and `leasehold operator` (their default, 8080, may be another
    program's on the machine running the tests: a free one; a port the command names
    still wins, given later)."""
    command = (command.replace("/tmp/lh", str(data))
               .replace(".venv/bin/", f"{BIN}/")
               .replace("../shared/data/", f"{SHARED}/"))
    return re.sub(r"\bleasehold (up|operator)\b",
                  lambda m: f"{m.group(0)} --metrics-port {free_port()}", command)


def section(text: str, heading: str) -> str:
    """The text under the Markdown heading ``## heading``, up to the next ``## ``."""
    start = text.index(f"## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else None]


def fenced(text: str, lang: str = "sh") -> list[str]:
    """The contents of the ```lang fences, indented fences (in list items) included."""
    blocks = []
    for m in re.finditer(rf"^( *)```{lang}\n(.*?)^\1```$", text, re.M | re.S):
        indent = len(m.group(1))
        blocks.append("".join(line[indent:] for line in m.group(2).splitlines(True)))
    return blocks


def complete(text: str) -> bool:
    """Whether bash takes ``text`` for whole commands: no open quote, no line continued,
    no here-document waiting for its end marker."""
    if text.rstrip("\n").endswith("\\"):
        return False
    r = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True,
                       timeout=10)
    # "unexpected EOF while looking for matching `''", "syntax error: unexpected end of
    # file" (an open `if`, `(`), "here-document ... delimited by end-of-file"
    return not re.search(r"unexpected (EOF|end of file)|here-document", r.stderr)


def commands(lines: list[str], starts: re.Pattern[str] | None = None) -> list[str]:
    """The commands of ``lines`` as bash would read them, one per entry; blank and
    comment lines between them skipped. With ``starts``, only lines it matches begin a
    command (the NOTES' indented ones: the rest is prose)."""
    out: list[str] = []
    current: list[str] = []
    for line in lines:
        if not current:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if starts is not None and not starts.match(line):
                continue
        current.append(line)
        if complete("\n".join(current) + "\n"):
            out.append("\n".join(current))
            current = []
    assert not current, "a command never ends (an open quote, a continued line or a" \
        f" here-document whose end marker is not alone on its line):\n{chr(10).join(current)}"
    return out


#: a kubectl verb that names a resource type, and what follows it on the line up to
#: the end of the command (a quote, a comment, a pipe, a separator)
KUBECTL_RESOURCE = re.compile(
    r"\bkubectl\s+(?:get|describe|delete|edit|patch|label|annotate|wait|explain)\b"
    r"(?P<rest>[^`'\"#;|&\n]*)")


def bare_leases(line: str) -> list[str]:
    """The kubectl commands of ``line`` that name a bare ``lease``/``leases`` (the
    built-in coordination Lease), not ``lhl`` or ``leases.leasehold.io``."""
    found = []
    for m in KUBECTL_RESOURCE.finditer(line):
        words = [w for w in m.group("rest").split() if not w.startswith("-")]
        for word in words:
            for name in word.split(","):
                if name.split("/")[0] in ("lease", "leases"):
                    found.append(m.group(0).strip())
    return found


@pytest.mark.parametrize("line, bare", [
    ("kubectl get lease", True),
    ("kubectl get leases -A", True),
    ("kubectl get -n lab leases", True),
    ("kubectl describe lease/lease-1 -n lab", True),
    ("kubectl get pods,leases -A", True),
    ("(`kubectl describe lease`)", True),
    ('f"  kubectl get leases -A -w\\n"', True),
    ("kubectl get lhl -A", False),
    ("kubectl get leases.leasehold.io -A", False),
    ("kubectl get lease.leasehold.io lease-1 -n lab", False),
    ("kubectl apply -f examples/testbed/3-leases.yaml", False),
    ("kubectl get lhl -n lab lease-1", False),
    ("a bare `lease` names the built-in coordination Lease", False),
], ids=["get-lease", "get-leases", "flags-first", "describe-slash", "in-a-list", "in-prose",
        "in-python", "lhl", "full-name", "full-name-singular", "a-file", "a-lease-named",
        "prose"])
def test_a_bare_lease_is_found(line: str, bare: bool) -> None:
    assert bool(bare_leases(line)) == bare


#: where docs, hints and examples are: every text file under these
SCANNED = ("README.md", "Makefile", "docs", "charts", "examples", "operator", "emulator",
           "tools", "benchmarks", "grafana", "prometheus")
TEXT = {".md", ".txt", ".yaml", ".yml", ".tpl", ".py", ".json", ""}


def test_no_doc_or_hint_lists_leaseholds_leases_as_a_bare_lease() -> None:
    """`kubectl get lease` lists the built-in coordination Leases: docs, examples,
    the chart and the CLI's hints say `lhl` or `leases.leasehold.io`."""
    found = []
    for top in SCANNED:
        paths = [ROOT / top] if (ROOT / top).is_file() else sorted((ROOT / top).rglob("*"))
        for path in paths:
            if not path.is_file() or path.suffix not in TEXT or "__pycache__" in path.parts:
                continue
            for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                found += [f"{path.relative_to(ROOT)}:{n}: {c}" for c in bare_leases(line)]
    assert found == []


@dataclass
class Shell:
    """Commands run as a user pastes them into one terminal: each through bash, in the
    checkout, with what earlier ones exported; HOME empty (no ~/.kube/config to fall
    back on), no KUBECONFIG but what the commands (or ``env``) set."""

    home: Path
    env: dict[str, str] = field(default_factory=dict)
    exported: list[str] = field(default_factory=list)
    #: the commands started and left running (a foreground server, a watch)
    running: list[subprocess.Popen[str]] = field(default_factory=list)

    def environment(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "HELM_NAMESPACE")}
        return {**env, "HOME": str(self.home), "PATH": f"{BIN}{os.pathsep}{env['PATH']}",
                "KUBECTL_KUBERC": "false", **self.env}

    def script(self, command: str) -> list[str]:
        return ["bash", "-c", "\n".join([*self.exported, command])]

    def run(self, command: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        """``command``, which must succeed."""
        r = subprocess.run(self.script(command), cwd=ROOT, env=self.environment(),
                           capture_output=True, text=True, timeout=timeout)
        assert r.returncode == 0, f"`{command}` failed ({r.returncode}):\n" \
            f"{r.stdout[-3000:]}\n{r.stderr[-3000:]}"
        if command.lstrip().startswith("export "):
            self.exported.append(command)
        return r

    def start(self, command: str, out: Path, ready: str | None, timeout: float = 60) -> str:
        """``command``, which runs until stopped, left running once its output (to
        ``out``) says ``ready`` (None: at once, as bash leaves a ``command &``); its
        output so far."""
        with out.open("w") as sink:
            proc = subprocess.Popen(self.script(command), cwd=ROOT, env=self.environment(),
                                    stdout=sink, stderr=subprocess.STDOUT, text=True,
                                    start_new_session=True)  # its own group: stopped whole
        self.running.append(proc)
        if ready is None:
            return ""

        def said() -> bool:
            """the command says it is ready (and still runs)"""
            assert proc.poll() is None, f"`{command}` stopped ({proc.returncode}):\n" \
                f"{out.read_text()[-3000:]}"
            return ready in out.read_text()
        until(said, timeout, 0.1, lambda: out.read_text()[-3000:])
        return out.read_text()

    def stop(self) -> None:
        """SIGTERM to each started command's process group (a ``command &``'s outlives
        the bash that started it, and ignores SIGINT as bash's background jobs do),
        SIGKILL to what is left after 30 s."""
        def gone(group: int) -> bool:
            """the process group is gone"""
            try:
                os.killpg(group, 0)
            except ProcessLookupError:
                return True
            return False
        for proc in reversed(self.running):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=30)
            try:
                until(functools.partial(gone, proc.pid), 30, 0.1)
            except AssertionError:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
            if proc.poll() is None:
                proc.wait(timeout=10)
        self.running.clear()

    def leases(self) -> set[str]:
        r = self.run("kubectl get lhl -A -o json")
        return {x["metadata"]["name"] for x in json.loads(r.stdout)["items"]}


@pytest.fixture
def shell(tmp_path: Path) -> Iterator[Shell]:
    if KUBECTL is None:
        pytest.skip("kubectl is not installed (apt-get install kubectl)")
    (tmp_path / "home").mkdir()
    s = Shell(tmp_path / "home")
    try:
        yield s
    finally:
        s.stop()


def run_or_start(shell: Shell, command: str, data: Path) -> str:
    """One pasted command: a foreground server or a watch is started and left running
    once it shows it works, a ``command &`` started and left; any other must end with
    success. Its output."""
    out = data.parent / f"started-{len(shell.running)}.out"
    if re.search(r"&\s*(#.*)?$", command):
        return shell.start(command, out, None)
    if re.search(r"\bleasehold up\b", command):
        return shell.start(command, out, "Ctrl-C stops everything.")
    if re.search(r"\bkubectl get\b.* (-w|--watch)\b", command):
        return shell.start(command, out, "NAME")
    return shell.run(command).stdout


def test_the_readme_tour_runs_as_written_against_leasehold_up(shell: Shell,
                                                              tmp_path: Path) -> None:
    tour = section(README.read_text(), "Five-minute tour")
    pasted = [c for block in fenced(tour) for c in commands(block.splitlines())]
    up = next((i for i, c in enumerate(pasted) if re.search(r"\bleasehold up\b", c)), None)
    assert up is not None, "the tour starts no `leasehold up`"
    assert any(c.startswith("kubectl ") for c in pasted[up + 1:]), \
        "the tour's cluster part is no command to paste (a comment?)"
    not_run = dict(NOT_RUN)
    if not (SHARED / "SDSC-BLUE-haizea-30days.swf.gz").exists():
        not_run[".venv/bin/leasehold swf ../shared/"] = \
            f"the workload traces are not in {SHARED} (set LEASEHOLD_SHARED_DATA)"
    data = tmp_path / "lh"
    printed = ""
    for command in pasted:
        if any(command.startswith(prefix) for prefix in not_run):
            continue
        out = run_or_start(shell, substituted(command, data), data)
        if re.search(r"\bleasehold up\b", command):
            printed = out
    assert shell.leases() == TESTBED_LEASES
    # and the next steps `leasehold up` printed, as printed
    hints = printed.partition("\nnext:\n")[2].partition("Ctrl-C stops everything.")[0]
    steps = commands(hints.splitlines())
    assert any("kubectl apply -f examples/testbed/" in s for s in steps), printed
    assert [s for step in steps for s in bare_leases(step)] == []
    for step in steps:
        run_or_start(shell, step, data)


def test_the_operators_first_steps_run_as_written(shell: Shell, tmp_path: Path) -> None:
    """docs/operator.md's first block: the emulated cluster and the operator started
    in the background (`&`), kubectl on them."""
    doc = (ROOT / "docs" / "operator.md").read_text()
    pasted = commands(fenced(doc)[0].splitlines())
    assert any(c.startswith("leasehold operator ") for c in pasted), pasted
    data = tmp_path / "lh"
    for command in pasted:
        run_or_start(shell, substituted(command, data), data)
    assert shell.leases() == TESTBED_LEASES


@pytest.mark.parametrize("install", ["readme", "defaults"])
def test_the_charts_readme_and_notes_run_as_written_against_leasehold_up(
        shell: Shell, tmp_path: Path, install: str) -> None:
    """``readme``: the chart README's blocks, then the NOTES its `helm install` printed;
    ``defaults``: the NOTES of an install with the default values (no local namespace
    yet: they say how to name one)."""
    if HELM is None:
        pytest.skip("helm is not installed (`make helm` puts one in .venv/bin)")
    data = tmp_path / "lh"
    shell.start(f"{BIN}/leasehold up --port 0 --data {data} --time-scale 60 --metrics-port"
                f" {free_port()}",
                tmp_path / "up.out", "Ctrl-C stops everything.")
    # the chart's README and NOTES are for a cluster one has: this one
    shell.env["KUBECONFIG"] = str(data / "kubeconfig")
    shell.run(f"kubectl apply -f - <<'EOF'\n{json.dumps(NODE)}\nEOF")
    if install == "readme":
        readme = (CHART / "README.md").read_text()
        pasted = [c for block in fenced(readme) for c in commands(block.splitlines())]
        assert pasted[0].startswith("helm install ")
        notes = ""
        for command in pasted:
            out = shell.run(command).stdout
            if command.startswith("helm install "):
                notes = out.partition("\nNOTES:\n")[2]
        assert shell.leases() == TESTBED_LEASES
    else:
        out = shell.run("helm install leasehold charts/leasehold -n leasehold"
                        " --create-namespace").stdout
        notes = out.partition("\nNOTES:\n")[2]
    assert notes, "helm install printed no NOTES"
    steps = commands(notes.splitlines(), starts=re.compile(r" {5}\S"))
    assert any(s.strip().startswith("kubectl apply") for s in steps), notes
    ran = []
    for step in steps:
        if any(part in step for part in NOTES_NOT_RUN):
            continue
        for placeholder, value in PLACEHOLDERS.items():
            step = step.replace(placeholder, value)
        assert not re.search(r"<[a-z][a-z-]*>", step), f"a placeholder left unfilled: {step}"
        shell.run(step)
        ran.append(step.strip())
    assert shell.leases() == TESTBED_LEASES
    if install == "defaults":
        assert any(s.startswith("helm upgrade leasehold charts/leasehold") for s in ran), ran
