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
  kubelet -> shim stdin    the spec: {"argv", "env", "cwd", "log", "hooks"} (hooks: Hooks)
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
"""
from __future__ import annotations

import datetime as dt
import json
import os
import pathlib
import selectors
import signal
import subprocess
import sys
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


def pump(proc: subprocess.Popen[bytes], log: LogWriter) -> int:
    """Copy the process's output to log until it exits (then kill the rest of its group and
    drain for up to DRAIN_TIMEOUT); its exit code."""
    sel = selectors.DefaultSelector()
    for name, stream in (("stdout", proc.stdout), ("stderr", proc.stderr)):
        assert stream is not None
        os.set_blocking(stream.fileno(), False)
        sel.register(stream.fileno(), selectors.EVENT_READ, name)
    pidfd = None
    try:
        pidfd = os.pidfd_open(proc.pid)
        sel.register(pidfd, selectors.EVENT_READ, "exit")
    except (AttributeError, OSError):
        pass                                   # no pidfd: look every 100 ms
    open_streams, drain_until = 2, None
    while open_streams:
        timeout = 0.1 if pidfd is None else None
        if drain_until is not None:
            timeout = max(0.0, drain_until - time.monotonic())
        for key, _ in sel.select(timeout):
            if key.data == "exit":
                sel.unregister(key.fd)
                continue
            chunk = os.read(key.fd, 65536)
            if chunk:
                log.write(key.data, chunk)
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
    try:
        proc = subprocess.Popen(spec["argv"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, cwd=None if hooks else spec["cwd"], env=spec["env"],
                                start_new_session=True, preexec_fn=hooks.run if hooks else None)
    except (OSError, subprocess.SubprocessError) as err:
        log.close()
        message = hooks.error() or (start_error(spec["argv"], err) if isinstance(err, OSError) else str(err))
        state = {"error": message, "exitCode": START_ERROR_EXIT_CODE, "finishedAt": time.time()}
        _write_state(state_path, state)
        _say(state)
        return 0
    hooks.close()
    state = {"pid": proc.pid, "start": proc_start(proc.pid), "startedAt": time.time()}
    _write_state(state_path, state)
    _say(state)
    os.dup2(devnull, 1)                        # done talking to the kubelet
    state.update(exitCode=pump(proc, log), finishedAt=time.time())
    _write_state(state_path, state)
    return 0


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
