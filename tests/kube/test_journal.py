"""The journal's log read back (leasehold.kube.journal): what a restart trusts.

Only the operator writes the journal, but it is read after crashes and by hand-made
repairs: every line is checked, and a line that cannot be trusted is named with its
position rather than half-read."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

from leasehold.core.model import Absence
from leasehold.core.replay import Input
from leasehold.kube.client import KubeClient
from leasehold.kube.journal import Journal, JournalError, entry, made, read_log


def _lines(*items: dict[str, Any]) -> list[dict[str, Any]]:
    return list(items)


def test_inputs_facts_and_rejections_read_back_as_written():
    absence = Input.absent(Absence(90.0, ("lab/a",)), 40.0)
    log = read_log(_lines(
        entry(Input.finished("lab/b", 10.0)),
        made(["lab/a", "lab/c"], 30.0),
        {"kind": "rejected", "uid": "u-1"},
        entry(absence),
        made(["lab/a"], 95.0),
    ), "log")
    assert log.inputs == [Input.finished("lab/b", 10.0), absence]
    # the latest fact per lease wins; the last instant counts facts as well as inputs
    assert log.made == {"lab/a": 95.0, "lab/c": 30.0}
    assert log.rejected == {"u-1"}
    assert log.last == 95.0


def test_an_empty_log_has_no_last_instant():
    assert read_log([], "log").last == -math.inf


@pytest.mark.parametrize(("line", "message"), [
    ({"t": 5, "kind": "made", "lease": ""}, r"log\[1\]: a fact needs t"),
    ({"t": "5", "kind": "made", "lease": "", "leases": ["a"]}, r"log\[1\]: a fact needs t"),
    ({"t": math.inf, "kind": "made", "lease": "", "leases": ["a"]}, "a finite time"),
    ({"t": 5, "kind": "absent", "lease": "", "until": "later", "idle": []},
     r"log\[1\]: .*until 'later' is not a number"),
    ({"t": 5, "kind": "absent", "lease": "", "until": math.inf, "idle": []},
     "until \\(a finite time\\)"),
    ({"t": 5, "kind": "absent", "lease": "", "until": 9, "idle": "lab/a"}, "idle \\(a list\\)"),
    ({"t": 5, "kind": "absent", "lease": "", "idle": []}, r"log\[1\]: KeyError"),
    ({"t": 5, "kind": "teleport", "lease": "x"}, "unknown kind 'teleport'"),
], ids=["fact-without-leases", "fact-time-text", "fact-time-infinite", "absence-until-text",
        "absence-forever", "absence-idle-not-list", "absence-without-until", "unknown-kind"])
def test_a_line_that_cannot_be_trusted_is_named(line, message):
    with pytest.raises(JournalError, match=message):
        read_log(_lines(entry(Input.finished("lab/b", 1.0)), line), "log")


def test_a_burst_larger_than_a_request_is_logged_in_parts_and_read_back(api_server):
    """A step that takes in thousands of Leases logs more than one request (or one
    ConfigMap) may hold: the log is sealed in parts, and read back whole, in order; a
    snapshot deletes the old parts."""
    lines = [entry(Input.finished(f"lab/l{i:05d}", float(i))) for i in range(3000)]

    async def scenario() -> None:
        async with KubeClient.from_kubeconfig(api_server.kubeconfig) as client:
            journal = Journal(client, "leasehold-system")
            journal.log_part = 20_000  # a few hundred lines a part
            await journal.load()
            await journal.checkpoint({"version": 0})
            await journal.append(lines[:10])
            await journal.append(lines[10:])  # the burst
            await journal.append([made(["lab/l00001"], 3000.0)])
            assert journal.sealed > 3
            again = Journal(client, "leasehold-system")
            loaded = await again.load()
            assert loaded.log == [*lines, made(["lab/l00001"], 3000.0)]
            await again.append(lines[:1])  # and goes on from where it was
            assert (await Journal(client, "leasehold-system").load()).log[-1] == lines[0]
            await again.checkpoint({"version": 0})
            left = await client.get("/api/v1/namespaces/leasehold-system/configmaps")
            names = sorted(x["metadata"]["name"] for x in left["items"])
            assert names == ["leasehold-journal", "leasehold-journal-2-0"], names
    asyncio.run(scenario())


def test_a_steady_stream_keeps_the_index_small(api_server):
    """Every step rewrites the index: a stream of small steps never makes it hold
    more than the tail's limit (before, it held up to a whole part, sent again at
    every step), and what was logged reads back whole, in order."""
    lines = [entry(Input.finished(f"lab/l{i:05d}", float(i))) for i in range(400)]

    async def scenario() -> None:
        async with KubeClient.from_kubeconfig(api_server.kubeconfig) as client:
            journal = Journal(client, "leasehold-system")
            journal.tail_limit, journal.log_part = 2_000, 20_000
            await journal.load()
            await journal.checkpoint({"version": 0})
            index = "/api/v1/namespaces/leasehold-system/configmaps/leasehold-journal"
            largest = 0
            for i in range(0, len(lines), 3):
                await journal.append(lines[i:i + 3])
                largest = max(largest, len((await client.get(index))["data"]["log"]))
            assert 0 < largest <= 2_000
            assert journal.sealed > 5
            assert (await Journal(client, "leasehold-system").load()).log == lines
    asyncio.run(scenario())
