"""The operator's ``suspension`` setting (issue 22 item 6): ``--config``'s key and the
``--suspension`` flag reach the core's configuration; a bad value is one clear line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from leasehold.core.model import SUSPENSION_NAMES, SchedulerConfig

ROOT = Path(__file__).resolve().parents[1]


def _leasehold(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "leasehold.cli", *args], capture_output=True,
                          text=True, cwd=ROOT, env=dict(os.environ), timeout=120)


def _operator_args(*argv: str):
    from leasehold.cli import build_parser
    return build_parser().parse_args(["operator", *argv])


@pytest.mark.parametrize("name", SUSPENSION_NAMES)
@pytest.mark.parametrize(("config", "argv"), [
    pytest.param("suspension: {name}\n", [], id="in-the-file"),
    pytest.param("suspension: {other}\n", ["--suspension", "{name}"], id="the-flag-wins"),
    pytest.param("policy: mov\n", ["--suspension", "{name}"], id="the-flag-alone"),
])
def test_the_operator_reads_its_suspension_setting(tmp_path, name, config, argv):
    from leasehold.cli import operator_config
    other = next(n for n in SUSPENSION_NAMES if n != name)
    path = tmp_path / "config.yaml"
    path.write_text(config.format(name=name, other=other))
    argv = [a.format(name=name) for a in argv]
    assert operator_config(_operator_args("--config", str(path), *argv)).suspension == name


def test_the_operators_suspension_is_all_without_a_config():
    from leasehold.cli import operator_config
    assert operator_config(_operator_args()).suspension == SchedulerConfig().suspension \
        == "all"


@pytest.mark.parametrize(("text", "message"), [
    ("suspension: some\n", 'suspension: unknown suspension "some"; expected one of all, none'),
    ("suspension: [none]\n", "suspension: must be one of all, none, got a list"),
    ("suspension: false\n", "suspension: must be one of all, none"),
], ids=["unknown-value", "a-list", "a-boolean"])
def test_a_bad_suspension_in_the_config_is_one_clear_line(tmp_path, text, message):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    r = _leasehold("operator", "--config", str(path))
    assert r.returncode == 2 and message in r.stderr and str(path) in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.splitlines()) == 1, r.stderr


def test_a_bad_suspension_flag_names_the_choices():
    r = _leasehold("operator", "--suspension", "some")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "--suspension: invalid choice: 'some' (choose from 'all', 'none')" in r.stderr \
        or "--suspension: invalid choice: 'some' (choose from all, none)" in r.stderr, r.stderr
