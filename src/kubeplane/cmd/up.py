"""`kubeplane up`: run the control plane in the foreground until Ctrl-C / SIGTERM.

Starts storage, the API server over HTTPS, and (in later work) the controllers, scheduler and
kubelets; when the server answers it writes DIR/kubeconfig and prints how to use it.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import pathlib
import re
import signal
import sys
from typing import Any, Iterator

import uvicorn

from ..apiserver.app import ASGIApp
from ..apiserver.certs import ensure_pki
from ..apiserver.server import APIServer
from ..storage import DEFAULT_COMPACTION_INTERVAL, DEFAULT_HISTORY_BYTES, new_storage, run_compactor
from .kubeconfig import write_kubeconfig

log = logging.getLogger("kubeplane")


def in_process_clientset(api: APIServer, component: str) -> Any:
    """A clientset that reaches api without sockets or TLS, identified as `component`."""
    from ..client.clientset import Clientset
    from ..client.transport import InProcessTransport
    return Clientset(InProcessTransport(api, user=f"system:{component}", user_agent=component))


async def supervise(name: str, coro: Any) -> None:
    """Run one component until cancelled; a crash is logged, not fatal to the API server."""
    try:
        await coro
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("%s stopped", name)


def start_components(api: APIServer, args: argparse.Namespace) -> list[asyncio.Future[None]]:
    """The controllers, the scheduler and the kubelet(s), in this process over the in-process
    transport (--no-controllers leaves only the API server and the kubelets).

    They share one informer factory (not upstream, where each is a process of its own): every
    watch event is decoded once and cached once for all of them, which works because, as
    upstream requires, no component modifies an object it got from an informer.
    """
    from ..client.informers import SharedInformerFactory
    from ..kubelet import run_kubelet
    from ..kubelet.kubelet import KubeletOptions
    from .controller_manager import ControllerManagerOptions, run_controllers
    from .scheduler import run_scheduler
    factory = SharedInformerFactory(in_process_clientset(api, "kubeplane-informers"))
    tasks = [asyncio.ensure_future(_shut_down_on_cancel(factory))]
    if args.controllers:
        options = ControllerManagerOptions(node_monitor_grace_period=args.node_monitor_grace_period)
        tasks.append(asyncio.ensure_future(supervise("controllers", run_controllers(
            in_process_clientset(api, "kube-controller-manager"), options=options, factory=factory))))
        tasks.append(asyncio.ensure_future(supervise(
            "scheduler", run_scheduler(in_process_clientset(api, "kube-scheduler"), factory=factory))))
    if args.nodes > 0:
        tasks.append(asyncio.ensure_future(supervise("kubelet", run_kubelet(
            in_process_clientset(api, "kubelet"), nodes=args.nodes, runtime=args.runtime, profile=args.profile,
            options=KubeletOptions(heartbeat_period=args.node_heartbeat_period),
            node_registry=api.nodes, data_dir=args.data_dir.resolve() / "kubelet", factory=factory))))
    return tasks


async def _shut_down_on_cancel(factory: Any) -> None:
    """Hold the shared informers until `up` stops its components, then stop them."""
    try:
        await asyncio.Event().wait()
    finally:
        await factory.shutdown()


def add_parser(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser("up", help="run the whole control plane in the foreground")
    p.add_argument("--data-dir", type=pathlib.Path, default=pathlib.Path(".kubeplane"),
                   help="where state, certificates and the kubeconfig live (default ./.kubeplane)")
    p.add_argument("--port", type=int, default=6443, help="HTTPS port (default 6443; 0 picks a free one)")
    p.add_argument("--address", default="127.0.0.1", help="listen address (default loopback only)")
    p.add_argument("--nodes", type=int, default=1, help="simulated nodes to start (default 1)")
    p.add_argument("--runtime", choices=("sim", "process"), default="sim",
                   help="how nodes run pods: sim, or process (real local processes) (default sim)")
    p.add_argument("--profile", default="default",
                   help="sim runtime behaviour: a shipped profile (default, readiness-delay, failing-readiness, "
                        "crash-loop, image-pull-failure) or a directory of stage YAML files")
    p.add_argument("--node-heartbeat-period", type=_seconds, default=10.0, metavar="SECONDS",
                   help="how often each simulated node renews its Lease and checks its status (default 10, "
                        "upstream's lease renew interval)")
    p.add_argument("--node-monitor-grace-period", type=_seconds, default=40.0, metavar="SECONDS",
                   help="how long a node may be silent before the node lifecycle controller marks it Unknown "
                        "(default 40, as kube-controller-manager through 1.31); keep it well above --node-heartbeat-period")
    p.add_argument("--storage", choices=("sqlite", "memory"), default="sqlite", help="storage backend")
    p.add_argument("--watch-history", type=int, default=50_000,
                   help="events kept for watches to resume from (older resourceVersions get 410 Gone)")
    p.add_argument("--watch-history-bytes", type=_bytes, default=DEFAULT_HISTORY_BYTES, metavar="BYTES",
                   help="bytes of events kept for watches to resume from, at least (default 8 MiB; the history "
                        "may hold up to 8 x the live data if that is more)")
    p.add_argument("--etcd-compaction-interval", type=_go_duration, default=DEFAULT_COMPACTION_INTERVAL,
                   metavar="DURATION", help="the interval of compaction requests, e.g. 5m, 30s; 0 disables "
                                            "compaction (default 5m0s, as kube-apiserver)")
    p.add_argument("--no-controllers", dest="controllers", action="store_false",
                   help="run no controllers and no scheduler (the API server and kubelets only)")
    p.add_argument("--log-level", default="warning")
    p.set_defaults(func=run)


def _seconds(text: str) -> float:
    """A positive number of seconds, for argparse."""
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return value


def _bytes(text: str) -> int:
    """A non-negative number of bytes, for argparse."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative number of bytes, got {text!r}")
    return value


