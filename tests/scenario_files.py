"""Scenario files written and read back, for tests of what a file's fields become."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from leasehold.api.scenario import Scenario, ScenarioError, load_scenario


def load(tmp_path: Path, data: dict[str, Any]) -> Scenario:
    """``data`` written as a scenario file under ``tmp_path`` and loaded."""
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return load_scenario(path)


def problems(tmp_path: Path, data: dict[str, Any]) -> list[str]:
    """What loading ``data`` refuses, one line per problem, without the file's name."""
    with pytest.raises(ScenarioError) as excinfo:
        load(tmp_path, data)
    return [p.split(": ", 1)[1] for p in excinfo.value.problems]
