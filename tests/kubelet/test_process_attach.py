"""Attach to process-runtime containers that keep their stdin (`stdin`, `stdinOnce`, `tty`):
the shim holds the container's stdin and serves attach (runtime/process/shim.py Attach), the
kubelet connects to it (runtime/process/attach.py) and kubelet/streaming passes it on."""
from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator

import pytest

from kubeplane.kubelet.runtime import EXITED, RUNNING
from kubeplane.kubelet.runtime.process import ProcessRuntime
from kubeplane.kubelet.runtime.process.runtime import attach_socket

from process_testutil import PY, eventually, make_pod, py, read_all
from streaming_testutil import Host, Served, by_channel, messages, status, ws_request
from test_process_runtime import KubeletEnv, kenv, ready  # noqa: F401  (kenv: the kubelet's fixture)


@pytest.fixture
async def rt(tmp_path: Any) -> AsyncIterator[ProcessRuntime]:
    r = ProcessRuntime(root_dir=tmp_path / "kubelet")
    try:
        yield r
    finally:
        await r.stop_all()


async def started(rt: ProcessRuntime, pod: Any, name: str = "c") -> Any:
    rt.run_pod_sandbox(pod)
    for c in pod.spec.containers:
        rt.start_container(pod, c, init=False, attempt=0)
    return await eventually(lambda: (s := rt.pod_status("uid-1").latest(name)) is not None and s.state == RUNNING,
                            what=f"{name} running")


def state(rt: ProcessRuntime, name: str = "c") -> Any:
    return rt.pod_status("uid-1").latest(name)


async def output(conn: Any) -> bytes:
    out = b""
    while (x := await asyncio.wait_for(conn.read(), 10)) is not None:
        out += x[1]
    return out


ECHO_UPPER = "import sys\nfor line in sys.stdin:\n    print(line.upper(), end='', flush=True)\nprint('eof')"


async def test_stdin_once_closes_the_containers_stdin_when_the_first_attach_ends(rt: ProcessRuntime) -> None:
    await started(rt, make_pod([py(ECHO_UPPER, stdin=True, stdinOnce=True)]))
    conn = await rt.attach("uid-1", "c", stdin=True, stdout=True, stderr=True)
    assert conn is not None
    await conn.write(b"hello\n")
    assert await asyncio.wait_for(conn.read(), 10) == ("stdout", b"HELLO\n")
    await conn.close_stdin()                 # stdinOnce: the container reads EOF, output goes on
    assert await output(conn) == b"eof\n"
    await eventually(lambda: state(rt).state == EXITED, what="exit")
    assert state(rt).exit_code == 0
    assert not attach_socket(rt._by_id[state(rt).id.split("://")[1]].record).exists()
    logs = await read_all(rt.container_logs("uid-1", "p", _opts()))
    assert logs == b"HELLO\neof\n"


async def test_without_stdin_once_stdin_stays_open_across_attaches(rt: ProcessRuntime) -> None:
    await started(rt, make_pod([py(ECHO_UPPER, stdin=True)]))
    first = await rt.attach("uid-1", "c", stdin=True, stdout=True, stderr=False)
    await first.write(b"one\n")
    assert await asyncio.wait_for(first.read(), 10) == ("stdout", b"ONE\n")
    await first.close_stdin()                # detaches this client only
    assert await asyncio.wait_for(first.read(), 10) is None
    first.close()
    second = await rt.attach("uid-1", "c", stdin=True, stdout=True, stderr=False)
    await second.write(b"two\n")
    assert await asyncio.wait_for(second.read(), 10) == ("stdout", b"TWO\n")
    second.close()
    assert state(rt).state == RUNNING        # nobody closed its stdin


async def test_a_client_that_goes_away_ends_a_stdin_once_containers_input(rt: ProcessRuntime) -> None:
    await started(rt, make_pod([py(ECHO_UPPER, stdin=True, stdinOnce=True)]))
    conn = await rt.attach("uid-1", "c", stdin=True, stdout=True, stderr=False)
    await conn.write(b"x\n")
    assert await asyncio.wait_for(conn.read(), 10) == ("stdout", b"X\n")
    conn.close()
    await eventually(lambda: state(rt).state == EXITED, what="exit on EOF")
    # a later attach to the exited container: no connection
    assert await rt.attach("uid-1", "c", stdin=True, stdout=True, stderr=False) is None


