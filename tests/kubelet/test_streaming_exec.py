"""kubelet/streaming: exec and attach over the WebSocket channel protocols, end to end on a
socketpair (a real command on this host, as the sim runtime's exec runs it)."""
from __future__ import annotations

import asyncio
import json
import os

import orjson
import pytest

from kubeplane.kubelet.streaming import remotecommand
from kubeplane.kubelet.streaming.wsstream import STREAM_CLOSE

from streaming_testutil import Host, Served, by_channel, messages, pod, status, ws_request


def host(**env: str) -> Host:
    return Host({"uid-web": pod(env=env)})


def q(*command: str, **flags: str) -> dict[str, list[str]]:
    out = {k: [v] for k, v in flags.items()}
    out["command"] = list(command)
    return out


async def test_exec_streams_stdout_and_stderr_apart_and_ends_with_the_exit_code() -> None:
    _, headers = ws_request("/exec/default/web/app", "v5.channel.k8s.io,v4.channel.k8s.io")
    s = await Served(host(GREETING="hi"), "exec", q("sh", "-c", "echo $GREETING; pwd; echo oops >&2; exit 3",
                                                     output="1", error="1"), headers).start()
    code, h, _ = await s.head()
    assert code == 101 and h["sec-websocket-protocol"] == "v5.channel.k8s.io"
    msgs = await messages(s.ws())
    await s.done()
    assert msgs[0] == (1, b"")                     # the ready signal on the lowest output channel
    out = by_channel(msgs)
    lines = out[1].decode().splitlines()
    assert lines[0] == "hi" and lines[1].endswith("/kubeplane-exec/uid-web")   # the pod's env, its scratch dir
    assert out[2] == b"oops\n"
    assert status(msgs) == {"metadata": {}, "status": "Failure", "reason": "NonZeroExitCode",
                            "message": "command terminated with non-zero exit code: error executing command "
                                       "[sh -c echo $GREETING; pwd; echo oops >&2; exit 3], exit code 3",
                            "details": {"causes": [{"reason": "ExitCode", "message": "3"}]}}


async def test_success_is_a_success_status_on_v4_and_nothing_on_the_unversioned_protocol() -> None:
    _, headers = ws_request("/exec", "v4.channel.k8s.io")
    s = await Served(host(), "exec", q("true", output="1"), headers).start()
    await s.head()
    assert status(await messages(s.ws())) == {"metadata": {}, "status": "Success"}
    _, headers = ws_request("/exec", "channel.k8s.io")
    s = await Served(host(), "exec", q("sh", "-c", "exit 2", output="1"), headers).start()
    await s.head()
    assert by_channel(await messages(s.ws()))[3].startswith(b"command terminated with non-zero exit code")


async def test_stdin_reaches_the_command_and_the_v5_close_signal_ends_its_input() -> None:
    _, headers = ws_request("/exec")
    s = await Served(host(), "exec", q("cat", input="1", output="1"), headers).start()
    await s.head()
    ws = s.ws()
    assert await ws.receive() == (2, b"\x01")     # ready
    await ws.send(b"\x00hello ")
    await ws.send(b"\x07ignored: no such channel")
    await ws.send(b"\x00world")
    await ws.send(bytes([STREAM_CLOSE, 0]))         # cat sees the end of its input and exits
    msgs = await messages(ws)
    assert by_channel(msgs)[1] == b"hello world"
    assert status(msgs)["status"] == "Success"


async def test_base64_protocol_sends_text_frames() -> None:
    _, headers = ws_request("/exec", "v4.base64.channel.k8s.io")
    s = await Served(host(), "exec", q("echo", "hi", output="1"), headers).start()
    await s.head()
    ws = s.ws()
    texts = []
    while (msg := await asyncio.wait_for(ws.receive(), 10)) is not None:
        assert msg[0] == 1                          # TEXT
        texts.append(msg[1])
    assert b"1aGkK" in texts                        # "1" + base64("hi\n")


async def test_a_tty_merges_stderr_and_takes_resizes() -> None:
    _, headers = ws_request("/exec")
    s = await Served(host(), "exec", q("sh", "-c", "read x; stty size; echo err >&2", input="1", output="1",
                                       error="1", tty="1"), headers).start()
    await s.head()
    ws = s.ws()
    await ws.send(b"\x04" + json.dumps({"Width": 91, "Height": 33}).encode())
    await ws.send(b"\x00go\n")
    msgs = await messages(ws)
    out = by_channel(msgs)
    assert 2 not in out and b"33 91" in out[1] and b"err" in out[1]
    assert status(msgs)["status"] == "Success"


