"""What every component run as a process of its own shares: a kubeconfig, logging, signals,
and (for the controller-manager and the scheduler) leader election on a kube-system Lease and
an HTTPS server for health and metrics (serving.py).
"""
from __future__ import annotations

import argparse
import asyncio
import logging
import pathlib
import signal
import socket
import sys
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import yaml

from ..client.clientset import Clientset
from . import flags
from .errors import Fatal, describe
from .logs import LEVELS
from .logs import setup as setup_logging

if TYPE_CHECKING:
    from .serving import HealthChecks, LeaderHealthzAdaptor

log = logging.getLogger(__name__)

Run = Callable[[Clientset], Awaitable[None]]


class LeaderElectionLost(Fatal):
    pass


def add_component_parser(sub: Any, name: str, help: str, lease: str, main: Callable[[argparse.Namespace], int],
                         *, secure_port: int = 0) -> argparse.ArgumentParser:
    """The common flags; `lease` "" means the component takes no leader election (kubelets);
    `secure_port` adds --secure-port (that default) and --bind-address (serving.py)."""
    p: argparse.ArgumentParser = sub.add_parser(name, help=help)
    p.add_argument("--kubeconfig", type=pathlib.Path, required=True)
    if lease:
        p.add_argument("--leader-elect", action=argparse.BooleanOptionalAction, default=True,
                       help=f"hold the kube-system/{lease} Lease while running (default on)")
    if secure_port:
        flags.add_secure_serving(p, secure_port)
    add_log_level(p)
    p.set_defaults(func=main)
    return p


def add_log_level(p: argparse.ArgumentParser) -> None:
    p.add_argument("--log-level", choices=LEVELS, default=None,
                   help="default: warning, with start, stop and leader election at info")


async def run_with_leader_election(clientset: Clientset, lease: str, identity: str, run: Run,
                                   watchdog: LeaderHealthzAdaptor | None = None) -> None:
    """Run only while holding the kube-system/<lease> Lease, as upstream's components do, so
    several copies can stand by for each other. Losing the lease ends the process with status
    1 (LeaderElectionLost), as upstream's do, so that whatever runs it starts it again.
    watchdog: the "leaderElection" health check, given the elector."""
    from ..client.tools.leaderelection import (
        LeaderCallbacks,
        LeaderElectionConfig,
        LeaderElector,
    )

    failed: BaseException | None = None

    async def lead(stop: asyncio.Event) -> None:
        """Upstream: the components' run ends in klog.Fatalf when starting fails, so that the
        process exits (its supervisor starts it again) instead of holding the lease idle."""
        nonlocal failed
        try:
            await run(clientset)
        except Exception as err:
            failed = err
            electing.cancel()

    lost = False

    def stopped() -> None:
        """Upstream: the OnStoppedLeading of kube-scheduler and kube-controller-manager."""
        nonlocal lost
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            return                      # asked to terminate: not a loss
        lost = True
        log.error("Leaderelection lost", extra={"lease": f"kube-system/{lease}", "identity": identity})

    config = LeaderElectionConfig("kube-system", lease, identity,
                                  callbacks=LeaderCallbacks(on_started_leading=lead, on_stopped_leading=stopped),
                                  release_on_cancel=True)
    elector = LeaderElector(clientset, config)
    if watchdog is not None:
        watchdog.elector = elector
    electing = asyncio.ensure_future(elector.run())
    try:
        await electing
    except asyncio.CancelledError:
        if failed is None:
            raise
    if failed is not None:
        raise Fatal(f"error running {lease}: {failed!r}")
    if lost:
        raise LeaderElectionLost("leaderelection lost")


def run_process(log_level: str | None, main: Callable[[], Awaitable[None]], *, use_uvloop: bool = False,
                handle_signals: bool = True) -> int:
    """Around the main coroutine of every long-running command: GC tuning, logging, the event
    loop (uvloop for `up`), Ctrl-C and SIGTERM as a clean exit (0), and a Fatal error as one
    line on stderr and exit status 1.

    handle_signals: cancel main on SIGINT/SIGTERM (`up` leaves them to its HTTP server).
    """
    from ..utils import gc_tuning
    gc_tuning.tune()
    setup_logging(log_level)
    if use_uvloop:
        try:
            import uvloop
            uvloop.install()
        except ImportError:       # pragma: no cover - uvloop is a dependency, but keep working without it
            pass

    async def main_with_signals() -> None:
        if handle_signals:
            task = asyncio.current_task()
            assert task is not None
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(sig, task.cancel)
        try:
            await main()
        except asyncio.CancelledError:
            log.info("Requested to terminate, exiting")

    try:
        asyncio.run(main_with_signals())
    except KeyboardInterrupt:
        pass
    except Fatal as err:
        print(f"Error: {err}", file=sys.stderr, flush=True)
        return 1
    return 0


def run_component(args: argparse.Namespace, *, user_agent: str, lease: str, run: Run,
                  health: HealthChecks | None = None, watchdog: LeaderHealthzAdaptor | None = None) -> int:
    """The body of `kubeplane <component> --kubeconfig FILE`: connect over HTTPS and run.

    health: serve it (and /metrics) on --bind-address:--secure-port from the start, leader or
    not, as upstream's components do; watchdog: the leaderElection check among them.
    """

    async def main() -> None:
        cs = Clientset(load_transport(args.kubeconfig, user_agent))
        log.info("Starting", extra={"component": user_agent, "version": _git_version()})
        server = None
        try:
            if health is not None:
                server = await start_server(args, user_agent, health)
            if lease and args.leader_elect:
                await run_with_leader_election(cs, lease, f"{socket.gethostname()}_{uuid.uuid4()}", run, watchdog)
            else:
                await run(cs)
        finally:
            if server is not None:
                await server.stop()
            await cs.close()

    return run_process(args.log_level, main)


async def start_server(args: argparse.Namespace, component: str, health: HealthChecks) -> Any:
    """The component's SecureServer, serving; a port that cannot be had is one line (Fatal)."""
    from .serving import SecureServer

    token = str(check_kubeconfig(args.kubeconfig).get("token", ""))
    server = SecureServer(component, health, token=token, address=args.bind_address, port=args.secure_port)
    try:
        await server.start()
    except OSError as err:
        raise Fatal(f"failed to create listener: {flags.listen_error(args.bind_address, args.secure_port, err)}"
                    ) from None
    return server


def load_transport(kubeconfig: pathlib.Path, user_agent: str) -> Any:
    """An HTTPS transport from a kubeconfig (in the event loop: it opens a session)."""
    from ..client.transport import HTTPTransport
    check_kubeconfig(kubeconfig)
    return HTTPTransport.from_kubeconfig(kubeconfig, user_agent=user_agent)


def check_kubeconfig(kubeconfig: pathlib.Path) -> dict[str, Any]:
    """The kubeconfig's current user; Fatal, in kubectl's words, if the file cannot be used."""
    from ..client.transport import load_kubeconfig
    try:
        cluster, user = load_kubeconfig(kubeconfig)
    except OSError as err:
        raise Fatal(f'error loading config file "{kubeconfig}": {describe(err, "open")}') from None
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, yaml.YAMLError) as err:
        raise Fatal(f'error loading config file "{kubeconfig}": {type(err).__name__}: {err}') from None
    if not isinstance(cluster, dict) or not cluster.get("server"):
        raise Fatal(f'invalid configuration: no server found for cluster in "{kubeconfig}"')
    return user if isinstance(user, dict) else {}


def _git_version() -> str:
    from ..apiserver.server import KUBERNETES_VERSION
    return KUBERNETES_VERSION["gitVersion"]
