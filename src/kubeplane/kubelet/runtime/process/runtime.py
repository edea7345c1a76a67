"""The process runtime: each container attempt is a real local process group.

    rt = ProcessRuntime(root_dir="/tmp/kubelet", lookup=fetch_configmap_or_secret)
    rt.start_container(pod, c, init=False, attempt=0)   # spawns command + args

What a container is here:
- argv is `command` + `args` with $(VAR) expanded; there is no image (the name is reported
  but never pulled) and so no entrypoint: a container without `command` runs its `args`, as
  an image without an ENTRYPOINT does (python, busybox, ubuntu ...: `kubectl run t
  --image=python -- python -c ...` sets only args); one with neither waits with
  CreateContainerError. A program that cannot be executed exits 128 with reason StartError.
- stdin, stdinOnce, tty: the shim keeps the container's stdin (a pipe, or a pseudo-terminal
  that is its controlling terminal) for attach (shim.py Attach, attach.py); without them
  stdin is /dev/null and attach follows the log.
- ephemeral containers (`kubectl debug`) start as any container of the pod: in its network
  namespace, with their own volumeMounts. targetContainerName: there are no PID namespaces
  here (every process is in the host's), so the target's processes are visible and can be
  signalled or traced from the ephemeral container as upstream's shared process namespace
  allows (and so is every other process of the host); the target's filesystem, where it has
  its own mounts, is at /proc/<its pid>/root, as upstream.
- env: PATH/HOME/LANG/... from the kubelet, HOSTNAME, the service links (KUBERNETES_SERVICE_HOST
  & co., where Services are reachable), then envFrom and env as the kubelet composes them (fieldRef, configMapKeyRef and secretKeyRef resolved through `lookup`).
- cwd: workingDir (created if missing, as runc does), else <root_dir>/pods/<uid>/work.
- network: with pod_network "netns" (or "auto" where this process may create network
  namespaces: root), each pod gets a network namespace, a veth pair on its node's bridge and
  an address from the node's podCIDR (kubelet/network): podIP is that address, and two pods
  listen on the same port. Otherwise ("host", and hostNetwork pods) the host's: podIP and
  hostIP are 127.0.0.1 and ports are real ports on 127.0.0.1. hostIP is 127.0.0.1 either way.
- DNS: the sandbox writes the pod's resolv.conf as the kubelet's DNS configurer composes it
  (dnsPolicy, dnsConfig, --cluster-dns/--cluster-domain; kubelet/network/dns.py) to
  <root_dir>/pods/<uid>/resolv.conf (resolv_conf_path). Where the pod's node has a pod
  network (the cluster DNS IP is local there, network/proxy.py), each container runs in a mount
  namespace of its own that binds it at /etc/resolv.conf; on the host's network the processes
  keep the host's /etc/resolv.conf. /etc/hosts likewise: the kubelet's managed hosts file
  (the pod's IP, hostname and FQDN, hostAliases; kubelet/network/hosts.py), written to
  <root_dir>/pods/<uid>/etc-hosts at each container start and bound there.
- launch: the shim enters the pod's network namespace (network/netns.py), then the
  container's mounts (volumes.py), then execs; exec_preexec does the same for exec and exec
  probes.
- each process leads its own session and process group; stopping sends SIGTERM to the group,
  then SIGKILL once the grace period has passed (on the injected clock). When the main
  process exits, whatever is left of its group is killed, as a container's PID namespace is.
- stdout and stderr go to a CRI-format log per attempt (<root_dir>/pods/<uid>/logs/<name>/
  <attempt>.log); the current and the previous attempt of each container are kept.
- exit: code 0 -> Completed, else Error; killed by signal N -> 128 + N (SIGKILL: 137).

Containers outlive the kubelet, as upstream's do. Each attempt runs under a shim (shim.py,
upstream's containerd-shim) that owns its output and waits for its exit, detached from the
kubelet; what the runtime knows of its pods is recorded on disk (records.py). When the
kubelet stops (SIGTERM or kill -9 of `kubeplane up`), the containers keep running and keep
logging; the next kubelet on the same root takes them up again (`restore_pod`): running
attempts are watched again (their exit, through the shim's pid, with a pidfd), probes resume,
logs keep growing in the same files, and no container event is repeated. An attempt that
exited meanwhile is reported with its exit code and restarted as its restart policy says
(restartCount + 1, with the kubelet's back-off); one whose shim vanished without a word
(killed, or the machine rebooted) is reported as upstream reports a container the runtime
lost: exit code 137, reason ContainerStatusUnknown. To stop the containers, delete their pods
(or workloads) while the kubelet runs; kill_recorded(root) stops whatever a kubelet that is
gone left behind. A runtime on a temporary root (root_dir None) stops its containers when it
closes, since nothing could take them up again.

Upstream: what containerd + runc do for the kubelet, reduced to processes on one host.
"""
from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import pathlib
import shutil
import signal
import sys
import tempfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from ....api.types import core_v1, from_dict, meta_v1, to_dict
from ....utils.clock import REAL_CLOCK, Clock
from ...network import NetworkError, PodNetwork, netns, netns_name
from ...network.hosts import ETC_HOSTS, ensure_hosts_file
from .. import (
    CREATING,
    EXITED,
    PROBE_FAILURE,
    PROBE_SUCCESS,
    PROBE_UNKNOWN,
    RUNNING,
    SANDBOX_NOT_READY,
    SANDBOX_READY,
    WAITING,
    ContainerStatus,
    EventHandler,
    PodStatus,
    SandboxStatus,
    check_log_target,
    field_path,
)
from . import records, shim
from .attach import AttachConnection
from .volumes import PodVolumes, has_volumes
from .env import POD_IP, ConfigError, Lookup, command_argv, host_env, make_environment
from .logs import POLL_INTERVAL, ContainerLog, stream_log
from .probes import run_probe

