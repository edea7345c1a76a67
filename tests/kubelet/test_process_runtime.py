"""The process runtime with real short-lived processes on the real clock.

First the runtime alone (start, exit codes, env, working dirs, signals, logs, probes), then a
Kubelet driving it against an in-process API server (readiness, liveness, startup, restart
policy, deletion, pods/log through the node registry). Every test stops what it started.
"""
from __future__ import annotations

import asyncio
import json
import os
import re
import time
from typing import Any, AsyncIterator, Callable

import pytest

from kubeplane.api import errors
from kubeplane.api.podlog import LogOptions
from kubeplane.testing.fake import FakeClientset
from kubeplane.kubelet.kubelet import Kubelet
from kubeplane.kubelet.runtime import EXITED, PROBE_FAILURE, PROBE_SUCCESS, RUNNING, WAITING, new_runtime
from kubeplane.kubelet.runtime.process import ProcessRuntime
from kubeplane.kubelet.runtime.process.env import expand
from kubeplane.kubelet.runtime.process.logs import parse_rfc3339_nano, rfc3339_nano
from kubeplane.kubelet.runtime.process.records import alive, kill_recorded
from kubeplane.kubelet.runtime.process.probes import http_probe, tcp_probe
from kubeplane.utils.clock import REAL_CLOCK

from process_testutil import PY, eventually, free_port, make_pod, port_open, py, read_all

# --- the runtime alone -----------------------------------------------------------------------


@pytest.fixture
async def rt(tmp_path: Any) -> AsyncIterator[ProcessRuntime]:
    events: list[tuple[str, str, str, str]] = []
    lookups = {("ConfigMap", "default", "cfg"): {"greeting": "hello", "who": "world"}}

    async def lookup(kind: str, ns: str, name: str) -> dict[str, str] | None:
        return lookups.get((kind, ns, name))

    r = ProcessRuntime(root_dir=tmp_path / "kubelet", lookup=lookup,
                       events=lambda ref, t, reason, msg: events.append((ref.field_path or "", t, reason, msg)))
    r.recorded = events           # type: ignore[attr-defined]
    changed: list[str] = []
    r.set_event_handler(changed.append)
    try:
        yield r
    finally:
        await r.stop_all()                   # aclose() would leave them running (kubelet restart)


def latest(rt: ProcessRuntime, uid: str = "uid-1", name: str = "c") -> Any:
    st = rt.pod_status(uid)
    return st.latest(name) if st else None


async def start(rt: ProcessRuntime, pod: Any, i: int = 0, attempt: int = 0) -> str:
    rt.run_pod_sandbox(pod)
    return rt.start_container(pod, pod.spec.containers[i], init=False, attempt=attempt)


async def exited(rt: ProcessRuntime, name: str = "c", timeout: float = 5.0) -> Any:
    return await eventually(lambda: (s := latest(rt, name=name)) is not None and s.state == EXITED and s,
                            timeout, f"{name} to exit")


async def running(rt: ProcessRuntime, name: str = "c") -> Any:
    return await eventually(lambda: (s := latest(rt, name=name)) is not None and s.state == RUNNING and s,
                            what=f"{name} to run")


def opts(**kw: Any) -> LogOptions:
    return LogOptions(kw.pop("container", "c"), **kw)


async def test_exit_codes_reasons_and_sandbox(rt: ProcessRuntime) -> None:
    pod = make_pod([py("import sys; sys.exit(0)", name="ok"), py("import sys; sys.exit(3)", name="bad")])
    rt.run_pod_sandbox(pod)
    sb = rt.pod_status("uid-1").sandbox
    assert (sb.state, sb.ip) == ("Ready", "127.0.0.1")
    for c in pod.spec.containers:
        rt.start_container(pod, c, init=False, attempt=0)
    ok, bad = await exited(rt, "ok"), await exited(rt, "bad")
    assert (ok.exit_code, ok.reason) == (0, "Completed")
    assert (bad.exit_code, bad.reason) == (3, "Error")
    assert ok.started_at is not None and ok.finished_at >= ok.started_at
    assert ok.id.startswith("kubeplane-process://") and ok.image == "python:3"
    reasons = [(f, r) for f, _, r, _ in rt.recorded]          # type: ignore[attr-defined]
    assert ("spec.containers{ok}", "Started") in reasons and ("spec.containers{bad}", "Created") in reasons


