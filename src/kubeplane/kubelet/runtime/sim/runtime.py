"""The simulated runtime: sandboxes and containers are small objects moved along by stages.

Each sandbox and each container attempt is a dict shaped like an API object, so stage
selectors and templates read it with the same paths as kwok's pod stages:

    apiVersion: sim.kubeplane.io/v1alpha1
    kind: Container                      # or PodSandbox
    metadata: {name: nginx, namespace: default, uid: <64 hex>, labels: <the pod's>,
               annotations: <the pod's>, deletionTimestamp: <set by stop_container>}
    spec: {podName: web-1, nodeName: kubeplane-node-0, image: nginx, init: false, attempt: 0,
           restartPolicy: Always, readinessProbe: <the container's, if any>}
    status: {state: Creating}            # the stages take it from here

What the stages write into .status is what pod_status() reports: state (Creating, Created,
Running, Exited, Waiting), startedAt/finishedAt, exitCode, reason, message, imageID and
readiness (the outcome a readiness probe gets: Success or Failure). The pod's labels and
annotations are copied in so a profile can single out pods (`matchLabels`).

Nothing here does I/O or makes network traffic: IPs are just strings handed out per node.
Timers use the injected clock, so tests step a FakeClock. All of it lives in memory: after a
restart the kubelet calls restore_pod for each of its pods, which rebuilds the objects from
the pod's recorded status (restore.py), so that a restart is invisible to the pods.
"""
from __future__ import annotations

import functools
import hashlib
import heapq
import ipaddress
import logging
import math
import random
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Callable, Iterator

import msgspec

from ....api.types import core_v1, to_dict
from ....utils.clock import REAL_CLOCK, Clock, Timer, parse_rfc3339, rfc3339
from .. import (
    CREATED, CREATING, EXITED, PROBE_FAILURE, PROBE_SUCCESS, PROBE_UNKNOWN, RUNNING, SANDBOX_NOT_READY,
    SANDBOX_READY, WAITING, ContainerStatus, EventHandler, PodStatus, SandboxStatus, check_log_target,
    field_path,
)
from .lifecycle import Lifecycle, Stage, apply_stage, load_profile, parse_duration
from .renderer import Renderer
from .restore import restored_attempts, restored_sandbox

log = logging.getLogger(__name__)

API_VERSION = "sim.kubeplane.io/v1alpha1"
RUNTIME_NAME = "kubeplane-sim"
RUNTIME_VERSION = "0.1.0"
CONTAINER_ID_PREFIX = RUNTIME_NAME + "://"
KILLED_EXIT_CODE = 137          # 128 + SIGKILL

# recorder.event(reference, type, reason, message): a record.EventRecorder is one.
EventSink = Callable[[core_v1.ObjectReference, str, str, str], None]


@functools.lru_cache(maxsize=1024)
def normalize_image(image: str) -> str:
    """The image name as containerd reports it: "nginx" -> "docker.io/library/nginx:latest"."""
    name, digest = image.split("@", 1) if "@" in image else (image, "")
    first = name.split("/", 1)[0]
    if "/" not in name:
        name = "docker.io/library/" + name
    elif "." not in first and ":" not in first and first != "localhost":
        name = "docker.io/" + name
    if not digest and ":" not in name.rsplit("/", 1)[-1]:
        name += ":latest"
    return name + ("@" + digest if digest else "")


@functools.lru_cache(maxsize=1024)
def image_ref(image: str) -> str:
    """A stable fake digest reference for image (what imageID shows once "pulled")."""
    repo = normalize_image(image).split("@")[0].rsplit(":", 1)[0]
    return f"{repo}@sha256:{hashlib.sha256(image.encode()).hexdigest()}"


