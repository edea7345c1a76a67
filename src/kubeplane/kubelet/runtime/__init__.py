"""The container runtime interface the kubelet drives (a much-reduced CRI).

The kubelet asks for effects (a sandbox, a container started or stopped) and reads back what
the runtime reports (`pod_status`); the runtime announces that something changed about a pod
by calling the event handler with the pod's UID (upstream's PLEG relist events). Starting and
stopping return as soon as the work has *begun*: progress is observed through pod_status,
never awaited, so one pod's slow image pull never holds a kubelet worker.

Implementations: `sim` (runtime/sim: stages in YAML decide what happens and when) and
`process` (runtime/process: each container's command runs as a local process group, with
real probes and captured logs).

Upstream: the CRI RuntimeService (k8s.io/cri-api) and kubecontainer.Runtime
(pkg/kubelet/container/runtime.go), flattened to what the kubelet here uses.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, AsyncIterator, Awaitable, Callable, Protocol

from ...api import errors

if TYPE_CHECKING:
    from ...api.types import core_v1

# Sandbox states (CRI PodSandboxState).
SANDBOX_READY = "Ready"
SANDBOX_NOT_READY = "NotReady"

# Container states as reported here. Creating/Created/Running/Exited follow CRI; Waiting is
# a creation attempt that failed before the container existed (an image pull error: reason
# ErrImagePull, ImagePullBackOff, ...) — the attempt is over and the kubelet retries it.
CREATING = "Creating"
CREATED = "Created"
RUNNING = "Running"
EXITED = "Exited"
WAITING = "Waiting"

PROBE_SUCCESS = "Success"
PROBE_FAILURE = "Failure"
PROBE_UNKNOWN = "Unknown"


@dataclass(slots=True)
class ContainerStatus:
    """One attempt of one container as the runtime sees it (kubecontainer.Status)."""

    id: str                                  # "<runtime>://<64 hex>"
    name: str
    attempt: int                             # 0 for the first start; restartCount in the API
    init: bool
    state: str                               # CREATING, CREATED, RUNNING, EXITED, WAITING
    image: str
    image_ref: str = ""                      # imageID in the API ("" until pulled)
    started_at: float | None = None          # epoch seconds
    finished_at: float | None = None
    exit_code: int | None = None
    reason: str = ""
    message: str = ""


@dataclass(slots=True)
class SandboxStatus:
    id: str
    state: str                               # SANDBOX_READY or SANDBOX_NOT_READY
    ip: str = ""                             # "" until the network is set up


@dataclass(slots=True)
class PodStatus:
    """Everything the runtime knows about one pod (kubecontainer.PodStatus)."""

    uid: str
    sandbox: SandboxStatus | None = None
    containers: list[ContainerStatus] = field(default_factory=list)   # every attempt, oldest first

    def latest(self, name: str) -> ContainerStatus | None:
        """The newest attempt of the named container."""
        for c in reversed(self.containers):
            if c.name == name:
                return c
        return None

    def previous(self, name: str) -> ContainerStatus | None:
        """The attempt before the newest one (lastState in the API)."""
        seen = False
        for c in reversed(self.containers):
            if c.name == name:
                if seen:
                    return c
                seen = True
        return None


EventHandler = Callable[[str], None]


class Runtime(Protocol):
    """What the kubelet needs from a container runtime hosting one or more nodes."""

    name: str        # "kubeplane-sim": container IDs are "<name>://<hex>"
    version: str     # reported as containerRuntimeVersion "<name>://<version>"

    def add_node(self, node_name: str, node_ip: str, pod_cidr: str) -> None:
        """Host pods of node_name, giving them IPs from pod_cidr (a /24)."""

    def set_event_handler(self, handler: EventHandler) -> None:
        """Call handler(pod_uid) whenever anything reported by pod_status changes."""

    def run_pod_sandbox(self, pod: core_v1.Pod) -> str:
        """Begin creating the pod's sandbox; returns its id. Idempotent per pod UID."""

    def start_container(self, pod: core_v1.Pod, container: core_v1.Container, *, init: bool,
                        attempt: int) -> str:
        """Begin pulling, creating and starting one attempt of container; returns its id."""

    def stop_container(self, container_id: str, grace_period: float, message: str = "") -> None:
        """Ask the container to stop; it is reported EXITED within grace_period seconds
        (killed with exit code 137 at the deadline). A container that never ran is dropped.
        message: why, for the Killing event where the runtime records one."""

    def stop_pod_sandbox(self, pod_uid: str) -> None:
        """Tear the sandbox down (NotReady); containers must already be stopped."""

    def remove_pod(self, pod_uid: str) -> None:
        """Forget the pod entirely (its IP returns to the pool); stops pending timers."""

    def pod_status(self, pod_uid: str) -> PodStatus | None:
        """What the runtime knows about the pod, or None if it has nothing."""

    def restore_pod(self, pod: core_v1.Pod) -> bool:
        """The kubelet has (re)started and finds pod bound to one of its nodes: take up what
        is left of it (sim: rebuilt from its recorded status; process: the containers still
        running, re-adopted from the runtime's records), announcing nothing. True if anything
        of the pod was found. Called once per pod before the kubelet's first sync of it."""

    def list_pods(self) -> list[str]:
        """The UIDs of every pod the runtime holds anything of (after a restart: also pods
        the kubelet no longer knows, whose containers it then stops). Upstream: Runtime.GetPods"""

    def probe(self, container_id: str, probe_type: str) -> str | Awaitable[str]:
        """Run one probe ("readiness", "liveness" or "startup") against the container:
        PROBE_SUCCESS/FAILURE/UNKNOWN, or an awaitable of one when the probe does real I/O."""

    def container_logs(self, pod_uid: str, pod_name: str, opts: Any) -> AsyncIterator[bytes]:
        """The container's output per opts (a pods/log LogOptions). Raises errors.BadRequest
        at once (before any byte) when there is no such attempt; see check_log_target."""


