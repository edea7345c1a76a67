"""Process-runtime containers outlive the kubelet: real processes under their shims, a second
runtime (and kubelet) on the same root taking them up again. Every test kills what it started.
"""
from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator
from typing import Any

import pytest
from process_testutil import PY, eventually, make_pod, read_all

from kubeplane.api import errors
from kubeplane.api.types import to_dict
from kubeplane.apiserver.handlers.podlog import LogOptions
from kubeplane.testing.fake import FakeClientset
from kubeplane.kubelet.kubelet import Kubelet
from kubeplane.kubelet.runtime import EXITED, RUNNING
from kubeplane.kubelet.runtime.process import ProcessRuntime
from kubeplane.kubelet.runtime.process.records import (
    alive,
    kill_recorded,
    recorded_pods,
)
from kubeplane.utils.clock import REAL_CLOCK

TICKER = [PY, "-c", "import sys, time\nfor i in range(600):\n    print(i, flush=True)\n    time.sleep(0.05)\n"]


@pytest.fixture
def root(tmp_path: Any) -> Any:
    yield tmp_path / "kubelet"
    kill_recorded(tmp_path / "kubelet")


def latest(rt: ProcessRuntime, name: str = "c") -> Any:
    st = rt.pod_status("uid-1")
    return st.latest(name) if st else None


async def running(rt: ProcessRuntime) -> Any:
    return await eventually(lambda: (s := latest(rt)) is not None and s.state == RUNNING and s, what="running")


async def exited(rt: ProcessRuntime) -> Any:
    return await eventually(lambda: (s := latest(rt)) is not None and s.state == EXITED and s, what="exited")


def kill_container(rt: ProcessRuntime, sig: int = signal.SIGKILL) -> None:
    c = next(iter(rt._by_id.values()))
    os.killpg(c.pid, sig)


async def test_a_running_container_is_taken_up_with_its_log_and_exit(root: Any) -> None:
    a = ProcessRuntime(root_dir=root)
    pod = make_pod([{"name": "c", "image": "python:3", "command": TICKER}])
    a.run_pod_sandbox(pod)
    a.start_container(pod, pod.spec.containers[0], init=False, attempt=0)
    before = await running(a)
    sandbox = a.pod_status("uid-1").sandbox
    await a.aclose()                         # the kubelet stops: the container does not
    assert alive(next(iter(a._by_id.values())).pid, next(iter(a._by_id.values())).pid_start)
    logged = len((await read_all(a.container_logs("uid-1", "p", LogOptions("c")))).splitlines())

    b = ProcessRuntime(root_dir=root)
    assert b.restore_pod(pod) and b.list_pods() == ["uid-1"]
    assert b.pod_status("uid-1").sandbox == sandbox and latest(b) == before     # object for object
    await eventually(lambda: _more_lines(b, logged + 5), what="the log to keep growing")
    out = await read_all(b.container_logs("uid-1", "p", LogOptions("c")))
    assert out.splitlines()[:logged + 5] == [str(i).encode() for i in range(logged + 5)]   # one file, no gap
    b.stop_container(before.id, 5)
    st = await exited(b)
    assert (st.exit_code, st.reason) == (143, "Error")                          # its real exit code
    assert not any(True for _ in (c for c in b._by_id.values() if alive(c.shim_pid, c.shim_start)))


async def _more_lines(rt: ProcessRuntime, n: int) -> bool:
    return len((await read_all(rt.container_logs("uid-1", "p", LogOptions("c")))).splitlines()) >= n


async def test_exits_while_no_kubelet_watched_are_reported_with_their_code_or_as_unknown(root: Any) -> None:
    a = ProcessRuntime(root_dir=root)
    pod = make_pod([{"name": "c", "image": "python:3", "command": TICKER},
                    {"name": "d", "image": "python:3", "command": TICKER}])
    a.run_pod_sandbox(pod)
    for c in pod.spec.containers:
        a.start_container(pod, c, init=False, attempt=0)
    await running(a)
    await eventually(lambda: (s := latest(a, "d")) is not None and s.state == RUNNING, what="d running")
    await a.aclose()
    c, d = sorted(a._by_id.values(), key=lambda x: x.spec.name)
    os.killpg(c.pid, signal.SIGTERM)                             # its shim records the exit
    os.kill(d.shim_pid, signal.SIGKILL)                          # the shim itself is gone
    await eventually(lambda: not alive(c.shim_pid, c.shim_start), what="c's shim to finish")

    b = ProcessRuntime(root_dir=root)
    assert b.restore_pod(pod)
    st_c, st_d = latest(b, "c"), latest(b, "d")
    assert (st_c.state, st_c.exit_code, st_c.reason) == (EXITED, 143, "Error")
    assert st_c.started_at is not None and st_c.finished_at >= st_c.started_at
    assert (st_d.state, st_d.exit_code, st_d.reason) == (EXITED, 137, "ContainerStatusUnknown")
    assert st_d.message == "The container could not be located when the pod was deleted.  The container used to be Running"
    await eventually(lambda: not alive(d.pid, d.pid_start), what="its orphaned process stopped")


async def test_remove_pod_stops_and_forgets_an_adopted_pod(root: Any) -> None:
    a = ProcessRuntime(root_dir=root)
    pod = make_pod([{"name": "c", "image": "python:3", "command": TICKER}])
    a.run_pod_sandbox(pod)
    a.start_container(pod, pod.spec.containers[0], init=False, attempt=0)
    await running(a)
    await a.aclose()
    c = next(iter(a._by_id.values()))
    b = ProcessRuntime(root_dir=root)
    assert b.list_pods() == ["uid-1"]
    b.remove_pod("uid-1")
    await eventually(lambda: not alive(c.pid, c.pid_start), what="the container stopped")
    assert recorded_pods(root) == {} and b.list_pods() == []


