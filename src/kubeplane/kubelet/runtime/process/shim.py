"""The container shim: one small process per container attempt that outlives the kubelet.

    python -I -S shim.py STATE_FILE          # run by ProcessRuntime; stdin/stdout talk to it

It starts the container's process, writes its output to the attempt's CRI-format log, waits
for it to exit, and records the exit code, so that a container keeps running, keeps its log
and has its exit observed while the kubelet (or all of `kubeplane up`) is down or restarting.
Upstream: containerd-shim, which plays this part between containerd and runc; without it a
container's stdout would be a pipe into the kubelet, broken by the kubelet's death, and its
exit code would be lost (only a parent can wait for a process).

It imports nothing but the standard library (it starts in ~20 ms and never loads the
kubelet); logs.py takes LogWriter and the time format from here.

Protocol (one JSON object per line):
  kubelet -> shim stdin    the spec: {"argv", "env", "cwd", "log", "hooks", "stdin", "stdinOnce",
                           "tty", "attach"} (hooks: Hooks; the last four: Attach, below)
  shim -> stdout           {"shim": pid, "start": starttime}   (the shim has detached: a
                           grandchild of the kubelet, in a session of its own, so no signal
                           meant for the kubelet's process group reaches it)
  kubelet -> shim stdin    "go" (after recording the shim's identity; EOF instead: the kubelet
                           died before it could, and the shim exits without starting anything)
  shim -> stdout           {"pid", "start", "startedAt"} or {"error", "exitCode": 128, ...}
  STATE_FILE (atomic)      the same, then {"exitCode", "finishedAt", ...} when it has exited

The container runs in a session and process group of its own (pgid = its pid), so the kubelet
stops it with a signal to the group; when its main process exits, the shim kills what is left
of the group (a container's PID namespace goes with its init) before reaping the main process,
so the group id is never reused while it is signalled.

A container started with `stdin` or `tty` keeps its stdin here (the write end of a pipe, or a
pseudo-terminal's master whose slave is the container's stdin, stdout, stderr and controlling
terminal) and the shim serves attach on a unix socket beside its record (Attach): what the
container writes goes to the log and to every attached client; what a client sends goes to
the container's stdin. Upstream: containerd's container IO (pkg/cri/io/container_io.go Attach)
with the shim's console; the attach stream outlives the kubelet as the container does.
"""
from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import pathlib
import selectors
import signal
import socket
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from typing import Any

MAX_LINE = 16 * 1024          # containerd splits longer lines into P records (maxMsgSize)
DRAIN_TIMEOUT = 2.0           # seconds to wait for output after the main process exited
START_ERROR_EXIT_CODE = 128   # what containerd reports when the process could not be started


