"""A running control plane for tests: `kubeplane up` in a thread of the test's own process.

    from kubeplane.testing import ControlPlane

    with ControlPlane(nodes=1) as cp:              # ready in a fraction of a second
        cp.apply("deploy/crd.yaml")                # CRDs waited for until Established
        ns = cp.create_namespace()
        api = cp.kubernetes_client()               # the official client, on cp.kubeconfig
        ...

It is exactly `kubeplane up` (cmd/up.py serve: HTTPS with its own PKI, authentication, RBAC,
admission, the CRD controller, the controller-manager, the scheduler and simulated nodes), with
memory storage, a free loopback port and a temporary data dir, its event loop (uvloop) on a
thread of its own, so synchronous tests, asyncio tests on any loop and operators run with
kopf.testing.KopfRunner (another thread) all reach it over HTTPS through `kubeconfig`, as they
would a real cluster. In-process instead of a child process, so it starts in well under a
second (BENCHMARKS.md) and its state can be inspected (`api`, `run`).

This module sits above cmd (it runs the whole of `kubeplane up`), as tests/test_layering.py says.
"""
from __future__ import annotations

import argparse
import asyncio
import pathlib
import signal
import tempfile
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Self

from ..apiserver.authentication.user import UserInfo
from ..apiserver.inprocess import InProcessTransport
from ..cmd import up
from .cluster import ClusterClient, StartError

if TYPE_CHECKING:
    from ..apiserver.server import APIServer

__all__ = ["ControlPlane", "StartError", "parse_up_args"]

# What kubeplane.testing's own requests (apply, namespaces) run as: an administrator, as the
# kubeconfig's user is.
TESTING_USER = UserInfo("kubeplane-testing", groups=("system:masters", "system:authenticated"))


class ControlPlane(ClusterClient):
    """`kubeplane up` in this process. nodes: simulated nodes (0: none); controllers: run the
    controller-manager and scheduler (namespace deletion, garbage collection, Deployments...);
    args: more `kubeplane up` flags, e.g. ["--authorization-mode", "AlwaysAllow"]; data_dir: where
    the PKI and kubeconfig go (default: a temporary directory removed on stop)."""

    def __init__(self, *, nodes: int = 1, controllers: bool = True, args: Sequence[str] = (),
                 data_dir: pathlib.Path | str | None = None, timeout: float = 30.0) -> None:
        super().__init__(controllers=controllers, timeout=timeout)
        self.nodes = nodes
        self.args = tuple(args)
        self._data_dir = pathlib.Path(data_dir) if data_dir is not None else None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._server: Any = None
        self.api: APIServer | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> Self:
        """Start and return once it serves (the kubeconfig is written); StartError if it cannot."""
        if self._thread is not None:
            raise RuntimeError("the control plane is already started")
        args = parse_up_args(["up", "--port", "0", "--storage", "memory", "--nodes", str(self.nodes),
                              *([] if self.controllers else ["--no-controllers"]), *self.args])
        if self._data_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="kubeplane-")
            self._data_dir = pathlib.Path(self._tmp.name)
        args.data_dir = self._data_dir
        self._ready.clear()
        self._error = None
        self._thread = threading.Thread(target=self._run, args=(args,), name="kubeplane", daemon=True)
        self._thread.start()
        if not self._ready.wait(self.timeout):
            self.stop()
            raise StartError(f"the control plane did not start within {self.timeout}s")
        if self._server is None:
            self.stop()
            raise StartError(f"the control plane did not start: {self._error}") from self._error
        return self

    def _run(self, args: argparse.Namespace) -> None:
        try:
            with asyncio.Runner(loop_factory=_loop_factory()) as runner:
                runner.run(up.serve(args, on_ready=self._on_ready))
        except BaseException as err:  # noqa: BLE001 - reported by start(), or lost after stop()
            self._error = err
        finally:
            self._ready.set()

    def _on_ready(self, server: Any) -> None:
        self._server = server
        self.api = server.api
        self.loop = asyncio.get_running_loop()
        self._ready.set()

    def stop(self) -> None:
        """Stop as `kubeplane up` does on SIGTERM (components, then open watches, then the server),
        wait for it, and remove the temporary data dir."""
        thread, self._thread = self._thread, None
        if thread is not None:
            if self._server is not None and self.loop is not None and not self.loop.is_closed():
                try:
                    self.loop.call_soon_threadsafe(self._server.handle_exit, signal.SIGTERM, None)
                except RuntimeError:      # the loop closed meanwhile: nothing left to stop
                    pass
            thread.join(self.timeout)
        self._server = self.api = self.loop = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
            self._data_dir = None

    # -- what tests use --------------------------------------------------------------------

    @property
    def data_dir(self) -> pathlib.Path:
        assert self._data_dir is not None, "the control plane is not started"
        return self._data_dir

    @property
    def kubeconfig(self) -> pathlib.Path:
        """The administrator's kubeconfig (client certificate and token), as `kubeplane up` writes it."""
        return self.data_dir / "kubeconfig"

    @property
    def server(self) -> str:
        """https://127.0.0.1:<port>"""
        assert self.api is not None, "the control plane is not started"
        return f"https://{self.api.server_address}"

    def transport(self) -> InProcessTransport:
        """A transport that reaches the API server in-process as an administrator; use it on `loop` only."""
        assert self.api is not None, "the control plane is not started"
        return InProcessTransport(self.api, user=TESTING_USER, user_agent="kubeplane-testing")


def parse_up_args(argv: list[str]) -> argparse.Namespace:
    """`kubeplane up`'s own flags and defaults; ValueError (argparse's message) for a bad one."""
    parser = argparse.ArgumentParser(prog="kubeplane", exit_on_error=False)
    up.add_parser(parser.add_subparsers())
    try:
        return parser.parse_args(argv)
    except (argparse.ArgumentError, SystemExit) as err:
        raise ValueError(f"kubeplane up {' '.join(argv[1:])}: {err}") from None


def _loop_factory() -> Any:
    try:
        import uvloop
        return uvloop.new_event_loop
    except ImportError:          # pragma: no cover - uvloop is a dependency
        return asyncio.new_event_loop