async def test_env_field_refs_config_maps_expansion_and_working_dirs(rt: ProcessRuntime, tmp_path: Any) -> None:
    code = ("import json, os, sys; "
            "print(json.dumps({'env': dict(os.environ), 'cwd': os.getcwd(), 'argv': sys.argv[1:]}))")
    wd = tmp_path / "made" / "here"
    env = [{"name": "A", "value": "one"}, {"name": "B", "value": "$(A)-two-$$(A)-$(NOPE)"},
           {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
           {"name": "NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
           {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
           {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
           {"name": "G", "valueFrom": {"configMapKeyRef": {"name": "cfg", "key": "greeting"}}}]
    pod = make_pod([py(code, name="c", env=env, args=["$(A)", "$(B)"], workingDir=str(wd),
                       envFrom=[{"configMapRef": {"name": "cfg"}, "prefix": "CM_"}]),
                    py(code, name="d")])
    await start(rt, pod, 0)
    rt.start_container(pod, pod.spec.containers[1], init=False, attempt=0)
    assert (await exited(rt, "c")).exit_code == 0 and (await exited(rt, "d")).exit_code == 0
    got = json.loads(await read_all(rt.container_logs("uid-1", "p", opts())))
    e = got["env"]
    assert (e["A"], e["B"], e["POD"], e["NS"], e["IP"], e["APP"], e["G"]) == (
        "one", "one-two-$(A)-$(NOPE)", "p", "default", "127.0.0.1", "x", "hello")
    assert e["CM_greeting"] == "hello" and e["CM_who"] == "world" and e["HOSTNAME"] == "p"
    assert got["argv"] == ["one", "one-two-$(A)-$(NOPE)"]
    assert got["cwd"] == str(wd) and wd.is_dir()
    other = json.loads(await read_all(rt.container_logs("uid-1", "p", opts(container="d"))))
    assert other["cwd"] == str(rt.root / "pods" / "uid-1" / "work")
    assert "KUBECONFIG" not in other["env"] and other["env"]["PATH"] == os.environ["PATH"]


def test_expansion_table() -> None:
    """Upstream's expansion cases: known, escaped, unknown and unterminated references."""
    m = {"VAR_A": "A", "VAR_EMPTY": ""}
    for src, want in [("$(VAR_A)", "A"), ("___$(VAR_A)___", "___A___"), ("$$(VAR_A)", "$(VAR_A)"),
                      ("$(VAR_DNE)", "$(VAR_DNE)"), ("$(VAR_EMPTY)x", "x"), ("$(VAR_A", "$(VAR_A"),
                      ("$$$$", "$$"), ("$A", "$A"), ("trailing $", "trailing $")]:
        assert expand(src, m) == want, src


async def test_no_command_missing_program_and_missing_config(rt: ProcessRuntime) -> None:
    pod = make_pod([{"name": "c", "image": "nginx"},
                    {"name": "m", "image": "x", "command": ["/nonexistent/prog"]},
                    py("pass", name="k", env=[{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "nope",
                                                                                            "key": "k"}}}])])
    await start(rt, pod, 0)
    st = latest(rt)
    assert (st.state, st.reason) == (WAITING, "CreateContainerError")
    assert st.message == "container has no command: the process runtime cannot use image entrypoints"
    rt.start_container(pod, pod.spec.containers[1], init=False, attempt=0)
    m = await exited(rt, "m")
    assert (m.exit_code, m.reason) == (128, "StartError") and "/nonexistent/prog" in m.message
    rt.start_container(pod, pod.spec.containers[2], init=False, attempt=0)
    k = await eventually(lambda: (s := latest(rt, name="k")).state == WAITING and s)
    assert (k.reason, k.message) == ("CreateContainerConfigError", 'configmap "nope" not found')
    with pytest.raises(errors.BadRequest, match='container "c" in pod "p" is waiting to start: CreateContainerError'):
        rt.container_logs("uid-1", "p", opts())


TRAP_TERM = ("import os, signal, sys, time\n"
             "def term(*_):\n    os.write(1, b'got TERM\\n')\n{after}\n"
             "signal.signal(signal.SIGTERM, term)\nprint('up', flush=True)\n"
             "while True: time.sleep(0.05)\n")


async def test_stop_sends_sigterm_then_sigkill_after_the_grace_period(rt: ProcessRuntime) -> None:
    pod = make_pod([py(TRAP_TERM.format(after="    pass"), name="stubborn"),
                    py(TRAP_TERM.format(after="    os._exit(0)"), name="polite")])
    rt.run_pod_sandbox(pod)
    for c in pod.spec.containers:
        rt.start_container(pod, c, init=False, attempt=0)
    for name in ("stubborn", "polite"):
        await running(rt, name)
        await eventually(lambda n=name: b"up" in (rt._by_id[latest(rt, name=n).id.split("://")[1]].log.path
                                                  .read_bytes()), what="handler installed")
    t0 = time.monotonic()
    rt.stop_container(latest(rt, name="stubborn").id, 0.4)
    rt.stop_container(latest(rt, name="polite").id, 30)
    polite = await exited(rt, "polite")
    assert (polite.exit_code, polite.reason) == (0, "Completed")
    stubborn = await exited(rt, "stubborn")
    assert time.monotonic() - t0 >= 0.4
    assert (stubborn.exit_code, stubborn.reason) == (137, "Error")
    for name in ("stubborn", "polite"):
        logs = await read_all(rt.container_logs("uid-1", "p", opts(container=name)))
        assert logs == b"up\ngot TERM\n"
    assert [m for _, _, r, m in rt.recorded if r == "Killing"] == [  # type: ignore[attr-defined]
        "Stopping container stubborn", "Stopping container polite"]


async def test_whole_process_group_is_stopped(rt: ProcessRuntime) -> None:
    port = free_port()
    code = (f"import subprocess, sys, time\n"
            f"subprocess.Popen([sys.executable, '-m', 'http.server', '{port}', '--bind', '127.0.0.1'])\n"
            f"time.sleep(60)\n")
    pod = make_pod([py(code)])
    await start(rt, pod)
    await eventually(lambda: port_open(port), what="grandchild listening")
    rt.stop_container(latest(rt).id, 5)
    st = await exited(rt)
    assert st.exit_code == 143                   # SIGTERM: 128 + 15
    await eventually(lambda: not port_open(port), what="grandchild gone")


async def test_logs_tail_limit_timestamps_previous_and_follow(rt: ProcessRuntime) -> None:
    pod = make_pod([py("print('zero'); print('one'); print('two', flush=True); import sys; "
                       "sys.stderr.write('err-no-newline')")])
    await start(rt, pod, attempt=0)
    await exited(rt)
    assert await read_all(rt.container_logs("uid-1", "p", opts())) == b"zero\none\ntwo\nerr-no-newline"
    assert await read_all(rt.container_logs("uid-1", "p", opts(tail_lines=2))) == b"two\nerr-no-newline"
    assert await read_all(rt.container_logs("uid-1", "p", opts(tail_lines=0))) == b""
    assert await read_all(rt.container_logs("uid-1", "p", opts(limit_bytes=7))) == b"zero\non"
    stamped = (await read_all(rt.container_logs("uid-1", "p", opts(timestamps=True, tail_lines=1)))).decode()
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,9})?Z) err-no-newline", stamped)
    assert m is not None, stamped
    assert abs(parse_rfc3339_nano(m.group(1)) / 1e9 - time.time()) < 60
    assert await read_all(rt.container_logs("uid-1", "p", opts(since_seconds=3600))) != b""
    with pytest.raises(errors.BadRequest, match='previous terminated container "c" in pod "p" not found'):
        rt.container_logs("uid-1", "p", opts(previous=True))

    code = ("import os, signal, time\n"         # os.write: print may be mid-flush when the signal lands
            "signal.signal(signal.SIGTERM, lambda *_: (os.write(1, b'bye\\n'), os._exit(0)))\n"
            "print('attempt one', flush=True)\nwhile True: time.sleep(0.05)\n")
    pod2 = make_pod([py(code)])
    rt.start_container(pod2, pod2.spec.containers[0], init=False, attempt=1)
    await running(rt)
    assert await read_all(rt.container_logs("uid-1", "p", opts(previous=True))) == b"zero\none\ntwo\nerr-no-newline"
    follow = rt.container_logs("uid-1", "p", opts(follow=True))
    assert await asyncio.wait_for(follow.__anext__(), 5) == b"attempt one\n"
    rt.stop_container(latest(rt).id, 5)
    rest = await asyncio.wait_for(read_all(follow), 5)          # ends once the attempt has exited
    assert rest == b"bye\n"
    assert latest(rt).attempt == 1 and latest(rt).exit_code == 0


