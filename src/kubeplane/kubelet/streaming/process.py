"""A command run for exec: in a container's environment, with pipes or a terminal.

    target = runtime.exec_target(pod_uid, "app")          # env, cwd, and the namespace hook
    proc = await spawn(["sh", "-c", "echo hi"], target, stdin=True, tty=False)
    out = await proc.read(1)                               # b"hi\n"; b"" at the end
    code = await proc.wait()

The process leads its own session and process group; kill() ends the group (a stream that
closes ends what it started). With tty, stdin, stdout and stderr are one pseudo-terminal
(its controlling terminal), stderr is merged into stdout as a terminal does, and resize()
sets its window size (the shell sees SIGWINCH).

Upstream: what containerd's exec does inside the container (runc exec with the process's
terminal); here a local process with the container's env and working directory. A runtime
that puts pods in their own namespaces gives ExecTarget.preexec: it runs in the child before
the command (setns into the pod's network and mount namespaces).
"""
from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import os
import shutil
import signal
import struct
import subprocess
import termios
from collections.abc import Callable
from dataclasses import dataclass, field

READ_SIZE = 32 << 10


@dataclass
class ExecTarget:
    env: dict[str, str] = field(default_factory=dict)
    cwd: str = ""
    preexec: Callable[[], None] | None = None     # runs in the child (pod namespaces: podnet, podvol)


class ExecError(Exception):
    """The command could not be started (upstream: the runtime's exec error, an InternalError)."""


class Process:
    def __init__(self, proc: asyncio.subprocess.Process, master: int | None) -> None:
        self.proc = proc
        self.master = master            # the terminal's master side (tty), else None
        self.pid = proc.pid

    async def read(self, fd: int) -> bytes:
        """Output of stdout (1) or stderr (2); b"" at its end."""
        if self.master is not None:
            return await _read_fd(self.master) if fd == 1 else b""
        stream = self.proc.stdout if fd == 1 else self.proc.stderr
        if stream is None:
            return b""
        return await stream.read(READ_SIZE)

    async def write(self, data: bytes) -> None:
        if self.master is not None:
            await _write_fd(self.master, data)
        elif self.proc.stdin is not None and not self.proc.stdin.is_closing():
            self.proc.stdin.write(data)
            try:
                await self.proc.stdin.drain()
            except ConnectionError:
                pass

    def close_stdin(self) -> None:
        if self.master is not None:
            try:
                os.write(self.master, b"\x04")       # a terminal's end of input: ^D
            except OSError:
                pass
        elif self.proc.stdin is not None:
            self.proc.stdin.close()

    def resize(self, width: int, height: int) -> None:
        if self.master is not None and 0 < width < 1 << 16 and 0 < height < 1 << 16:
            fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", height, width, 0, 0))

    async def wait(self) -> int:
        """The exit code; killed by signal N: 128 + N, as a shell and the runtimes report it."""
        code = await self.proc.wait()
        return 128 - code if code < 0 else code

    def kill(self) -> None:
        """SIGKILL the process group (whatever the command started goes too)."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def release(self) -> None:
        if self.master is not None:
            asyncio.get_running_loop().remove_reader(self.master)
            os.close(self.master)
            self.master = None
        if self.proc.stdin is not None:
            self.proc.stdin.close()


async def spawn(argv: list[str], target: ExecTarget, *, stdin: bool, tty: bool) -> Process:
    """Start argv; ExecError when it cannot be (not found, not executable)."""
    env = target.env or dict(os.environ)
    exe = argv[0]
    if "/" not in exe and shutil.which(exe, path=env.get("PATH", os.defpath)) is None:
        raise ExecError(f'exec: "{exe}": executable file not found in $PATH')
    cwd = target.cwd or None
    if tty:
        master, slave = os.openpty()
        os.set_blocking(master, False)

        def preexec() -> None:
            # A new session whose controlling terminal is the pty. By hand rather than with
            # start_new_session: uvloop runs preexec_fn before its own setsid and dup2s.
            with contextlib.suppress(OSError):
                os.setsid()
            fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
            if target.preexec is not None:
                target.preexec()
        try:
            proc = await asyncio.create_subprocess_exec(*argv, stdin=slave, stdout=slave, stderr=slave, env=env,
                                                        cwd=cwd, preexec_fn=preexec)
        except (OSError, subprocess.SubprocessError) as e:
            os.close(master)
            raise ExecError(_start_error(exe, e)) from None
        finally:
            os.close(slave)
        return Process(proc, master)
    pipe = asyncio.subprocess.PIPE
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=pipe if stdin else asyncio.subprocess.DEVNULL, stdout=pipe, stderr=pipe, env=env, cwd=cwd,
            start_new_session=True, preexec_fn=target.preexec, limit=READ_SIZE)
    except (OSError, subprocess.SubprocessError) as e:
        raise ExecError(_start_error(exe, e)) from None
    return Process(proc, None)


def _start_error(exe: str, e: BaseException) -> str:
    if isinstance(e, OSError):
        return f'exec: "{exe}": {os.strerror(e.errno or errno.ENOENT).lower()}'
    return f'exec: "{exe}": {e}'


async def _read_fd(fd: int) -> bytes:
    """Read a non-blocking fd; b"" at its end (a terminal's master reads EIO once every slave
    is closed)."""
    loop = asyncio.get_running_loop()
    while True:
        try:
            return os.read(fd, READ_SIZE)
        except BlockingIOError:
            pass
        except OSError:
            return b""
        fut = loop.create_future()
        loop.add_reader(fd, _set_done, fut)
        try:
            await fut
        finally:
            loop.remove_reader(fd)


async def _write_fd(fd: int, data: bytes) -> None:
    loop = asyncio.get_running_loop()
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
            view = view[n:]
            continue
        except BlockingIOError:
            pass
        except OSError:
            return
        fut = loop.create_future()
        loop.add_writer(fd, _set_done, fut)
        try:
            await fut
        finally:
            loop.remove_writer(fd)


def _set_done(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)
