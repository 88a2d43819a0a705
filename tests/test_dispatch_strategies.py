"""The dispatch strategies are declared once (leasehold.core.model), and what names
them reads that list: the scenario schema and the docs. A strategy added to the
declaration and missing here fails this test."""

from __future__ import annotations

import re
from pathlib import Path

from leasehold.api.scenario import ConfigSpec
from leasehold.core.model import DISPATCH_NAMES, DISPATCH_STRATEGIES

ROOT = Path(__file__).resolve().parents[1]


def test_the_scenario_schema_offers_the_declared_strategies():
    props = ConfigSpec.model_json_schema(by_alias=True)["properties"]
    assert props["dispatch"]["enum"] == list(DISPATCH_NAMES)
    assert props["dispatch"]["default"] == "earliest"


def test_the_docs_list_every_declared_strategy():
    text = (ROOT / "docs/dispatch.md").read_text()
    table = text.split("| strategy | what it does |", 1)[1].split("\n\n", 1)[0]
    assert [re.sub(r" \(default\)$", "", r) for r in re.findall(
        r"^\| `([a-z-]+)`(?: \(default\))?", table, re.M)] == list(DISPATCH_NAMES)
    for doc in (text, (ROOT / "docs/scenarios.md").read_text()):
        assert f"dispatch: {DISPATCH_NAMES[0]}" in doc or "dispatch: pap-rtdp" in doc
        assert " | ".join(DISPATCH_NAMES) in doc


def test_every_declared_strategy_says_what_it_does():
    for strategy in DISPATCH_STRATEGIES:
        assert strategy.summary and strategy.name == strategy.name.lower()