def test_rfc3339_nano_trims_trailing_zeros() -> None:
    assert rfc3339_nano(1_714_557_600_123_450_000) == "2024-05-01T10:00:00.12345Z"
    assert rfc3339_nano(1_714_557_600_000_000_000) == "2024-05-01T10:00:00Z"
    assert parse_rfc3339_nano("2024-05-01T10:00:00.12345Z") == 1_714_557_600_123_450_000


async def test_probes_http_exec_tcp(rt: ProcessRuntime) -> None:
    port, closed = free_port(), free_port()
    pod = make_pod([{"name": "c", "image": "python:3", "command": [PY, "-m", "http.server", str(port),
                                                                    "--bind", "127.0.0.1"],
                     "ports": [{"name": "http", "containerPort": port}],
                     "readinessProbe": {"httpGet": {"path": "/", "port": "http"}},
                     "livenessProbe": {"exec": {"command": [PY, "-c", "print('sick'); raise SystemExit(1)"]}},
                     "startupProbe": {"tcpSocket": {"port": port}}}])
    await start(rt, pod)
    cid = (await running(rt)).id
    await eventually(lambda: port_open(port), what="http.server listening")
    assert await rt.probe(cid, "readiness") == PROBE_SUCCESS
    assert await rt.probe(cid, "startup") == PROBE_SUCCESS
    assert await rt.probe(cid, "liveness") == PROBE_FAILURE
    unhealthy = [m for _, _, r, m in rt.recorded if r == "Unhealthy"]   # type: ignore[attr-defined]
    assert unhealthy == ["Liveness probe failed: sick"]
    assert await http_probe("HTTP", "127.0.0.1", port, "/missing", [], timeout=1) == (
        PROBE_FAILURE, "HTTP probe failed with statuscode: 404")
    result, msg = await http_probe("HTTP", "127.0.0.1", closed, "/", [], timeout=1)
    assert result == PROBE_FAILURE and msg == f'Get "http://127.0.0.1:{closed}/": dial tcp 127.0.0.1:{closed}: ' \
                                              "connect: connection refused"
    assert await tcp_probe("127.0.0.1", closed, timeout=1) == (
        PROBE_FAILURE, f"dial tcp 127.0.0.1:{closed}: connect: connection refused")
    async def request_log() -> bytes | None:
        logs = await read_all(rt.container_logs("uid-1", "p", opts()))
        return logs if b'"GET /missing HTTP/1.1" 404' in logs else None
    logs = await eventually(request_log, what="request log")
    assert b'"GET / HTTP/1.1" 200' in logs


