"""An informer survives the API server restarting underneath it.

A real `kubeplane up` runs as a subprocess on a fixed loopback port (so a restart comes back at
the same address) over a temp data dir; an informer watches configmaps through HTTPS.

1. Restart with the history intact: the informer resumes its watch from the last
   resourceVersion it saw. Every change is seen exactly once, nothing is relisted.
2. Restart with `--watch-history 5` while the informer's watch is held back and more than five
   writes happen: its resume revision is compacted, the watch gets 410 Gone, the informer
   relists, and handlers see tombstone deletes and adds; the cache then equals the server.
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import pathlib
import signal
import socket
import subprocess
import sys
from typing import Any, AsyncIterator, Callable

import pytest

from kubeplane.api import errors
from kubeplane.api.resources import lookup
from kubeplane.client.clientset import Clientset
from kubeplane.client.rest import ObjectList, ResourceClient
from kubeplane.client.tools.cache import DeletedFinalStateUnknown, SharedIndexInformer
from kubeplane.client.tools.cache.reflector import Backoff
from kubeplane.client.transport import HTTPTransport
from kubeplane.utils.clock import REAL_CLOCK

READY_TIMEOUT = 30.0
WAIT_TIMEOUT = 20.0
SIGTERM_GRACE = 1.0      # then SIGKILL (an idle server exits in ~0.1 s): see the note in Server.stop


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`python -m kubeplane up` on a fixed port and data dir, restartable."""

    def __init__(self, data_dir: pathlib.Path, port: int) -> None:
        self.data_dir, self.port = data_dir, port
        self.kubeconfig = data_dir / "kubeconfig"
        self.log_path = data_dir / "up.log"
        self.proc: subprocess.Popen[bytes] | None = None
        self.sigterm_exits: list[bool] = []       # per stop(): did SIGTERM alone end the server?

    async def start(self, *extra: str) -> None:
        self.kubeconfig.unlink(missing_ok=True)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "kubeplane", "up", "--data-dir", str(self.data_dir),
                 "--port", str(self.port), "--nodes", "0", *extra],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        await poll(lambda: self.kubeconfig.exists() or self.proc.poll() is not None, READY_TIMEOUT,
                   "kubeplane up did not become ready")
        if self.proc.poll() is not None:
            raise RuntimeError(f"kubeplane up exited: {self.log_path.read_text()[-3000:]}")

    async def stop(self) -> None:
        """SIGTERM, then SIGKILL after a grace period.

        While a watch is open, `kubeplane up` does not exit on SIGTERM (uvicorn waits for the
        streaming response to finish), so the kill is the fallback; either way the server
        disappears underneath the informer, which is what this test is about.
        """
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(asyncio.to_thread(proc.wait), SIGTERM_GRACE)
            self.sigterm_exits.append(True)
        except asyncio.TimeoutError:
            self.sigterm_exits.append(False)
            self.kill(proc)

    def kill(self, proc: subprocess.Popen[bytes] | None = None) -> None:
        proc = proc or self.proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