class IPPool:
    """The free pod IPs of a node's podCIDR, handed out lowest first, the last returned first.

    Nothing is materialized up front: a /24 per node as 253 strings cost ~16 MB (and ~0.3 s
    of start-up) on 1,000 nodes, most of them never used. _next: the lowest address never
    handed out (as an int); _freed: returned ones, reused last-in first-out; _claimed: addresses
    at or above _next already taken by claim() (a restored pod keeps its IP).
    """

    __slots__ = ("_version", "_next", "_last", "_freed", "_claimed")

    def __init__(self, cidr: str) -> None:
        net = ipaddress.ip_network(cidr)
        hosts = iter(net.hosts())
        next(hosts, None)                                   # .1 is the gateway
        first = next(hosts, None)
        self._version = net.version
        self._next = int(first) if first is not None else 1
        # hosts(): an IPv4 network's broadcast address is no host (but /31 and /32 are all hosts).
        last = int(net.broadcast_address)
        if net.version == 4 and net.prefixlen < 31:
            last -= 1
        self._last = last if first is not None else 0
        self._freed: list[str] = []
        self._claimed: set[int] = set()

    def take(self) -> str | None:
        """A free IP (None: the range is exhausted)."""
        if self._freed:
            return self._freed.pop()
        while self._next <= self._last:
            n = self._next
            self._next += 1
            if n not in self._claimed:
                return str(ipaddress.ip_address(n) if self._version == 4 else ipaddress.IPv6Address(n))
            self._claimed.discard(n)
        return None

    def give_back(self, ip: str) -> None:
        self._freed.append(ip)

    def claim(self, ip: str) -> bool:
        """Take ip out of the pool if it is free (a restored pod's); False if it is not."""
        if ip in self._freed:
            self._freed.remove(ip)
            return True
        try:
            n = int(ipaddress.ip_address(ip))
        except ValueError:
            return False
        if not (self._next <= n <= self._last) or n in self._claimed:
            return False
        self._claimed.add(n)
        return True


@dataclass
class _Node:
    ip: str
    pool: IPPool                          # free pod IPs
    used: dict[str, str] = field(default_factory=dict)   # pod uid -> IP


@dataclass
class _Pod:
    uid: str
    node: str
    ref: core_v1.ObjectReference          # the pod, for events
    host_network: bool
    sandbox: str = ""                     # object id
    containers: list[str] = field(default_factory=list)  # object ids, oldest first