def rfc3339_nano(ns: int) -> str:
    """Go's time.RFC3339Nano in UTC: trailing zeros of the fraction trimmed.

    Example: 1714557600_123450000 ns -> "2024-05-01T10:00:00.12345Z"; a whole second has no fraction.
    """
    sec, frac = divmod(ns, 1_000_000_000)
    base = dt.datetime.fromtimestamp(sec, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")
    if frac:
        base += "." + f"{frac:09d}".rstrip("0")
    return base + "Z"


class LogWriter:
    """Appends a container's output to its CRI-format log, one record per line.

    `F` marks a full line (the newline is implied), `P` a piece of one: a line longer than
    MAX_LINE, or the last bytes before a stream closed without a newline.
    """

    def __init__(self, path: str | os.PathLike[str], now_ns: Callable[[], int] = time.time_ns) -> None:
        self.now_ns = now_ns
        pathlib.Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._f = open(path, "ab")
        self._pending = {"stdout": b"", "stderr": b""}
        self.closed = False

    def write(self, stream: str, data: bytes) -> None:
        """Record data read from stream, one record per complete line."""
        buf = self._pending[stream] + data
        lines = buf.split(b"\n")
        self._pending[stream] = lines.pop()
        ts = self.now_ns()
        for line in lines:
            self._append(ts, stream, False, line)
        while len(self._pending[stream]) >= MAX_LINE:
            head, self._pending[stream] = self._pending[stream][:MAX_LINE], self._pending[stream][MAX_LINE:]
            self._append(ts, stream, True, head)

    def end(self, stream: str) -> None:
        """The stream closed: keep what is left of its last line as a partial record."""
        rest, self._pending[stream] = self._pending[stream], b""
        if rest:
            self._append(self.now_ns(), stream, True, rest)

    def close(self) -> None:
        if not self.closed:
            for stream in self._pending:
                self.end(stream)
            self._f.close()
            self.closed = True

    def _append(self, ts: int, stream: str, partial: bool, content: bytes) -> None:
        self._f.write(b"%s %s %s %s\n" % (rfc3339_nano(ts).encode(), stream.encode(), b"P" if partial else b"F",
                                          content))
        self._f.flush()


def proc_stat(pid: int) -> tuple[str, int] | None:
    """(state, start time) of the process from /proc/<pid>/stat (fields 3 and 22: "Z" for a
    zombie; clock ticks since boot), or None if there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return None
    return fields[0].decode(), int(fields[19])


def proc_start(pid: int) -> int | None:
    """The process's start time, or None if there is no such process: with the pid it names
    one process for good (pids are reused)."""
    stat = proc_stat(pid)
    return stat[1] if stat is not None else None


def write_atomic(path: str | os.PathLike[str], obj: Any) -> None:
    """Replace path with obj as JSON (mode 0600): readers see the old file or the new one."""
    path = pathlib.Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(obj, f)
    os.replace(tmp, path)


def start_error(argv: list[str], err: OSError) -> str:
    """containerd's wording for an exec that failed, e.g. a missing program."""
    if isinstance(err, FileNotFoundError) and argv and err.filename in (argv[0], None):
        return f'failed to create containerd task: exec: "{argv[0]}": executable file not found in $PATH'
    return f"failed to create containerd task: exec: {err}"


def exit_code(status: int) -> int:
    """A wait status's exit code as containers report it: killed by signal N -> 128 + N."""
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _say(obj: Any) -> None:
    try:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()
    except OSError:
        pass                                   # the kubelet is gone: the state file says it all


def _detach() -> None:
    """Become a grandchild of the kubelet in a session of our own (the kubelet's child exits)."""
    if os.fork() > 0:
        os._exit(0)
    os.setsid()


def _exited(pid: int) -> bool:
    """Whether the process has exited, without reaping it (its pid and group stay ours)."""
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def pump(proc: subprocess.Popen[bytes], log: LogWriter, attach: Attach | None = None,
         outputs: list[tuple[int, str]] | None = None) -> int:
    """Copy the process's output (outputs: (fd, stream name); by default its stdout and stderr
    pipes) to log and to attach's clients until it exits (then kill the rest of its group and
    drain for up to DRAIN_TIMEOUT); its exit code."""
    sel = selectors.DefaultSelector()
    if outputs is None:
        assert proc.stdout is not None and proc.stderr is not None
        outputs = [(proc.stdout.fileno(), "stdout"), (proc.stderr.fileno(), "stderr")]
    for fd, name in outputs:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ, name)
    if attach is not None:
        attach.register(sel)
    pidfd = None
    try:
        pidfd = os.pidfd_open(proc.pid)
        sel.register(pidfd, selectors.EVENT_READ, "exit")
    except (AttributeError, OSError):
        pass                                   # no pidfd: look every 100 ms
    open_streams, drain_until = len(outputs), None
    while open_streams:
        timeout = 0.1 if pidfd is None else None
        if drain_until is not None:
            timeout = max(0.0, drain_until - time.monotonic())
        for key, events in sel.select(timeout):
            if callable(key.data):             # the attach socket, a client, the stdin pipe
                key.data(events)
                continue
            if key.data == "exit":
                sel.unregister(key.fd)
                continue
            try:
                chunk = os.read(key.fd, 65536)
            except OSError:                    # a terminal's master once its slave is closed: EIO
                chunk = b""
            if chunk:
                log.write(key.data, chunk)
                if attach is not None:
                    attach.output(key.data, chunk)
            else:
                sel.unregister(key.fd)
                log.end(key.data)
                open_streams -= 1
        if drain_until is None and _exited(proc.pid):
            try:
                os.killpg(proc.pid, signal.SIGKILL)   # what is left of the group goes with it
            except OSError:
                pass
            drain_until = time.monotonic() + DRAIN_TIMEOUT
        elif drain_until is not None and time.monotonic() >= drain_until:
            break
    if drain_until is None:                    # both streams closed before the exit
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
    _, status = os.waitpid(proc.pid, 0)
    proc.returncode = exit_code(status)
    log.close()
    if attach is not None:
        attach.close()
    return proc.returncode


