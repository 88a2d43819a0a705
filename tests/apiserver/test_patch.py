"""The four patch types, case by case (RFC 7386 and RFC 6902 examples among them)."""

from __future__ import annotations

import pytest

from leasehold_emulator.apiserver.patch import (
    PatchError,
    apply,
    fields_of,
    json_patch,
    merge_patch,
    strategic_merge,
)


@pytest.mark.parametrize(("target", "patch", "want"), [
    # RFC 7386 appendix A, a selection
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
])
def test_merge_patch(target, patch, want):
    assert merge_patch(target, patch) == want


@pytest.mark.parametrize(("doc", "ops", "want"), [
    ({"a": 1}, [{"op": "add", "path": "/b", "value": 2}], {"a": 1, "b": 2}),
    ({"l": [1, 3]}, [{"op": "add", "path": "/l/1", "value": 2}], {"l": [1, 2, 3]}),
    ({"l": [1]}, [{"op": "add", "path": "/l/-", "value": 2}], {"l": [1, 2]}),
    ({"a": 1, "b": 2}, [{"op": "remove", "path": "/a"}], {"b": 2}),
    ({"a": 1}, [{"op": "replace", "path": "/a", "value": 5}], {"a": 5}),
    ({"a": {"x": 1}}, [{"op": "move", "from": "/a/x", "path": "/y"}], {"a": {}, "y": 1}),
    ({"a": [1]}, [{"op": "copy", "from": "/a", "path": "/b"}], {"a": [1], "b": [1]}),
    ({"m/k": 1}, [{"op": "replace", "path": "/m~1k", "value": 2}], {"m/k": 2}),
    ({"a": 1}, [{"op": "test", "path": "/a", "value": 1},
                {"op": "replace", "path": "/a", "value": 2}], {"a": 2}),
])
def test_json_patch(doc, ops, want):
    before = repr(doc)
    assert json_patch(doc, ops) == want
    assert repr(doc) == before  # the stored object is never changed in place


@pytest.mark.parametrize(("ops", "message", "test_failed"), [
    ([{"op": "test", "path": "/a", "value": 2}], "testing value /a failed", True),
    ([{"op": "test", "path": "/missing", "value": 1}], "testing value /missing failed", True),
    ([{"op": "replace", "path": "/missing", "value": 1}], "missing path element", False),
    ([{"op": "remove", "path": "/l/5"}], "out of range", False),
    ([{"op": "jump", "path": "/a"}], "unknown op 'jump'", False),
    ([{"path": "/a"}], "needs 'op' and 'path'", False),
    ({"op": "add"}, "must be a list", False),
])
def test_a_bad_json_patch_says_why(ops, message, test_failed):
    with pytest.raises(PatchError, match=message) as info:
        json_patch({"a": 1, "l": []}, ops)
    assert info.value.test_failed is test_failed


def test_strategic_merge_merges_containers_and_env_by_name():
    pod = {"spec": {"containers": [
        {"name": "a", "image": "x", "env": [{"name": "A", "value": "1"}]},
        {"name": "b", "image": "y"}]}}
    patch = {"spec": {"containers": [{"name": "a", "env": [{"name": "B", "value": "2"}]},
                                     {"name": "b", "$patch": "delete"},
                                     {"name": "c", "image": "z"}]}}
    assert strategic_merge(pod, patch) == {"spec": {"containers": [
        {"name": "a", "image": "x", "env": [{"name": "A", "value": "1"},
                                            {"name": "B", "value": "2"}]},
        {"name": "c", "image": "z"}]}}


def test_strategic_merge_directives():
    obj = {"metadata": {"finalizers": ["a", "b"]}, "spec": {"args": ["x"], "m": {"k": 1}}}
    patch = {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]},
             "spec": {"args": ["y"], "m": {"$patch": "replace", "j": 2},
                      "$setElementOrder/args": ["y"]}}
    assert strategic_merge(obj, patch) == {
        "metadata": {"finalizers": ["b"]}, "spec": {"args": ["y"], "m": {"j": 2}}}


def test_server_side_apply_removes_only_what_the_manager_dropped():
    current = {"metadata": {"name": "w", "labels": {"mine": "1", "theirs": "2"}},
               "spec": {"a": 1, "b": 2}}
    first = {"metadata": {"name": "w", "labels": {"mine": "1"}}, "spec": {"a": 1}}
    second = {"metadata": {"name": "w"}, "spec": {"a": 3}}
    assert apply(current, second, fields_of(first)) == {
        "metadata": {"name": "w", "labels": {"theirs": "2"}}, "spec": {"a": 3, "b": 2}}
    assert fields_of(first) == {"f:metadata": {"f:name": {}, "f:labels": {"f:mine": {}}},
                                "f:spec": {"f:a": {}}}
