"""The control planes kubeplane.testing hands to tests, whichever way each runs, and what is
common to them: the kubeconfig, applying manifests, fresh namespaces, the official client.

    ControlPlane          `kubeplane up` in a thread of the test's own process (controlplane.py):
                          the fastest to start, and its state can be inspected.
    ProcessControlPlane   `kubeplane up` as a child process: for operators that block the event
                          loop or hold the GIL, or tests that need the control plane isolated
                          from their process (signals, threads, crashes, memory).
    ExistingCluster       a cluster that runs already (another `kubeplane up`, kind, a real
                          one), given its kubeconfig: nothing is started or stopped, but fresh
                          namespaces are still made and deleted.

    from kubeplane.testing import ProcessControlPlane, ExistingCluster
    with ProcessControlPlane(nodes=1) as cp:                    # cp.kubeconfig, cp.apply(...), ...
        ...
    with ExistingCluster("~/.kube/config") as cluster:          # the same methods
        ns = cluster.create_namespace()

kubeplane.testing's own requests (apply, namespaces) go over HTTPS with the kubeconfig's
credentials, from an event loop on a thread of the ClusterClient's own, so synchronous tests and
asyncio tests on any loop can call them. This module imports no API server: the two modes that
do not run one in-process do not load it.
"""
from __future__ import annotations

import asyncio
import os
import pathlib
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Self, TypeVar

import orjson

from ..client.transport import HTTPTransport, Transport, load_kubeconfig
from . import manifests

T = TypeVar("T")


class StartError(RuntimeError):
    """The control plane did not start, or the cluster cannot be reached (the message says why)."""


class ClusterClient:
    """What the fixtures use of a control plane, over its kubeconfig. Subclasses start and stop
    it; `controllers` says whether a namespace gets its "default" ServiceAccount (waited for)."""

    nodes: int | None = None
    args: tuple[str, ...] = ()

    def __init__(self, *, controllers: bool = True, timeout: float = 30.0) -> None:
        self.controllers = controllers
        self.timeout = timeout
        self.loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> Self:
        """Start (or reach) the control plane and return self; StartError if it cannot."""
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    @property
    def kubeconfig(self) -> pathlib.Path:
        raise NotImplementedError

    @property
    def server(self) -> str:
        """The API server's URL, as the kubeconfig names it."""
        return str(load_kubeconfig(self.kubeconfig)[0]["server"])

    # -- requests --------------------------------------------------------------------------

    def transport(self) -> Transport:
        """A transport to the API server as the kubeconfig's user; make and use it on `loop`."""
        return HTTPTransport.from_kubeconfig(self.kubeconfig, user_agent="kubeplane-testing")

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run a coroutine on `loop` (from any other thread) and return its result."""
        assert self.loop is not None, "the control plane is not started"
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout or self.timeout)

    def _call(self, fn: Callable[[Transport], Coroutine[Any, Any, T]]) -> T:
        async def call() -> T:
            transport = self.transport()
            try:
                return await fn(transport)
            finally:
                await transport.close()
        return self.run(call())

    def _start_loop(self) -> None:
        """An event loop of this client's own, on a daemon thread (the remote modes)."""
        ready = threading.Event()

        def serve() -> None:
            self.loop = asyncio.new_event_loop()
            ready.set()
            self.loop.run_forever()
            self.loop.close()
        self._loop_thread = threading.Thread(target=serve, name="kubeplane-testing", daemon=True)
        self._loop_thread.start()
        ready.wait()

    def _stop_loop(self) -> None:
        thread, self._loop_thread = self._loop_thread, None
        if thread is not None and self.loop is not None:
            self.loop.call_soon_threadsafe(self.loop.stop)
            thread.join(self.timeout)
        self.loop = None

    # -- what tests use --------------------------------------------------------------------

    def apply(self, *sources: manifests.Source, namespace: str = "default") -> list[dict[str, Any]]:
        """Server-side apply the objects of files, directories, YAML text or dicts, CRDs first and
        waited for until Established (manifests.py); returns what the server stored."""
        objects = manifests.load(sources)
        return self._call(lambda t: manifests.apply(t, objects, namespace=namespace, timeout=self.timeout))

    def create_namespace(self, name: str | None = None, *, prefix: str = "test-",
                         labels: dict[str, str] | None = None) -> str:
        """Create a namespace (name, or prefix + a random suffix) and return its name; with the
        controllers running, wait for its "default" ServiceAccount, so pods can be created at once."""
        name = name or namespace_name(prefix)
        self._call(lambda t: self._create_namespace(t, name, labels or {}))
        return name

    async def _create_namespace(self, t: Transport, name: str, labels: dict[str, str]) -> None:
        ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}
        resp = await t.request("POST", "/api/v1/namespaces", body=orjson.dumps(ns))
        manifests.decoded(resp, f"Namespace {name}")
        if self.controllers:          # the serviceaccounts controller makes it
            await asyncio.wait_for(manifests.wait_for(t, f"/api/v1/namespaces/{name}/serviceaccounts", "default",
                                                      lambda _: True), self.timeout)

    def delete_namespace(self, name: str) -> None:
        """Delete a namespace (with the controllers running, the namespace controller then
        deletes what is in it and the namespace itself); an absent one is not an error."""
        async def delete(t: Transport) -> None:
            resp = await t.request("DELETE", f"/api/v1/namespaces/{name}")
            if resp.status != 404:
                manifests.decoded(resp, f"Namespace {name}")
        self._call(delete)

    def kubernetes_client(self) -> Any:
        """A kubernetes.client.ApiClient (the official client) on the kubeconfig."""
        import kubernetes
        return kubernetes.config.new_client_from_config(config_file=str(self.kubeconfig))