def main(argv: list[str]) -> int:
    state_path = argv[1]
    line = sys.stdin.readline()
    if not line.strip():
        return 0
    spec = json.loads(line)
    _detach()
    _say({"shim": os.getpid(), "start": proc_start(os.getpid())})
    if sys.stdin.readline().strip() != "go":
        return 0                               # the kubelet did not record us: start nothing
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    log = LogWriter(spec["log"])
    hooks = Hooks(spec.get("hooks") or [], spec["cwd"])
    stdio = Stdio(bool(spec.get("stdin")), bool(spec.get("tty")))
    preexec = stdio.preexec(hooks.run if hooks else None)
    try:
        proc = subprocess.Popen(spec["argv"], stdin=stdio.child_stdin, stdout=stdio.child_stdout,
                                stderr=stdio.child_stderr, cwd=None if hooks else spec["cwd"], env=spec["env"],
                                start_new_session=True, preexec_fn=preexec)
    except (OSError, subprocess.SubprocessError) as err:
        log.close()
        stdio.close()
        message = hooks.error() or (start_error(spec["argv"], err) if isinstance(err, OSError) else str(err))
        state = {"error": message, "exitCode": START_ERROR_EXIT_CODE, "finishedAt": time.time()}
        _write_state(state_path, state)
        _say(state)
        return 0
    hooks.close()
    stdio.started()
    attach = None
    if stdio.kept and spec.get("attach"):
        try:
            attach = Attach(spec["attach"], stdio, bool(spec.get("stdinOnce")))
        except OSError as err:             # the container runs on, without attach (stderr: the .shim.log)
            print(f"attach socket {spec['attach']}: {err}", file=sys.stderr, flush=True)
    state = {"pid": proc.pid, "start": proc_start(proc.pid), "startedAt": time.time()}
    _write_state(state_path, state)
    _say(state)
    os.dup2(devnull, 1)                        # done talking to the kubelet
    state.update(exitCode=pump(proc, log, attach, stdio.outputs(proc)), finishedAt=time.time())
    _write_state(state_path, state)
    return 0


class Stdio:
    """The container's stdin, stdout and stderr: pipes (stdin /dev/null unless `stdin`), or with
    `tty` one pseudo-terminal, its controlling terminal (stderr merges into stdout as a
    terminal does; the log has it all as stdout, as containerd's). `kept`: the shim holds
    the container's stdin (the pipe's write end, or the master) for attach."""

    def __init__(self, stdin: bool, tty: bool) -> None:
        self.tty, self.stdin = tty, stdin
        self.master = self.slave = self.pipe_r = self.pipe_w = self.tty_in = -1
        if tty:
            self.master, self.slave = os.openpty()
            self.tty_in = os.dup(self.master)     # input: the selector has the master for output
        elif stdin:
            self.pipe_r, self.pipe_w = os.pipe()
        self.kept = tty or stdin

    @property
    def child_stdin(self) -> int:
        return self.slave if self.tty else self.pipe_r if self.stdin else subprocess.DEVNULL

    @property
    def child_stdout(self) -> int:
        return self.slave if self.tty else subprocess.PIPE

    @property
    def child_stderr(self) -> int:
        return self.slave if self.tty else subprocess.PIPE

    @property
    def input_fd(self) -> int:
        """Where attached clients' stdin goes (-1: nowhere)."""
        return self.tty_in if self.tty else self.pipe_w

    def preexec(self, then: Callable[[], None] | None) -> Callable[[], None] | None:
        if not self.tty:
            return then

        def run() -> None:
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)     # after Popen's setsid: the pty is its terminal
            if then is not None:
                then()
        return run

    def started(self) -> None:
        """After the fork: close the container's ends here."""
        for fd in (self.slave, self.pipe_r):
            if fd >= 0:
                os.close(fd)
        self.slave = self.pipe_r = -1

    def outputs(self, proc: subprocess.Popen[bytes]) -> list[tuple[int, str]] | None:
        return [(self.master, "stdout")] if self.tty else None

    def resize(self, width: int, height: int) -> None:
        if self.master >= 0:
            try:
                fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", height, width, 0, 0))
            except OSError:
                pass

    def close_input(self) -> None:
        """stdinOnce: the first attach's stdin ended. A pipe is closed (the container reads
        EOF); a terminal cannot be closed for input alone, so it stops taking input."""
        if self.pipe_w >= 0:
            os.close(self.pipe_w)
            self.pipe_w = -1
        self.stdin = False

    def close(self) -> None:
        for fd in (self.master, self.slave, self.pipe_r, self.pipe_w, self.tty_in):
            if fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.master = self.slave = self.pipe_r = self.pipe_w = self.tty_in = -1


FRAME = struct.Struct(">cI")       # kind, length; then the payload
MAX_FRAME = 1 << 20
CLIENT_BACKLOG = 4 << 20           # bytes of output a client may fall behind by before it is dropped
STDIN_BACKLOG = 1 << 20            # bytes of input held for the container before clients are not read


