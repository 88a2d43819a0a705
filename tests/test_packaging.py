"""What the distribution ships and needs: the wheel built from this checkout (as
operator/Dockerfile builds it), its requirements, its package data and its entry
points; and the operator and the CLI where the extras cannot be imported."""

from __future__ import annotations

import email.parser
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from leasehold.commands import extra_of, missing

ROOT = Path(__file__).resolve().parents[1]
TESTBED = ROOT / "examples" / "testbed"
PACKAGED = ROOT / "emulator" / "leasehold_emulator" / "data" / "testbed"
#: the operator's configuration for the testbed, and the package's copy
OPERATOR_CONFIG = ROOT / "examples" / "operator" / "testbed.yaml"
PACKAGED_CONFIG = ROOT / "emulator" / "leasehold_emulator" / "data" / "operator" / "testbed.yaml"
#: the modules of the extras (sim: scipy, matplotlib; emulator: cryptography, and
#: common-expression-language, whose module is ``cel``; export: kubernetes; dask: dask,
#: distributed)
EXTRAS = ("scipy", "matplotlib", "cryptography", "cel", "kubernetes", "dask", "distributed")
COMMANDS = ["simulate", "trace", "whatif", "swf", "operator", "up", "demo", "crds", "dashboards",
            "emulator", "workload", "experiment"]

#: Python code that makes the modules named in argv[1] (comma-separated) impossible
#: to import, as where their distributions are not installed: a meta path finder
#: ahead of all others raises ModuleNotFoundError for them. The rest of argv is the
#: program's.
BLOCK = """
import sys

class Blocked:
    def __init__(self, names):
        self.names = names

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Blocked(set(sys.argv.pop(1).split(","))))
"""


def without(modules: tuple[str, ...], code: str, *args: str, cwd: Path = ROOT
            ) -> subprocess.CompletedProcess[str]:
    """``code`` run by a Python that cannot import ``modules``."""
    return subprocess.run([sys.executable, "-c", BLOCK + code, ",".join(modules), *args],
                          capture_output=True, text=True, cwd=cwd, timeout=120)


def leasehold_without(modules: tuple[str, ...], *args: str) -> subprocess.CompletedProcess[str]:
    return without(modules, "from leasehold.cli import main; sys.exit(main(sys.argv[1:]))",
                   *args)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel of this checkout, built offline from a copy of its sources (so that
    the build writes nothing into the checkout)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for name in ("operator", "emulator"):
        shutil.copytree(ROOT / name, src / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                        "--no-build-isolation", "--wheel-dir", str(tmp / "dist"), str(src)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    [built] = (tmp / "dist").glob("leasehold-*.whl")
    return built


def dist_info(wheel: Path, name: str) -> str:
    with zipfile.ZipFile(wheel) as z:
        [path] = [n for n in z.namelist() if n.endswith(f".dist-info/{name}")]
        return z.read(path).decode()


def requirements(wheel: Path) -> dict[str, set[str]]:
    """Requirement names by extra ("" for the base requirements)."""
    metadata = email.parser.Parser().parsestr(dist_info(wheel, "METADATA"))
    out: dict[str, set[str]] = {}
    for line in metadata.get_all("Requires-Dist") or []:
        name = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", line)
        extra = re.search(r"extra\s*==\s*['\"]([^'\"]+)", line)
        assert name, line
        out.setdefault(extra[1] if extra else "", set()).add(name[1].lower())
    return out


def test_the_base_requirements_are_what_the_operator_needs(wheel):
    required = requirements(wheel)
    assert required[""] == {"pydantic", "pyyaml", "numpy", "aiohttp", "prometheus-client",
                            "kopf"}
    assert not required[""] & set(EXTRAS)
    assert required["sim"] == {"scipy", "matplotlib"}
    assert required["emulator"] == {"cryptography", "common-expression-language"}
    assert required["dask"] == {"dask", "distributed"}
    # `pip install -e '.[dev]'` (make test, make demo) brings both extras
    assert "leasehold" in required["dev"]


def test_the_wheel_registers_the_emulators_commands(wheel):
    text = dist_info(wheel, "entry_points.txt")
    section = text.split("[leasehold.commands]", 1)[1].split("\n[", 1)[0]
    points = dict(line.split(" = ") for line in section.strip().splitlines())
    assert points == {name: f"leasehold_emulator.commands:add_{name}"
                      for name in COMMANDS if name not in ("operator", "crds", "dashboards")}
    # and so does the installed checkout (pip install -e . after pyproject.toml changed)
    installed = {p.name: p.value for p in importlib.metadata.entry_points(
        group="leasehold.commands")}
    assert installed == points


def test_the_packaged_testbed_is_examples_testbed():
    """`make generate` copies examples/testbed/ and the operator's configuration for it
    into the package."""
    assert sorted(p.name for p in PACKAGED.glob("*.yaml")) == \
        sorted(p.name for p in TESTBED.glob("*.yaml"))
    for path in TESTBED.glob("*.yaml"):
        assert (PACKAGED / path.name).read_bytes() == path.read_bytes(), \
            f"{path.name} differs: make generate"
    assert PACKAGED_CONFIG.read_bytes() == OPERATOR_CONFIG.read_bytes(), \
        f"{PACKAGED_CONFIG.name} differs: make generate"


def test_the_demo_reads_its_testbed_where_the_wheel_is_installed(wheel, tmp_path):
    site = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                        "--no-index", "--target", str(site), str(wheel)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    code = ("import sys, leasehold_emulator.demo as demo\n"
            "print(demo.__file__)\n"
            "sys.stdout.write(demo.testbed('3-leases.yaml'))\n"
            "sys.stdout.write(demo.OPERATOR_CONFIG.read_text())\n")
    # away from the checkout, with the installed copy first on the path
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(site)}, timeout=60)
    assert r.returncode == 0, r.stderr
    where, _, text = r.stdout.partition("\n")
    assert Path(where).is_relative_to(site)
    assert text == (TESTBED / "3-leases.yaml").read_text() + OPERATOR_CONFIG.read_text()


