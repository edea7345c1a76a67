"""Committer: batches form while a commit is in flight; waiters wake in revision order."""
from __future__ import annotations

import asyncio
import threading
from typing import Callable

import pytest

from kubeplane.storage.committer import Committer
from kubeplane.storage.interface import KeyValue, StorageError, WatchEvent


def ev(rev: int) -> WatchEvent:
    return WatchEvent("ADDED", KeyValue(f"/k/{rev}", b"{}", {}, rev, rev), None, rev)


class Recorder:
    """A commit function that blocks on a gate and records each batch's revisions."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.gate = threading.Event()
        self.entered = threading.Event()

    def __call__(self, batch: list[WatchEvent]) -> None:
        self.entered.set()
        self.gate.wait(5)
        self.batches.append([e.revision for e in batch])


async def test_writes_queued_during_a_commit_form_the_next_batch() -> None:
    rec = Recorder()
    c = Committer(rec, 0)
    c.put(ev(1))
    await asyncio.to_thread(rec.entered.wait, 5)     # batch [1] is being committed
    for r in (2, 3, 4):
        c.put(ev(r))
    waiting = asyncio.ensure_future(c.wait_committed(4))
    await asyncio.sleep(0)
    assert not waiting.done() and c.committed == 0
    rec.gate.set()
    await asyncio.wait_for(waiting, 5)
    assert rec.batches == [[1], [2, 3, 4]] and c.committed == 4
    c.stop()


async def test_stop_commits_what_is_queued() -> None:
    rec = Recorder()
    rec.gate.set()
    c = Committer(rec, 10)
    for r in (11, 12):
        c.put(ev(r))
    c.stop()
    assert [r for b in rec.batches for r in b] == [11, 12] and c.committed == 12
    await c.wait_committed(12)                        # already committed: returns at once


async def test_a_failed_commit_fails_waiters_and_later_writes() -> None:
    def broken(batch: list[WatchEvent]) -> None:
        raise OSError("disk full")
    c = Committer(broken, 0)
    c.put(ev(1))
    with pytest.raises(StorageError, match="disk full"):
        await asyncio.wait_for(c.wait_committed(1), 5)
    with pytest.raises(StorageError):
        c.put(ev(2))
    assert c.committed == 0
    c.stop()


async def test_writes_gather_until_someone_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    from kubeplane.storage import committer
    monkeypatch.setattr(committer, "GATHER", 3600.0)
    rec = Recorder()
    rec.gate.set()
    c = Committer(rec, 0)
    c.put(ev(1))
    c.put(ev(2))
    await asyncio.sleep(0.01)                  # a real thread: give it the chance to (wrongly) commit
    assert rec.batches == [] and c.committed == 0
    await asyncio.wait_for(c.wait_committed(2), 5)   # a waiter ends the gathering at once
    assert rec.batches == [[1, 2]]
    c.stop()


async def test_after_stop_writes_and_waits_are_refused() -> None:
    rec = Recorder()
    rec.gate.set()
    c = Committer(rec, 0)
    c.put(ev(1))
    c.stop()
    with pytest.raises(StorageError, match="closed"):
        c.put(ev(2))
    with pytest.raises(StorageError, match="closed"):
        await c.wait_committed(2)
    await c.wait_committed(1)                         # committed before the stop: fine


async def until(check: object, what: str) -> None:
    """Poll check() (a real thread moves it) for up to 5 s."""
    for _ in range(500):
        if check():  # type: ignore[operator]
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what}")


async def test_housekeeping_follows_each_commit_and_goes_on_while_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    from kubeplane.storage import committer
    monkeypatch.setattr(committer, "IDLE", 0.01)
    rec = Recorder()
    rec.gate.set()
    calls: list[bool] = []

    def housekeep(idle: bool) -> bool:
        calls.append(idle)
        return idle and calls.count(True) < 3            # three idle steps, then nothing to do

    c = Committer(rec, 0, housekeep)
    c.put(ev(1))
    await c.wait_committed(1)
    await until(lambda: len(calls) >= 4, "three idle steps")
    c.put(ev(2))                                       # the thread slept without a timeout till now
    await c.wait_committed(2)
    await until(lambda: len(calls) >= 5, "the step after the second commit")
    assert calls[:5] == [False, True, True, True, False]
    c.stop()


async def test_a_failed_housekeeping_step_stops_the_store() -> None:
    rec = Recorder()
    rec.gate.set()

    def housekeep(idle: bool) -> bool:
        raise OSError("disk I/O error")

    c = Committer(rec, 0, housekeep)
    c.put(ev(1))
    await c.wait_committed(1)                          # committed, then the step fails
    await until(lambda: c.failure is not None, "the failure")
    with pytest.raises(StorageError, match="disk I/O error"):
        c.put(ev(2))
    c.stop()


async def test_a_write_nobody_waits_for_is_committed_after_the_gathering(monkeypatch: pytest.MonkeyPatch) -> None:
    """put() tells the thread after the loop's turn (no waiter came): it gathers, then commits."""
    from kubeplane.storage import committer
    monkeypatch.setattr(committer, "GATHER", 0.01)
    rec = Recorder()
    rec.gate.set()
    c = Committer(rec, 0)
    await asyncio.sleep(0.05)                   # the thread asleep without a deadline to wake by
    c.put(ev(1))
    await until(lambda: c.committed == 1, "the gathered commit")
    assert rec.batches == [[1]]
    c.stop()


