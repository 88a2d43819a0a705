"""Watch and list semantics over HTTP, in process (plain HTTP, no token): bookmarks,
timeouts, resuming, 410 after compaction, selectors, and paging."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import aiohttp

from leasehold_emulator.apiserver import server as apiserver
from leasehold_emulator.apiserver.server import serve
from leasehold_emulator.apiserver.store import Store

CMS = "/api/v1/namespaces/default/configmaps"


def run(test: Any, history: int = 10_000, bookmark_seconds: float = 30.0,
        store: Store | None = None) -> Any:
    async def main() -> Any:
        runner, server = await serve(store or Store(history=history), port=0,
                                     bookmark_seconds=bookmark_seconds)
        base = f"http://{server.address}"
        try:
            async with aiohttp.ClientSession(base) as session:
                return await test(session)
        finally:
            await runner.cleanup()
    return asyncio.run(main())


async def create(session: aiohttp.ClientSession, name: str, **labels: str) -> dict:
    async with session.post(CMS, json={"metadata": {"name": name, "labels": labels}}) as r:
        assert r.status == 201
        return await r.json()


async def events(session: aiohttp.ClientSession, query: str, count: int | None = None,
                 limit: float = 10.0) -> list[dict]:
    out: list[dict] = []
    async with session.get(f"{CMS}?watch=true&{query}") as r:
        assert r.headers["Content-Type"].startswith("application/json")
        async with asyncio.timeout(limit):
            async for line in r.content:
                out.append(json.loads(line))
                if count is not None and len(out) == count:
                    break
    return out


def burst(store: Store, names: list[str]) -> None:
    """Changes written with no await between them: they reach every watch at once."""
    for name in names:
        store.write("/configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                                    "metadata": {"name": name, "namespace": "default"},
                                    "data": {"name": name}}, "ADDED")


async def watched(session: aiohttp.ClientSession, rv: str, during: Any, count: int
                  ) -> list[dict]:
    """The events of a watch from ``rv`` (``during()`` called once it is open), until
    ``count`` of them or the end of the stream."""
    out: list[dict] = []
    async with session.get(f"{CMS}?watch=true&resourceVersion={rv}") as r:
        during()
        async with asyncio.timeout(10):
            async for line in r.content:
                out.append(json.loads(line))
                if len(out) == count:
                    break
    return out


def test_a_burst_of_changes_reaches_a_watch_whole_and_in_order():
    store = Store()
    names = [f"o{i}" for i in range(3 * apiserver.WATCH_BATCH + 7)]  # several writes' worth

    async def test(session):
        rv = (await create(session, "first"))["metadata"]["resourceVersion"]
        return await watched(session, rv, lambda: burst(store, names), len(names))
    got = run(test, store=store)
    assert [e["object"]["metadata"]["name"] for e in got] == names
    assert [e["object"] for e in got] == [store.get("/configmaps", "default", n)
                                          for n in names]
    assert all(e["type"] == "ADDED" for e in got)


def test_a_watch_too_far_behind_ends_before_the_first_change_it_missed(monkeypatch):
    monkeypatch.setattr(apiserver, "WATCH_BACKLOG", 5)
    store = Store()
    names = [f"o{i}" for i in range(20)]

    async def test(session):
        rv = (await create(session, "first"))["metadata"]["resourceVersion"]
        early = await watched(session, rv, lambda: burst(store, names), len(names))
        resumed = early[-1]["object"]["metadata"]["resourceVersion"]
        rest = await watched(session, resumed, lambda: None, len(names) - len(early))
        return rv, early, rest
    rv, early, rest = run(test, store=store)
    assert 0 < len(early) < len(names)  # the stream ended: the watcher fell behind
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in early + rest]
    # no change skipped, none twice: resuming from the last one it had gives the rest
    assert versions == list(range(int(rv) + 1, int(rv) + 1 + len(names)))


def test_a_watch_resumes_after_a_version_and_filters_by_label():
    async def test(session):
        first = await create(session, "a", tier="x")
        rv = first["metadata"]["resourceVersion"]
        await create(session, "b", tier="y")
        await create(session, "c", tier="x")
        got = await events(session, f"resourceVersion={rv}&labelSelector=tier%3Dx", 1)
        return [(e["type"], e["object"]["metadata"]["name"]) for e in got]
    assert run(test) == [("ADDED", "c")]


def test_a_watch_from_nothing_starts_with_the_current_objects():
    async def test(session):
        await create(session, "a")
        await create(session, "b")
        got = await events(session, "", 2)
        return [(e["type"], e["object"]["metadata"]["name"]) for e in got]
    assert run(test) == [("ADDED", "a"), ("ADDED", "b")]


def test_bookmarks_carry_the_current_version():
    async def test(session):
        made = await create(session, "a")
        got = await events(session, f"resourceVersion={made['metadata']['resourceVersion']}"
                                    "&allowWatchBookmarks=true", 1)
        return made, got
    made, got = run(test, bookmark_seconds=0.2)
    assert got[0]["type"] == "BOOKMARK"
    assert got[0]["object"]["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"]


def test_timeout_seconds_ends_the_stream():
    async def test(session):
        start = time.monotonic()
        got = await events(session, "resourceVersion=0&timeoutSeconds=1")
        return got, time.monotonic() - start
    got, took = run(test)
    assert got == [] and 0.9 < took < 3


def test_a_compacted_version_is_410_expired():
    async def test(session):
        for i in range(12):
            await create(session, f"o{i}")
        return await events(session, "resourceVersion=2", 1)
    got = run(test, history=5)
    assert got[0]["type"] == "ERROR"
    assert (got[0]["object"]["code"], got[0]["object"]["reason"]) == (410, "Expired")


def test_lists_page_with_limit_and_continue():
    async def test(session):
        for name in ("a", "b", "c", "d", "e"):
            await create(session, name)
        pages, token = [], ""
        while True:
            async with session.get(f"{CMS}?limit=2" + (f"&continue={token}" if token else "")
                                   ) as r:
                doc = await r.json()
            pages.append([o["metadata"]["name"] for o in doc["items"]])
            token = doc["metadata"].get("continue", "")
            if not token:
                return pages
    assert run(test) == [["a", "b"], ["c", "d"], ["e"]]


def test_a_watcher_resuming_from_its_bookmarks_misses_no_change():
    """As an informer follows a resource: each stream ends after ``timeoutSeconds``
    and the next begins from the last version it had, a bookmark's included. A
    bookmark must never carry a version past a change its stream has not sent: a
    change made while the stream was giving up its wait (the soak's last Lease,
    created as the operator's watch ended at 600 s) was never seen by anyone."""
    store = Store()
    names = [f"o{i}" for i in range(6000)]

    async def test(session):
        rv = (await create(session, "first"))["metadata"]["resourceVersion"]
        seen: list[str] = []
        streams = 0

        async def writer() -> None:
            for k, name in enumerate(names):
                burst(store, [name])
                await asyncio.sleep(0 if k % 3 else 0.002)

        async def follower() -> None:
            nonlocal rv, streams
            while not (done.done() and int(rv) >= store.rv):
                streams += 1
                async with session.get(f"{CMS}?watch=true&resourceVersion={rv}"
                                       "&allowWatchBookmarks=true&timeoutSeconds=1") as r:
                    async for line in r.content:
                        event = json.loads(line)
                        rv = event["object"]["metadata"]["resourceVersion"]
                        if event["type"] == "ADDED":
                            seen.append(event["object"]["metadata"]["name"])
        done = asyncio.ensure_future(writer())
        async with asyncio.timeout(60):
            await asyncio.gather(done, follower())
        return seen, streams
    seen, streams = run(test, bookmark_seconds=0.0005, store=store)
    assert streams >= 2  # it resumed at least once
    assert [n for n in names if n not in set(seen)] == []
