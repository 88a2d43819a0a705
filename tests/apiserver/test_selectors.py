"""Label and field selectors with the real server's syntax."""

from __future__ import annotations

import pytest

from leasehold_emulator.apiserver.selectors import SelectorError, field_selector, label_selector

OBJ = {"metadata": {"name": "p", "namespace": "ns", "labels": {"app": "web", "tier": "1"}},
       "spec": {"nodeName": "n1"}, "status": {"phase": "Running"}}


@pytest.mark.parametrize(("selector", "matches"), [
    ("", True), ("app=web", True), ("app==web", True), ("app!=web", False),
    ("app=db", False), ("app in (db, web)", True), ("app notin (web)", False),
    ("tier", True), ("!tier", False), ("!zone", True), ("app=web,tier=2", False),
    ("app in (web),tier notin (2, 3)", True), ("zone!=a", True),
])
def test_label_selectors(selector, matches):
    assert label_selector(selector)(OBJ) is matches


@pytest.mark.parametrize(("selector", "kind", "matches"), [
    ("metadata.name=p", "Pod", True), ("metadata.namespace!=ns", "Pod", False),
    ("spec.nodeName=n1,status.phase=Running", "Pod", True),
    ("spec.nodeName=", "Pod", False), ("status.phase!=Pending", "Pod", True),
])
def test_field_selectors(selector, kind, matches):
    assert field_selector(selector, kind)(OBJ) is matches


@pytest.mark.parametrize(("selector", "kind", "message"), [
    ("spec.nodeName=n1", "ConfigMap", 'field label not supported: "spec.nodeName"'),
    ("metadata.name", "Pod", "invalid field selector"),
])
def test_bad_field_selectors_are_refused(selector, kind, message):
    with pytest.raises(SelectorError, match=message):
        field_selector(selector, kind)


@pytest.mark.parametrize("selector", ["app in web", "!app in (x)", "a b"])
def test_bad_label_selectors_are_refused(selector):
    with pytest.raises(SelectorError, match="unable to parse requirement"):
        label_selector(selector)
