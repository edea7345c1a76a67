"""--request-timeout and ?timeout=: a deadline for every non-long-running request, 504 past it.

Upstream: WithRequestDeadline (apiserver/pkg/endpoints/filters/request_deadline.go) picks the
deadline — the server's --request-timeout, or the client's shorter `?timeout=` (kubectl's
--request-timeout and client-go's Timeout send it) — and WithTimeoutForNonLongRunningRequests
(apiserver/pkg/server/filters/timeout.go) answers 504 when it passes. Upstream cannot stop the
handler's goroutine, only cancel its context; here the handler's task is cancelled, which is
safe because the server mutates its state only in synchronous code between awaits (a write
either happened or did not, as upstream: a 504 does not say the write was not made). Nothing
the handler produced is sent: the client gets the 504 Status alone.
"""
from __future__ import annotations

import asyncio
import math
from types import TracebackType
from typing import Any, Self

from ...api import errors
from ...utils.clock import Clock, Timer
from ...utils.goduration import parse_go_duration
from ..request import Request

INVALID_TIMEOUT_IN_URL = "invalid timeout specified in the request URL"
TIMEOUT_MESSAGE = "request did not complete within the allotted timeout"
_current_task = asyncio.current_task


def request_timeout(req: Request, maximum: float) -> float:
    """The seconds this request may take: the server's maximum or the client's shorter ?timeout=.

    Upstream: withRequestDeadline + parseTimeout. `timeout=0s` (or anything not below the
    maximum) means the server's maximum. A malformed value is a 400 with Go's own message:
    "invalid timeout specified in the request URL - time: invalid duration \"abc\"".
    """
    value = req.query.get("timeout", "")
    if not value:
        return maximum
    try:
        user = parse_go_duration(value)
    except ValueError as e:
        raise errors.BadRequest(f"{INVALID_TIMEOUT_IN_URL} - {e}") from None
    return user if 0 < user < maximum else maximum


def timeout_error() -> errors.StatusError:
    """Upstream: apierrors.NewTimeoutError("request did not complete within the allotted timeout", 0)."""
    return errors.Timeout(f"Timeout: {TIMEOUT_MESSAGE}")


class Deadlines:
    """The deadlines of the requests being served, all on one timer.

    A loop timer per request costs ~3 µs on uvloop (arm and cancel), a few per cent of a GET;
    here a request only enters and leaves a dict. The one timer is armed for the earliest
    deadline and left alone when requests finish; when it fires it cancels the expired requests
    and re-arms for the earliest deadline left. With the usual 60 s for everyone it fires about
    once a minute, scanning only the requests then in flight. Times are the injected clock's.
    """

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._monotonic = clock.monotonic
        self.pending: dict[asyncio.Task[Any], Deadline] = {}
        # Deadlines entered outside a task: by a request's first step, which the HTTP front end
        # runs at once (serving.py HttpToolsProtocol._run_direct); bound to the task that goes
        # on with it if it has to wait, else left (only a waiting request can be cancelled).
        self.unbound: list[Deadline] = []
        self._timer: Timer | None = None
        self._timer_at = math.inf

    def deadline(self, seconds: float) -> Deadline:
        """A deadline `seconds` from now for the current task (use it as a context manager)."""
        return Deadline(self, self._monotonic() + seconds)

    def bind(self, task: asyncio.Task[Any]) -> None:
        """The deadlines entered outside a task now belong to `task` (the request goes on in it)."""
        for d in self.unbound:
            d.task = task
            self.pending[task] = d
        self.unbound.clear()

    def _earlier(self, d: Deadline) -> None:
        """d is due before the timer: arm it for d."""
        if self._timer is not None:
            self._timer.cancel()
        self._arm(d.at)

    def _arm(self, at: float) -> None:
        self._timer_at = at
        self._timer = self.clock.after_func(max(at - self.clock.monotonic(), 0.0), self._fire)

    def _fire(self) -> None:
        self._timer, self._timer_at = None, math.inf
        now, earliest = self.clock.monotonic(), math.inf
        for task, d in list(self.pending.items()):
            if d.at <= now + 1e-9:
                del self.pending[task]
                d.expired = True
                task.cancel()
            else:
                earliest = min(earliest, d.at)
        if earliest < math.inf:
            self._arm(earliest)


class Deadline:
    """Cancel the current task at `at` (the clock's monotonic time); `expired` says it did.

    Use as `with deadlines.deadline(s): ...` around awaits: when it expires the task is
    cancelled and the block ends with TimeoutError, so the caller answers 504 (the dance of
    asyncio.timeout, on the injected clock). A cancellation from outside (shutdown) is passed
    on untouched.
    """

    __slots__ = ("at", "deadlines", "expired", "task")

    def __init__(self, deadlines: Deadlines, at: float) -> None:
        self.deadlines, self.at = deadlines, at
        self.expired = False
        self.task: asyncio.Task[Any] | None = None

    def __enter__(self) -> Self:
        task = _current_task()
        deadlines = self.deadlines
        if task is None:                  # not yet in a task: Deadlines.bind
            deadlines.unbound.append(self)
        else:
            self.task = task
            deadlines.pending[task] = self
        if self.at < deadlines._timer_at:
            deadlines._earlier(self)
        return self

    def __exit__(self, typ: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        task = self.task
        if task is None:
            self.deadlines.unbound.remove(self)
            return
        self.deadlines.pending.pop(task, None)
        if self.expired and typ is asyncio.CancelledError and task.uncancel() == 0:
            raise TimeoutError from exc       # ours, and nobody else asked to cancel
