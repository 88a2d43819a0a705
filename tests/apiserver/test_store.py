"""The store: what survives a restart, and watch history with compaction."""

from __future__ import annotations

import pytest

from leasehold_emulator.apiserver.store import Gone, Store


def obj(name, **extra):
    return {"metadata": {"name": name, "namespace": "ns"}, **extra}


def test_objects_and_the_counter_survive_a_restart(tmp_path):
    store = Store(tmp_path / "s.db")
    store.write("/pods", obj("a", spec={"x": 1}), "ADDED")
    store.write("/pods", obj("b"), "ADDED")
    store.remove("/pods", obj("b"))
    store.close()
    again = Store(tmp_path / "s.db")
    assert again.rv == 3
    assert [o["metadata"]["name"] for o in again.items("/pods")] == ["a"]
    assert again.get("/pods", "ns", "a")["metadata"]["resourceVersion"] == "1"
    assert [(c.rv, c.kind) for c in again.changes_since(1)] == [(2, "ADDED"), (3, "DELETED")]


def test_old_versions_are_compacted_and_gone(tmp_path):
    store = Store(tmp_path / "s.db", history=10)
    for i in range(25):
        store.write("/cm", obj(f"o{i}"), "ADDED")
    assert [c.rv for c in store.changes_since(20)] == [21, 22, 23, 24, 25]
    assert len(store.changes_since(15)) == 10
    with pytest.raises(Gone):
        store.changes_since(14)
    store.close()
    again = Store(tmp_path / "s.db", history=10)
    assert [c.rv for c in again.changes_since(20)] == [21, 22, 23, 24, 25]
    with pytest.raises(Gone):
        again.changes_since(14)


def test_listeners_see_every_change_in_order():
    store = Store()
    seen = []
    store.listeners.add(lambda change: seen.append((change[0], change[2])))
    store.write("/cm", obj("a"), "ADDED")
    store.write("/cm", obj("a"), "MODIFIED")
    store.remove("/cm", obj("a"))
    assert seen == [(1, "ADDED"), (2, "MODIFIED"), (3, "DELETED")]


def test_events_go_their_time_to_live_after_their_last_write(monkeypatch):
    """As kube-apiserver's --event-ttl: an event is removed (a DELETED change, as a
    watcher sees it) once the TTL has passed since it was last written; other kinds
    stay; a rewrite starts the TTL again."""
    clock = [100.0]
    monkeypatch.setattr("time.monotonic", lambda: clock[0])
    store = Store()
    store.ttl["/events"] = 60.0
    seen: list[tuple[str, str]] = []
    store.listeners.add(lambda change: seen.append((change[2], change[3]["metadata"]["name"])))
    store.write("/events", obj("old"), "ADDED")
    store.write("/pods", obj("pod"), "ADDED")
    clock[0] = 130.0
    store.write("/events", obj("new"), "ADDED")
    clock[0] = 159.0
    assert store.expire() == 0
    clock[0] = 165.0
    store.write("/events", obj("new"), "MODIFIED")  # counted again from here
    assert store.expire() == 1
    assert [o["metadata"]["name"] for o in store.items("/events")] == ["new"]
    clock[0] = 224.0
    assert store.expire() == 0
    clock[0] = 225.0
    assert store.expire() == 1 and store.items("/events") == []
    assert [o["metadata"]["name"] for o in store.items("/pods")] == ["pod"]
    assert [x for x in seen if x[0] == "DELETED"] == [("DELETED", "old"), ("DELETED", "new")]