log = logging.getLogger(__name__)

RUNTIME_NAME = "kubeplane-process"
RUNTIME_VERSION = "0.1.0"
NO_COMMAND = "container has no command: the process runtime cannot use image entrypoints"
START_ERROR_EXIT_CODE = shim.START_ERROR_EXIT_CODE
SANDBOX_RETRY = 5.0             # seconds before a sandbox whose network failed is made again
SHUTDOWN_GRACE = 5.0            # most seconds a process gets to stop when the runtime stops them all
FALLBACK_LOG_LINES = 80         # terminationMessagePolicy FallbackToLogsOnError: last lines ...
FALLBACK_LOG_BYTES = 2048       # ... and bytes of the log
SHIM = str(pathlib.Path(shim.__file__).resolve())
NETNS_FILE = str(pathlib.Path(netns.__file__).resolve())
# A container whose shim vanished without recording its exit. Upstream: convertToAPIContainerStatuses'
# lastTerminationState for a container that was running and cannot be found any more.
STATUS_UNKNOWN_EXIT_CODE = 137
STATUS_UNKNOWN_REASON = "ContainerStatusUnknown"
STATUS_UNKNOWN_MESSAGE = "The container could not be located when the pod was deleted.  The container used to be Running"

EventSink = Callable[[core_v1.ObjectReference, str, str, str], None]


@dataclass
class _Container:
    """One attempt. state moves CREATING -> RUNNING -> EXITED, or CREATING -> WAITING/EXITED."""

    id: str                                  # 64 hex
    uid: str                                 # the pod's
    spec: core_v1.Container
    init: bool
    attempt: int
    seq: int = 0                             # order among attempts with the same number (pull retries)
    state: str = CREATING
    started_at: float | None = None
    finished_at: float | None = None
    exit_code: int | None = None
    reason: str = ""
    message: str = ""
    env: dict[str, str] = field(default_factory=dict)
    cwd: str = ""
    hooks: list[dict[str, Any]] = field(default_factory=list)    # the shim's steps before exec (mounts)
    log: ContainerLog | None = None
    record: pathlib.Path | None = None       # its record on disk (None: nothing recorded)
    shim_pid: int | None = None
    shim_start: int | None = None
    pid: int | None = None                   # the container's main process; its group id
    pid_start: int | None = None
    dropped: bool = False                    # stopped before it ran: kill it as soon as it exists
    stopping: bool = False
    kill_timer: asyncio.Task[None] | None = None


@dataclass
class _Pod:
    uid: str
    pod: core_v1.Pod                         # the latest seen (after a restart: as recorded, until seen)
    dir: pathlib.Path
    sandbox: str = ""
    sandbox_ready: bool = False
    stopped: bool = False                    # its sandbox was stopped: volumes gone for good, a network being made undone
    ip: str = ""                             # its own address ("": the host's network)
    netns: str = ""                          # the path of its network namespace, if it has one
    containers: list[_Container] = field(default_factory=list)    # oldest first


