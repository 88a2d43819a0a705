"""The outbox: a Lease's reports in order, a superseded status not written, one
failed write never stopping the others."""

from __future__ import annotations

import asyncio
import logging

import pytest

from leasehold.kube.outbox import Outbox, Write


def _recorder(log: list[str], what: str, fail: bool = False) -> Write:
    async def write() -> None:
        await asyncio.sleep(0)  # others may run meanwhile
        if fail:
            raise RuntimeError(f"{what} refused")
        log.append(what)
    return write


def test_each_leases_reports_in_order_the_latest_status_only() -> None:
    async def scenario() -> list[str]:
        out, written = Outbox(in_flight=2), []
        for key in ("a", "b"):
            out.event(key, f"lab/{key}", _recorder(written, f"{key}:Scheduled"))
            out.status(key, f"lab/{key}", _recorder(written, f"{key}:status1"))
            out.event(key, f"lab/{key}", _recorder(written, f"{key}:Started"))
            out.status(key, f"lab/{key}", _recorder(written, f"{key}:status2"))
        await out.flush()
        assert len(out) == 0
        return written
    written = asyncio.run(scenario())
    for key in ("a", "b"):
        mine = [w for w in written if w.startswith(key)]
        assert mine == [f"{key}:Scheduled", f"{key}:Started", f"{key}:status2"]


@pytest.mark.parametrize(("given", "written"), [
    pytest.param([("Scheduled", "s1"), ("Scheduled", "s2")], ["s2"], id="folded"),
    pytest.param([("Scheduled", "s1"), (None, "Started"), ("Scheduled", "s2")],
                 ["s1", "Started", "s2"], id="another-between-kept-in-order"),
    pytest.param([(None, "Preempted"), (None, "Preempted")], ["Preempted", "Preempted"],
                 id="no-kind-never-folded"),
    pytest.param([("Scheduled", "s1"), ("Other", "o1")], ["s1", "o1"],
                 id="another-kind-kept"),
])
def test_an_event_of_a_kind_replaces_the_leases_last_unwritten_one_of_that_kind(
        given: list[tuple[str | None, str]], written: list[str]) -> None:
    async def scenario() -> list[str]:
        out, log = Outbox(), []
        for kind, what in given:
            out.event("a", "lab/a", _recorder(log, what), kind)
        await out.flush()
        return log
    assert asyncio.run(scenario()) == written


def test_a_status_given_while_the_previous_is_queued_supersedes_it() -> None:
    """Given while a batch is being written: the batch's older status is skipped,
    the newer one written after it (never the older one last)."""
    async def scenario() -> list[str]:
        out, written = Outbox(in_flight=1), []

        async def slow() -> None:
            await asyncio.sleep(0.01)
            written.append("x:event")
            out.status("y", "lab/y", _recorder(written, "y:new"))  # y's old one still queued
        out.event("x", "lab/x", slow)
        out.status("y", "lab/y", _recorder(written, "y:old"))
        await out.flush()
        return written
    assert asyncio.run(scenario()) == ["x:event", "y:new"]


def test_a_failed_write_is_logged_and_the_others_go_on(caplog: pytest.LogCaptureFixture
                                                       ) -> None:
    async def scenario() -> list[str]:
        out, written = Outbox(), []
        out.event("a", "lab/a", _recorder(written, "a:1", fail=True))
        out.event("a", "lab/a", _recorder(written, "a:2"))
        out.status("b", "lab/b", _recorder(written, "b:status"))
        await out.flush()
        return written
    with caplog.at_level(logging.ERROR, logger="leasehold.operator"):
        assert sorted(asyncio.run(scenario())) == ["a:2", "b:status"]
    assert "writing an event of Lease lab/a failed" in caplog.text


def test_a_dropped_lease_gets_nothing_more_and_run_writes_what_comes() -> None:
    async def scenario() -> list[str]:
        out, written = Outbox(), []
        out.status("gone", "lab/gone", _recorder(written, "gone:status"))
        out.drop("gone")
        task = asyncio.create_task(out.run())
        out.event("a", "lab/a", _recorder(written, "a:event"))
        while out.written < 1:
            await asyncio.sleep(0.001)
        task.cancel()
        return written
    assert asyncio.run(scenario()) == ["a:event"]


def test_while_held_no_report_is_begun_and_a_later_status_supersedes() -> None:
    async def scenario() -> tuple[list[str], list[str]]:
        out, written = Outbox(in_flight=2), []
        task = asyncio.create_task(out.run())
        with out.held():
            out.event("a", "lab/a", _recorder(written, "a:Started"))
            out.status("a", "lab/a", _recorder(written, "a:status1"))
            for _ in range(20):  # the writers get every chance to run
                await asyncio.sleep(0)
            during = list(written)
            out.status("a", "lab/a", _recorder(written, "a:status2"))
        while out.written < 2:
            await asyncio.sleep(0.001)
        task.cancel()
        return during, written
    during, written = asyncio.run(scenario())
    assert during == []
    assert written == ["a:Started", "a:status2"]


def test_background_statuses_wait_behind_every_other_report_and_are_superseded() -> None:
    """A held Lease's status (background) given first is written after another
    Lease's reports given later; an ordinary status of the same Lease replaces it."""
    async def scenario() -> list[str]:
        out, written = Outbox(in_flight=1), []
        for key in ("h1", "h2", "h3"):
            out.status(key, f"flood/{key}", _recorder(written, f"{key}:held"), background=True)
        out.status("q", "quiet/q", _recorder(written, "q:scheduled"))
        out.status("h2", "flood/h2", _recorder(written, "h2:scheduled"))  # it entered
        assert len(out) == 4
        await out.flush()
        return written
    assert asyncio.run(scenario()) == ["q:scheduled", "h2:scheduled", "h1:held", "h3:held"]



def test_settle_writes_the_named_leases_reports_now_and_only_theirs() -> None:
    async def scenario() -> tuple[list[str], int]:
        out, written = Outbox(), []
        for key in ("a", "b"):
            out.event(key, f"lab/{key}", _recorder(written, f"{key}:Preempted"))
            out.status(key, f"lab/{key}", _recorder(written, f"{key}:Cancelled"))
        await out.settle(["a", "nobody"])  # no writer runs: settle writes them itself
        return written, len(out)
    written, left = asyncio.run(scenario())
    assert written == ["a:Preempted", "a:Cancelled"]
    assert left == 1  # b's, untouched


def test_settle_waits_for_the_writer_that_holds_the_lease() -> None:
    """a's event is being written by the running outbox when a is settled: settle
    returns only once it is written, and a's status given meanwhile too."""
    async def scenario() -> list[str]:
        out, written = Outbox(in_flight=1), []
        gate = asyncio.Event()

        async def slow() -> None:
            await gate.wait()
            written.append("a:Preempted")
        out.event("a", "lab/a", slow)
        runner = asyncio.create_task(out.run())
        while len(out):  # the writer took a's event
            await asyncio.sleep(0)
        out.status("a", "lab/a", _recorder(written, "a:Cancelled"))
        settling = asyncio.create_task(out.settle(["a"]))
        for _ in range(10):
            await asyncio.sleep(0)
        assert not settling.done() and written == []
        gate.set()
        await settling
        runner.cancel()
        return written
    assert asyncio.run(scenario()) == ["a:Preempted", "a:Cancelled"]