async def test_the_command_is_killed_when_the_client_goes_away() -> None:
    _, headers = ws_request("/exec")
    s = await Served(host(), "exec", q("sh", "-c", "echo $$; exec sleep 1000", output="1"), headers).start()
    await s.head()
    ws = s.ws()
    assert await ws.receive() == (2, b"\x01")
    msg = await asyncio.wait_for(ws.receive(), 10)
    assert msg is not None
    pid = int(msg[1][1:])
    os.kill(pid, 0)                                 # running
    assert s.client is not None
    s.client.close()                                # kubectl killed
    await s.done()
    with pytest.raises(ProcessLookupError):
        for _ in range(500):                        # killed and reaped: gone from the process table
            os.kill(pid, 0)
            await asyncio.sleep(0.01)


async def test_upstreams_errors_before_any_upgrade() -> None:
    _, headers = ws_request("/exec")
    cases = [
        ({"command": ["true"]}, "app", 400, b"you must specify at least 1 of stdin, stdout, stderr"),
        (q(output="1"), "app", 400, b"you must specify at least one command for the container"),
        (q("true", output="1"), "nope", 500, b'container not found (\\"nope\\")'),
    ]
    for query, container, code, text in cases:
        s = await Served(host(), "exec", query, headers, container=container).start()
        got, _, body = await s.head()
        assert (got, text in body) == (code, True), body
    h = host()
    h.runtime.running = set()                       # not running (completed, or not started)
    s = await Served(h, "exec", q("true", output="1"), headers).start()
    got, _, body = await s.head()
    assert got == 500 and orjson.loads(body)["message"] == 'container not found ("app")'
    s = await Served(host(), "exec", q("true", output="1"), headers, name="ghost").start()
    got, _, body = await s.head()
    assert got == 404 and orjson.loads(body)["message"] == 'pod "ghost" does not exist'
    s = await Served(host(), "exec", q("true", output="1"), {"connection": "close"}).start()
    assert (await s.head())[0] == 400
    _, unsupported = ws_request("/exec", "v9.channel.k8s.io")
    s = await Served(host(), "exec", q("true", output="1"), unsupported).start()
    assert (await s.head())[0] == 403               # x/net/websocket's answer to a failed handshake


async def test_a_missing_program_is_an_internal_error_on_the_error_channel() -> None:
    _, headers = ws_request("/exec")
    s = await Served(host(), "exec", q("no-such-program-xyz", output="1"), headers).start()
    await s.head()
    st = status(await messages(s.ws()))
    assert st["reason"] == "InternalError" and st["code"] == 500
    assert 'exec: "no-such-program-xyz": executable file not found in $PATH' in st["message"]


async def test_attach_passes_the_containers_output_on() -> None:
    h = host()
    h.output = [b"line 1\n", b"line 2\n"]
    _, headers = ws_request("/attach")
    s = await Served(h, "attach", {"output": ["1"], "error": ["1"]}, headers).start()
    await s.head()
    msgs = await messages(s.ws())
    assert by_channel(msgs)[1] == b"line 1\nline 2\n"


def test_options_as_the_kubelet_reads_them() -> None:
    o = remotecommand.options({"input": ["1"], "output": ["true"], "error": ["1"], "tty": ["1"],
                               "command": ["sh", "-c", "x"]})
    assert (o.stdin, o.stdout, o.stderr, o.tty, o.command) == (True, True, False, True, ("sh", "-c", "x"))
    assert remotecommand._sizes(b'{"Width":80,"Height":24}{"Width":100,"Height":50}') == [(80, 24), (100, 50)]
    assert remotecommand._sizes(b"not json") == []


async def test_an_idle_connection_is_closed_after_the_streaming_idle_timeout() -> None:
    """Nothing crossing the connection for --streaming-connection-idle-timeout closes it, and
    the command with it; traffic keeps it open. (The fake clock: no waiting.)"""
    from types import SimpleNamespace
    from kubeplane.utils.clock import FakeClock
    clock = FakeClock()
    h = host()
    h.options = SimpleNamespace(streaming_connection_idle_timeout=60.0)   # type: ignore[attr-defined]
    h.clock = clock                                                       # type: ignore[attr-defined]
    _, headers = ws_request("/exec/default/web/app")
    s = await Served(h, "exec", q("sh", "-c", "cat; echo done", input="1", output="1"), headers).start()
    await s.head()
    ws = s.ws()
    assert await asyncio.wait_for(ws.receive(), 10) is not None           # ready
    for _ in range(3):                         # 3 x 50 s, each with a keystroke: still open
        clock.step(50)
        await asyncio.sleep(0.05)
        await ws.send(b"\x00x\n")
        assert (await asyncio.wait_for(ws.receive(), 10))[1] == b"\x01x\n"
    for _ in range(10):
        clock.step(10)
        await asyncio.sleep(0.01)
    assert await asyncio.wait_for(ws.receive(), 10) is None               # closed, no exit status
    await s.done()