class ProcessRuntime:
    """Runtime protocol over local processes (see the module docstring).

    _pods: pod uid -> its sandbox and attempts; _by_id: container id -> attempt, for every
    attempt listed in a _Pod. _tasks: every task still going (starting an attempt, watching a
    shim, a kill timer). Invariant: an attempt with a record on disk is in _by_id, or its pod
    directory is being removed.
    """

    name = RUNTIME_NAME
    version = RUNTIME_VERSION
    host_ip = POD_IP                 # reported as the pods' hostIP: they share the host's network

    def __init__(self, *, clock: Clock = REAL_CLOCK, root_dir: str | os.PathLike[str] | None = None,
                 lookup: Lookup | None = None, events: EventSink | None = None,
                 shutdown_grace: float = SHUTDOWN_GRACE, pod_network: str = "host", **_ignored: Any) -> None:
        self.clock = clock
        self._own_root = root_dir is None        # a temp dir, made on first use, removed by close()
        self._root = pathlib.Path(root_dir).resolve() if root_dir is not None else None
        self.lookup: Lookup | None = lookup           # the kubelet supplies one (API reads)
        # node name -> the look-up for its pods (the kubelet's: reads as that node), before `lookup`
        self.node_lookup: Callable[[str], Lookup] | None = None
        self.events = events
        self.dns_configurer: Any = None      # the kubelet's (kubelet/network/dns.py Configurer)
        self.shutdown_grace = shutdown_grace
        self._handler: EventHandler = lambda uid: None
        self._nodes: dict[str, str] = {}
        self._pods: dict[str, _Pod] = {}
        self._by_id: dict[str, _Container] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._seq = 0
        self._adopted = False
        self.volume_source: Any = None       # the kubelet's APIVolumeSource (reads, tokens, watches)
        self.pod_volumes = PodVolumes(self)
        self.network = PodNetwork(pod_network, lambda: self.root)
        # Every Service the kubelet knows of (its kube-proxy's lister): service link variables
        # in the containers' environment, where Services are reachable (network/envvars.py).
        self.services: Callable[[], list[core_v1.Service]] | None = None

    @property
    def root(self) -> pathlib.Path:
        if self._root is None:
            self._root = pathlib.Path(tempfile.mkdtemp(prefix="kubeplane-kubelet-"))
        return self._root

    # --- Runtime protocol ------------------------------------------------------------------

    def pod_cidr_in_use(self) -> Callable[[str, str], bool]:
        """(node, cidr) -> whether another interface of this machine holds cidr (the kubelet
        then gives a new Node another podCIDR): kubelet/network/pod_network.py."""
        return self.network.cidr_in_use()

    def add_node(self, node_name: str, node_ip: str, pod_cidr: str) -> None:
        self._nodes[node_name] = node_ip
        self.network.add_node(node_name, pod_cidr)      # its bridge, when pods get namespaces

    def set_event_handler(self, handler: EventHandler) -> None:
        self._handler = handler

    def run_pod_sandbox(self, pod: core_v1.Pod) -> str:
        p = self._pod(pod)
        if not p.sandbox:
            p.sandbox, p.stopped = _new_id(), False
            self._write_resolv_conf(p)
            if has_volumes(pod):             # volumes first, then the network (FailedMount until then)
                self._save_pod(p)
                self._spawn(self.pod_volumes.set_up(p))
                return p.sandbox
            if self._wants_network(p):
                self._spawn(self._setup_network(p))     # ready once its namespace is
            else:
                p.sandbox_ready = True       # nothing to set up: the host network is the pod's
            self._save_pod(p)
            self._notify(p.uid)
        return p.sandbox

    def sandbox_volumes_ready(self, p: _Pod) -> None:
        """The pod's volumes are set up (PodVolumes.set_up calls this): its network next, if it
        gets one of its own, else its sandbox is ready."""
        if self._pods.get(p.uid) is p and p.sandbox and not p.sandbox_ready and not p.stopped:
            if self._wants_network(p) and not p.netns:
                self._spawn(self._setup_network(p))
                return
            p.sandbox_ready = True
            self._save_pod(p)
            self._notify(p.uid)

    def netns_path(self, pod_uid: str) -> str | None:
        """The pod's network namespace (for setns(2) or `nsenter --net=`: exec, port-forward),
        or None when it shares the host's network."""
        p = self._pods.get(pod_uid)
        return (p.netns or None) if p is not None else None

    def start_container(self, pod: core_v1.Pod, container: core_v1.Container, *, init: bool,
                        attempt: int) -> str:
        p = self._pod(pod)
        self._prune(p, container.name or "")
        self._seq += 1
        c = _Container(_new_id(), p.uid, container, init, attempt, seq=self._seq)
        p.containers.append(c)
        self._by_id[c.id] = c
        if not container.command and not container.args:
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
        records.signal_group(c.pid, c.pid_start, signal.SIGTERM)
        c.kill_timer = self._spawn(self._kill_after(c, max(0.0, grace_period)))

    def stop_pod_sandbox(self, pod_uid: str) -> None:
        """Also unmounts and removes the pod's volumes (its logs stay until the pod goes), as
        the kubelet's volume manager does for a terminated pod."""
        p = self._pods.get(pod_uid)
        if p is not None and p.sandbox and not p.stopped:
            p.stopped = True
            self.pod_volumes.tear_down(pod_uid, remove=True)
        if p is not None and p.sandbox_ready:
            for c in p.containers:           # should be none: the kubelet stopped them first
                if c.state == RUNNING:
                    records.signal_group(c.pid, c.pid_start, signal.SIGKILL)
            p.sandbox_ready = False
            self._save_pod(p)
            self._notify(pod_uid)
        elif p is not None and p.stopped:
            self._save_pod(p)
        if p is not None and p.netns:        # upstream: StopPodSandbox tears the network down
            p.netns = ""
            self._spawn(self.network.teardown(pod_uid))

    def remove_pod(self, pod_uid: str) -> None:
        p = self._pods.pop(pod_uid, None)
        if p is None:
            return
        for c in list(p.containers):
            c.dropped = True
            if c.state == RUNNING:
                records.signal_group(c.pid, c.pid_start, signal.SIGKILL)
            self._forget(c, keep_files=True)
        self.pod_volumes.tear_down(pod_uid)
        shutil.rmtree(p.dir, ignore_errors=True)
        if self.network.active:
            self._spawn(self.network.teardown(pod_uid))

    def pod_status(self, pod_uid: str) -> PodStatus | None:
        p = self._pods.get(pod_uid)
        if p is None:
            return None
        sandbox = SandboxStatus(p.sandbox, SANDBOX_READY if p.sandbox_ready else SANDBOX_NOT_READY,
                                (p.ip or POD_IP) if p.sandbox_ready else p.ip) if p.sandbox else None
        return PodStatus(pod_uid, sandbox, [self._status(c) for c in p.containers])

    def restore_pod(self, pod: core_v1.Pod) -> bool:
        """Whether the pod's containers were found on disk (re-adopted when the first pod is
        restored); from now on its events and grace period come from this pod object."""
        self.readopt()
        p = self._pods.get(pod.metadata.uid or "")
        if p is not None:
            p.pod = pod
            if p.sandbox and not p.stopped and has_volumes(pod):
                self._spawn(self.pod_volumes.set_up(p))     # watches and token renewals again
        return p is not None

    def pod_metadata_changed(self, pod: core_v1.Pod) -> None:
        """The pod's labels or annotations changed (the kubelet's watch): its downwardAPI
        files follow. Upstream: the volume manager's remount of downwardAPI volumes."""
        p = self._pods.get(pod.metadata.uid or "")
        if p is not None and p.sandbox_ready:
            p.pod = pod
            self.pod_volumes.pod_metadata_changed(pod)

    def exec_preexec(self, container_id: str) -> Callable[[], None] | None:
        """For exec (and exec probes): a preexec_fn that puts the command into the running
        container: its pod's network namespace first, then its mounts (its mount namespace and
        root, as `nsenter -n -m -r`) and working directory; None when the container has
        neither (it sees the host's network and filesystem)."""
        c = self._by_id.get(_oid(container_id))
        if c is None or c.state != RUNNING or c.pid is None:
            return None
        p = self._pods.get(c.uid)
        net, cwd = (p.netns if p is not None else ""), c.cwd
        mounts = self.pod_volumes.exec_preexec(c.pid, cwd)
        if not net:
            return mounts

        def enter() -> None:
            netns.enter({"path": net})
            if mounts is not None:
                mounts()
            else:
                os.chdir(cwd)
        return enter

    def exec_target(self, pod_uid: str, container: str) -> Any:
        """Where `kubectl exec` runs a command in the container: its running attempt's env and
        working directory (None when it is not running). kubelet/streaming/process.py"""
        from ...streaming.process import ExecTarget
        p = self._pods.get(pod_uid)
        for c in reversed(p.containers if p is not None else []):
            if c.spec.name == container and c.state == RUNNING:
                # In the container's mounts when it has its own (podvol's mount namespace).
                return ExecTarget(env=dict(c.env), cwd=c.cwd,
                                  preexec=self.exec_preexec(c.id) if c.pid is not None else None)
        return None

    async def attach(self, pod_uid: str, container: str, *, stdin: bool, stdout: bool,
                     stderr: bool) -> AttachConnection | None:
        """Attach to the container's running attempt through its shim (kubelet/streaming):
        None when it was started without stdin and tty (its output is its log's, followed)
        or is not running. Upstream: criService.attachContainer"""
        p = self._pods.get(pod_uid)
        c = next((c for c in reversed(p.containers if p is not None else []) if c.spec.name == container), None)
        if c is None or c.state != RUNNING or c.record is None or not (c.spec.stdin or c.spec.tty):
            return None
        try:
            return await AttachConnection.open(str(attach_socket(c.record)), stdin=stdin, stdout=stdout,
                                               stderr=stderr)
        except OSError:                      # exited meanwhile: its socket is gone
            return None

    def port_forward_address(self, pod_uid: str) -> tuple[str, str]:
        """(where the pod's ports listen, its sandbox id): kubelet/streaming/portforward.py.
        A pod with a network namespace of its own: the namespace's path (port-forward dials
        localhost inside it, as containerd); else the host's loopback."""
        p = self._pods.get(pod_uid)
        where = (p.netns or p.ip or POD_IP) if p is not None else POD_IP
        return where, (p.sandbox if p is not None and p.sandbox else pod_uid)

    def container_pids(self, pod_uid: str) -> dict[str, int]:
        """Each running container's main process (its process group), by container name: what
        the kubelet's resource metrics measure (kubelet/resource_usage.py)."""
        p = self._pods.get(pod_uid)
        return {c.spec.name: c.pid for c in p.containers if c.state == RUNNING and c.pid is not None} if p else {}

    def list_pods(self) -> list[str]:
        """Every pod the runtime holds something of (after re-adopting what is on disk)."""
        self.readopt()
        return list(self._pods)

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

    # --- a restart: taking up what the last kubelet left ------------------------------------

    def readopt(self) -> None:
        """Take up, once, every pod and attempt recorded under the root (see the module
        docstring): running ones are watched again, the others reported as they ended."""
        if self._adopted:
            return
        self._adopted = True
        if self._root is None:
            return
        for uid, (rec, attempts) in records.recorded_pods(self.root).items():
            if uid in self._pods:
                continue
            p = self._pods[uid] = _Pod(uid, _recorded_pod(uid, rec), self.root / "pods" / uid,
                                       rec.get("sandbox") or "", bool(rec.get("ready")), stopped=bool(rec.get("stopped")))
            for a in attempts:
                try:
                    c = self._adopt(p, a)
                except Exception:            # a record this runtime cannot read: leave it be
                    log.exception("Skipping an unreadable container record", extra={"path": str(a.path)})
                    continue
                if c is not None:
                    p.containers.append(c)
                    self._by_id[c.id] = c
            self._readopt_network(p)
            log.info("Re-adopted pod", extra={"podUID": uid, "containers": len(p.containers)})
        self.network.reconcile(set(self._pods))

    def _readopt_network(self, p: _Pod) -> None:
        """A re-adopted pod keeps its namespace and address; one whose namespace is gone (a
        reboot), or was still being made, gets a new sandbox (keeping its address), as
        upstream's kubelet makes one for a dead sandbox."""
        a = self.network.allocation(p.uid) if p.sandbox else None
        if a is None:
            return
        path = self.network.netns_path_of(a.netns)
        if os.path.exists(path) and p.sandbox_ready:
            p.ip, p.netns = a.ip, path
        else:                                # gone, or the last kubelet died while making it
            p.sandbox, p.sandbox_ready = "", False

    def _adopt(self, p: _Pod, a: records.Recorded) -> _Container | None:
        r, st = a.record, a.state
        shim_info = r.get("shim") or {}
        c = _Container(r["id"], p.uid, from_dict(r.get("container") or {}, core_v1.Container), bool(r.get("init")),
                       int(r.get("attempt") or 0), seq=int(r.get("seq") or 0), cwd=r.get("cwd") or "",
                       record=a.path, shim_pid=shim_info.get("pid"), shim_start=shim_info.get("start"),
                       log=ContainerLog(pathlib.Path(r["log"])) if r.get("log") else None,
                       pid=st.get("pid"), pid_start=st.get("start"), started_at=st.get("startedAt"))
        shim_alive = records.alive(c.shim_pid, c.shim_start, r.get("boot"))
        if "exitCode" in st:
            self._exited_with(c, st)
        elif shim_alive and c.pid is not None:
            c.state = RUNNING
            c.env = _environ(c.pid)
            self._spawn(self._watch(c))
        elif shim_alive:                     # the last kubelet died while this one was starting
            self._spawn(self._watch_start(c))
        elif c.pid is not None:              # the shim vanished: the container's fate is unknown
            records.signal_group(c.pid, c.pid_start, signal.SIGKILL)
            self._exited_with(c, {"exitCode": STATUS_UNKNOWN_EXIT_CODE, "reason": STATUS_UNKNOWN_REASON,
                                  "message": STATUS_UNKNOWN_MESSAGE})
        else:                                # never started: the kubelet starts it again
            _unlink(a.path, records.state_path(a.path))
            return None
        return c

    async def _watch_start(self, c: _Container) -> None:
        """An adopted attempt whose shim had not reported the start yet: wait for its word."""
        assert c.record is not None
        while c.pid is None:
            st = records.read_json(records.state_path(c.record)) or {}
            if "exitCode" in st:
                self._exited_with(c, st)
                return
            if "pid" in st:
                c.pid, c.pid_start, c.started_at, c.env = st["pid"], st.get("start"), st.get("startedAt"), {}
                self._set(c, state=RUNNING)
                break
            if not records.alive(c.shim_pid, c.shim_start):
                self._forget(c)
                self._notify(c.uid)
                return
            await self.clock.sleep(POLL_INTERVAL)
        c.env = _environ(c.pid)
        await self._watch(c)

    # --- stopping everything ------------------------------------------------------------------

    async def aclose(self) -> None:
        """The kubelet is stopping. The containers keep running, as upstream's do when the
        kubelet stops or restarts: the next kubelet on this root takes them up. On a temporary
        root nothing could, so they are stopped (stop_all)."""
        if self._own_root:
            await self.stop_all()
        else:
            self._detach()
            self.network.close()

    async def stop_all(self) -> None:
        """SIGTERM every container, SIGKILL what is left after its pod's grace period (at most
        shutdown_grace seconds), then wait for the shims to finish."""
        for p in self._pods.values():
            grace = min(float(_pod_grace(p.pod)), self.shutdown_grace)
            for c in p.containers:
                self.stop_container(self._cid(c), grace)
        try:
            if self._tasks:
                await asyncio.wait(set(self._tasks), timeout=self.shutdown_grace + shim.DRAIN_TIMEOUT + 1)
        finally:
            self.close()

    def close(self) -> None:
        """Kill every container at once and cancel every task (also the last resort of stop_all);
        a temporary root is removed."""
        for c in list(self._by_id.values()):
            if c.state == RUNNING:
                records.signal_group(c.pid, c.pid_start, signal.SIGKILL)
        self._detach()
        self.pod_volumes.close(unmount=self._own_root)
        if self._own_root and self._root is not None:
            if self.network.active:
                self.network.teardown_all()
            shutil.rmtree(self._root, ignore_errors=True)

    def _detach(self) -> None:
        """Stop watching: cancel every task; the processes are left as they are."""
        self.pod_volumes.close(unmount=False)
        for t in list(self._tasks):
            if not t.done() and t is not asyncio.current_task():
                t.cancel()

    # --- the pod's network ------------------------------------------------------------------

    def _launch_hooks(self, p: _Pod, c: _Container) -> list[dict[str, Any]]:
        """The shim's steps before exec, in order: the pod's network namespace, then the
        container's mounts (its volumes, and the pod's resolv.conf at /etc/resolv.conf where
        its node has a pod network: the cluster DNS IP is reachable there)."""
        net = [{"module": NETNS_FILE, "func": "enter", "args": {"path": p.netns}}] if p.netns else []
        return net + self.pod_volumes.launch_hooks(p, c, self._etc_mounts(p))

    def _etc_mounts(self, p: _Pod) -> list[dict[str, Any]]:
        """/etc/resolv.conf from the pod's resolv.conf, where its node has a pod network (on
        the host's network the cluster DNS IP answers nowhere: the host's file stays), and the
        kubelet's managed /etc/hosts (kubelet/network/hosts.py), written now as upstream's
        makeMounts does at each container start."""
        resolv = self.resolv_conf_path(p.uid)
        node = (p.pod.spec.node_name if p.pod.spec else "") or ""
        out = []
        if self.network.covers(node) and resolv.exists():
            out.append({"source": str(resolv), "target": "/etc/resolv.conf", "readOnly": False, "file": True})
        domain = self.dns_configurer.cluster_domain if self.dns_configurer is not None else "cluster.local"
        hosts = ensure_hosts_file(p.dir, p.pod, [p.ip] if p.netns else [], domain, host_network=not p.netns)
        if hosts is not None:
            out.append({"source": str(hosts), "target": ETC_HOSTS, "readOnly": False, "file": True})
        return out

    def _wants_network(self, p: _Pod) -> bool:
        """Whether the pod gets a network namespace of its own (its node has a pod network and
        it is no hostNetwork pod)."""
        spec = p.pod.spec
        return self.network.covers((spec.node_name if spec else "") or "") and not (spec and spec.host_network)

    async def _setup_network(self, p: _Pod) -> None:
        """Give the pod its namespace and address, then mark its sandbox ready; on failure,
        a FailedCreatePodSandBox event and, after SANDBOX_RETRY seconds, no sandbox (the
        kubelet creates it again)."""
        sandbox = p.sandbox
        try:
            ip = await self.network.setup(p.uid, (p.pod.spec.node_name if p.pod.spec else "") or "")
        except NetworkError as err:
            self._emit_pod(p, "Warning", "FailedCreatePodSandBox",
                           f"Failed to create pod sandbox: {err}")
            await self.clock.sleep(SANDBOX_RETRY)
            if self._pods.get(p.uid) is p and p.sandbox == sandbox:
                p.sandbox = ""
                self._notify(p.uid)
            return
        if self._pods.get(p.uid) is not p or p.sandbox != sandbox or p.stopped:
            await self.network.teardown(p.uid)       # removed or stopped meanwhile
            return
        p.ip, p.netns = ip, self.network.netns_path_of(netns_name(p.uid))
        p.sandbox_ready = True
        self._save_pod(p)
        self._notify(p.uid)

    # --- one attempt ------------------------------------------------------------------------

    async def _run(self, p: _Pod, c: _Container) -> None:
        """Compose the attempt, start it under its shim, then watch it until it exits."""
        try:
            lookup = self.lookup or _no_lookup
            if self.node_lookup is not None:
                lookup = self.node_lookup((p.pod.spec.node_name if p.pod.spec else "") or "")
            c.env = await make_environment(p.pod, c.spec, lookup=lookup, base=self._base_env(p), pod_ip=p.ip or POD_IP)
            c.hooks = self._launch_hooks(p, c)
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
        c.log = ContainerLog(p.dir / "logs" / (c.spec.name or "") / f"{c.attempt}.log")
        self._emit(c, "Normal", "Pulled", f'Container image "{c.spec.image}" already present on machine')
        self._emit(c, "Normal", "Created", f"Created container: {c.spec.name}")
        try:
            reply = await self._start_shim(p, c, argv)
        except Exception as err:             # the shim could not start, or broke the protocol
            log.exception("Starting the container's shim failed", extra={"podUID": c.uid, "container": c.spec.name})
            reply = {"error": f"failed to create containerd task: {err!r}", "exitCode": START_ERROR_EXIT_CODE}
        if "error" in reply:
            self._exited_with(c, reply)
            self._emit(c, "Warning", "Failed", f"Error: {c.message}")
            return
        c.pid, c.pid_start = reply["pid"], reply.get("start")
        if c.dropped:                        # stopped while starting: it never counted as running
            records.signal_group(c.pid, c.pid_start, signal.SIGKILL)
            await self._watch(c)
            return
        self._set(c, state=RUNNING, started_at=reply.get("startedAt") or self.clock.now())
        self._emit(c, "Normal", "Started", f"Started container {c.spec.name}")
        await self._watch(c)

    async def _start_shim(self, p: _Pod, c: _Container, argv: list[str]) -> dict[str, Any]:
        """Start the attempt's shim, record it, then let it start the container (shim.py's
        protocol); the shim's reply: the container's pid and start, or the start error."""
        assert c.log is not None
        c.record = p.dir / "containers" / f"{c.id}.json"
        c.record.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        errors_to = os.open(c.record.with_suffix(".shim.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            transport, proto = await asyncio.get_running_loop().subprocess_exec(
                _ShimProtocol, sys.executable, "-I", "-S", SHIM, str(records.state_path(c.record)),
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=errors_to,
                start_new_session=True)
        finally:
            os.close(errors_to)
        stdin: Any = transport.get_pipe_transport(0)     # uvloop's is no asyncio.WriteTransport
        try:
            spec: dict[str, Any] = {"argv": argv, "env": c.env, "cwd": c.cwd, "log": str(c.log.path), "hooks": c.hooks}
            if c.spec.stdin or c.spec.tty:   # the shim keeps its stdin and serves attach
                spec.update(stdin=bool(c.spec.stdin), stdinOnce=bool(c.spec.stdin_once), tty=bool(c.spec.tty),
                            attach=str(attach_socket(c.record)))
            stdin.write(json.dumps(spec).encode() + b"\n")
            hello = json.loads(await proto.lines.get())
            c.shim_pid, c.shim_start = hello["shim"], hello["start"]
            self._save_container(c)
            stdin.write(b"go\n")
            stdin.close()
            reply: dict[str, Any] = json.loads(await proto.lines.get())
            await proto.exited.wait()        # its first process exits as it detaches
        finally:
            transport.close()                # (early: without "go" the shim starts nothing and exits)
        return reply

    async def _watch(self, c: _Container) -> None:
        """Wait for the attempt's shim to exit, then report how the container ended."""
        await _wait_for_exit(c.shim_pid, c.shim_start, self.clock)
        st = records.read_json(records.state_path(c.record)) if c.record is not None else None
        if c.kill_timer is not None:
            c.kill_timer.cancel()
        if not isinstance(st, dict) or "exitCode" not in st:
            records.signal_group(c.pid, c.pid_start, signal.SIGKILL)
            st = {"exitCode": STATUS_UNKNOWN_EXIT_CODE, "reason": STATUS_UNKNOWN_REASON,
                  "message": STATUS_UNKNOWN_MESSAGE, "finishedAt": self.clock.now()}
        if c.dropped:                        # forgotten already: so are its files
            if c.log is not None:
                c.log.close()
            if c.record is not None:
                _unlink(c.record, records.state_path(c.record), c.record.with_suffix(".shim.log"))
            return
        self._exited_with(c, st)

    def _exited_with(self, c: _Container, st: dict[str, Any]) -> None:
        """Record how the attempt ended (st: the shim's state, or one made up for it)."""
        code = int(st["exitCode"])
        if c.log is not None:
            c.log.close()
        if "error" in st:
            reason, message, c.started_at = "StartError", st["error"], None
        else:
            reason = st.get("reason") or ("Completed" if code == 0 else "Error")
            message = st.get("message") or self._termination_message(c, code)
        self._set(c, state=EXITED, exit_code=code, reason=reason, message=message,
                  finished_at=st.get("finishedAt") or self.clock.now())

    async def _kill_after(self, c: _Container, grace: float) -> None:
        await self.clock.sleep(grace)
        if c.state == RUNNING:
            records.signal_group(c.pid, c.pid_start, signal.SIGKILL)

    async def _probe(self, c: _Container, spec: core_v1.Probe, probe_type: str) -> str:
        p = self._pods.get(c.uid)
        preexec = self.exec_preexec(self._cid(c)) if spec.exec is not None else None
        result, output = await run_probe(spec, c.spec, env=c.env, cwd=c.cwd, pod_ip=(p.ip if p else "") or POD_IP,
                                         preexec=preexec)
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

    def resolv_conf_path(self, pod_uid: str) -> pathlib.Path:
        """Where the pod's resolv.conf is (written when its sandbox starts)."""
        return self.root / "pods" / pod_uid / "resolv.conf"

    def _write_resolv_conf(self, p: _Pod) -> None:
        if self.dns_configurer is None:
            return
        try:
            text = self.dns_configurer.pod_resolv_conf(p.pod)
        except (OSError, ValueError) as err:     # the host's resolv.conf: unreadable or invalid
            log.warning("pod %s/%s: no resolv.conf: %s", p.pod.metadata.namespace, p.pod.metadata.name, err)
            return
        p.dir.mkdir(parents=True, exist_ok=True)
        path = self.resolv_conf_path(p.uid)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text)
        os.replace(tmp, path)

    def _save_pod(self, p: _Pod) -> None:
        m = p.pod.metadata
        records.save(p.dir / "pod.json", {"uid": p.uid, "name": m.name, "namespace": m.namespace,
                                          "grace": _pod_grace(p.pod), "sandbox": p.sandbox,
                                          "ready": p.sandbox_ready, "stopped": p.stopped})

    def _save_container(self, c: _Container) -> None:
        assert c.record is not None and c.log is not None
        records.save(c.record, {"id": c.id, "name": c.spec.name, "init": c.init, "attempt": c.attempt,
                                "seq": c.seq, "container": to_dict(c.spec), "cwd": c.cwd, "log": str(c.log.path),
                                "shim": {"pid": c.shim_pid, "start": c.shim_start}, "boot": records.boot_id()})

    def _base_env(self, p: _Pod) -> dict[str, str]:
        env = host_env(p.pod)
        if self.services is not None and self.network.active:
            from ...network.envvars import service_env
            env.update(service_env(p.pod, self.services()))
        return env

    def _workdir(self, p: _Pod, c: _Container) -> str:
        wd = pathlib.Path(c.spec.working_dir) if c.spec.working_dir else p.dir / "work"
        if not self.pod_volumes.in_mount(c.hooks, str(wd)):   # else it is in the container's volume
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
                    _unlink(c.log.path)

    def _forget(self, c: _Container, *, keep_files: bool = False) -> None:
        self._by_id.pop(c.id, None)
        p = self._pods.get(c.uid)
        if p is not None and c in p.containers:
            p.containers.remove(c)
        if c.record is not None and not keep_files and c.state != RUNNING:
            _unlink(c.record, records.state_path(c.record), c.record.with_suffix(".shim.log"))

    def _status(self, c: _Container) -> ContainerStatus:
        return ContainerStatus(id=self._cid(c), name=c.spec.name or "", attempt=c.attempt, init=c.init,
                               state=c.state, image=c.spec.image or "", image_ref=_image_ref(c.spec.image or ""),
                               started_at=c.started_at, finished_at=c.finished_at, exit_code=c.exit_code,
                               reason=c.reason, message=c.message)

    def _termination_message(self, c: _Container, code: int) -> str:
        """Upstream: FallbackToLogsOnError takes the log's tail when the container failed."""
        if code == 0 or c.spec.termination_message_policy != "FallbackToLogsOnError" or c.log is None:
            return ""
        recs, _ = c.log.read_from(0)
        text = b"".join(r.render(False) for r in recs[-FALLBACK_LOG_LINES:])
        return text[-FALLBACK_LOG_BYTES:].decode("utf-8", "replace")

    def _set(self, c: _Container, **changes: Any) -> None:
        for k, v in changes.items():
            setattr(c, k, v)
        self._notify(c.uid)

    def _cid(self, c: _Container) -> str:
        return f"{RUNTIME_NAME}://{c.id}"

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
        ref = core_v1.ObjectReference(kind="Pod", api_version="v1", name=m.name, namespace=m.namespace, uid=m.uid,
                                      field_path=field_path(p.pod, c.spec.name or "", c.init))
        try:
            self.events(ref, type_, reason, message)
        except Exception:
            log.exception("process runtime: event sink failed")

    def _emit_pod(self, p: _Pod, type_: str, reason: str, message: str) -> None:
        if self.events is None:
            return
        m = p.pod.metadata
        ref = core_v1.ObjectReference(kind="Pod", api_version="v1", name=m.name, namespace=m.namespace, uid=m.uid)
        try:
            self.events(ref, type_, reason, message)
        except Exception:
            log.exception("process runtime: event sink failed")

    def _notify(self, uid: str) -> None:
        if uid:
            self._handler(uid)


