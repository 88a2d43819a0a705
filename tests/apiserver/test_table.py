"""What `kubectl get` prints: ages and printer-column paths, as the real server
computes them."""

from __future__ import annotations

import pytest

from leasehold.api.clock import epoch
from leasehold_emulator.apiserver.table import age, json_path


@pytest.mark.parametrize(("seconds", "shown"), [
    (0, "0s"), (45, "45s"), (119, "119s"), (200, "3m20s"), (300, "5m"), (1500, "25m"),
    (4 * 3600 + 120, "4h2m"), (5 * 3600, "5h"), (30 * 3600, "30h"), (3 * 86400 + 3600, "3d1h"),
    (400 * 86400, "400d"), (800 * 86400, "2y70d"), (-5, "0s"),
])
def test_ages_read_as_the_real_server_writes_them(seconds, shown):
    assert age("2026-11-22T00:00:00Z", epoch("2026-11-22T00:00:00Z") + seconds) == shown
    assert age(None) == "<unknown>" and age("yesterday") == "<invalid>"


@pytest.mark.parametrize(("path", "want"), [
    (".spec.size", 3), ("{.spec.size}", 3), (".status.conditions[1].type", "Ready"),
    ('.status.conditions[?(@.type=="Ready")].status', "True"),
    (".status.missing", None), (".spec.size.deeper", None), (".status.conditions[5]", None),
])
def test_printer_column_paths(path, want):
    obj = {"spec": {"size": 3}, "status": {"conditions": [
        {"type": "Scheduled", "status": "True"}, {"type": "Ready", "status": "True"}]}}
    assert json_path(obj, path) == want