class SimRuntime:
    """Runtime protocol over stage-driven sim objects (see the module docstring).

    _objs: object id -> sim object; _owner: object id -> pod uid; _timers: object id -> the
    timer waiting out its next stage's delay; _converted: container object id -> (the .status
    dict last converted, its ContainerStatus). Invariant: every id in a _Pod is in _objs, a
    timer or a conversion exists only for objects in _objs, and an object's .status is
    replaced, never changed in place, once a conversion of it may exist.
    """

    name = RUNTIME_NAME
    version = RUNTIME_VERSION

    def __init__(self, *, profile: str | list[Stage] = "default", clock: Clock = REAL_CLOCK,
                 events: EventSink | None = None, rng: random.Random | None = None) -> None:
        stages = load_profile(profile) if isinstance(profile, str) else profile
        self.clock = clock
        self.lifecycle = Lifecycle(stages, rng or random.Random())
        self.rng = self.lifecycle.rng
        self.renderer = Renderer()
        self.events = events
        self._handler: EventHandler = lambda uid: None
        self._nodes: dict[str, _Node] = {}
        self._pods: dict[str, _Pod] = {}
        self._objs: dict[str, dict[str, Any]] = {}
        self._owner: dict[str, str] = {}
        self._timers: dict[str, Timer] = {}
        self._timer_queue = TimerQueue(clock)
        # pod uid -> the PodStatus last reported, dropped at every change of what it reads
        self._statuses: dict[str, PodStatus] = {}
        self._converted: dict[str, tuple[dict[str, Any], ContainerStatus]] = {}   # oid -> (its .status, as reported)
        self._outbox: list[tuple[core_v1.ObjectReference, str, str, str]] = []     # events made, not yet sent
        self._seq = 0

    # --- Runtime protocol ------------------------------------------------------------------

    def add_node(self, node_name: str, node_ip: str, pod_cidr: str) -> None:
        self._nodes[node_name] = _Node(node_ip, IPPool(pod_cidr))

    def set_event_handler(self, handler: EventHandler) -> None:
        self._handler = handler

    def run_pod_sandbox(self, pod: core_v1.Pod) -> str:
        p = self._pod(pod)
        if p.sandbox:
            return p.sandbox
        oid = _object_id(p.uid, "sandbox", 0)
        p.sandbox = oid
        self._statuses.pop(p.uid, None)
        self._add(oid, p, self._object(pod, "PodSandbox", pod.metadata.name or "", {
            "podName": pod.metadata.name, "nodeName": p.node, "hostNetwork": p.host_network},
            {"state": "Pending"}))
        return oid

    def start_container(self, pod: core_v1.Pod, container: core_v1.Container, *, init: bool,
                        attempt: int) -> str:
        p = self._pod(pod)
        for old in [o for o in p.containers if self._objs[o]["metadata"]["name"] == container.name
                    and self._objs[o]["status"].get("state") == WAITING]:
            self._drop(old)                    # a failed pull is replaced by the retry, not kept
        self._seq += 1
        # The attempt is part of the id: attempts rebuilt by restore_pod (made by an earlier
        # process, whose sequence numbers started at 1 as well) are always older ones.
        oid = _object_id(p.uid, f"{container.name}/{attempt}", self._seq)
        p.containers.append(oid)
        self._statuses.pop(p.uid, None)
        self._add(oid, p, self._container_object(pod, p, container, init, attempt, {"state": CREATING}))
        return f"{RUNTIME_NAME}://{oid}"

    def restore_pod(self, pod: core_v1.Pod) -> bool:
        """Rebuild the pod's sandbox and containers from its status, as the kubelet last
        reported them (see restore.py for the mapping); False if the status records none.

        For the kubelet's start, before its first sync of the pod: nothing is announced and no
        event is recorded; stages that apply to a rebuilt object are armed as usual.
        """
        uid = pod.metadata.uid or ""
        sandbox = restored_sandbox(pod, CONTAINER_ID_PREFIX)
        if uid in self._pods or sandbox is None or pod.spec is None or pod.spec.node_name not in self._nodes:
            return False
        p = self._pod(pod)
        ready, ip = sandbox
        p.sandbox = _object_id(p.uid, "sandbox", 0)
        node = self._nodes[p.node]
        if ready and ip and not p.host_network and node.pool.claim(ip):
            node.used[uid] = ip
        self._restore(p.sandbox, p, self._object(pod, "PodSandbox", pod.metadata.name or "", {
            "podName": pod.metadata.name, "nodeName": p.node, "hostNetwork": p.host_network},
            {"state": SANDBOX_READY if ready else SANDBOX_NOT_READY, "podIP": ip}))
        for a in restored_attempts(pod, CONTAINER_ID_PREFIX):
            if a.oid in self._objs:
                continue                        # a status naming one id twice: keep the first
            p.containers.append(a.oid)
            self._restore(a.oid, p, self._container_object(pod, p, a.container, a.init, a.attempt, a.status))
        self._send()
        return True

    def stop_container(self, container_id: str, grace_period: float, message: str = "") -> None:
        container_id = _oid(container_id)
        obj = self._objs.get(container_id)
        if obj is None or obj["status"].get("state") in (EXITED, WAITING):
            return
        if obj["status"].get("state") != RUNNING:          # never ran: nothing to signal
            self._drop(container_id)
            self._notify(self._owner.get(container_id, ""))
            return
        meta = obj["metadata"]
        if "deletionTimestamp" not in meta:
            meta["deletionTimestamp"] = rfc3339(self.clock.now() + grace_period)
            meta["deletionGracePeriodSeconds"] = int(grace_period)
            self._schedule(container_id)
        if container_id + "/kill" not in self._timers:
            self._timers[container_id + "/kill"] = self._timer_queue.after(grace_period, self._kill, container_id)

    def stop_pod_sandbox(self, pod_uid: str) -> None:
        p = self._pods.get(pod_uid)
        sb = self._objs.get(p.sandbox) if p and p.sandbox else None
        if sb is not None and sb["status"].get("state") != SANDBOX_NOT_READY:
            sb["status"]["state"] = SANDBOX_NOT_READY
            self._statuses.pop(pod_uid, None)
            self._cancel(p.sandbox)            # type: ignore[union-attr]
            self._notify(pod_uid)

    def remove_pod(self, pod_uid: str) -> None:
        p = self._pods.pop(pod_uid, None)
        self._statuses.pop(pod_uid, None)
        if p is None:
            return
        for oid in ([p.sandbox] if p.sandbox else []) + p.containers:
            self._drop(oid)
        node = self._nodes.get(p.node)
        if node is not None and pod_uid in node.used:
            node.pool.give_back(node.used.pop(pod_uid))

    def pod_status(self, pod_uid: str) -> PodStatus | None:
        """The pod's status: the same PodStatus object while nothing it reads has changed
        (statuses are snapshots: nobody changes one; every change of the pod's sandbox or
        containers drops it from _statuses)."""
        p = self._pods.get(pod_uid)
        if p is None:
            return None
        cached = self._statuses.get(pod_uid)
        if cached is not None:
            return cached
        self._statuses[pod_uid] = status = self._pod_status(p)
        return status

    def _pod_status(self, p: _Pod) -> PodStatus:
        pod_uid = p.uid
        sandbox = None
        if p.sandbox and (sb := self._objs.get(p.sandbox)) is not None:
            st = sb["status"]
            sandbox = SandboxStatus(p.sandbox, SANDBOX_READY if st.get("state") == SANDBOX_READY
                                    else SANDBOX_NOT_READY, st.get("podIP") or "")
        return PodStatus(pod_uid, sandbox, [self._container_status(oid) for oid in p.containers
                                            if oid in self._objs])

    def list_pods(self) -> list[str]:
        return list(self._pods)

    def probe(self, container_id: str, probe_type: str) -> str:
        obj = self._objs.get(_oid(container_id))
        if obj is None or obj["status"].get("state") != RUNNING:
            return PROBE_UNKNOWN if obj is None else PROBE_FAILURE
        outcome = obj["status"].get(probe_type)
        if outcome is None and probe_type != "readiness":
            return PROBE_SUCCESS          # liveness/startup pass unless a stage says otherwise
        return PROBE_SUCCESS if outcome == PROBE_SUCCESS else PROBE_FAILURE

    def container_logs(self, pod_uid: str, pod_name: str, opts: Any) -> AsyncIterator[bytes]:
        """A simulated container writes nothing: its log is empty, and `follow` waits until
        the attempt has stopped (polled on the clock each second), as kwok's would."""
        target = check_log_target(self.pod_status(pod_uid), opts.container, pod_name, opts.previous)
        return self._empty_log(_oid(target.id) if opts.follow and target.state == RUNNING else None)

    async def _empty_log(self, follow_oid: str | None) -> AsyncIterator[bytes]:
        while follow_oid is not None and (self._objs.get(follow_oid) or {}).get("status", {}).get("state") == RUNNING:
            await self.clock.sleep(1.0)
        return
        yield b""  # pragma: no cover - makes this an async generator

    # --- stages ----------------------------------------------------------------------------

    def _add(self, oid: str, p: _Pod, obj: dict[str, Any]) -> None:
        self._restore(oid, p, obj)
        self._notify(p.uid)

    def _restore(self, oid: str, p: _Pod, obj: dict[str, Any]) -> None:
        """Take obj in as p's and let the stages move it on (without announcing it)."""
        self._objs[oid] = obj
        self._owner[oid] = p.uid
        self._statuses.pop(p.uid, None)
        self._advance(oid)

    def _schedule(self, oid: str, stage: Stage | None = None) -> None:
        """Arm the timer of `stage`, or of the stage that applies to the object now, if any."""
        self._cancel(oid)
        obj = self._objs.get(oid)
        if stage is None:
            stage = self.lifecycle.select(obj) if obj is not None else None
        if stage is None or obj is None:
            return
        delay = stage.delay.pick(obj, self.clock.now(), self.rng)
        self._timers[oid] = self._timer_queue.after(delay, self._fire, oid, stage)

    def _fire(self, oid: str, stage: Stage) -> None:
        """The delay of the stage armed for the object has passed."""
        self._timers.pop(oid, None)
        obj = self._objs.get(oid)
        if obj is None:
            return
        if stage.matches(obj):      # it may have been changed meanwhile (stopped, ...)
            self._apply(oid, stage)
        self._advance(oid)
        self._notify(self._owner.get(oid, ""))

    def _advance(self, oid: str) -> None:
        """Apply zero-delay stages at once (as many as chain up), then arm the next timer."""
        for _ in range(100):
            obj = self._objs.get(oid)
            stage = self.lifecycle.select(obj) if obj is not None else None
            if stage is None:
                return
            if stage.delay.bounds(obj, self.clock.now())[1] > 0:
                self._schedule(oid, stage)     # the stage just selected: no second selection
                return
            self._apply(oid, stage)
        raise RuntimeError(f"sim object {oid}: zero-delay stages keep matching")

    def _apply(self, oid: str, stage: Stage) -> None:
        obj = self._objs[oid]
        out = apply_stage(stage, obj, self.renderer, self._helpers(oid))
        if out.event is not None and self.events is not None:
            self._emit(oid, obj, out.event.type, out.event.reason, out.event.message)
        if out.obj is None:
            self._drop(oid)
        else:
            self._objs[oid] = out.obj
            self._statuses.pop(self._owner.get(oid, ""), None)

    def _helpers(self, oid: str) -> _Helpers:
        return _Helpers(self, oid)

    def _pod_ip(self, uid: str) -> str:
        p = self._pods.get(uid)
        node = self._nodes.get(p.node) if p else None
        if p is None or node is None:
            return ""
        if p.host_network:
            return node.ip
        if uid not in node.used:
            ip = node.pool.take()
            if ip is None:
                raise RuntimeError(f"node {p.node}: pod IP range exhausted")
            node.used[uid] = ip
        return node.used[uid]

    def _emit(self, oid: str, obj: dict[str, Any], type_: str, reason: str, message: str) -> None:
        p = self._pods.get(self._owner.get(oid, ""))
        if p is None:
            return
        ref = msgspec.structs.replace(p.ref)            # its fields are strings: a shallow copy is a deep one
        if obj.get("kind") == "Container":
            where = "initContainers" if obj["spec"].get("init") else "containers"
            ref.field_path = obj["spec"].get("fieldPath") or f"spec.{where}{{{obj['metadata']['name']}}}"
        self._outbox.append((ref, type_, reason, message))

    def _send(self) -> None:
        """Hand the events of the changes just made to the sink, after they were announced
        (the kubelet holds an event back while the change it reports is being synced)."""
        while self._outbox:
            ref, type_, reason, message = self._outbox.pop(0)
            try:
                self.events(ref, type_, reason, message)       # type: ignore[misc]
            except Exception:
                log.exception("sim runtime: event sink failed")

    def _kill(self, oid: str) -> None:
        """The grace period of a stopping container is over."""
        self._timers.pop(oid + "/kill", None)
        obj = self._objs.get(oid)
        if obj is None or obj["status"].get("state") in (EXITED, WAITING):
            return
        obj["status"] = {**obj["status"], "state": EXITED, "exitCode": KILLED_EXIT_CODE, "reason": "Error",
                         "finishedAt": rfc3339(self.clock.now())}     # a new dict: see _container_status
        self._statuses.pop(self._owner.get(oid, ""), None)
        self._cancel(oid)
        self._notify(self._owner.get(oid, ""))

    # --- bookkeeping ------------------------------------------------------------------------

    def _pod(self, pod: core_v1.Pod) -> _Pod:
        uid = pod.metadata.uid or ""
        p = self._pods.get(uid)
        if p is None:
            spec = pod.spec or core_v1.PodSpec()
            ref = core_v1.ObjectReference(kind="Pod", api_version="v1", name=pod.metadata.name,
                                          namespace=pod.metadata.namespace, uid=uid)
            p = self._pods[uid] = _Pod(uid, spec.node_name or "", ref, bool(spec.host_network))
        return p

    def _container_spec(self, pod: core_v1.Pod, p: _Pod, container: core_v1.Container, init: bool,
                        attempt: int) -> dict[str, Any]:
        spec: dict[str, Any] = {"podName": pod.metadata.name, "nodeName": p.node, "image": container.image,
                                "init": init, "attempt": attempt,
                                "restartPolicy": (pod.spec.restart_policy if pod.spec else None) or "Always"}
        if container.readiness_probe is not None:
            spec["readinessProbe"] = to_dict(container.readiness_probe)
        if not init and pod.spec is not None and pod.spec.ephemeral_containers:
            path = field_path(pod, container.name or "", init)
            if path.startswith("spec.ephemeralContainers"):
                spec["fieldPath"] = path              # its events' (a sim object has no pod)
        return spec

    def _container_object(self, pod: core_v1.Pod, p: _Pod, container: core_v1.Container, init: bool, attempt: int,
                          status: dict[str, Any]) -> dict[str, Any]:
        obj = self._object(pod, "Container", container.name or "",
                           self._container_spec(pod, p, container, init, attempt), status)
        meta = obj["metadata"]
        if "annotations" in meta:
            meta["annotations"] = container_annotations(meta["annotations"], container.name or "", init)
        return obj

    def _object(self, pod: core_v1.Pod, kind: str, name: str, spec: dict[str, Any],
                status: dict[str, Any]) -> dict[str, Any]:
        m = pod.metadata
        meta: dict[str, Any] = {"name": name, "namespace": m.namespace, "creationTimestamp": rfc3339(self.clock.now())}
        # The pod's own maps, not copies (an informer's object: nothing changes them; stages
        # only match them, and container_annotations makes a new map when it edits): two
        # objects per pod, ~0.4 KB less per pod on 10,000.
        if m.labels:
            meta["labels"] = m.labels
        if m.annotations:
            meta["annotations"] = m.annotations
        return {"apiVersion": API_VERSION, "kind": kind, "metadata": meta, "spec": spec, "status": status}

    def _container_status(self, oid: str) -> ContainerStatus:
        """The object as the kubelet sees it, converted once per change of its status.

        A container's .status dict is replaced, never changed in place, whenever it changes
        (apply_stage, _kill), and the fields read from .spec/.metadata never change.
        """
        obj = self._objs[oid]
        st = obj["status"]
        cached = self._converted.get(oid)
        if cached is not None and cached[0] is st:
            return cached[1]
        cs = self._convert(oid, obj)
        self._converted[oid] = (st, cs)
        return cs

    def _convert(self, oid: str, obj: dict[str, Any]) -> ContainerStatus:
        spec, st = obj["spec"], obj["status"]
        state = st.get("state") or CREATING
        return ContainerStatus(
            id=f"{RUNTIME_NAME}://{oid}", name=obj["metadata"]["name"], attempt=int(spec.get("attempt") or 0),
            init=bool(spec.get("init")), state=state if state in (CREATING, CREATED, RUNNING, EXITED, WAITING)
            else CREATING, image=normalize_image(spec.get("image") or ""), image_ref=st.get("imageID") or "",
            started_at=_ts(st.get("startedAt")), finished_at=_ts(st.get("finishedAt")),
            exit_code=st.get("exitCode"), reason=st.get("reason") or "", message=st.get("message") or "")

    def _cancel(self, oid: str) -> None:
        t = self._timers.pop(oid, None)
        if t is not None:
            t.cancel()

    def _drop(self, oid: str) -> None:
        self._cancel(oid)
        self._cancel(oid + "/kill")
        self._objs.pop(oid, None)
        self._converted.pop(oid, None)
        uid = self._owner.pop(oid, "")
        self._statuses.pop(uid, None)
        p = self._pods.get(uid)
        if p is not None and oid in p.containers:
            p.containers.remove(oid)

    def _notify(self, uid: str) -> None:
        if uid:
            self._handler(uid)
        if self._outbox:
            self._send()

    def close(self) -> None:
        """Cancel every pending timer (the kubelet is stopping)."""
        for t in self._timers.values():
            t.cancel()
        self._timers.clear()
        self._timer_queue.close()