class _ShimProtocol(asyncio.SubprocessProtocol):
    """The shim's first process, as the kubelet talks to it: its stdout as lines (b"" at EOF)."""

    def __init__(self) -> None:
        self.lines: asyncio.Queue[bytes] = asyncio.Queue()
        self.exited = asyncio.Event()    # closing the transport before would reap it behind asyncio's back
        self._buf = b""

    def process_exited(self) -> None:
        self.exited.set()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self._buf += data
        while b"\n" in self._buf:
            line, self._buf = self._buf.split(b"\n", 1)
            self.lines.put_nowait(line)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1:
            self.lines.put_nowait(b"")


async def _wait_for_exit(pid: int | None, start: int | None, clock: Clock) -> None:
    """Wait until the recorded process has exited: not a child of ours (its parent is init),
    so not waitpid but a pidfd that becomes readable when it exits, or polling /proc."""
    if not records.alive(pid, start):
        return
    assert pid is not None
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        while records.alive(pid, start):
            await clock.sleep(POLL_INTERVAL)
        return
    try:
        if not records.alive(pid, start):    # the pid was reused before the pidfd was opened
            return
        loop = asyncio.get_running_loop()
        exited = loop.create_future()
        loop.add_reader(fd, _set_done, exited)
        try:
            await exited
        finally:
            loop.remove_reader(fd)
    finally:
        os.close(fd)