# --- a kubelet restart ---------------------------------------------------------------------------


class _Recorder:
    def __init__(self, out: list[tuple[str, str]]) -> None:
        self.out = out

    def event(self, ref: Any, type_: str, reason: str, message: str) -> None:
        self.out.append((ref.name or "", reason))


class _Broadcaster:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []

    def new_recorder(self, component: str, host: str = "") -> _Recorder:
        return _Recorder(self.events)


class Kubelets:
    """One fake API server; kubelets on the same root started and stopped one after another."""

    def __init__(self, cs: FakeClientset, root: Any) -> None:
        self.cs, self.root = cs, root
        self.task: asyncio.Task[None] | None = None
        self.kubelet: Kubelet | None = None
        self.events: list[tuple[str, str]] = []

    async def start(self) -> Kubelet:
        bc = _Broadcaster()
        self.events = bc.events
        self.kubelet = Kubelet(self.cs, node_names=["node-0"], runtime=ProcessRuntime(root_dir=self.root),
                               clock=REAL_CLOCK, broadcaster=bc)
        self.task = asyncio.ensure_future(self.kubelet.run())
        await eventually(lambda: self.kubelet is not None and self.kubelet.nodes, what="node registered")
        return self.kubelet

    async def stop(self) -> None:
        assert self.task is not None
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)

    @property
    def pods(self) -> Any:
        return self.cs.core_v1().pods("default")

    async def until(self, name: str, pred: Any, what: str) -> Any:
        async def check() -> Any:
            try:
                p = await self.pods.get(name)
            except errors.NotFound:
                return None
            return p if pred(p) else None
        return await eventually(check, 10, what)


@pytest.fixture
async def kubelets(root: Any) -> AsyncIterator[Kubelets]:
    k = Kubelets(await FakeClientset.new(clock=REAL_CLOCK), root)
    yield k
    if k.task is not None and not k.task.done():
        await k.stop()


def ready(p: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or ())


def restarts(p: Any) -> int:
    cs = (p.status.container_statuses or [None])[0]
    return cs.restart_count if cs is not None else -1


async def test_a_sleep_container_survives_a_kubelet_restart_object_for_object(kubelets: Kubelets) -> None:
    await kubelets.start()
    await kubelets.pods.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sleeper"}, "spec": {
        "nodeName": "node-0", "terminationGracePeriodSeconds": 2, "containers": [{
            "name": "c", "image": "busybox", "command": ["sleep", "600"],
            "readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 1}}]}})
    before = to_dict(await kubelets.until("sleeper", ready, "Ready"))
    await kubelets.stop()
    kl = await kubelets.start()
    await asyncio.sleep(2.5)                 # probes ran (period 1 s): nothing to report
    assert to_dict(await kubelets.pods.get("sleeper")) == before
    assert kl.status_manager.writes == 0 and kubelets.events == []
    # the container dies: restarted as its policy says, and counted
    kill_container(kl.runtime)               # type: ignore[arg-type]
    p = await kubelets.until("sleeper", lambda p: restarts(p) == 1 and ready(p), "a restart")
    last = p.status.container_statuses[0].last_state.terminated
    assert (last.exit_code, last.reason) == (137, "Error")
    assert [r for _, r in kubelets.events] == ["Pulled", "Created", "Started"]


async def test_a_container_killed_while_the_kubelet_was_down_is_restarted_and_counted(kubelets: Kubelets) -> None:
    kl = await kubelets.start()
    await kubelets.pods.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sleeper"}, "spec": {
        "nodeName": "node-0", "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "600"]}]}})
    first = await kubelets.until("sleeper", ready, "Ready")
    await kubelets.stop()
    kill_container(kl.runtime)               # type: ignore[arg-type]
    await kubelets.start()
    p = await kubelets.until("sleeper", lambda p: restarts(p) == 1 and ready(p), "a restart")
    cs = p.status.container_statuses[0]
    assert (cs.last_state.terminated.exit_code, cs.last_state.terminated.container_id) == (
        137, first.status.container_statuses[0].container_id)
    assert cs.container_id != first.status.container_statuses[0].container_id


async def test_a_pod_deleted_while_the_kubelet_was_down_has_its_containers_stopped(kubelets: Kubelets) -> None:
    kl = await kubelets.start()
    await kubelets.pods.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gone"}, "spec": {
        "nodeName": "node-0", "containers": [{"name": "c", "image": "busybox", "command": ["sleep", "600"]}]}})
    await kubelets.until("gone", ready, "Ready")
    await kubelets.stop()
    c = next(iter(kl.runtime._by_id.values()))   # type: ignore[attr-defined]
    await kubelets.pods.delete("gone", grace_period_seconds=0)
    await kubelets.start()
    await eventually(lambda: not alive(c.pid, c.pid_start), what="the orphan stopped")
    assert recorded_pods(kubelets.root) == {}


async def test_unreadable_records_are_skipped(root: Any) -> None:
    a = ProcessRuntime(root_dir=root)
    pod = make_pod([{"name": "c", "image": "python:3", "command": TICKER}])
    a.run_pod_sandbox(pod)
    a.start_container(pod, pod.spec.containers[0], init=False, attempt=0)
    await running(a)
    await a.aclose()
    containers = root / "pods" / "uid-1" / "containers"
    (containers / "garbage.json").write_text("{not json")
    (containers / "wrong.json").write_text('{"id": "x", "container": {"name": 5}, "attempt": "zero"}')
    b = ProcessRuntime(root_dir=root)
    assert b.restore_pod(pod) and latest(b).state == RUNNING and len(b.pod_status("uid-1").containers) == 1
