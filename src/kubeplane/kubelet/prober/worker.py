"""One probe loop (readiness, liveness or startup) for one container attempt.

Upstream: worker (pkg/kubelet/prober/worker.go). Timing here is deterministic: the first
probe runs initialDelaySeconds after the container started (at once if that has passed),
then every periodSeconds. Upstream starts each worker at a random point of its period and
skips probes until initialDelaySeconds have passed, so its first probe lands somewhere in
[initialDelay, initialDelay + period); ours lands at the start of that window.

Thresholds, as upstream: the result flips to Success after successThreshold consecutive
successes and to Failure after failureThreshold consecutive failures. Initial results, as
upstream: readiness Failure, liveness Success, startup unknown (None). Liveness and
readiness do not probe until the container has started (its startup probe succeeded);
a startup worker stops once it succeeded; liveness and startup workers stop on Failure
(the container is being killed; its next attempt gets a new worker).
Example: period 10, successThreshold 2, container started at 0 with initialDelay 5 ->
readiness probes at 5 (Success, run 1) and 15 (Success, run 2): ready from 15 s.
"""
from __future__ import annotations

import asyncio
import inspect
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Awaitable, Callable

from ...api.types import core_v1
from ...utils.clock import Clock
from ..runtime import PROBE_SUCCESS, PROBE_UNKNOWN

if TYPE_CHECKING:
    from ..metrics import ProbeSeries

READINESS, LIVENESS, STARTUP = "readiness", "liveness", "startup"
_INITIAL = {READINESS: False, LIVENESS: True, STARTUP: None}


@dataclass(frozen=True)
class ProbeSpec:
    initial_delay: float
    period: float
    success_threshold: int
    failure_threshold: int

    @classmethod
    def from_probe(cls, p: core_v1.Probe) -> ProbeSpec:
        """API defaults (period 10, success 1, failure 3) when the server did not fill them in."""
        return cls(float(p.initial_delay_seconds or 0), float(p.period_seconds or 10),
                   int(p.success_threshold or 1), int(p.failure_threshold or 3))


class Worker:
    def __init__(self, container_id: str, spec: ProbeSpec, started_at: float, *, clock: Clock,
                 probe: Callable[[str], str | Awaitable[str]], on_result: Callable[[str, bool], None],
                 probe_type: str = READINESS, started: Callable[[], bool] = lambda: True,
                 initial: bool | None = None, series: ProbeSeries | None = None) -> None:
        self.container_id, self.spec, self.started_at = container_id, spec, started_at
        self.clock, self.probe, self.on_result = clock, probe, on_result
        self.probe_type = probe_type
        self.started = started              # liveness/readiness wait for this (the startup probe)
        # initial: the result to start from instead of upstream's (a restarted kubelet's)
        self.result: bool | None = _INITIAL[probe_type] if initial is None else initial
        self.ready = bool(self.result)      # readiness: the current result
        self.last_result = ""
        self.result_run = 0
        self.task: asyncio.Task[None] | None = None
        self.series = series                # where each probe's result and duration are counted

    def start(self) -> None:
        self.task = asyncio.ensure_future(self.run())

    def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()

    async def run(self) -> None:
        """Upstream: worker.run"""
        if self.probe_type == STARTUP and self.result:
            return                          # started before a kubelet restart: nothing to decide
        await self.clock.sleep(max(0.0, self.started_at + self.spec.initial_delay - self.clock.now()))
        while await self.do_probe():
            await self.clock.sleep(self.spec.period)

    async def do_probe(self) -> bool:
        """Probe once and apply the thresholds; False when this worker is done.

        Upstream: worker.doProbe
        """
        if self.probe_type != STARTUP and not self.started():
            return True                     # not started yet: liveness/readiness wait
        started = time.perf_counter()      # a probe's real duration, whatever the clock (upstream: time.Now)
        result = self.probe(self.container_id)
        if inspect.isawaitable(result):
            result = await result
        if self.series is not None:
            self.series.record(result, time.perf_counter() - started)
        if result == PROBE_UNKNOWN:
            return False
        if result == self.last_result:
            self.result_run += 1
        else:
            self.last_result, self.result_run = result, 1
        ok = result == PROBE_SUCCESS
        if self.result_run < (self.spec.success_threshold if ok else self.spec.failure_threshold):
            return True                     # below the threshold: leave the result as it is
        if ok != self.result:
            self.result = self.ready = ok
            self.on_result(self.container_id, ok)
        if self.probe_type == STARTUP and ok:
            return False                    # started: nothing more to decide
        return ok or self.probe_type == READINESS