class _Entry:
    """A TimerQueue timer (Timer protocol): cancel() before it runs and it never does."""

    __slots__ = ("fn", "args", "cancelled")

    def __init__(self, fn: Callable[..., None], args: tuple[Any, ...]) -> None:
        self.fn, self.args, self.cancelled = fn, args, False

    def cancel(self) -> None:
        self.cancelled = True


class TimerQueue:
    """The runtime's timers (stage delays, kill deadlines) on one timer of the clock, armed
    for the earliest deadline: clock.after_func(seconds, fn, *args) as after(seconds, fn,
    *args), each fn run when the clock reaches its deadline, in deadline order (ties: in the
    order armed), at most one timer of the loop pending.

    Ours: every container start arms two stage delays and every stop a kill deadline (30 s,
    mostly cancelled); on uvloop each loop timer is a libuv timer made, started and closed,
    the main thread's cost of ~5,000 timers per 1,000-pod rolling update. Here a timer is a
    tuple in a heap, and the loop's timer is re-armed only for an earlier deadline.

    A zero delay goes to the clock as before (the next loop turn); timers falling due together
    run one after another in one callback, as the loop would run them in one turn, and what
    they arm waits for a later turn.
    """

    __slots__ = ("clock", "_heap", "_seq", "_armed", "_armed_at")

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._heap: list[tuple[float, int, _Entry]] = []
        self._seq = 0
        self._armed: Timer | None = None
        self._armed_at = math.inf

    def after(self, seconds: float, fn: Callable[..., None], *args: Any) -> Timer:
        if seconds <= 0:
            return self.clock.after_func(seconds, fn, *args)
        entry = _Entry(fn, args)
        deadline = self.clock.monotonic() + seconds
        self._seq += 1
        heapq.heappush(self._heap, (deadline, self._seq, entry))
        if deadline < self._armed_at:
            self._arm(deadline, seconds)
        return entry

    def _arm(self, deadline: float, seconds: float) -> None:
        if self._armed is not None:
            self._armed.cancel()
        self._armed = self.clock.after_func(seconds, self._run, deadline)
        self._armed_at = deadline

    def _run(self, deadline: float) -> None:
        """The armed deadline came: run every timer due by it (or by now)."""
        self._armed, self._armed_at = None, math.inf
        limit = max(deadline, self.clock.monotonic())
        heap = self._heap
        due = []
        while heap and heap[0][0] <= limit:
            due.append(heapq.heappop(heap)[2])
        for entry in due:
            if entry.cancelled:
                continue
            entry.cancelled = True                  # ran: a late cancel() is a no-op
            try:
                entry.fn(*entry.args)
            except Exception:                       # as the loop: log, and run the others
                log.exception("sim runtime: timer callback failed")
        while heap and heap[0][2].cancelled:
            heapq.heappop(heap)
        if heap and heap[0][0] < self._armed_at:
            self._arm(heap[0][0], max(heap[0][0] - self.clock.monotonic(), 0.0))

    def close(self) -> None:
        if self._armed is not None:
            self._armed.cancel()
        self._armed, self._armed_at = None, math.inf
        self._heap.clear()


