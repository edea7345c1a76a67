"""One readiness probe loop for one container.

Upstream: worker (pkg/kubelet/prober/worker.go). Timing here is deterministic: the first
probe runs initialDelaySeconds after the container started (at once if that has passed),
then every periodSeconds. Upstream starts each worker at a random point of its period and
skips probes until initialDelaySeconds have passed, so its first probe lands somewhere in
[initialDelay, initialDelay + period); ours lands at the start of that window.

Thresholds, as upstream: the result flips to Success after successThreshold consecutive
successes and back to Failure after failureThreshold consecutive failures; readiness
starts as Failure. Example: period 10, successThreshold 2, container started at 0 with
initialDelay 5 -> probes at 5 (Success, run 1) and 15 (Success, run 2): ready from 15 s.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Callable

from ...api.types import core_v1
from ...utils.clock import Clock
from ..runtime import PROBE_SUCCESS, PROBE_UNKNOWN


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
                 probe: Callable[[str], str], on_result: Callable[[str, bool], None]) -> None:
        self.container_id, self.spec, self.started_at = container_id, spec, started_at
        self.clock, self.probe, self.on_result = clock, probe, on_result
        self.ready = False                  # readiness starts as Failure
        self.last_result = ""
        self.result_run = 0
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.ensure_future(self.run())

    def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()

    async def run(self) -> None:
        """Upstream: worker.run"""
        await self.clock.sleep(max(0.0, self.started_at + self.spec.initial_delay - self.clock.now()))
        while self.do_probe():
            await self.clock.sleep(self.spec.period)

    def do_probe(self) -> bool:
        """Probe once and apply the thresholds; False once the container is gone.

        Upstream: worker.doProbe
        """
        result = self.probe(self.container_id)
        if result == PROBE_UNKNOWN:
            return False
        if result == self.last_result:
            self.result_run += 1
        else:
            self.last_result, self.result_run = result, 1
        ok = result == PROBE_SUCCESS
        if self.result_run < (self.spec.success_threshold if ok else self.spec.failure_threshold):
            return True                     # below the threshold: leave the result as it is
        if ok != self.ready:
            self.ready = ok
            self.on_result(self.container_id, ok)
        return True