def count_wake_ups(c: Committer) -> Callable[[], int]:
    """Count the calls that wake c's thread (its condition's notify); the result says how many so far."""
    notified = 0
    notify = c._cond.notify

    def counted(n: int = 1) -> None:
        nonlocal notified
        notified += 1
        notify(n)
    c._cond.notify = counted  # type: ignore[method-assign]
    return lambda: notified


async def test_a_write_then_its_wait_wakes_the_thread_once() -> None:
    """An HTTPS write: put() then wait_committed() in the same turn of the loop. The waiter's
    wake-up is the only one (put's, deferred to after the turn, is dropped)."""
    rec = Recorder()
    rec.gate.set()
    c = Committer(rec, 0)
    notified = count_wake_ups(c)
    c.put(ev(1))
    await c.wait_committed(1)                    # awaited in this task, as the front end does
    await asyncio.sleep(0)                       # put's deferred call has run by now
    assert notified() == 1 and rec.batches == [[1]]
    c.stop()


async def test_the_writes_of_one_turn_share_a_commit_and_one_wake_up() -> None:
    """Three requests served in one turn of the loop (what one poll of the sockets brought):
    each writes and waits; the thread is told once, after the turn, and commits the three together."""
    rec = Recorder()
    rec.gate.set()
    c = Committer(rec, 0)
    notified = count_wake_ups(c)

    async def write(r: int) -> None:
        c.put(ev(r))
        await c.wait_committed(r)
    await asyncio.wait_for(asyncio.gather(write(1), write(2), write(3)), 5)
    assert notified() == 1 and rec.batches == [[1, 2, 3]] and c.committed == 3
    c.stop()


async def test_writes_arriving_faster_than_a_commit_is_worth_share_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """Group commit: writes that clients wait for, arriving two every few ms (LINGER scaled
    up from 0.5 ms to 100 ms), gather into batches of several instead of a commit each."""
    from kubeplane.storage import committer
    monkeypatch.setattr(committer, "LINGER", 0.1)
    rec = Recorder()
    rec.gate.set()
    c = Committer(rec, 0)
    waits = []
    for r in range(1, 41):                      # two clients: two writes every 4 ms
        c.put(ev(r))
        waits.append(asyncio.ensure_future(c.wait_committed(r)))
        if r % 2 == 0:
            await asyncio.sleep(0.004)
    await asyncio.wait_for(asyncio.gather(*waits), 10)
    assert [r for b in rec.batches for r in b] == list(range(1, 41)) and c.committed == 40
    assert max(len(b) for b in rec.batches) >= 4 and len(rec.batches) <= 20, rec.batches
    c.stop()


async def test_a_serial_writer_waits_for_no_write_that_cannot_come(monkeypatch: pytest.MonkeyPatch) -> None:
    """One client that writes, waits, writes again: one write per batch is no sign of more to
    come, so no commit waits (LINGER scaled up to 1 s)."""
    from kubeplane.storage import committer
    monkeypatch.setattr(committer, "LINGER", 1.0)
    rec = Recorder()
    rec.gate.set()
    c = Committer(rec, 0)
    loop = asyncio.get_running_loop()
    for r in range(1, 21):
        start = loop.time()
        c.put(ev(r))
        await asyncio.wait_for(c.wait_committed(r), 10)
        assert loop.time() - start < 0.5
    assert rec.batches == [[r] for r in range(1, 21)]
    c.stop()