async def test_tty_gets_a_terminal_of_the_clients_size(rt: ProcessRuntime) -> None:
    code = ("import os, sys\n"
            "print('tty', os.isatty(0), os.isatty(1), flush=True)\n"
            "for line in sys.stdin:\n    print('got', line.strip(), os.get_terminal_size(0), flush=True)\n")
    await started(rt, make_pod([py(code, stdin=True, tty=True)]))
    conn = await rt.attach("uid-1", "c", stdin=True, stdout=True, stderr=False)
    await conn.resize(91, 33)
    await conn.write(b"abc\n")
    seen = b""
    while not (b"got abc" in seen and b"columns=91, lines=33" in seen):
        chunk = await asyncio.wait_for(conn.read(), 10)
        assert chunk is not None, seen
        assert chunk[0] == "stdout"
        seen += chunk[1]
    conn.close()


async def test_containers_without_stdin_have_no_attach_socket(rt: ProcessRuntime) -> None:
    await started(rt, make_pod([py("import time; time.sleep(30)")]))
    assert await rt.attach("uid-1", "c", stdin=True, stdout=True, stderr=True) is None
    assert not list((rt.root / "pods" / "uid-1" / "containers").glob("*.sock"))


async def test_kubectl_attach_over_v5_sends_stdin_and_ends_with_success(rt: ProcessRuntime) -> None:
    pod = make_pod([py(ECHO_UPPER, stdin=True, stdinOnce=True)], name="web")
    await started(rt, pod)
    host = Host({"uid-1": pod}, runtime=rt)
    raw, headers = ws_request("/attach/default/web/c")
    s = await Served(host, "attach", {"input": ["1"], "output": ["1"], "error": ["1"]}, headers,
                     container="c").start()
    assert (await s.head())[0] == 101
    ws = s.ws()
    assert await asyncio.wait_for(ws.receive(), 10) is not None        # ready
    await ws.send(b"\x00piped\n")
    await ws.send(b"\xff\x00")          # v5: stdin closed
    msgs = await messages(ws)
    assert by_channel(msgs)[1] == b"PIPED\neof\n"
    assert status(msgs) == {"metadata": {}, "status": "Success"}
    await s.done()


async def test_attach_asking_for_stderr_of_a_terminal_is_upstreams_error(rt: ProcessRuntime) -> None:
    pod = make_pod([py("import time; time.sleep(30)", stdin=True, tty=True)], name="web")
    await started(rt, pod)
    _, headers = ws_request("/attach/default/web/c")
    s = await Served(Host({"uid-1": pod}, runtime=rt), "attach", {"output": ["1"], "error": ["1"]}, headers,
                     container="c").start()
    code, _, body = await s.head()
    assert code == 500 and b"tty and stderr cannot both be true" in body


def _opts(container: str = "c") -> Any:
    from kubeplane.api.podlog import LogOptions
    return LogOptions(container)


async def test_args_alone_run_as_the_command_line(rt: ProcessRuntime) -> None:
    """`kubectl run t --image=python -- python -c ...` sets args only: an image without an
    ENTRYPOINT runs them."""
    pod = make_pod([{"name": "c", "image": "python", "args": [PY, "-c", "print('from args')"]}])
    rt.run_pod_sandbox(pod)
    rt.start_container(pod, pod.spec.containers[0], init=False, attempt=0)
    await eventually(lambda: (s := state(rt)) is not None and s.state == EXITED, what="exit")
    assert state(rt).exit_code == 0
    assert await read_all(rt.container_logs("uid-1", "p", _opts())) == b"from args\n"


# --- ephemeral containers: the kubelet starts them in a running pod -----------------------------

async def test_an_ephemeral_container_runs_once_in_the_running_pod(kenv: KubeletEnv) -> None:  # noqa: F811
    await kenv.create("target", [py("import time; time.sleep(60)", name="app")])
    p = await kenv.until("target", ready, what="target Ready")
    assert p.status.ephemeral_container_statuses is None
    code = "import os; print('debugging', os.environ['HOSTNAME'])"
    await kenv.cs.core_v1().pods("default").patch("target", {"spec": {"ephemeralContainers": [
        {"name": "debugger", "image": "python", "command": [PY, "-c", code], "targetContainerName": "app",
         "terminationMessagePolicy": "FallbackToLogsOnError"}]}}, "strategic", subresource="ephemeralcontainers")

    def done(p: Any) -> bool:
        st = p.status.ephemeral_container_statuses
        return bool(st) and st[0].state.terminated is not None
    p = await kenv.until("target", done, what="the ephemeral container to finish")
    st = p.status.ephemeral_container_statuses[0]
    assert (st.name, st.ready, st.started, st.restart_count) == ("debugger", False, None, 0)
    assert (st.state.terminated.exit_code, st.state.terminated.reason) == (0, "Completed")
    assert st.container_id.startswith("kubeplane-process://")
    conn = kenv.registry["node-0"]
    logs = await read_all(conn.container_logs("default", "target", p.metadata.uid, _opts("debugger")))
    assert logs == b"debugging target\n"
    assert ready(p) and p.status.phase == "Running"     # the pod is as it was
    assert ("spec.ephemeralContainers{debugger}", "Started") in [(f, r) for f, r, _ in kenv.events]
    await asyncio.sleep(0.5)                             # a few syncs later: never restarted
    p = await kenv.pod("target")
    assert p.status.ephemeral_container_statuses[0].container_id == st.container_id