class Attach:
    """The attach socket of one container and its clients.

    Frames, each FRAME + payload. Client -> shim: b"o" {"stdin", "stdout", "stderr"} (first),
    b"i" stdin bytes, b"e" the client's stdin ended, b"r" [width, height]. Shim -> client:
    b"1" stdout bytes, b"2" stderr bytes; the shim closes the connection when the container's
    output has ended, or when the attach is over (below).

    As containerd's ContainerIO.Attach: a client's stdin goes to the container's; when it ends
    (or the client goes), with stdinOnce the container's stdin is closed (the client keeps
    its output until the container exits, unless it has a terminal), without it the client
    is detached. Output is passed on from the moment a client attaches (no history)."""

    def __init__(self, path: str, stdio: Stdio, stdin_once: bool) -> None:
        self.stdio, self.stdin_once = stdio, stdin_once
        self.path = path
        self.sel: selectors.BaseSelector | None = None
        self.clients: dict[int, _Client] = {}
        self.pending = bytearray()         # input not yet taken by the container
        self.closing = False               # stdinOnce: close the input once pending is in
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        directory, name = os.path.split(path)
        dirfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:                               # via the directory's fd: a socket's path has at most 107 bytes
            self.server.bind(f"/proc/self/fd/{dirfd}/{name}")
        finally:
            os.close(dirfd)
        os.chmod(path, 0o600)
        self.server.listen(8)
        self.server.setblocking(False)
        if stdio.input_fd >= 0:
            os.set_blocking(stdio.input_fd, False)

    def register(self, sel: selectors.BaseSelector) -> None:
        self.sel = sel
        sel.register(self.server, selectors.EVENT_READ, self._accept)

    def _accept(self, events: int) -> None:
        try:
            conn, _ = self.server.accept()
        except OSError:
            return
        conn.setblocking(False)
        client = _Client(conn)
        self.clients[conn.fileno()] = client
        self._interest(client)

    def _interest(self, client: _Client) -> None:
        assert self.sel is not None
        events = selectors.EVENT_READ if len(self.pending) < STDIN_BACKLOG else 0
        if client.out:
            events |= selectors.EVENT_WRITE
        fd = client.sock.fileno()
        handler = lambda ev, c=client: self._on_client(c, ev)   # noqa: E731
        try:
            if not events:
                self.sel.unregister(fd)
            elif fd in self.sel.get_map():
                self.sel.modify(fd, events, handler)
            else:
                self.sel.register(fd, events, handler)
        except (KeyError, ValueError):
            pass

    def _on_client(self, client: _Client, events: int) -> None:
        if events & selectors.EVENT_WRITE and not self._flush(client):
            return
        if events & selectors.EVENT_READ:
            try:
                data = client.sock.recv(65536)
            except BlockingIOError:
                data = None
            except OSError:
                data = b""
            if data == b"":
                self._gone(client)
                return
            if data:
                client.inbuf += data
                if not self._frames(client):
                    return
        if client.sock.fileno() >= 0:
            self._interest(client)

    def _frames(self, client: _Client) -> bool:
        """Handle the complete frames received; False when the client was dropped."""
        buf = client.inbuf
        while len(buf) >= FRAME.size:
            kind, n = FRAME.unpack_from(buf)
            if n > MAX_FRAME:
                self._drop(client)
                return False
            if len(buf) < FRAME.size + n:
                break
            payload = bytes(buf[FRAME.size:FRAME.size + n])
            del buf[:FRAME.size + n]
            if not self._frame(client, kind, payload):
                return False
        return True

    def _frame(self, client: _Client, kind: bytes, payload: bytes) -> bool:
        if kind == b"o":
            try:
                o = json.loads(payload)
            except ValueError:
                o = {}
            client.stdout, client.stderr = bool(o.get("stdout")), bool(o.get("stderr"))
            client.stdin = bool(o.get("stdin")) and self.stdio.stdin
        elif kind == b"i" and client.stdin and self.stdio.stdin:
            self.pending += payload
            self._feed()
        elif kind == b"r":
            try:
                width, height = json.loads(payload)
                self.stdio.resize(int(width), int(height))
            except (ValueError, TypeError):
                pass
        elif kind == b"e" and client.stdin:
            return self._stdin_ended(client)
        return True

    def _stdin_ended(self, client: _Client) -> bool:
        client.stdin = False
        if self.stdin_once:
            self._close_input()
            if not self.stdio.tty:
                return True                # output goes on until the container exits
        self._drop(client)
        return False

    def _close_input(self) -> None:
        if self.pending:                   # what is held still goes in first
            self.stdio.stdin = False
            self.closing = True
            return
        self.stdio.close_input()

    def _feed(self, events: int = 0) -> None:
        """Write held input into the container's stdin as far as it takes it."""
        fd = self.stdio.input_fd
        assert self.sel is not None
        while self.pending and fd >= 0:
            try:
                n = os.write(fd, self.pending)
            except BlockingIOError:
                break
            except OSError:                # the container closed its stdin (EPIPE): drop what is held
                self.pending.clear()
                break
            del self.pending[:n]
        registered = fd in self.sel.get_map() if fd >= 0 else False
        if self.pending and not registered:
            self.sel.register(fd, selectors.EVENT_WRITE, self._feed)
        elif not self.pending and registered:
            self.sel.unregister(fd)
        if not self.pending and self.closing:
            self.closing = False
            self.stdio.close_input()
        for c in list(self.clients.values()):
            self._interest(c)

    def output(self, stream: str, data: bytes) -> None:
        """What the container wrote: to every client that asked for that stream."""
        kind = b"1" if stream == "stdout" else b"2"
        for c in list(self.clients.values()):
            if c.stdout if kind == b"1" else c.stderr:
                c.out += FRAME.pack(kind, len(data)) + data
                if len(c.out) > CLIENT_BACKLOG:
                    self._drop(c)           # too slow: it would hold the container's output back
                elif self._flush(c):
                    self._interest(c)

    def _flush(self, client: _Client) -> bool:
        try:
            n = client.sock.send(client.out)
        except BlockingIOError:
            return True
        except OSError:
            self._gone(client)
            return False
        del client.out[:n]
        return True

    def _gone(self, client: _Client) -> None:
        """The client closed its side (the kubelet's attach is over)."""
        if client.stdin:
            client.stdin = False
            if self.stdin_once:
                self._close_input()
        self._drop(client)

    def _drop(self, client: _Client) -> None:
        fd = client.sock.fileno()
        self.clients.pop(fd, None)
        if self.sel is not None and fd >= 0 and fd in self.sel.get_map():
            self.sel.unregister(fd)
        client.sock.close()

    def close(self) -> None:
        """The container's output has ended: every client is done."""
        for c in list(self.clients.values()):
            if c.out:
                c.sock.setblocking(True)
                c.sock.settimeout(1.0)
                try:
                    c.sock.sendall(c.out)
                except OSError:
                    pass
            self._drop(c)
        self.server.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass
        self.stdio.close()