class _Helpers:
    """The template functions of one object (kwok's names), as the renderer's helper table.

    A template calls one or two of them: they are looked up by name rather than eight
    closures being made for every stage applied.
    """

    __slots__ = ("rt", "oid")
    NAMES = ("Now", "NodeName", "NodeIP", "NodeIPWith", "PodIP", "PodIPWith", "ImageID", "ContainerID")

    def __init__(self, rt: SimRuntime, oid: str) -> None:
        self.rt, self.oid = rt, oid

    def __contains__(self, name: object) -> bool:
        return name in self.NAMES

    def __getitem__(self, name: str) -> Callable[..., Any]:
        fn = self.get(name)
        if fn is None:
            raise KeyError(name)
        return fn

    def __iter__(self) -> Iterator[str]:
        return iter(self.NAMES)

    def __len__(self) -> int:
        return len(self.NAMES)

    def get(self, name: str, default: Any = None) -> Any:
        return getattr(self, "_" + name) if name in self.NAMES else default

    def _pod(self) -> _Pod | None:
        return self.rt._pods.get(self.rt._owner.get(self.oid, ""))

    def _node(self) -> _Node | None:
        p = self._pod()
        return self.rt._nodes.get(p.node) if p else None

    def _Now(self) -> str:
        return rfc3339(self.rt.clock.now())

    def _NodeName(self) -> str:
        p = self._pod()
        return p.node if p else ""

    def _NodeIP(self) -> str:
        node = self._node()
        return node.ip if node else ""

    def _NodeIPWith(self, *_: Any) -> str:
        return self._NodeIP()

    def _PodIP(self) -> str:
        return self.rt._pod_ip(self.rt._owner.get(self.oid, ""))

    def _PodIPWith(self, *_: Any) -> str:
        return self._PodIP()

    def _ImageID(self, image: Any) -> str:
        return image_ref(image or "")

    def _ContainerID(self) -> str:
        return f"{RUNTIME_NAME}://{self.oid}"