def _set_done(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


def _recorded_pod(uid: str, rec: dict[str, Any]) -> core_v1.Pod:
    """The pod as recorded, standing in until the kubelet hands over the real one."""
    return core_v1.Pod(metadata=meta_v1.ObjectMeta(name=rec.get("name"), namespace=rec.get("namespace"), uid=uid),
                       spec=core_v1.PodSpec(containers=[], termination_grace_period_seconds=rec.get("grace")))


def _environ(pid: int | None) -> dict[str, str]:
    """A running process's environment (for exec probes of an attempt taken up after a restart)."""
    try:
        raw = pathlib.Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    env = {}
    for item in raw.split(b"\0"):
        k, sep, v = item.partition(b"=")
        if sep:
            env[k.decode("utf-8", "replace")] = v.decode("utf-8", "replace")
    return env


def _unlink(*paths: pathlib.Path) -> None:
    for path in paths:
        with contextlib.suppress(OSError):
            path.unlink()


async def _empty() -> AsyncIterator[bytes]:
    return
    yield b""  # pragma: no cover - makes this an async generator


async def _no_lookup(kind: str, namespace: str, name: str) -> dict[str, str] | None:
    return None


def attach_socket(record: pathlib.Path) -> pathlib.Path:
    """The shim's attach socket of an attempt: beside its record."""
    return record.with_suffix(".sock")


def _pod_grace(pod: core_v1.Pod) -> int:
    spec = pod.spec
    g = spec.termination_grace_period_seconds if spec is not None else None
    return 30 if g is None else g


def _image_ref(image: str) -> str:
    """imageID: nothing is pulled, so a stable reference derived from the name."""
    return f"{image}@sha256:{hashlib.sha256(image.encode()).hexdigest()}" if image else ""


def _new_id() -> str:
    return os.urandom(32).hex()


def _oid(container_id: str) -> str:
    return container_id.split("://", 1)[-1]