async def test_the_stdin_outlives_the_kubelet(tmp_path: Any) -> None:
    """The shim holds the stdin: a kubelet that takes the container up again attaches to it."""
    a = ProcessRuntime(root_dir=tmp_path / "kubelet")
    pod = make_pod([py(ECHO_UPPER, stdin=True)])
    await started(a, pod)
    first = await a.attach("uid-1", "c", stdin=True, stdout=True, stderr=False)
    await first.write(b"before\n")
    assert await asyncio.wait_for(first.read(), 10) == ("stdout", b"BEFORE\n")
    first.close()                            # the kubelet stops, its attach connections with it
    await a.aclose()
    b = ProcessRuntime(root_dir=tmp_path / "kubelet")
    try:
        assert b.restore_pod(pod) and state(b).state == RUNNING
        again = await b.attach("uid-1", "c", stdin=True, stdout=True, stderr=False)
        assert again is not None
        await again.write(b"after\n")
        assert await asyncio.wait_for(again.read(), 10) == ("stdout", b"AFTER\n")
        again.close()
        logs = await read_all(b.container_logs("uid-1", "p", _opts()))
        assert logs == b"BEFORE\nAFTER\n"
    finally:
        await b.stop_all()


async def test_a_failed_upgrade_is_no_attach_of_a_stdin_once_container(rt: ProcessRuntime) -> None:
    pod = make_pod([py(ECHO_UPPER, stdin=True, stdinOnce=True)], name="web")
    await started(rt, pod)
    host = Host({"uid-1": pod}, runtime=rt)
    _, headers = ws_request("/attach/default/web/c", protocols="no.such.protocol")
    s = await Served(host, "attach", {"input": ["1"], "output": ["1"]}, headers, container="c").start()
    assert (await s.head())[0] == 403
    await s.done()
    conn = await rt.attach("uid-1", "c", stdin=True, stdout=True, stderr=False)
    await conn.write(b"still open\n")         # the refused request never reached the container's stdin
    assert await asyncio.wait_for(conn.read(), 10) == ("stdout", b"STILL OPEN\n")
    conn.close()


async def test_an_ephemeral_container_waits_for_its_target_to_run(kenv: KubeletEnv) -> None:  # noqa: F811
    await kenv.create("slow", [py("import time; time.sleep(60)", name="app")],
                      initContainers=[py("import time; time.sleep(2)", name="init")])
    await kenv.until("slow", lambda p: bool(p.status.init_container_statuses)
                     and p.status.init_container_statuses[0].state.running is not None, what="init running")
    await kenv.cs.core_v1().pods("default").patch("slow", {"spec": {"ephemeralContainers": [
        {"name": "debugger", "image": "python", "command": [PY, "-c", "print('on target')"],
         "targetContainerName": "app"}]}}, "strategic", subresource="ephemeralcontainers")

    def waiting(p: Any) -> bool:
        st = p.status.ephemeral_container_statuses
        return bool(st) and st[0].state.waiting is not None and st[0].state.waiting.reason != "PodInitializing"
    p = await kenv.until("slow", waiting, what="the ephemeral container waiting for its target")
    w = p.status.ephemeral_container_statuses[0].state.waiting
    assert (w.reason, w.message) == ("CreateContainerConfigError", "unable to find target container app")

    def finished(p: Any) -> bool:
        st = p.status.ephemeral_container_statuses
        return bool(st) and st[0].state.terminated is not None
    p = await kenv.until("slow", finished, timeout=20, what="the ephemeral container to run once app runs")
    assert p.status.ephemeral_container_statuses[0].state.terminated.exit_code == 0
    assert p.status.container_statuses[0].state.running is not None
