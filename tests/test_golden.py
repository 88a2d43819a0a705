"""The golden outputs (tools/golden.py): every recorded schedule is produced again,
byte for byte. They were recorded before the core was recomposed (issue 15); a change
that alters any of them must say why and record them anew (`python tools/golden.py
write CASE`)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parents[1] / "tools" / "golden.py"


def _load():
    spec = importlib.util.spec_from_file_location("golden", TOOL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["golden"] = module  # dataclasses resolve the module's annotations
    spec.loader.exec_module(module)
    return module


golden = _load()
CASES = golden.cases()


def test_every_case_has_a_recording():
    missing = [c.name for c in CASES if not c.path.exists()]
    assert missing == []
    # and no recording is left without its case
    names = {c.path.name for c in CASES}
    assert sorted(p.name for p in golden.GOLDEN.glob("*.gz") if p.name not in names) == []


@pytest.fixture(scope="module")
def scratch():
    with golden.scratch_dir() as d:
        yield d


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_output_is_unchanged(case, scratch):
    try:
        got = case.run(scratch)
    except golden.Missing as exc:
        pytest.skip(str(exc))
    want = golden.read(case)
    assert got == want, golden.first_difference(want, got)
