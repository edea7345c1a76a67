"""Hypothesis state machine: random add/get/done/shut_down/add_after/add_rate_limited and
clock steps against a plain model, checking the queue's invariants after every step.

The model says what a worker may observe: get() returns items in FIFO order, never an
item another worker still holds, and an item added while held comes back after done().
Delayed items join in (ready time, add order) as the fake clock passes their ready time.
"""
from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
)

from kubeplane.client.util.workqueue import (
    ItemExponentialFailureRateLimiter,
    RateLimitingQueue,
    RateLimitingQueueOptions,
)
from kubeplane.utils.clock import FakeClock

ITEMS = st.sampled_from(["a", "b", "c"])
# Shutting down ends most interesting behaviour (adds are ignored), so only one draw in
# ten of a shutdown rule acts: runs spend most of their steps before shutdown.
RARELY = st.integers(0, 9).map(lambda n: n == 0)
BASE, CAP = 0.001, 0.016                       # backoff 1, 2, 4, 8, 16, 16 ... ms
HALF_MS = 0.0005                               # model steps are whole ms: no real ties


class WorkqueueMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.clock = FakeClock()
        self.q: RateLimitingQueue[str] = RateLimitingQueue(RateLimitingQueueOptions(
            clock=self.clock, rate_limiter=ItemExponentialFailureRateLimiter(BASE, CAP)))
        # The model.
        self.expected: list[str] = []          # what get() must return next, in order
        self.held: set[str] = set()            # handed out by get(), not yet done()
        self.readd: set[str] = set()           # added while held: due back after done()
        self.delayed: dict[str, tuple[float, int]] = {}   # item -> (ready_at, add order)
        self.seq = 0
        self.failures: dict[str, int] = {}
        self.shutting_down = False
        self.drainer: asyncio.Task[None] | None = None
        # A drain ends the first time nothing is held (items still queued may be handed
        # out afterwards, as upstream), or when shut_down() forces it.
        self.drain_released = False

    def teardown(self) -> None:
        if self.drainer is not None and not self.drainer.done():
            self.drainer.cancel()
            self._settle()
        self.loop.close()

    # -- helpers ---------------------------------------------------------------------

    def _run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(asyncio.wait_for(coro, timeout=5))

    def _settle(self) -> None:
        for _ in range(5):
            self.loop.run_until_complete(asyncio.sleep(0))

    def _model_add(self, item: str) -> None:
        if self.shutting_down or item in self.expected or item in self.readd:
            return
        if item in self.held:
            self.readd.add(item)
        else:
            self.expected.append(item)

    def _model_add_after(self, item: str, seconds: float) -> None:
        if self.shutting_down:
            return
        if seconds <= 0:
            self._model_add(item)
            return
        ready_at = self.clock.monotonic() + seconds    # the same float sum as the queue's
        if item in self.delayed and self.delayed[item][0] <= ready_at:
            return
        self.seq += 1
        self.delayed[item] = (ready_at, self.seq)

    def _model_promote(self) -> None:
        now = self.clock.monotonic() + HALF_MS
        for item, _ in sorted(((i, e) for i, e in self.delayed.items() if e[0] <= now),
                              key=lambda pair: pair[1]):
            del self.delayed[item]
            self._model_add(item)

    def _model_shut_down(self) -> None:
        self.shutting_down = True
        self.delayed.clear()

    # -- rules -----------------------------------------------------------------------

    @rule(item=ITEMS)
    def add(self, item: str) -> None:
        self.q.add(item)
        self._model_add(item)

    @rule(item=ITEMS, delay_ms=st.integers(-2, 40))
    def add_after(self, item: str, delay_ms: int) -> None:
        self.q.add_after(item, delay_ms / 1000)
        self._model_add_after(item, delay_ms / 1000)

    @rule(item=ITEMS)
    def add_rate_limited(self, item: str) -> None:
        self.q.add_rate_limited(item)
        n = self.failures.get(item, 0)
        self.failures[item] = n + 1
        self._model_add_after(item, min(BASE * 2.0**n, CAP))

    @rule(item=ITEMS)
    def forget(self, item: str) -> None:
        self.q.forget(item)
        self.failures.pop(item, None)

    @rule(ms=st.integers(0, 25))
    def step(self, ms: int) -> None:
        self.clock.step(ms / 1000)
        self._model_promote()

    @precondition(lambda self: self.expected or self.shutting_down)
    @rule()
    def get(self) -> None:
        item, shutdown = self._run(self.q.get())
        if not self.expected:
            assert (item, shutdown) == (None, True)
            return
        want = self.expected.pop(0)
        assert (item, shutdown) == (want, False), "not FIFO"
        assert item not in self.held, "handed to two workers"
        self.held.add(item)

    @precondition(lambda self: not self.expected and not self.shutting_down)
    @rule()
    def get_blocks_when_nothing_is_ready(self) -> None:
        getter = self.loop.create_task(self.q.get())
        self._settle()
        assert not getter.done()
        # With delayed items the getter sleeps on the clock until the earliest one.
        assert self.clock.has_waiters() == bool(self.delayed)
        getter.cancel()
        self._settle()
        assert getter.cancelled()
        assert not self.clock.has_waiters()    # the cancelled get left no sleeper behind

    @precondition(lambda self: self.held)
    @rule(data=st.data())
    def done(self, data: st.DataObject) -> None:
        item = data.draw(st.sampled_from(sorted(self.held)))
        self.q.done(item)
        self.held.discard(item)
        if not self.held:
            self.drain_released = True
        if item in self.readd:                 # re-added mid-processing: not lost
            self.readd.discard(item)
            self.expected.append(item)

    @rule(item=ITEMS)
    def done_for_an_item_not_held(self, item: str) -> None:
        if item not in self.held:
            self.q.done(item)                  # ignored

    @rule(act=RARELY)
    def shut_down(self, act: bool) -> None:
        if not act:
            return
        self.q.shut_down()
        self.drain_released = True
        self._model_shut_down()

    @precondition(lambda self: self.drainer is None)
    @rule(act=RARELY)
    def shut_down_with_drain(self, act: bool) -> None:
        if not act:
            return
        self.drainer = self.loop.create_task(self.q.shut_down_with_drain())
        self.drain_released = not self.held
        self._model_shut_down()

    # -- invariants ------------------------------------------------------------------

    @invariant()
    def matches_model(self) -> None:
        self._settle()
        self.q._check_invariants()
        assert len(self.q) == len(self.expected)
        assert self.q.shutting_down() == self.shutting_down
        assert self.q._num_waiting() == len(self.delayed)
        for item in ["a", "b", "c"]:
            assert self.q.num_requeues(item) == self.failures.get(item, 0)
        if self.drainer is not None:
            assert self.drainer.done() == self.drain_released


TestWorkqueueMachine = WorkqueueMachine.TestCase
TestWorkqueueMachine.settings = settings(max_examples=200, stateful_step_count=50,
                                         deadline=None)
