"""Objects and their history, in memory and in SQLite.

Every object lives in memory (reads never touch the disk) and is written through to
SQLite in WAL mode, one transaction per change, so a server killed with SIGKILL
restarts with every object it acknowledged and its resource-version counter. The
last ``history`` changes are kept, in memory and on disk, so that watches resume
from a resource version across a restart; older ones are compacted away (a watch
from before them gets 410 Gone, as from a real server)."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

Obj = dict[str, Any]


class Change(NamedTuple):
    rv: int
    #: the storage key (a resource's group and plural)
    key: str
    #: ADDED, MODIFIED or DELETED
    kind: str
    obj: Obj
    #: the object as JSON, as it was stored: encoded once for every watcher it is
    #: sent to as it happens (None in the history, which would hold ten thousand of
    #: them: a watch resuming from it encodes its objects again)
    body: str | None

SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (
    key TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (key, namespace, name));
CREATE TABLE IF NOT EXISTS changes (
    rv INTEGER PRIMARY KEY, key TEXT NOT NULL, type TEXT NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""


def _private(path: Path) -> None:
    """The database readable by its owner only: it holds every Secret. SQLite creates
    the WAL and shared-memory files with the database's own mode; files made by an
    older version (0644) are brought down to it."""
    os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
    for f in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        with contextlib.suppress(FileNotFoundError):
            f.chmod(0o600)


class Gone(Exception):
    """The resource version asked for has been compacted away."""


class Store:
    def __init__(self, path: str | Path | None = None, history: int = 10_000) -> None:
        """``path``: the SQLite file (None: memory only, nothing survives a restart)."""
        self.history_size = history
        self.rv = 0
        self.objects: dict[str, dict[tuple[str, str], Obj]] = {}
        self.history: deque[Change] = deque(maxlen=history)
        #: the oldest resource version a watch may resume from
        self.compacted = 0
        self.listeners: set[Callable[[Change], None]] = set()
        #: per key whose objects expire (events): seconds after their last write
        self.ttl: dict[str, float] = {}
        #: (key, namespace, name) -> when (monotonic) an expiring object was last written
        self._written: dict[tuple[str, str, str], float] = {}
        if path:
            _private(Path(path))
        self.db = sqlite3.connect(str(path) if path else ":memory:", isolation_level=None,
                                  check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        # a committed write survives the process being killed whatever the setting
        # (SQLite hands it to the operating system before the commit returns); OFF
        # gives up only what an emulated cluster need not keep, its data through an
        # operating system crash or a power cut, for the fsyncs of NORMAL's
        # checkpoints, which blocked the server's one event loop (on a VM with a slow
        # disk, 0.15 ms a write on average)
        self.db.execute("PRAGMA synchronous=OFF")
        self.db.executescript(SCHEMA)
        self._load()

    def _load(self) -> None:
        # the counter is the last change's version (the latest change is never
        # compacted away); a data directory from before keeps it in ``meta`` too
        row = self.db.execute("SELECT MAX(rv) FROM changes UNION ALL"
                              " SELECT value FROM meta WHERE name='rv'").fetchall()
        self.rv = max((r[0] for r in row if r[0] is not None), default=0)
        rows = self.db.execute("SELECT key, namespace, name, body FROM objects")
        for key, ns, name, body in rows:
            self.objects.setdefault(key, {})[(ns, name)] = json.loads(body)
        rows = self.db.execute("SELECT rv, key, type, body FROM changes ORDER BY rv DESC LIMIT ?",
                               (self.history_size,)).fetchall()
        for rv, key, kind, body in reversed(rows):
            self.history.append(Change(rv, key, kind, json.loads(body), None))
        self.compacted = self.history[0].rv - 1 if self.history else self.rv

    def close(self) -> None:
        self.db.close()

    # ---- reads --------------------------------------------------------------------
    def get(self, key: str, namespace: str, name: str) -> Obj | None:
        return self.objects.get(key, {}).get((namespace, name))

    def items(self, key: str, namespace: str | None = None) -> list[Obj]:
        """Objects of a resource (in one namespace, or all), by namespace and name."""
        objs = self.objects.get(key, {})
        keys = sorted(k for k in objs if namespace is None or k[0] == namespace)
        return [objs[k] for k in keys]

    def all_objects(self) -> Iterator[tuple[str, Obj]]:
        for key, objs in self.objects.items():
            for obj in objs.values():
                yield key, obj

    def changes_since(self, rv: int) -> list[Change]:
        """Changes after ``rv``; :class:`Gone` when some of them were compacted."""
        if rv < self.compacted:
            raise Gone(rv)
        return [c for c in self.history if c.rv > rv]

    # ---- writes -------------------------------------------------------------------
    def write(self, key: str, obj: Obj, kind: str) -> Obj:
        """Store ``obj`` (ADDED or MODIFIED) under a new resource version."""
        self.rv += 1
        meta = obj["metadata"]
        meta["resourceVersion"] = str(self.rv)
        ns, name = meta.get("namespace", ""), meta["name"]
        body = json.dumps(obj, separators=(",", ":"))
        with self.db:  # the object and its change: one transaction, one commit
            self.db.execute("BEGIN")
            self.db.execute("INSERT OR REPLACE INTO objects VALUES (?, ?, ?, ?)",
                            (key, ns, name, body))
            self._log(key, kind, body)
        self.objects.setdefault(key, {})[(ns, name)] = obj
        if key in self.ttl:
            self._written[key, ns, name] = time.monotonic()
        self._notify(Change(self.rv, key, kind, obj, body))
        return obj

    def expire(self, now: float | None = None) -> int:
        """Remove the objects whose time to live (:attr:`ttl`) has passed since their
        last write, as etcd's leases remove events; returns how many. An object found
        on disk at start counts as written then."""
        now = time.monotonic() if now is None else now
        gone = 0
        for key, ttl in self.ttl.items():
            for (ns, name), obj in list(self.objects.get(key, {}).items()):
                written = self._written.setdefault((key, ns, name), now)
                if now - written >= ttl:
                    self.remove(key, obj)
                    gone += 1
        return gone

    def remove(self, key: str, obj: Obj) -> Obj:
        """Delete ``obj``; its DELETED event carries a new resource version."""
        self.rv += 1
        meta = obj["metadata"]
        meta["resourceVersion"] = str(self.rv)
        ns, name = meta.get("namespace", ""), meta["name"]
        body = json.dumps(obj, separators=(",", ":"))
        with self.db:  # the object and its change: one transaction, one commit
            self.db.execute("BEGIN")
            self.db.execute("DELETE FROM objects WHERE key=? AND namespace=? AND name=?",
                            (key, ns, name))
            self._log(key, "DELETED", body)
        self.objects.get(key, {}).pop((ns, name), None)
        self._written.pop((key, ns, name), None)
        self._notify(Change(self.rv, key, "DELETED", obj, body))
        return obj

    def _log(self, key: str, kind: str, body: str) -> None:
        self.db.execute("INSERT INTO changes VALUES (?, ?, ?, ?)", (self.rv, key, kind, body))
        # compact in batches: one DELETE per tenth of the history, not one per write
        if self.rv % max(self.history_size // 10, 1) == 0:
            self.db.execute("DELETE FROM changes WHERE rv <= ?", (self.rv - self.history_size,))

    def _notify(self, change: Change) -> None:
        if len(self.history) == self.history.maxlen:
            self.compacted = self.history[0].rv
        self.history.append(change._replace(body=None))
        for listener in list(self.listeners):
            listener(change)