def check_log_target(rt: PodStatus | None, container: str, pod_name: str, previous: bool) -> ContainerStatus:
    """The attempt whose output pods/log asks for, or the kubelet's error for it.

    Upstream: validateContainerLogStatus (pkg/kubelet/kubelet_pods.go)
    """
    latest = rt.latest(container) if rt is not None else None
    if previous:
        prev = rt.previous(container) if rt is not None else None
        if prev is None or prev.state != EXITED:
            raise errors.BadRequest(f'previous terminated container "{container}" in pod "{pod_name}" not found')
        return prev
    if latest is None or latest.state in (CREATING, CREATED, WAITING):
        reason = latest.reason if latest is not None and latest.state == WAITING else "ContainerCreating"
        raise errors.BadRequest(f'container "{container}" in pod "{pod_name}" is waiting to start: {reason}')
    return latest


def as_container(ec: core_v1.EphemeralContainer) -> core_v1.Container:
    """An ephemeral container as the container the runtime starts (its targetContainerName
    aside). Upstream: v1.Container(ec.EphemeralContainerCommon)"""
    from ...api.types import core_v1 as v1
    return v1.Container(**{f: getattr(ec, f) for f in v1.Container.__struct_fields__})


def field_path(pod: core_v1.Pod, name: str, init: bool) -> str:
    """The fieldPath of a container's events: spec.containers{web}, spec.initContainers{x},
    spec.ephemeralContainers{debugger-x}. Upstream: ref.GetReference's fieldPath"""
    spec = pod.spec
    if not init and spec is not None and spec.ephemeral_containers and any(
            ec.name == name for ec in spec.ephemeral_containers):
        return f"spec.ephemeralContainers{{{name}}}"
    return f"spec.{'initContainers' if init else 'containers'}{{{name}}}"


RUNTIMES = ("sim", "process")


def new_runtime(kind: str, **kwargs: Any) -> Runtime:
    """A runtime by name ("sim" or "process"); kwargs go to its constructor."""
    if kind == "sim":
        from .sim import SimRuntime
        return SimRuntime(**kwargs)
    if kind == "process":
        from .process import ProcessRuntime
        return ProcessRuntime(**kwargs)
    raise ValueError(f"unknown runtime {kind!r} (have: {', '.join(RUNTIMES)})")
