"""The process runtime: each container attempt is a real local process group.

    rt = ProcessRuntime(root_dir="/tmp/kubelet", lookup=fetch_configmap_or_secret)
    rt.start_container(pod, c, init=False, attempt=0)   # spawns command + args

What a container is here:
- argv is `command` + `args` with $(VAR) expanded; there is no image (the name is reported
  but never pulled) and so no entrypoint: a container without `command` waits with
  CreateContainerError. A program that cannot be executed exits 128 with reason StartError.
- env: PATH/HOME/LANG/... from the kubelet, HOSTNAME, then envFrom and env as the kubelet
  composes them (fieldRef, configMapKeyRef and secretKeyRef resolved through `lookup`).
- cwd: workingDir (created if missing, as runc does), else <root_dir>/pods/<uid>/work.
- network: the host's. Every process pod's podIP and hostIP is 127.0.0.1, so ports are
  real ports on 127.0.0.1 and two pods cannot listen on the same one.
- each process leads its own session and process group; stopping sends SIGTERM to the group,
  then SIGKILL once the grace period has passed (on the injected clock). When the main
  process exits, whatever is left of its group is killed, as a container's PID namespace is.
- stdout and stderr go to a CRI-format log per attempt (<root_dir>/pods/<uid>/logs/<name>/
  <attempt>.log); the current and the previous attempt of each container are kept.
- exit: code 0 -> Completed, else Error; killed by signal N -> 128 + N (SIGKILL: 137).

Upstream: what containerd + runc do for the kubelet, reduced to processes on one host.
"""
from __future__ import annotations

import asyncio
import contextlib
import ctypes
import hashlib
import logging
import os
import pathlib
import shutil
import signal
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable

from ....api.types import core_v1
from ....utils.clock import REAL_CLOCK, Clock
from .. import (
    CREATING, EXITED, PROBE_FAILURE, PROBE_SUCCESS, PROBE_UNKNOWN, RUNNING, SANDBOX_NOT_READY, SANDBOX_READY,
    WAITING, ContainerStatus, EventHandler, PodStatus, SandboxStatus, check_log_target,
)
from .env import POD_IP, ConfigError, Lookup, command_argv, host_env, make_environment
from .logs import ContainerLog, stream_log
from .probes import run_probe

log = logging.getLogger(__name__)

RUNTIME_NAME = "kubeplane-process"
RUNTIME_VERSION = "0.1.0"
NO_COMMAND = "container has no command: the process runtime cannot use image entrypoints"
START_ERROR_EXIT_CODE = 128     # what containerd reports when the process could not be started
PIPE_DRAIN_TIMEOUT = 2.0        # seconds to wait for output after the process group is gone
SHUTDOWN_GRACE = 5.0            # most seconds a process gets to stop when the kubelet stops
FALLBACK_LOG_LINES = 80         # terminationMessagePolicy FallbackToLogsOnError: last lines ...
FALLBACK_LOG_BYTES = 2048       # ... and bytes of the log

EventSink = Callable[[core_v1.ObjectReference, str, str, str], None]


@dataclass
class _Container:
    """One attempt. state moves CREATING -> RUNNING -> EXITED, or CREATING -> WAITING/EXITED."""

    id: str                                  # 64 hex
    uid: str                                 # the pod's
    spec: core_v1.Container
    init: bool
    attempt: int
    state: str = CREATING
    started_at: float | None = None
    finished_at: float | None = None
    exit_code: int | None = None
    reason: str = ""
    message: str = ""
    env: dict[str, str] = field(default_factory=dict)
    cwd: str = ""
    proc: asyncio.subprocess.Process | None = None
    log: ContainerLog | None = None
    dropped: bool = False                    # stopped before it ran: kill it as soon as it exists
    stopping: bool = False
    kill_timer: asyncio.Task[None] | None = None


@dataclass
class _Pod:
    uid: str
    pod: core_v1.Pod                         # the latest seen
    dir: pathlib.Path
    sandbox: str = ""
    sandbox_ready: bool = False
    containers: list[_Container] = field(default_factory=list)    # oldest first


