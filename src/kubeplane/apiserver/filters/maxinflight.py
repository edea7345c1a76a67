"""--max-requests-inflight and --max-mutating-requests-inflight: 429 past the limit.

Upstream: WithMaxInFlightLimit (apiserver/pkg/server/filters/maxinflight.go). Two independent
budgets, read-only (get, list) and mutating (everything else); long-running requests (watch,
pods/log, ...) take no slot; a limit of 0 turns that budget off. A request that finds its
budget full is answered at once (no queueing, as upstream without priority and fairness) with
429, `Retry-After: 1` and a TooManyRequests Status carrying details.retryAfterSeconds; client-go
and kubectl wait that long and retry by themselves.

Upstream lets a user in the system:masters group through a full budget ("a super-admin or a
loopback connection"). Here the loopback client is the in-process components: they call
APIServer.route_trusted directly and never meet this filter, as upstream's privileged loopback
client would always be let through. No HTTP identity carries that group today (bearer tokens
name a user, without groups; the admin token stands for kubeadm's kubernetes-admin, which is
not in system:masters since 1.29), so every HTTP client is limited.
"""
from __future__ import annotations

from collections.abc import Callable

from ...api import errors
from ...utils.clock import REAL_CLOCK, Clock, Timer
from ..request import Request

NON_MUTATING_VERBS = frozenset({"get", "list", "watch"})
SYSTEM_PRIVILEGED_GROUP = "system:masters"
RETRY_AFTER = 1              # seconds; upstream's constant retryAfter = "1"
READ_ONLY_KIND, MUTATING_KIND = "readOnly", "mutating"   # apiserver_current_inflight_requests' request_kind

Publish = Callable[[str, int], None]


def too_many_requests() -> errors.StatusError:
    """Upstream: tooManyRequests, with the Status of apierrors.NewTooManyRequests(msg, 1)."""
    err = errors.TooManyRequests("Too many requests, please try again later.")
    err.details = {"retryAfterSeconds": RETRY_AFTER}
    return err


class MaxInFlightLimit:
    """Counts the HTTP requests being served, per kind, and refuses those over the limit."""

    def __init__(self, non_mutating_limit: int, mutating_limit: int, *, clock: Clock = REAL_CLOCK,
                 publish: Publish | None = None) -> None:
        self.limits = {READ_ONLY_KIND: non_mutating_limit, MUTATING_KIND: mutating_limit}
        self.in_flight = {READ_ONLY_KIND: 0, MUTATING_KIND: 0}
        self.watermark = Watermark(clock, publish or (lambda kind, value: None), self.in_flight)
        self.watermark.flush()                 # both kinds read 0 from the start, as upstream

    def acquire(self, req: Request, verb: str) -> str:
        """Take a slot for the request; return its kind, to give to release(), or "" when none
        was taken (that budget is off, or a privileged request passes a full one). Raise the 429
        when the budget is full.

        `verb` is the RequestInfo verb (upstream's non-resource requests use the lower-cased
        method, so a non-resource POST is mutating). Long-running requests must not come here.
        """
        kind = READ_ONLY_KIND if verb in NON_MUTATING_VERBS else MUTATING_KIND
        limit = self.limits[kind]
        if not limit:
            return ""
        if self.in_flight[kind] >= limit:
            if _privileged(req):
                return ""                          # let through, uncounted, as upstream
            raise too_many_requests()
        self.in_flight[kind] += 1
        self.watermark.record(kind)
        return kind

    def release(self, kind: str) -> None:
        """Give back the slot acquire() took (nothing for "")."""
        if kind:
            self.in_flight[kind] -= 1
            self.watermark.lowered()


def _privileged(req: Request) -> bool:
    """Upstream: a member of user.SystemPrivilegedGroup. Requests have no groups yet (see the
    module docstring): this is the place for them when authentication grows groups."""
    return SYSTEM_PRIVILEGED_GROUP in getattr(req, "groups", ())


class Watermark:
    """The highest in-flight count of each kind during the last second, published once a second.

    Upstream: requestWatermark + startWatermarkMaintenance, which publish into
    apiserver_current_inflight_requests every second. Here the second's timer is armed by the
    first change and re-armed only while the figure moves, so an idle server runs no timer.
    Unlike upstream (which restarts each second from 0, so long requests with no new arrivals
    read as 0), each second starts from the current count.
    """

    def __init__(self, clock: Clock, publish: Publish, current: dict[str, int]) -> None:
        self.clock, self.publish, self.current = clock, publish, current
        self.high = dict(current)
        self.timer: Timer | None = None

    def record(self, kind: str) -> None:
        """The count of kind went up."""
        n = self.current[kind]
        if n > self.high[kind]:
            self.high[kind] = n
        if self.timer is None:
            self.timer = self.clock.after_func(1.0, self.flush)

    def lowered(self) -> None:
        """A count went down: the high mark stays, the settled figure is published in a second."""
        if self.timer is None:
            self.timer = self.clock.after_func(1.0, self.flush)

    def flush(self) -> None:
        self.timer = None
        for kind, value in self.high.items():
            self.publish(kind, value)
        moved = self.high != self.current
        self.high = dict(self.current)
        if moved:                  # publish the settled figure a second from now
            self.timer = self.clock.after_func(1.0, self.flush)
