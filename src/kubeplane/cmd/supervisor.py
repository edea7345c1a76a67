"""Supervision of the components `kubeplane up` runs in its own process.

Each component (controller-manager, scheduler, kubelet) runs as a task. One that crashes is
logged with its traceback, once per crash, and started again after a back-off that doubles
from 0.8 s to 30 s and is forgotten once a run lasts 2 minutes: the parameters of client-go's
reflector, which restarts a failed ListAndWatch the same way (wait.BackoffUntil with
NewExponentialBackoffManager(800ms, 30s, 2m, 2.0, ...); no jitter here, there is nothing to
spread in one process). While a component is down its health check fails, so /livez and
/readyz report it.

A component that crashes CRASH_LOOP_CRASHES times in a row, each run shorter than the reset
period, is crash-looping: restarting it again will not help, so Supervisor.run() raises
CrashLoop and `up` exits non-zero, as systemd gives up on a unit after StartLimitBurst
starts. Example with the defaults: a component that fails at once crashes at 0, 0.8, 2.4,
5.6 and 12 s; the fifth crash ends `up` about 12 s after the first.

Upstream: client-go tools/cache/reflector.go (defaultBackoffInit/Max/Reset/Factor).
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ..apiserver.healthz import NamedCheck
from ..utils.clock import REAL_CLOCK, Clock

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class SupervisorOptions:
    initial_backoff: float = 0.8     # seconds before the first restart (reflector: defaultBackoffInit)
    max_backoff: float = 30.0        # the back-off doubles up to this (defaultBackoffMax)
    reset_after: float = 120.0       # a run this long forgets earlier crashes (defaultBackoffReset)
    crash_loop_crashes: int = 5      # crashes in a row, each run shorter than reset_after: give up


class CrashLoop(Exception):
    """A component kept crashing; the process should exit non-zero."""

    def __init__(self, name: str, crashes: int, reset_after: float) -> None:
        super().__init__(f"{name} is crash-looping: {crashes} crashes in a row, each within {reset_after:g}s "
                         "of its start")
        self.name = name


class Component:
    """One supervised component and what its health check reports.

    crashes: consecutive crashes (each run shorter than reset_after); last_error: repr of the
    last one; running: whether a run is under way (False while backing off).
    """

    def __init__(self, name: str, run: Callable[[], Awaitable[None]]) -> None:
        self.name = name
        self.run = run
        self.crashes = 0
        self.last_error = ""
        self.running = False
        self.restart_in = 0.0

    def check(self) -> Exception | None:
        """Healthy while running; the reason while backing off after a crash."""
        if self.running:
            return None
        if not self.crashes:
            return RuntimeError("not started")
        return RuntimeError(f"crashed {self.crashes} time(s) in a row, last: {self.last_error}; "
                            f"restarting in {self.restart_in:g}s")

    def health_check(self) -> NamedCheck:
        return NamedCheck(self.name, self.check)


class Supervisor:
    """Runs components, restarts the ones that crash, and gives up on a crash loop."""

    def __init__(self, *, clock: Clock = REAL_CLOCK, options: SupervisorOptions = SupervisorOptions()) -> None:
        self.clock = clock
        self.options = options
        self.components: list[Component] = []

    def add(self, name: str, run: Callable[[], Awaitable[None]]) -> Component:
        """Supervise `run` (called anew for every start) under `name`."""
        component = Component(name, run)
        self.components.append(component)
        return component

    async def run(self) -> None:
        """Run every component until cancelled; raise CrashLoop when one crash-loops (the
        others are cancelled first)."""
        try:
            async with asyncio.TaskGroup() as tg:
                for c in self.components:
                    tg.create_task(self.supervise(c))
        except ExceptionGroup as group:          # supervise() raises nothing else
            raise next(e for e in group.exceptions if isinstance(e, CrashLoop)) from None

    async def supervise(self, c: Component) -> None:
        """Start c, and start it again after each crash, with back-off.

        A return without cancellation counts as a crash: components run until cancelled.
        """
        opts = self.options
        backoff = opts.initial_backoff
        while True:
            started = self.clock.monotonic()
            c.running = True
            err = await self._run_once(c)
            c.running = False
            if self.clock.monotonic() - started >= opts.reset_after:
                c.crashes, backoff = 0, opts.initial_backoff      # it ran long enough: forgiven
            c.crashes += 1
            c.last_error = repr(err) if err else "exited"
            c.restart_in = backoff
            # the traceback, once per crash (exc_info=None for a component that returned)
            log.error("component crashed", exc_info=err,
                      extra={"component": c.name, "crashes": c.crashes, "restartIn": f"{backoff:g}s"})
            if c.crashes >= opts.crash_loop_crashes:
                raise CrashLoop(c.name, c.crashes, opts.reset_after)
            await self.clock.sleep(backoff)
            backoff = min(backoff * 2, opts.max_backoff)

    async def _run_once(self, c: Component) -> Exception | None:
        """One run of c: the exception it crashed with, or None if it returned."""
        try:
            await c.run()
        except Exception as err:  # noqa: BLE001 - a crash is what we supervise; CancelledError propagates
            return err
        return None
