"""exec and attach over the WebSocket channel protocols (the kubelet's side).

    channel 0 stdin (client -> server)   1 stdout   2 stderr   3 error (Status)   4 resize
    v5.channel.k8s.io: [255, n] from the client closes channel n (stdin: end of input)

The session opens by sending an empty message on the lowest output channel (stdout, else
stderr, else error), which tells the client the streams are ready; it ends with the command's
Status on the error channel (v4/v5: JSON, Success or NonZeroExitCode with the exit code as
the ExitCode cause; older protocols: the error's text, nothing on success), then a close.
When the client goes away first, the command's process group is killed.

Upstream: pkg/kubelet/cri/streaming/remotecommand (websocket.go createWebSocketStreams,
exec.go ServeExec, attach.go ServeAttach, httpstream.go NewOptions, v4WriteStatusFunc).
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from .process import ExecError, ExecTarget, Process, spawn
from .wsstream import STREAM_CLOSE, V5_CHANNEL, Channels

log = logging.getLogger(__name__)

STDIN, STDOUT, STDERR, ERROR, RESIZE = range(5)
PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io", "v4.base64.channel.k8s.io", "channel.k8s.io",
             "base64.channel.k8s.io", "")
OUTPUT_GRACE = 2.0       # seconds output may go on after the command exits (its children's)

@dataclass(frozen=True)
class Options:
    stdin: bool
    stdout: bool
    stderr: bool
    tty: bool
    command: tuple[str, ...] = ()

def options(query: Mapping[str, list[str]]) -> Options:
    """The kubelet's parameters: input, output, error, tty ("1" or "true"), command (repeated).
    ValueError with upstream's words when no stream is asked for. With tty, stderr is dropped
    (a terminal merges it). Upstream: remotecommand.NewOptions"""
    def flag(name: str) -> bool:
        return (query.get(name) or [""])[-1].lower() in ("1", "true")
    stdin, stdout, stderr, tty = flag("input"), flag("output"), flag("error"), flag("tty")
    if not (stdin or stdout or stderr):
        raise ValueError("you must specify at least 1 of stdin, stdout, stderr")
    return Options(stdin, stdout, stderr and not tty, tty, tuple(query.get("command") or ()))

def success_status() -> dict:
    return {"metadata": {}, "status": "Success"}

def exit_status(argv: list[str] | tuple[str, ...], code: int) -> dict:
    """Upstream: ServeExec's status for a utilexec.ExitError (containerd's message)."""
    return {"metadata": {}, "status": "Failure",
            "message": f"command terminated with non-zero exit code: error executing command "
                       f"[{' '.join(argv)}], exit code {code}",
            "reason": "NonZeroExitCode", "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]}}

def internal_status(message: str) -> dict:
    """Upstream: apierrors.NewInternalError(err).Status()"""
    return {"metadata": {}, "status": "Failure", "message": f"Internal error occurred: {message}",
            "reason": "InternalError", "details": {"causes": [{"message": message}]}, "code": 500}

class Session:
    """One exec or attach on an open channel connection (a WebSocket's Channels, or the SPDY
    streams' SpdyChannels)."""

    def __init__(self, ch: Channels | SpdyChannels, opts: Options) -> None:
        self.ch = ch
        self.opts = opts
        self.v5 = ch.protocol == V5_CHANNEL or getattr(ch, "half_close", False)   # SPDY: a FIN ends stdin
        self.v4 = ch.protocol.startswith(("v4.", "v5."))

    async def ready(self) -> None:
        o = self.opts
        await self.ch.send(STDOUT if o.stdout else STDERR if o.stderr else ERROR, b"")

    async def write_status(self, status: dict) -> None:
        if self.v4:
            await self.ch.send(ERROR, orjson.dumps(status))
        elif status["status"] != "Success":
            await self.ch.send(ERROR, status.get("message", "").encode())

    async def finish(self, status: dict) -> None:
        with contextlib.suppress(ConnectionError):
            await self.write_status(status)
        await self.ch.close()

    async def exec(self, argv: list[str], target: ExecTarget) -> None:
        """Run argv to its end, or until the client goes away. Upstream: ServeExec"""
        o = self.opts
        try:
            await self.ready()
            proc = await spawn(argv, target, stdin=o.stdin, tty=o.tty)
        except ExecError as e:
            await self.finish(internal_status(f"error executing command in container: failed to exec in "
                                              f"container: {e}"))
            return
        except ConnectionError:
            return
        outputs = [asyncio.ensure_future(self._pump(proc, STDOUT))]
        if not o.tty:
            outputs.append(asyncio.ensure_future(self._pump(proc, STDERR)))
        inputs = asyncio.ensure_future(self._inputs(proc))
        exited = asyncio.ensure_future(proc.wait())
        try:
            done, _ = await asyncio.wait([exited, inputs], return_when=asyncio.FIRST_COMPLETED)
            if exited not in done:           # the client went away: end the command
                return
            await asyncio.wait(outputs, timeout=OUTPUT_GRACE)
            code = exited.result()
            await self.finish(success_status() if code == 0 else exit_status(argv, code))
        finally:
            proc.kill()
            for t in (*outputs, inputs, exited):
                t.cancel()
            await asyncio.gather(*outputs, inputs, exited, return_exceptions=True)
            proc.release()
            with contextlib.suppress(asyncio.CancelledError, ChildProcessError):
                await asyncio.shield(proc.proc.wait())

    async def attach(self, output: AsyncIterator[bytes]) -> None:
        """Pass the container's output on as stdout until it ends or the client goes away.
        Upstream: ServeAttach (here: the output the runtime logs, from now on; no stdin)."""
        await self.ready()
        try:
            await self._pump_until_done(self._relay(output), self._inputs(None))
        finally:
            aclose = getattr(output, "aclose", None)
            if aclose is not None:
                await aclose()

    async def attach_io(self, io: Any) -> None:
        """Attach to a container that keeps its stdin (or a terminal) through its runtime's
        attach connection (runtime/process/attach.py): the client's stdin and resizes go in,
        the container's output comes out, until the runtime ends the attach (the container
        exited, or its stdin was detached) or the client goes away. Upstream: ServeAttach"""
        try:
            await self.ready()
        except ConnectionError:
            io.close()
            return
        try:
            await self._pump_until_done(self._relay_io(io), self._attach_inputs(io))
        finally:
            io.close()

    async def _pump_until_done(self, pump: Awaitable[None], inputs: Awaitable[None]) -> None:
        """Relay the output (pump) and the client's input until either ends; when the output
        ended first (the container's did), the session ends with success."""
        tasks = [asyncio.ensure_future(pump), asyncio.ensure_future(inputs)]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            if tasks[0] in done:
                await self.finish(success_status())
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _relay_io(self, io: Any) -> None:
        while (out := await io.read()) is not None:
            stream, data = out
            channel = STDOUT if stream == "stdout" else STDERR
            if self.opts.stdout if channel == STDOUT else self.opts.stderr:
                await self.ch.send(channel, data)

    async def _attach_inputs(self, io: Any) -> None:
        """As _inputs, into the runtime's attach connection."""
        stdin_open = self.opts.stdin
        while (msg := await self.ch.receive()) is not None:
            channel, data = msg
            if channel == STDIN and stdin_open:
                await io.write(data)
            elif channel == RESIZE:
                for width, height in _sizes(data):
                    await io.resize(width, height)
            elif self.v5 and channel == STREAM_CLOSE and data[:1] == bytes([STDIN]) and stdin_open:
                stdin_open = False
                await io.close_stdin()

    async def _relay(self, output: AsyncIterator[bytes]) -> None:
        async for chunk in output:
            if chunk and self.opts.stdout:
                await self.ch.send(STDOUT, chunk)

    async def _pump(self, proc: Process, fd: int) -> None:
        wanted = self.opts.stdout if fd == STDOUT else self.opts.stderr
        while data := await proc.read(fd):
            if wanted:
                await self.ch.send(fd, data)       # waits while the client does not read

    async def _inputs(self, proc: Process | None) -> None:
        """Read the client's messages until it closes: stdin, resize, v5's close signal; a
        message on any other channel is ignored, as upstream's."""
        stdin_open = self.opts.stdin
        while (msg := await self.ch.receive()) is not None:
            channel, data = msg
            if channel == STDIN and proc is not None and stdin_open:
                await proc.write(data)
            elif channel == RESIZE and proc is not None:
                for width, height in _sizes(data):
                    proc.resize(width, height)
            elif self.v5 and channel == STREAM_CLOSE and data[:1] == bytes([STDIN]):
                stdin_open = False
                if proc is not None:
                    proc.close_stdin()

def _sizes(data: bytes) -> list[tuple[int, int]]:
    """TerminalSize messages ({"Width":80,"Height":24}, possibly several in one); a message
    that is no such JSON is ignored."""
    out: list[tuple[int, int]] = []
    text, i, dec = data.decode("utf-8", "replace"), 0, json.JSONDecoder()
    while i < len(text):
        try:
            obj, i = dec.raw_decode(text, i)
        except ValueError:
            break
        if isinstance(obj, dict) and isinstance(obj.get("Width"), int) and isinstance(obj.get("Height"), int):
            out.append((obj["Width"], obj["Height"]))
        while i < len(text) and text[i].isspace():
            i += 1
    return out



SPDY_PROTOCOLS = ("v4.channel.k8s.io", "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io")
STREAM_TYPES = {"stdin": STDIN, "stdout": STDOUT, "stderr": STDERR, "error": ERROR, "resize": RESIZE}
STREAM_CREATION_TIMEOUT = 30.0     # seconds; upstream's DefaultStreamCreationTimeout


class SpdyChannels:
    """The SPDY streams of one exec or attach, as channels: the client opens a stream per
    channel (header streamType: error, stdin, stdout, stderr, resize); what it sends on stdin
    and resize comes out of receive(), stdin's FIN as v5's close signal.
    Upstream: remotecommand/httpstream.go (createHTTPStreamStreams, v4ProtocolHandler)."""

    half_close = True

    def __init__(self, protocol: str, opts: Options) -> None:
        self.protocol = protocol
        self.streams: dict[int, Any] = {}
        self.expected = {ERROR} | {c for c, on in ((STDIN, opts.stdin), (STDOUT, opts.stdout),
                                                   (STDERR, opts.stderr)) if on}
        if opts.tty and protocol != "channel.k8s.io" and protocol != "v2.channel.k8s.io":
            self.expected.add(RESIZE)
        self.complete = asyncio.Event()
        self.inputs: asyncio.Queue[tuple[int, bytes]] = asyncio.Queue(maxsize=16)
        self.ended = asyncio.Event()      # the SPDY connection is gone
        self.session: Any = None

    async def on_stream(self, stream: Any) -> None:
        channel = STREAM_TYPES.get(stream.headers.get("streamtype", ""))
        if channel is None or channel in self.streams:
            stream.reset()
            return
        self.streams[channel] = stream
        if self.expected <= set(self.streams):
            self.complete.set()
        if channel in (STDIN, RESIZE):
            while data := await stream.read():
                await self.inputs.put((channel, data))
            if channel == STDIN:
                await self.inputs.put((STREAM_CLOSE, bytes([STDIN])))

    async def send(self, channel: int, data: bytes) -> None:
        s = self.streams.get(channel)
        if s is not None and data:
            await s.write(data)

    async def receive(self) -> tuple[int, bytes] | None:
        """The next stdin or resize data; None once the SPDY connection has ended."""
        get = asyncio.ensure_future(self.inputs.get())
        end = asyncio.ensure_future(self.ended.wait())
        try:
            done, _ = await asyncio.wait([get, end], return_when=asyncio.FIRST_COMPLETED)
        finally:
            get.cancel()
            end.cancel()
        return get.result() if get in done else None

    async def close(self) -> None:
        for s in self.streams.values():
            s.close()
        if self.session is not None:
            with contextlib.suppress(ConnectionError):
                await self.session.drain()