async def test_stop_all_stops_every_process_and_frees_ports(tmp_path: Any) -> None:
    r = ProcessRuntime(root_dir=tmp_path, shutdown_grace=0.3)
    port = free_port()
    pod = make_pod([py(TRAP_TERM.format(after="    pass"), name="stubborn"),
                    {"name": "web", "image": "python:3",
                     "command": [PY, "-m", "http.server", str(port), "--bind", "127.0.0.1"]}])
    r.run_pod_sandbox(pod)
    for c in pod.spec.containers:
        r.start_container(pod, c, init=False, attempt=0)
    await eventually(lambda: port_open(port))
    procs = [(c.pid, c.pid_start) for c in r._by_id.values()] + [(c.shim_pid, c.shim_start)
                                                                 for c in r._by_id.values()]
    assert all(alive(pid, start) for pid, start in procs)
    t0 = time.monotonic()
    await r.stop_all()
    assert time.monotonic() - t0 < 3
    assert not port_open(port)
    assert not any(alive(pid, start) for pid, start in procs)      # containers and shims


def test_new_runtime_builds_a_process_runtime(tmp_path: Any) -> None:
    r = new_runtime("process", root_dir=tmp_path, clock=REAL_CLOCK)
    assert isinstance(r, ProcessRuntime) and r.root == tmp_path.resolve()


