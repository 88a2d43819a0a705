"""charts/leasehold's ``scheduler.suspension`` (issue 22 item 6) with a real helm: it
goes into the ConfigMap the operator reads, the values schema refuses what the core
does not have, and the values and their table say what each value does."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from leasehold.core.model import SUSPENSION_NAMES

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "leasehold"
HELM = shutil.which("helm") or shutil.which(str(Path(sys.executable).parent / "helm"))


def _helm(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    if HELM is None:
        pytest.skip("helm is not installed: `make helm` extracts it")
    r = subprocess.run([HELM, *args], capture_output=True, text=True, timeout=120)
    if check:
        assert r.returncode == 0, r.stdout + r.stderr
    return r


def _config(*values: str) -> dict[str, Any]:
    out = _helm("template", "lh", str(CHART), "--namespace", "leasehold", *values).stdout
    cm = next(d for d in yaml.safe_load_all(out) if d and d["kind"] == "ConfigMap"
              and d["metadata"]["name"] == "lh-leasehold-config")
    return cm["data"]["config.yaml"]


@pytest.mark.parametrize("values", [[], *(["--set", f"scheduler.suspension={name}"]
                                          for name in SUSPENSION_NAMES)],
                         ids=["default", *SUSPENSION_NAMES])
def test_the_suspension_setting_reaches_the_operator(tmp_path, values):
    from leasehold.cli import build_parser, operator_config
    text = _config(*values)
    want = values[1].split("=")[1] if values else "all"
    assert yaml.safe_load(text)["suspension"] == want
    path = tmp_path / "config.yaml"
    path.write_text(text)
    args = build_parser().parse_args(["operator", "--config", str(path)])
    assert operator_config(args).suspension == want


def test_the_values_offer_the_cores_suspension_settings():
    schema = json.loads((CHART / "values.schema.json").read_text())
    assert schema["properties"]["scheduler"]["properties"]["suspension"]["enum"] \
        == list(SUSPENSION_NAMES)
    assert yaml.safe_load((CHART / "values.yaml").read_text())["scheduler"]["suspension"] \
        == "all"
    for path in (CHART / "values.yaml", CHART / "README.md"):
        text = path.read_text()
        said = text[text.index("Suspension:"):].split(" |", 1)[0]
        assert "all" in said and "none" in said and "re-queued" in said, path


def test_a_bad_suspension_value_is_refused_with_the_field():
    r = _helm("template", "lh", str(CHART), "--set", "scheduler.suspension=some", check=False)
    assert r.returncode != 0 and "scheduler.suspension must be one of the following" \
        in r.stderr, r.stderr
