"""The preemption policies are declared once (leasehold.core.model), and everything
that names them reads that list: the scenario schema, the CLI, the chart's values
schema, the benchmarks and the docs. A policy added to the declaration and missing
anywhere here fails this test."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

from leasehold.api.scenario import ConfigSpec
from leasehold.cli import build_parser
from leasehold.core.model import POLICY_NAMES, PREEMPTION_POLICIES

ROOT = Path(__file__).resolve().parents[1]


def test_the_scenario_schema_offers_the_declared_policies():
    assert ConfigSpec.model_json_schema()["properties"]["policy"]["enum"] == list(POLICY_NAMES)


def test_the_chart_values_schema_offers_the_declared_policies():
    schema = json.loads((ROOT / "charts/leasehold/values.schema.json").read_text())
    assert schema["properties"]["scheduler"]["properties"]["policy"]["enum"] == list(POLICY_NAMES)


def _offered(argv: list[str]) -> list[str]:
    """The policies argparse offers when ``argv`` gives an unknown one."""
    err = io.StringIO()
    with pytest.raises(SystemExit), contextlib.redirect_stderr(err):
        build_parser().parse_args(argv)
    offered = re.search(r"invalid choice: 'bogus' \(choose from (.*)\)", err.getvalue())
    assert offered, err.getvalue()
    return re.findall(r"'([a-z-]+)'", offered.group(1))


@pytest.mark.parametrize("argv", [
    ["simulate", "s.yaml", "--policy", "bogus"],
    ["operator", "--policy", "bogus"],
    ["up", "--policy", "bogus"],
    ["demo", "--policies", "moml", "bogus"],
], ids=["simulate", "operator", "up", "demo"])
def test_every_command_that_takes_a_policy_offers_the_declared_ones(argv):
    assert _offered(argv) == list(POLICY_NAMES)


def test_the_docs_list_every_declared_policy():
    table = (ROOT / "docs/preemption.md").read_text().split("## Policies", 1)[1]
    rows = re.findall(r"^\| `([a-z-]+)`", table.split("\n\n## ", 1)[0], re.M)
    assert rows == list(POLICY_NAMES)
    scenarios = (ROOT / "docs/scenarios.md").read_text()
    assert f"policy: moml          # {' | '.join(POLICY_NAMES)}" in scenarios
    # the chart's values and their table name each one
    for path in ("charts/leasehold/values.yaml", "charts/leasehold/README.md"):
        line = next(x for x in (ROOT / path).read_text().splitlines()
                    if "Preemption policy:" in x)
        assert set(re.findall(r"[a-z]+(?:-[a-z]+)?", line.split(":", 1)[1])) >= set(
            POLICY_NAMES), path


def test_every_declared_policy_says_what_it_does():
    for policy in PREEMPTION_POLICIES:
        assert policy.summary and policy.name == policy.name.lower()
        assert (policy.order is not None) or not policy.threshold, policy.name