# --- a kubelet driving it --------------------------------------------------------------------


class _Recorder:
    def __init__(self, out: list[tuple[str, str, str]]) -> None:
        self.out = out

    def event(self, ref: Any, type_: str, reason: str, message: str) -> None:
        self.out.append((ref.field_path or "", reason, message))


class _Broadcaster:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def new_recorder(self, component: str, host: str = "") -> _Recorder:
        return _Recorder(self.events)


class KubeletEnv:
    def __init__(self, cs: FakeClientset, kubelet: Kubelet, registry: dict[str, Any], bc: _Broadcaster) -> None:
        self.cs, self.kubelet, self.registry, self.events = cs, kubelet, registry, bc.events

    async def create(self, name: str, containers: list[dict[str, Any]], **spec: Any) -> Any:
        return await self.cs.core_v1().pods("default").create({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": "node-0", "terminationGracePeriodSeconds": 2, "containers": containers, **spec}})

    async def pod(self, name: str) -> Any:
        return await self.cs.core_v1().pods("default").get(name)

    async def until(self, name: str, pred: Callable[[Any], bool], timeout: float = 8.0, what: str = "") -> Any:
        async def check() -> Any:
            try:
                p = await self.pod(name)
            except errors.NotFound:
                return None
            return p if pred(p) else None
        return await eventually(check, timeout, what or f"pod {name}")


def cstatus(p: Any, i: int = 0) -> Any:
    cs = p.status.container_statuses if p.status else None
    return cs[i] if cs else None


def ready(p: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in (p.status.conditions or ()))


@pytest.fixture
async def kenv(tmp_path: Any) -> AsyncIterator[KubeletEnv]:
    cs = await FakeClientset.new(clock=REAL_CLOCK)
    registry: dict[str, Any] = {}
    bc = _Broadcaster()
    kl = Kubelet(cs, node_names=["node-0"], runtime=ProcessRuntime(root_dir=tmp_path, shutdown_grace=1),
                 clock=REAL_CLOCK, broadcaster=bc, node_registry=registry)
    task = asyncio.ensure_future(kl.run())
    try:
        await eventually(lambda: "node-0" in registry, what="node registered")
        yield KubeletEnv(cs, kl, registry, bc)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        kill_recorded(tmp_path)                 # the containers outlive the kubelet on purpose
    assert registry == {}                       # the kubelet unregistered itself


async def test_http_server_pod_becomes_ready_serves_logs_and_stops_on_delete(kenv: KubeletEnv) -> None:
    port = free_port()
    await kenv.create("web", [{"name": "web", "image": "python:3",
                               "command": [PY, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
                               "readinessProbe": {"httpGet": {"path": "/", "port": port}, "periodSeconds": 1}}])
    p = await kenv.until("web", ready, what="web Ready")
    assert (p.status.phase, p.status.pod_ip, p.status.host_ip) == ("Running", "127.0.0.1", "127.0.0.1")
    assert cstatus(p).started is True and cstatus(p).container_id.startswith("kubeplane-process://")
    conn = kenv.registry["node-0"]
    logs = await read_all(conn.container_logs("default", "web", p.metadata.uid, LogOptions("web")))
    assert b'"GET / HTTP/1.1" 200' in logs                       # the readiness probe's requests
    with pytest.raises(errors.NotFound):
        conn.container_logs("default", "other", p.metadata.uid, LogOptions("web"))
    await kenv.cs.core_v1().pods("default").delete("web")
    await eventually(lambda: not port_open(port), what="server stopped")

    async def gone() -> bool:
        try:
            await kenv.pod("web")
        except errors.NotFound:
            return True
        return False
    await eventually(gone, what="pod deleted")


async def test_failing_readiness_keeps_pod_unready(kenv: KubeletEnv) -> None:
    await kenv.create("unready", [py("import time; time.sleep(60)", readinessProbe={
        "exec": {"command": [PY, "-c", "import sys; print('nope'); sys.exit(1)"]}, "periodSeconds": 1})])
    await eventually(lambda: sum(r == "Unhealthy" for _, r, _ in kenv.events) >= 2, what="two failed probes")
    p = await kenv.pod("unready")
    assert p.status.phase == "Running" and not ready(p) and cstatus(p).ready is False
    assert ("spec.containers{c}", "Unhealthy", "Readiness probe failed: nope") in kenv.events


async def test_failing_liveness_restarts_the_container(kenv: KubeletEnv) -> None:
    await kenv.create("sick", [py(TRAP_TERM.format(after="    os._exit(0)"), livenessProbe={
        "exec": {"command": [PY, "-c", "raise SystemExit(1)"]}, "initialDelaySeconds": 1, "periodSeconds": 1,
        "failureThreshold": 1})])
    p = await kenv.until("sick", lambda p: cstatus(p) is not None and cstatus(p).restart_count >= 1,
                         what="a restart")
    last = cstatus(p).last_state.terminated
    assert last is not None and last.exit_code == 0              # it handled SIGTERM and exited
    assert ("spec.containers{c}", "Killing", "Container c failed liveness probe, will be restarted") in kenv.events


async def test_startup_probe_gates_started_and_ready(kenv: KubeletEnv, tmp_path: Any) -> None:
    flag = tmp_path / "started"
    await kenv.create("slow", [py("import time; time.sleep(60)", startupProbe={
        "exec": {"command": [PY, "-c", f"import os, sys; sys.exit(0 if os.path.exists({str(flag)!r}) else 1)"]},
        "periodSeconds": 1, "failureThreshold": 30})])
    p = await kenv.until("slow", lambda p: cstatus(p) is not None and cstatus(p).state.running is not None)
    assert cstatus(p).started is False and not ready(p)
    flag.touch()
    p = await kenv.until("slow", ready, what="started and ready")
    assert cstatus(p).started is True


async def test_restart_policies(kenv: KubeletEnv) -> None:
    await kenv.create("once", [py("print('done')")], restartPolicy="Never")
    await kenv.create("retry", [py("raise SystemExit(2)")], restartPolicy="OnFailure")
    p = await kenv.until("once", lambda p: p.status.phase == "Succeeded", what="Succeeded")
    assert cstatus(p).state.terminated.reason == "Completed" and cstatus(p).restart_count == 0
    p = await kenv.until("retry", lambda p: (s := cstatus(p)) is not None and s.state.waiting is not None
                         and s.state.waiting.reason == "CrashLoopBackOff", what="CrashLoopBackOff")
    s = cstatus(p)
    assert s.restart_count == 1 and s.last_state.terminated.exit_code == 2
    assert s.last_state.terminated.reason == "Error"
    previous = await read_all(kenv.registry["node-0"].container_logs(
        "default", "once", (await kenv.pod("once")).metadata.uid, LogOptions("c")))
    assert previous == b"done\n"


# --- the sim runtime's logs and the command lines -----------------------------------------------


async def test_sim_runtime_logs_are_empty_and_validated(make_env: Any) -> None:
    from kubelet_testutil import advance
    env = await make_env("default", zero=True)
    await env.create_pod({"metadata": {"name": "sim"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
    await advance(env.clock, 1, step=0.1)
    p = await env.pod("sim")
    assert p.status.phase == "Running"
    conn = env.kubelet
    assert await read_all(conn.container_logs("default", "sim", p.metadata.uid, LogOptions("c"))) == b""
    with pytest.raises(errors.BadRequest, match='previous terminated container "c" in pod "sim" not found'):
        conn.container_logs("default", "sim", p.metadata.uid, LogOptions("c", previous=True))


def test_command_lines_accept_the_process_runtime() -> None:
    import argparse
    from kubeplane.cmd import kubelet as kubelet_cmd, up as up_cmd
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    kubelet_cmd.add_parser(sub)
    up_cmd.add_parser(sub)
    args = parser.parse_args(["kubelet", "--kubeconfig", "kc", "--runtime", "process", "--root-dir", "/tmp/x"])
    assert (args.runtime, str(args.root_dir)) == ("process", "/tmp/x")
    assert parser.parse_args(["up", "--runtime", "process"]).runtime == "process"
    with pytest.raises(SystemExit):
        parser.parse_args(["up", "--runtime", "docker"])