# `kubeplane up` that stops (SIGTERM to itself) when its standard input closes: when the test
# process ends without stopping it (killed, or crashed), the pipe it holds closes with it.
_UP_UNTIL_STDIN_CLOSES = """
import os, signal, sys, threading
def watch():
    while os.read(0, 4096):     # the file descriptor, not sys.stdin: no lock held at exit
        pass
    os.kill(os.getpid(), signal.SIGTERM)
threading.Thread(target=watch, name="stdin-watch", daemon=True).start()
from kubeplane.cmd.main import main
sys.exit(main(sys.argv[1:]))
"""


class ProcessControlPlane(ClusterClient):
    """`kubeplane up` as a child process (the same flags as ControlPlane: memory storage, a free
    loopback port, a temporary data dir), stopped with SIGTERM as a terminal's Ctrl-C would (and
    by itself when this process ends without stopping it), its output in <data_dir>/up.log."""

    def __init__(self, *, nodes: int = 1, controllers: bool = True, args: Sequence[str] = (),
                 data_dir: pathlib.Path | str | None = None, timeout: float = 30.0) -> None:
        super().__init__(controllers=controllers, timeout=timeout)
        self.nodes = nodes
        self.args = tuple(args)
        self._data_dir = pathlib.Path(data_dir) if data_dir is not None else None
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def data_dir(self) -> pathlib.Path:
        assert self._data_dir is not None, "the control plane is not started"
        return self._data_dir

    @property
    def kubeconfig(self) -> pathlib.Path:
        return self.data_dir / "kubeconfig"

    @property
    def log(self) -> pathlib.Path:
        return self.data_dir / "up.log"

    def start(self) -> Self:
        """Start and return once it is ready (it says so on its output); StartError if it cannot."""
        if self.proc is not None:
            raise RuntimeError("the control plane is already started")
        if self._data_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="kubeplane-")
            self._data_dir = pathlib.Path(self._tmp.name)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        argv = [sys.executable, "-c", _UP_UNTIL_STDIN_CLOSES, "up", "--data-dir", str(self.data_dir), "--port", "0",
                "--storage", "memory", "--nodes", str(self.nodes),
                *([] if self.controllers else ["--no-controllers"]), *self.args]
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.PIPE,
                                         start_new_session=True)
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        self._start_loop()
        return self

    def _wait_ready(self) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            output = self.log.read_text(errors="replace")
            if "kubeplane is ready:" in output:
                return
            if self.proc.poll() is not None:
                raise StartError(f"kubeplane up exited ({self.proc.returncode}): {_tail(output)}")
            time.sleep(0.02)
        raise StartError(f"kubeplane up did not start within {self.timeout}s: {_tail(self.log.read_text())}")

    def stop(self) -> None:
        """SIGTERM (components, then open watches, then the server stop), SIGKILL if it has not
        exited within the timeout; then the temporary data dir is removed."""
        self._stop_loop()
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(self.timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if proc is not None and proc.stdin is not None:
            proc.stdin.close()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
            self._data_dir = None


class ExistingCluster(ClusterClient):
    """A cluster that runs already, reached with a kubeconfig (its current context) whose user may
    create and delete namespaces and apply what the tests apply. start() checks that it answers;
    stop() leaves it running. controllers: whether its namespaces get a "default" ServiceAccount
    (any real cluster's do)."""

    def __init__(self, kubeconfig: pathlib.Path | str, *, controllers: bool = True, timeout: float = 30.0) -> None:
        super().__init__(controllers=controllers, timeout=timeout)
        self._kubeconfig = pathlib.Path(kubeconfig).expanduser()

    @property
    def kubeconfig(self) -> pathlib.Path:
        return self._kubeconfig

    def start(self) -> Self:
        try:
            load_kubeconfig(self.kubeconfig)
        except (OSError, ValueError, KeyError, IndexError, TypeError) as err:
            raise StartError(f"kubeconfig {self.kubeconfig}: {err or type(err).__name__}") from None
        self._start_loop()
        try:
            resp = self._call(lambda t: t.request("GET", "/version"))
        except Exception as err:  # noqa: BLE001 - any failure to connect is the message
            self._stop_loop()
            raise StartError(f"the cluster of {self.kubeconfig} cannot be reached: {err or type(err).__name__}") from None
        if resp.status != 200:
            self._stop_loop()
            raise StartError(f"the cluster of {self.kubeconfig} answers GET /version with {resp.status}: "
                             f"{resp.body[:200]!r}")
        return self

    def stop(self) -> None:
        self._stop_loop()


def namespace_name(prefix: str) -> str:
    """prefix + 8 random characters, cut to a DNS label (63), lower case, [a-z0-9-]."""
    base = re.sub(r"[^a-z0-9-]+", "-", prefix.lower())[:54].strip("-")
    return f"{base}-{secrets.token_hex(4)}" if base else secrets.token_hex(4)


def _tail(output: str, lines: int = 20) -> str:
    return "\n".join(output.strip().splitlines()[-lines:])