class _Client:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.inbuf = bytearray()
        self.out = bytearray()
        self.stdin = self.stdout = self.stderr = False


class Hooks:
    """Steps run in the container's process between fork and exec, in order, then the chdir to
    its working directory: each {"module": a file's path, "func": its name, "args": ...} calls
    func(args) from that file (loaded here, before the fork). The process runtime gives a pod's
    network namespace first (network/netns.enter), then the mounts (mountns.enter). A failing
    step's message is the start error (runc's wording around it)."""

    PREFIX = ("failed to create containerd task: failed to create shim task: OCI runtime create failed: "
              "runc create failed: unable to start container process: error during container init: ")

    def __init__(self, hooks: list[dict[str, Any]], cwd: str) -> None:
        import importlib.util
        self.cwd = cwd
        self.calls: list[tuple[Any, Any]] = []
        for i, h in enumerate(hooks):
            spec = importlib.util.spec_from_file_location(f"_shim_hook_{i}", h["module"])
            assert spec is not None and spec.loader is not None
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            self.calls.append((getattr(mod, h["func"]), h.get("args")))
        self._r, self._w = os.pipe() if hooks else (-1, -1)

    def __bool__(self) -> bool:
        return bool(self.calls)

    def run(self) -> None:
        try:
            for func, args in self.calls:
                func(args)
            os.chdir(self.cwd)
        except BaseException as err:
            os.write(self._w, str(err).encode()[:4000])
            raise

    def close(self) -> None:
        if self.calls:
            os.close(self._r)
            os.close(self._w)

    def error(self) -> str:
        if not self.calls:
            return ""
        os.close(self._w)
        with os.fdopen(self._r, "rb") as f:
            message = f.read().decode("utf-8", "replace")
        return self.PREFIX + message if message else ""


def _write_state(path: str, state: dict[str, Any]) -> None:
    try:
        write_atomic(path, state)
    except OSError:
        pass                                   # the pod's directory is gone (the pod was removed)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