class ProcessRuntime:
    """Runtime protocol over local processes (see the module docstring).

    _pods: pod uid -> its sandbox and attempts; _by_id: container id -> attempt, for every
    attempt listed in a _Pod. _tasks: every runner task still going (close() waits for them).
    """

    name = RUNTIME_NAME
    version = RUNTIME_VERSION
    host_ip = POD_IP                 # reported as the pods' hostIP: they share the host's network

    def __init__(self, *, clock: Clock = REAL_CLOCK, root_dir: str | os.PathLike[str] | None = None,
                 lookup: Lookup | None = None, events: EventSink | None = None,
                 shutdown_grace: float = SHUTDOWN_GRACE, **_ignored: Any) -> None:
        self.clock = clock
        self._own_root = root_dir is None        # a temp dir, made on first use, removed by close()
        self._root = pathlib.Path(root_dir).resolve() if root_dir is not None else None
        self.lookup: Lookup | None = lookup           # the kubelet supplies one (API reads)
        self.events = events
        self.shutdown_grace = shutdown_grace
        self._handler: EventHandler = lambda uid: None
        self._nodes: dict[str, str] = {}
        self._pods: dict[str, _Pod] = {}
        self._by_id: dict[str, _Container] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._seq = 0

    @property
    def root(self) -> pathlib.Path:
        if self._root is None:
            self._root = pathlib.Path(tempfile.mkdtemp(prefix="kubeplane-kubelet-"))
        return self._root

    # --- Runtime protocol ------------------------------------------------------------------

    def add_node(self, node_name: str, node_ip: str, pod_cidr: str) -> None:
        self._nodes[node_name] = node_ip     # recorded only: every pod gets 127.0.0.1

    def set_event_handler(self, handler: EventHandler) -> None:
        self._handler = handler

    def run_pod_sandbox(self, pod: core_v1.Pod) -> str:
        p = self._pod(pod)
        if not p.sandbox:
            p.sandbox = _new_id(p.uid, "sandbox")
            p.sandbox_ready = True           # nothing to set up: the host network is the pod's
            self._notify(p.uid)
        return p.sandbox

    def start_container(self, pod: core_v1.Pod, container: core_v1.Container, *, init: bool,
                        attempt: int) -> str:
        p = self._pod(pod)
        self._prune(p, container.name or "")
        self._seq += 1
        c = _Container(_new_id(p.uid, f"{container.name}/{self._seq}"), p.uid, container, init, attempt)
        p.containers.append(c)
        self._by_id[c.id] = c
        if not container.command:
            self._set(c, state=WAITING, reason="CreateContainerError", message=NO_COMMAND)
            self._emit(c, "Warning", "Failed", f"Error: {NO_COMMAND}")
            return self._cid(c)
        self._spawn(self._run(p, c))
        self._notify(p.uid)
        return self._cid(c)

    def stop_container(self, container_id: str, grace_period: float, message: str = "") -> None:
        c = self._by_id.get(_oid(container_id))
        if c is None or c.state in (EXITED, WAITING):
            return
        if c.state != RUNNING:               # never ran: nothing to signal
            c.dropped = True
            self._forget(c)
            self._notify(c.uid)
            return
        if c.stopping:
            return
        c.stopping = True
        self._emit(c, "Normal", "Killing", message or f"Stopping container {c.spec.name}")
        _signal_group(c.proc, signal.SIGTERM)
        c.kill_timer = self._spawn(self._kill_after(c, max(0.0, grace_period)))

    def stop_pod_sandbox(self, pod_uid: str) -> None:
        p = self._pods.get(pod_uid)
        if p is not None and p.sandbox_ready:
            for c in p.containers:           # should be none: the kubelet stopped them first
                if c.state == RUNNING:
                    _signal_group(c.proc, signal.SIGKILL)
            p.sandbox_ready = False
            self._notify(pod_uid)

    def remove_pod(self, pod_uid: str) -> None:
        p = self._pods.pop(pod_uid, None)
        if p is None:
            return
        for c in list(p.containers):
            c.dropped = True
            if c.state == RUNNING:
                _signal_group(c.proc, signal.SIGKILL)
            self._forget(c)
        shutil.rmtree(p.dir, ignore_errors=True)

    def restore_pod(self, pod: core_v1.Pod) -> bool:
        return (pod.metadata.uid or "") in self._pods

    def pod_status(self, pod_uid: str) -> PodStatus | None:
        p = self._pods.get(pod_uid)
        if p is None:
            return None
        sandbox = SandboxStatus(p.sandbox, SANDBOX_READY if p.sandbox_ready else SANDBOX_NOT_READY,
                                POD_IP) if p.sandbox else None
        return PodStatus(pod_uid, sandbox, [self._status(c) for c in p.containers])

    def probe(self, container_id: str, probe_type: str) -> Any:
        """An awaitable of the probe's result (real I/O); Unhealthy events on failure."""
        c = self._by_id.get(_oid(container_id))
        if c is None:
            return PROBE_UNKNOWN
        if c.state != RUNNING or c.stopping:
            return PROBE_FAILURE
        spec = getattr(c.spec, f"{probe_type}_probe", None)
        if spec is None:
            return PROBE_SUCCESS
        return self._probe(c, spec, probe_type)

    def container_logs(self, pod_uid: str, pod_name: str, opts: Any) -> AsyncIterator[bytes]:
        target = check_log_target(self.pod_status(pod_uid), opts.container, pod_name, opts.previous)
        c = self._by_id[_oid(target.id)]
        if c.log is None:                    # exited before it ever ran (StartError): no output
            return _empty()
        since = None
        if opts.since_seconds is not None:
            since = int((self.clock.now() - opts.since_seconds) * 1e9)
        return stream_log(c.log, follow=opts.follow and c.state == RUNNING, tail_lines=opts.tail_lines,
                          limit_bytes=opts.limit_bytes, timestamps=opts.timestamps, since_ns=since)

    # --- stopping everything ------------------------------------------------------------------

    async def aclose(self) -> None:
        """The kubelet is stopping: SIGTERM every process, SIGKILL what is left after its pod's
        grace period (at most shutdown_grace seconds), then wait for the runners to finish."""
        for p in self._pods.values():
            grace = min(float(_pod_grace(p.pod)), self.shutdown_grace)
            for c in p.containers:
                self.stop_container(c.id, grace)
        try:
            if self._tasks:
                await asyncio.wait(set(self._tasks), timeout=self.shutdown_grace + PIPE_DRAIN_TIMEOUT + 1)
        finally:
            self.close()

    def close(self) -> None:
        """Kill every process group at once and cancel every task (also the last resort of aclose)."""
        for c in list(self._by_id.values()):
            if c.state == RUNNING:
                _signal_group(c.proc, signal.SIGKILL)
        for t in list(self._tasks):
            if not t.done() and t is not asyncio.current_task():
                t.cancel()
        if self._own_root and self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)

    # --- one attempt ------------------------------------------------------------------------

    async def _run(self, p: _Pod, c: _Container) -> None:
        """Compose, spawn and wait for one attempt, recording each step in its status."""
        try:
            c.env = await make_environment(p.pod, c.spec, lookup=self.lookup or _no_lookup, base=host_env(p.pod))
            c.cwd = self._workdir(p, c)
        except ConfigError as err:
            self._set(c, state=WAITING, reason="CreateContainerConfigError", message=str(err))
            self._emit(c, "Warning", "Failed", f"Error: {err}")
            return
        except OSError as err:
            self._set(c, state=WAITING, reason="CreateContainerError", message=str(err))
            return
        if c.dropped:
            return
        argv = command_argv(c.spec, c.env)
        c.log = ContainerLog(p.dir / "logs" / (c.spec.name or "") / f"{c.attempt}.log", self._now_ns)
        self._emit(c, "Normal", "Pulled", f'Container image "{c.spec.image}" already present on machine')
        self._emit(c, "Normal", "Created", f"Created container: {c.spec.name}")
        try:
            c.proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, cwd=c.cwd, env=c.env, start_new_session=True,
                preexec_fn=_die_with_parent)
        except OSError as err:
            c.log.close()
            self._set(c, state=EXITED, exit_code=START_ERROR_EXIT_CODE, reason="StartError",
                      message=_start_error(argv, c.cwd, err), finished_at=self.clock.now())
            self._emit(c, "Warning", "Failed", f"Error: {c.message}")
            return
        if c.dropped:                        # stopped while starting: it never counted as running
            _signal_group(c.proc, signal.SIGKILL)
            await c.proc.wait()
            c.log.close()
            return
        self._set(c, state=RUNNING, started_at=self.clock.now())
        self._emit(c, "Normal", "Started", f"Started container {c.spec.name}")
        await self._wait(c)

    async def _wait(self, c: _Container) -> None:
        proc, clog = c.proc, c.log
        assert proc is not None and clog is not None
        readers = [asyncio.ensure_future(_pump(proc.stdout, "stdout", clog)),
                   asyncio.ensure_future(_pump(proc.stderr, "stderr", clog))]
        try:
            rc = await proc.wait()
            _signal_group(proc, signal.SIGKILL)          # the rest of the group goes with it
            await asyncio.wait(readers, timeout=PIPE_DRAIN_TIMEOUT)
        finally:
            for r in readers:
                r.cancel()
            clog.close()
            if c.kill_timer is not None:
                c.kill_timer.cancel()
        code = rc if rc >= 0 else 128 - rc               # -9 (SIGKILL) -> 137, -15 -> 143
        self._set(c, state=EXITED, exit_code=code, reason="Completed" if code == 0 else "Error",
                  message=self._termination_message(c, code), finished_at=self.clock.now())

    async def _kill_after(self, c: _Container, grace: float) -> None:
        await self.clock.sleep(grace)
        if c.state == RUNNING:
            _signal_group(c.proc, signal.SIGKILL)

    async def _probe(self, c: _Container, spec: core_v1.Probe, probe_type: str) -> str:
        result, output = await run_probe(spec, c.spec, env=c.env, cwd=c.cwd)
        if result == PROBE_FAILURE and c.state == RUNNING and not c.stopping:
            self._emit(c, "Warning", "Unhealthy", f"{probe_type.capitalize()} probe failed: {output}".rstrip())
        return result

    # --- helpers ----------------------------------------------------------------------------

    def _pod(self, pod: core_v1.Pod) -> _Pod:
        uid = pod.metadata.uid or ""
        p = self._pods.get(uid)
        if p is None:
            p = self._pods[uid] = _Pod(uid, pod, self.root / "pods" / uid)
        p.pod = pod
        return p

    def _workdir(self, p: _Pod, c: _Container) -> str:
        wd = pathlib.Path(c.spec.working_dir) if c.spec.working_dir else p.dir / "work"
        wd.mkdir(parents=True, exist_ok=True)
        return str(wd)

    def _prune(self, p: _Pod, name: str) -> None:
        """Before a new attempt: drop failed creations, keep only the newest earlier attempt
        that ran (the one `--previous` shows)."""
        mine = [c for c in p.containers if c.spec.name == name]
        for c in mine:
            if c.state == WAITING:
                self._forget(c)
        ran = [c for c in mine if c.state != WAITING]
        for c in ran[:-1]:
            if c.state == EXITED:
                self._forget(c)
                if c.log is not None:
                    with contextlib.suppress(OSError):
                        c.log.path.unlink()

    def _forget(self, c: _Container) -> None:
        self._by_id.pop(c.id, None)
        p = self._pods.get(c.uid)
        if p is not None and c in p.containers:
            p.containers.remove(c)

    def _status(self, c: _Container) -> ContainerStatus:
        return ContainerStatus(id=self._cid(c), name=c.spec.name or "", attempt=c.attempt, init=c.init,
                               state=c.state, image=c.spec.image or "", image_ref=_image_ref(c.spec.image or ""),
                               started_at=c.started_at, finished_at=c.finished_at, exit_code=c.exit_code,
                               reason=c.reason, message=c.message)

    def _termination_message(self, c: _Container, code: int) -> str:
        """Upstream: FallbackToLogsOnError takes the log's tail when the container failed."""
        if code == 0 or c.spec.termination_message_policy != "FallbackToLogsOnError" or c.log is None:
            return ""
        records, _ = c.log.read_from(0)
        text = b"".join(r.render(False) for r in records[-FALLBACK_LOG_LINES:])
        return text[-FALLBACK_LOG_BYTES:].decode("utf-8", "replace")

    def _set(self, c: _Container, **changes: Any) -> None:
        for k, v in changes.items():
            setattr(c, k, v)
        self._notify(c.uid)

    def _cid(self, c: _Container) -> str:
        return f"{RUNTIME_NAME}://{c.id}"

    def _now_ns(self) -> int:
        return int(self.clock.now() * 1e9)

    def _spawn(self, coro: Any) -> asyncio.Task[None]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)
        return task

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("process runtime task failed", exc_info=task.exception())

    def _emit(self, c: _Container, type_: str, reason: str, message: str) -> None:
        p = self._pods.get(c.uid)
        if self.events is None or p is None:
            return
        m = p.pod.metadata
        where = "initContainers" if c.init else "containers"
        ref = core_v1.ObjectReference(kind="Pod", api_version="v1", name=m.name, namespace=m.namespace, uid=m.uid,
                                      field_path=f"spec.{where}{{{c.spec.name}}}")
        try:
            self.events(ref, type_, reason, message)
        except Exception:
            log.exception("process runtime: event sink failed")

    def _notify(self, uid: str) -> None:
        if uid:
            self._handler(uid)