def test_the_operator_imports_neither_the_emulator_nor_the_extras():
    loaded = "print(sorted(m.split('.')[0] for m in sys.modules if m.startswith(("\
             "'leasehold_emulator', 'scipy', 'matplotlib', 'cryptography', 'cel'))))\n"
    r = without(EXTRAS, "import leasehold.kube.handlers, leasehold.cli\n" + loaded
                + "leasehold.cli.build_parser()\n" + loaded)
    assert r.returncode == 0, r.stderr
    # the CLI's parser loads the emulator's commands (entry points), not their code
    assert r.stdout.splitlines() == ["[]", "['leasehold_emulator', 'leasehold_emulator']"]


def test_without_the_extras_every_command_is_listed_and_the_simulator_runs():
    r = leasehold_without(EXTRAS, "--help")
    assert r.returncode == 0, r.stderr
    listed = [line.split()[0] for line in r.stdout.split("COMMAND\n", 1)[1].splitlines()
              if line.startswith("    ") and not line.startswith("     ")]
    assert listed == COMMANDS
    r = leasehold_without(EXTRAS, "simulate", "examples/scenarios/backfilling.yaml",
                          "-o", "table")
    assert r.returncode == 0, r.stderr
    r = leasehold_without(EXTRAS, "operator", "--help")
    assert r.returncode == 0 and "--peering" in r.stdout


@pytest.mark.parametrize(("args", "extra", "missing"), [
    (["experiment", "run", "none.yaml"], "sim", "scipy, matplotlib"),
    (["emulator", "up", "--data", "{tmp}"], "emulator", "cryptography, cel"),
    (["emulator", "status", "--data", "{tmp}"], "emulator", "cryptography, cel"),
    (["up", "--data", "{tmp}"], "emulator", "cryptography, cel"),
    (["demo"], "emulator", "cryptography, cel"),
    (["trace", "export"], "export", "kubernetes"),
])
def test_a_command_whose_extra_is_missing_says_which_in_one_line(args, extra, missing,
                                                                 tmp_path):
    """Before it starts anything (the cluster of `up` and `demo` would be a child
    process, which would only fail later)."""
    r = leasehold_without(EXTRAS, *(a.format(tmp=tmp_path / "data") for a in args))
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.splitlines() == [
        f"error: leasehold {args[0]} needs the extra {extra!r} ({missing} cannot be"
        f" imported): pip install 'leasehold[{extra}]'"]
    assert not (tmp_path / "data").exists()


def test_experiments_on_dask_say_they_need_its_extra_in_one_line(tmp_path):
    """Only --cluster needs it: local processes stay the default."""
    spec = tmp_path / "e.yaml"
    spec.write_text("name: x\n")
    r = leasehold_without(("dask", "distributed"), "experiment", "run", str(spec),
                          "--cluster", "local:2")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.splitlines() == [
        "error: leasehold experiment run --cluster needs the extra 'dask' (dask, distributed"
        " cannot be imported): pip install 'leasehold[dask]'"]
    r = leasehold_without(("dask", "distributed"), "experiment", "run", str(spec))
    assert r.returncode == 2 and "workload: required field is missing" in r.stderr


@pytest.mark.parametrize("extra", ["sim", "emulator", "export", "dask"])
def test_where_an_extra_is_installed_nothing_of_it_is_missing(extra):
    """A distribution whose module has another name (common-expression-language is
    ``cel``) is found by its installed files, not guessed from its name."""
    assert importlib.metadata.requires("leasehold"), "the checkout is not installed"
    assert missing(extra) == []
    assert extra_of("cel.cel") == "emulator" and extra_of("scipy.stats") == "sim"
    assert extra_of("distributed.client") == "dask"


def test_the_emulated_nodes_need_no_extra(tmp_path):
    """`emulator nodes` is a client of any cluster: no certificates to make."""
    r = leasehold_without(EXTRAS, "emulator", "nodes", "--kubeconfig",
                          str(tmp_path / "missing"))
    assert r.returncode == 2
    assert r.stderr.splitlines() == [f"error: cannot read {tmp_path / 'missing'}:"
                                     " No such file or directory"]


def test_a_command_that_cannot_be_loaded_says_why_and_the_others_work():
    """Without the emulator package the operator's commands still run; each of the
    emulator's is listed and, run, says in one line why it cannot be."""
    r = leasehold_without(("leasehold_emulator",), "simulate", "x.yaml")
    assert r.returncode == 2
    assert r.stderr.splitlines() == [
        "error: leasehold simulate: cannot load leasehold_emulator.commands:add_simulate:"
        " No module named 'leasehold_emulator'"]
    r = leasehold_without(("leasehold_emulator",), "--help")
    # argparse pads the command names to the widest option (`-V, --version`)
    assert r.returncode == 0
    assert re.search(r"^ +demo +\(cannot be loaded: run it to see why\)$", r.stdout, re.M)
    r = leasehold_without(("leasehold_emulator",), "operator", "--help")
    assert r.returncode == 0 and "--peering" in r.stdout