async def poll(cond: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not cond():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out: {what}")
        await asyncio.sleep(0.02)


class GatedListerWatcher:
    """Wraps the informer's ResourceClient: counts lists and 410s, and can hold watches back."""

    def __init__(self, inner: ResourceClient[Any]) -> None:
        self.inner = inner
        self.gate = asyncio.Event()
        self.gate.set()
        self.lists = 0
        self.gone = 0
        self.watch_rvs: list[str] = []

    async def list(self, *, resource_version: str = "") -> ObjectList[Any]:
        self.lists += 1
        return await self.inner.list(resource_version=resource_version)

    async def watch(self, **kw: Any) -> AsyncIterator[Any]:
        await self.gate.wait()
        self.watch_rvs.append(kw.get("resource_version", ""))
        try:
            async with contextlib.aclosing(self.inner.watch(**kw)) as events:
                async for ev in events:
                    yield ev
        except errors.Gone:
            self.gone += 1
            raise


class Log:
    """A handler that logs every notification as (verb, name, old rv, new rv / initial)."""

    def __init__(self) -> None:
        self.entries: list[tuple[Any, ...]] = []

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self.entries.append(("add", obj.metadata.name, obj.metadata.resource_version, is_in_initial_list))

    def on_update(self, old: Any, new: Any) -> None:
        self.entries.append(("update", new.metadata.name, old.metadata.resource_version,
                             new.metadata.resource_version))

    def on_delete(self, obj: Any) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            self.entries.append(("tombstone", obj.obj.metadata.name, obj.obj.metadata.resource_version, obj.key))
        else:
            self.entries.append(("delete", obj.metadata.name, obj.metadata.resource_version))

    def since(self, n: int, prefix: str = "cm-") -> list[tuple[Any, ...]]:
        return [e for e in self.entries[n:] if e[1].startswith(prefix)]


def cm(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data or None}


async def server_state(client: ResourceClient[Any]) -> dict[str, str]:
    return {o.metadata.name: o.metadata.resource_version for o in (await client.list()).items}


def cache_state(inf: SharedIndexInformer) -> dict[str, str]:
    return {o.metadata.name: o.metadata.resource_version for o in inf.get_store().list()}


@pytest.fixture
async def server(tmp_path: pathlib.Path) -> AsyncIterator[Server]:
    srv = Server(tmp_path, free_port())
    try:
        yield srv
    finally:
        srv.kill()          # always: no test leaves a server behind


async def test_informer_survives_server_restarts(server: Server) -> None:
    await server.start()
    writer_tr = HTTPTransport.from_kubeconfig(server.kubeconfig)
    informer_tr = HTTPTransport.from_kubeconfig(server.kubeconfig)
    writer = Clientset(writer_tr).core_v1().configmaps("default")
    lw = GatedListerWatcher(ResourceClient(informer_tr, lookup("", "v1", "configmaps"), "default"))
    inf = SharedIndexInformer(lw, name="configmaps")
    inf.reflector.backoff = Backoff(REAL_CLOCK, initial=0.05, cap=0.5)   # reconnect quickly
    log = Log()
    inf.add_event_handler(log)
    task: asyncio.Task[None] | None = None
    try:
        rv = {}
        for name in ("cm-a", "cm-b", "cm-c"):
            rv[name] = (await writer.create(cm(name))).metadata.resource_version
        task = asyncio.create_task(inf.run())
        await asyncio.wait_for(inf.wait_synced(), WAIT_TIMEOUT)
        rv["cm-d"] = (await writer.create(cm("cm-d"))).metadata.resource_version
        await poll(lambda: len(log.since(0)) == 4, WAIT_TIMEOUT, "cm-d added")
        assert sorted(log.since(0)) == [("add", "cm-a", rv["cm-a"], True), ("add", "cm-b", rv["cm-b"], True),
                                        ("add", "cm-c", rv["cm-c"], True), ("add", "cm-d", rv["cm-d"], False)]

        # --- 1. restart, history intact: the watch resumes; every change exactly once ---------------
        mark = len(log.entries)
        await server.stop()
        await server.start()
        rv["cm-e"] = (await writer.create(cm("cm-e"))).metadata.resource_version
        rv["cm-a2"] = (await writer.patch("cm-a", {"data": {"k": "v"}}, "merge")).metadata.resource_version
        await writer.delete("cm-b")
        rv["cm-f"] = (await writer.create(cm("cm-f"))).metadata.resource_version   # a marker: events are ordered,
        await poll(lambda: any(x[1] == "cm-f" for x in log.since(mark)), WAIT_TIMEOUT, "cm-f")  # so nothing lags
        after = log.since(mark)
        assert after[:2] == [("add", "cm-e", rv["cm-e"], False), ("update", "cm-a", rv["cm-a"], rv["cm-a2"])], after
        assert after[2][:2] == ("delete", "cm-b")                    # the object's final state
        assert after[3:] == [("add", "cm-f", rv["cm-f"], False)], after
        assert lw.lists == 1 and lw.gone == 0                        # resumed, never relisted
        resumed_from = [int(v) for v in lw.watch_rvs]
        assert len(resumed_from) >= 2 and resumed_from == sorted(resumed_from)   # never from "" or backwards
        assert int(rv["cm-d"]) in resumed_from[1:]                   # the last RV seen before the restart
        assert cache_state(inf) == await server_state(writer)

        # --- 2. restart with a 5-event window while the watch is held back: 410, relist --------------
        mark = len(log.entries)
        last_seen = inf.last_sync_resource_version()
        lw.gate.clear()                                              # the next watch waits here
        await server.stop()
        await server.start("--watch-history", "5")
        for name in ("cm-g", "cm-h", "cm-i", "cm-j"):
            await writer.create(cm(name))
        await writer.patch("cm-c", {"data": {"k": "v"}}, "merge")
        await writer.delete("cm-d")
        await writer.patch("cm-e", {"data": {"k": "v"}}, "merge")
        await writer.create(cm("cm-k"))
        with pytest.raises(errors.Gone):                             # the informer's resume point is gone
            async for _ in writer.watch(resource_version=last_seen):
                break
        want = await server_state(writer)
        lw.gate.set()
        await poll(lambda: lw.lists == 2 and cache_state(inf) == want, WAIT_TIMEOUT, "relist after 410")
        assert lw.gone == 1
        after = log.since(mark)
        assert sorted(after) == sorted([
            ("update", "cm-a", rv["cm-a2"], want["cm-a"]),           # unchanged: re-delivered by the relist
            ("update", "cm-c", rv["cm-c"], want["cm-c"]),
            ("update", "cm-e", rv["cm-e"], want["cm-e"]),
            ("update", "cm-f", rv["cm-f"], want["cm-f"]),
            *[("add", n, want[n], False) for n in ("cm-g", "cm-h", "cm-i", "cm-j", "cm-k")],
            ("tombstone", "cm-d", rv["cm-d"], "default/cm-d"),       # deleted while we were away
        ]), after
        assert want["cm-a"] == rv["cm-a2"] and want["cm-c"] != rv["cm-c"]
        assert cache_state(inf) == await server_state(writer)
    finally:
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await writer_tr.close()
        await informer_tr.close()