def _go_duration(text: str) -> float:
    """A non-negative Go duration ("5m", "1m30s", "0") in seconds, for argparse.
    Upstream: time.ParseDuration, for the units a flag here needs (ms, s, m, h)."""
    parts = re.findall(r"(\d+(?:\.\d*)?|\.\d+)(ms|s|m|h)", text)
    if text != "0" and (not parts or "".join(n + u for n, u in parts) != text):
        raise argparse.ArgumentTypeError(f'time: invalid duration "{text}"')
    return float(sum(float(n) * {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}[u] for n, u in parts))


def run(args: argparse.Namespace) -> int:
    from .standalone import run_process
    return run_process(args.log_level, lambda: serve(args), use_uvloop=True)


async def serve(args: argparse.Namespace) -> None:
    data_dir: pathlib.Path = args.data_dir.resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    pki = ensure_pki(data_dir, [args.address])
    storage = new_storage(args.storage, data_dir, history=args.watch_history,
                          history_bytes=args.watch_history_bytes)
    compactor = asyncio.ensure_future(run_compactor(storage, args.etcd_compaction_interval))
    api = APIServer(storage, tokens={pki.token: "kubeplane-admin"})
    await api.bootstrap()
    config = uvicorn.Config(ASGIApp(api), host=args.address, port=args.port, loop="none", http="httptools",
                            ssl_certfile=str(pki.server_cert), ssl_keyfile=str(pki.server_key),
                            lifespan="off", log_level="warning", access_log=False, timeout_keep_alive=120,
                            proxy_headers=False, timeout_graceful_shutdown=5.0)
    components: list[asyncio.Future[None]] = []

    async def stop_components() -> None:
        """Stop the controllers, then end open watches: uvicorn drains requests, and a watch
        never finishes by itself."""
        for task in components:
            task.cancel()
        await asyncio.gather(*components, return_exceptions=True)
        storage.stop_watches()

    server = _Server(config, before_shutdown=stop_components)
    serving = asyncio.ensure_future(server.serve())
    try:
        listening = asyncio.ensure_future(server.listening.wait())
        await asyncio.wait({serving, listening}, return_when=asyncio.FIRST_COMPLETED)
        if serving.done():
            listening.cancel()
            serving.result()
            return
        port = server.servers[0].sockets[0].getsockname()[1]
        host = "127.0.0.1" if args.address in ("0.0.0.0", "::") else args.address
        api.server_address = f"{host}:{port}"
        kubeconfig = data_dir / "kubeconfig"
        write_kubeconfig(kubeconfig, f"https://{host}:{port}", pki.ca_cert, pki.token)
        components.extend(start_components(api, args))
        print(f"kubeplane is ready: export KUBECONFIG={kubeconfig}", flush=True)
        await serving
    finally:
        await stop_components()
        if not serving.done():
            server.should_exit = True
            await serving
        compactor.cancel()
        await storage.close()
        sys.stdout.flush()


class _Server(uvicorn.Server):
    """uvicorn's server, saying when it listens and stopping our components before it drains."""

    def __init__(self, config: uvicorn.Config, *, before_shutdown: Any) -> None:
        super().__init__(config)
        self.listening = asyncio.Event()
        self.before_shutdown = before_shutdown

    async def startup(self, sockets: Any = None) -> None:
        await super().startup(sockets)
        if not self.should_exit:
            self.listening.set()

    async def shutdown(self, sockets: Any = None) -> None:
        await self.before_shutdown()
        await super().shutdown(sockets)

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        """Ctrl-C / SIGTERM start a graceful shutdown; unlike uvicorn's own handling, the signal
        is not re-raised afterwards, so storage is closed and the exit status is 0."""
        loop = asyncio.get_running_loop()
        signals = (signal.SIGINT, signal.SIGTERM)
        for sig in signals:
            loop.add_signal_handler(sig, self.handle_exit, sig, None)
        try:
            yield
        finally:
            for sig in signals:
                loop.remove_signal_handler(sig)