async def _pump(stream: asyncio.StreamReader | None, name: str, clog: ContainerLog) -> None:
    if stream is None:
        return
    while chunk := await stream.read(65536):
        clog.write(name, chunk)
    clog.end(name)


async def _empty() -> AsyncIterator[bytes]:
    return
    yield b""  # pragma: no cover - makes this an async generator


async def _no_lookup(kind: str, namespace: str, name: str) -> dict[str, str] | None:
    return None


def _signal_group(proc: asyncio.subprocess.Process | None, sig: int) -> None:
    """Signal the process's whole group (its pid is the group id: start_new_session)."""
    if proc is None:
        return
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _pod_grace(pod: core_v1.Pod) -> int:
    spec = pod.spec
    g = spec.termination_grace_period_seconds if spec is not None else None
    return 30 if g is None else g


def _start_error(argv: list[str], cwd: str, err: OSError) -> str:
    """containerd's wording for an exec that failed, e.g. a missing program."""
    if isinstance(err, FileNotFoundError) and argv and err.filename in (argv[0], None):
        return (f'failed to create containerd task: exec: "{argv[0]}": executable file not found in $PATH')
    return f"failed to create containerd task: exec: {err}"


def _image_ref(image: str) -> str:
    """imageID: nothing is pulled, so a stable reference derived from the name."""
    return f"{image}@sha256:{hashlib.sha256(image.encode()).hexdigest()}" if image else ""


def _new_id(uid: str, what: str) -> str:
    return hashlib.sha256(f"{uid}/{what}/{os.getpid()}".encode()).hexdigest()


def _oid(container_id: str) -> str:
    return container_id.split("://", 1)[-1]


_LIBC: Any = None
if sys.platform == "linux":
    with contextlib.suppress(OSError):
        _LIBC = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child, before exec: get SIGKILL if the kubelet dies without stopping us, so a
    crashed kubelet leaves no process (and no bound port) behind. Linux only."""
    if _LIBC is not None:
        _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