SIM_ANNOTATION_PREFIX = "sim.kubeplane.io/"
EXIT_CODE_ANNOTATION = SIM_ANNOTATION_PREFIX + "exit-code"
EXIT_CODE_INDEXES_ANNOTATION = SIM_ANNOTATION_PREFIX + "exit-code-indexes"
RUN_DURATION_ANNOTATION = SIM_ANNOTATION_PREFIX + "run-duration"
COMPLETION_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
MAX_RUN_DURATION, MAX_RUN_DURATION_TEXT = 365 * 24 * 3600.0, "8760h"    # a longer run-duration is a year


def container_annotations(annotations: dict[str, str], name: str, init: bool) -> dict[str, str]:
    """The pod's annotations as one container's sim object carries them: the stages read
    `sim.kubeplane.io/<key>` and find this container's value there.

    `sim.kubeplane.io/<key>.<container>` wins over the pod-wide `sim.kubeplane.io/<key>`; the
    pod-wide ones are for app containers only (an init container takes only its own). An exit
    code that is not an integer in 0..255 is dropped (the default, 0, applies), as is a
    run-duration that is not a Go duration (one over a year is a year), and "0" is
    dropped as the default itself, so a stage tells success from failure by the annotation's
    presence. With `sim.kubeplane.io/exit-code-indexes` ("1,3-5") the exit code applies only
    to the pods of an Indexed Job whose completion index is listed. Example: {exit-code: "1",
    exit-code.sidecar: "0"} -> app container "main" exits 1, "sidecar" exits 0. Pods without
    sim annotations (every pod of a density run) pay one scan.
    """
    if not any(k.startswith(SIM_ANNOTATION_PREFIX) for k in annotations):
        return annotations
    out: dict[str, str] = {}
    own: dict[str, str] = {}
    suffix = "." + name
    for k, v in annotations.items():
        if not k.startswith(SIM_ANNOTATION_PREFIX):
            out[k] = v
        elif "." not in k[len(SIM_ANNOTATION_PREFIX):]:
            if not init:
                out[k] = v
        elif k.endswith(suffix):
            own[k[:-len(suffix)]] = v
    out.update(own)
    code = out.get(EXIT_CODE_ANNOTATION)
    if code is not None and EXIT_CODE_INDEXES_ANNOTATION in out and not _in_index_set(
            annotations.get(COMPLETION_INDEX_ANNOTATION), out[EXIT_CODE_INDEXES_ANNOTATION]):
        code = None                        # an Indexed Job's pod whose index is not listed
        del out[EXIT_CODE_ANNOTATION]
    run = out.get(RUN_DURATION_ANNOTATION)
    if run is not None:
        secs = parse_duration(run)
        if secs is None:
            del out[RUN_DURATION_ANNOTATION]           # not a duration: the stage's default
        elif not secs <= MAX_RUN_DURATION:             # "99999999999h" (or inf) would overflow a timer
            out[RUN_DURATION_ANNOTATION] = MAX_RUN_DURATION_TEXT
    if code is not None:
        if _valid_exit_code(code):
            out[EXIT_CODE_ANNOTATION] = str(int(code))     # "010" is 10, not YAML's octal 8
        else:
            del out[EXIT_CODE_ANNOTATION]
    return out


def _in_index_set(index: str | None, indexes: str) -> bool:
    """Whether a completion index is in an index set as Jobs print them ("1,3-5")."""
    if index is None or not _small_number(index):
        return False
    i = int(index)
    for part in indexes.split(","):
        lo, _, hi = part.strip().partition("-")
        if _small_number(lo) and (_small_number(hi) if hi else True):
            if int(lo) <= i <= int(hi or lo):
                return True
    return False


def _small_number(text: str) -> bool:
    """ASCII digits of an int32 at most (int() of thousands of digits raises)."""
    return text.isascii() and text.isdigit() and len(text) <= 10


def _valid_exit_code(text: str) -> bool:
    return text.isascii() and text.isdigit() and len(text) <= 3 and 0 < int(text) <= 255


def _object_id(uid: str, name: str, seq: int) -> str:
    return hashlib.sha256(f"{uid}/{name}/{seq}".encode()).hexdigest()


def _oid(container_id: str) -> str:
    """The object id behind a containerID ("kubeplane-sim://<id>" -> "<id>")."""
    return container_id.split("://", 1)[-1]


def _ts(v: Any) -> float | None:
    return parse_rfc3339(v) if isinstance(v, str) and v else None
