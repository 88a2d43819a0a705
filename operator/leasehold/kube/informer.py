"""The watches the operator keeps itself: the streams that are many (Leases, the
pods of Leases, namespaces), listed once and then followed from the listing's
version, as client-go's informers do.

Kopf is given the few (NodePools, nodes): for every event it keeps a memory of the
object and builds the essence a change handler would diff, even for plain event
handlers, which cost most of the operator's CPU at thousands of Leases (a profile
of the scale benchmark: 40%) and kept a memory per Lease for as long as the Lease
existed. Here an event costs its JSON and one call.

A watch that cannot go on (its version expired: 410, the connection lost) raises;
the caller rebuilds from a new listing, as it does after any failure."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, NoReturn

from .client import KubeClient, Obj

#: what is told of each event: its type (ADDED, MODIFIED, DELETED) and the object
Seen = Callable[[str, Obj], Awaitable[None] | None]

#: seconds a watch asks the server to keep it open; then it is opened again
WATCH_TIMEOUT = 300


async def listing(client: KubeClient, path: str, **params: Any) -> tuple[list[Obj], str]:
    """The objects at ``path`` and the version to watch them from."""
    got = await client.get(path, **params)
    return list(got.get("items") or []), str(got["metadata"]["resourceVersion"])


async def follow(client: KubeClient, path: str, version: str, seen: Seen,
                 **params: Any) -> NoReturn:
    """Every change at ``path`` after ``version``, in order, to ``seen`` (awaited
    when it returns an awaitable), forever; a stream the server ends is opened
    again from the last version seen (bookmarks keep it recent)."""
    while True:
        async for event in client.watch(path, version, timeout=WATCH_TIMEOUT, **params):
            obj = event["object"]
            version = str(obj["metadata"].get("resourceVersion") or version)
            if event["type"] == "BOOKMARK":
                continue
            told = seen(event["type"], obj)
            if inspect.isawaitable(told):
                await told
