"""What to do next for a pod: create the sandbox, start the next init container, start or
restart app containers (with back-off), or nothing.

Upstream: computePodActions and doBackOff (pkg/kubelet/kuberuntime/kuberuntime_manager.go)
and the image pull back-off of pkg/kubelet/images/image_manager.go. The kubelet executes the
returned PodActions; the runtime's later events bring the pod back for its next step.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from ..api.types import core_v1
from .backoff import Backoff, go_duration_seconds
from .runtime import (
    CREATED, CREATING, EXITED, RUNNING, SANDBOX_READY, WAITING, ContainerStatus, PodStatus, as_container,
)

CRASH_LOOP_BACK_OFF = "CrashLoopBackOff"
CREATE_CONTAINER_CONFIG_ERROR = "CreateContainerConfigError"
IMAGE_PULL_BACK_OFF = "ImagePullBackOff"
MAX_CONTAINER_BACK_OFF = 300.0     # seconds (MaxContainerBackOff)
INITIAL_BACK_OFF = 10.0            # seconds (kubelet's backOffPeriod / imageBackOffPeriod)


@dataclass
class PodActions:
    """Upstream: podActions. start holds (container, attempt, is_init) in start order."""

    create_sandbox: bool = False
    start: list[tuple[core_v1.Container, int, bool]] = field(default_factory=list)
    waiting: dict[str, tuple[str, str]] = field(default_factory=dict)   # name -> (reason, message)
    back_off_events: list[tuple[core_v1.Container, str]] = field(default_factory=list)
    requeue_after: float | None = None
    terminal: bool = False         # the pod has finished for good (restartPolicy says so)

    def requeue(self, seconds: float) -> None:
        self.requeue_after = seconds if self.requeue_after is None else min(self.requeue_after, seconds)


@dataclass
class BackoffState:
    """The kubelet's back-off bookkeeping across syncs."""

    crash: Backoff
    image: Backoff
    pull_failures_seen: dict[str, set[str]] = field(default_factory=dict)   # pod uid -> container ids counted
    back_off_reported: dict[str, set[str]] = field(default_factory=dict)    # pod uid -> ids whose BackOff went out
    last_pull_error: dict[str, tuple[str, str]] = field(default_factory=dict)   # uid/name -> reason, msg

    @staticmethod
    def first_time(seen: dict[str, set[str]], uid: str, cid: str) -> bool:
        """Whether cid of pod uid is new to `seen` (one of the sets above), recording it."""
        ids = seen.setdefault(uid, set())
        if cid in ids:
            return False
        ids.add(cid)
        return True

    def forget_pod(self, uid: str) -> None:
        """Drop everything kept for a pod that is gone, next to the code that makes the keys."""
        self.crash.forget(lambda key: f"_{uid}_" in key)
        self.image.forget(lambda key: key.startswith(uid + "_"))
        self.last_pull_error = {k: v for k, v in self.last_pull_error.items() if not k.startswith(uid + "/")}
        self.pull_failures_seen.pop(uid, None)
        self.back_off_reported.pop(uid, None)


def format_pod(pod: core_v1.Pod) -> str:
    """Upstream: format.Pod — "name_namespace(uid)"."""
    m = pod.metadata
    return f"{m.name}_{m.namespace}({m.uid})"


def should_restart(policy: str, exit_code: int | None) -> bool:
    """Upstream: ShouldContainerBeRestarted's restart-policy part."""
    if policy == "Always":
        return True
    if policy == "OnFailure":
        return exit_code != 0
    return False


def _start_ephemeral_containers(pod: core_v1.Pod, rt: PodStatus, actions: PodActions) -> None:
    """Start each ephemeral container that never ran: once the sandbox is ready, even before
    initialization is complete, never restarted, and none in a pod that is done. One whose
    targetContainerName is not running waits (CreateContainerConfigError) until it is: the
    target's start brings the pod back. Upstream: computePodActions' EphemeralContainersToStart,
    startSpec.getTargetID (kuberuntime_container.go)"""
    for ec in pod.spec.ephemeral_containers or ():
        name = ec.name or ""
        if rt.latest(name) is not None:
            continue
        target = ec.target_container_name
        if target and ((st := rt.latest(target)) is None or st.state != RUNNING):
            actions.waiting[name] = (CREATE_CONTAINER_CONFIG_ERROR, f"unable to find target container {target}")
            continue
        actions.start.append((as_container(ec), 0, False))


def compute_pod_actions(pod: core_v1.Pod, rt: PodStatus, bo: BackoffState) -> PodActions:
    """The next step for pod given what the runtime reports.

    1. No sandbox: create one (containers start once it is ready; its event re-syncs us).
    2. Init containers one at a time, in order: start the first not yet completed; while it
       runs, wait; a failed one restarts with back-off, or fails the pod under Never.
    3. Then every app container: start it if it never ran; restart an exited one when the
       restart policy says so and its back-off has passed.
    Ephemeral containers start alongside (_start_ephemeral_containers).
    Upstream: computePodActions (kuberuntime_manager.go)
    """
    actions = PodActions()
    if rt.sandbox is None:
        actions.create_sandbox = True
        return actions
    if rt.sandbox.state != SANDBOX_READY:
        return actions
    policy = (pod.spec.restart_policy if pod.spec else None) or "Always"
    for c in pod.spec.init_containers or ():
        st = rt.latest(c.name or "")
        if st is not None and st.state == EXITED and st.exit_code == 0:
            continue
        if st is not None and st.state == EXITED and policy == "Never":
            actions.terminal = True
            return actions
        _container_step(pod, c, st, True, bo, actions)
        if pod.spec.ephemeral_containers:
            _start_ephemeral_containers(pod, rt, actions)
        return actions
    exited = 0
    for c in pod.spec.containers or ():
        st = rt.latest(c.name or "")
        if st is not None and st.state == EXITED and not should_restart(policy, st.exit_code):
            exited += 1
            continue
        _container_step(pod, c, st, False, bo, actions)
    actions.terminal = exited == len(pod.spec.containers or ())
    if pod.spec.ephemeral_containers and not actions.terminal:
        _start_ephemeral_containers(pod, rt, actions)
    return actions


def _container_step(pod: core_v1.Pod, c: core_v1.Container, st: ContainerStatus | None, init: bool,
                    bo: BackoffState, actions: PodActions) -> None:
    if st is None:
        actions.start.append((c, 0, init))
    elif st.state == WAITING:
        _image_pull_step(pod, c, st, init, bo, actions)
    elif st.state == EXITED:
        _restart_step(pod, c, st, init, bo, actions)
    elif st.state in (CREATING, CREATED):
        held = bo.last_pull_error.get(f"{pod.metadata.uid}/{c.name}")
        if held is not None:
            actions.waiting[c.name or ""] = held       # a retry is pulling: keep showing the error
    elif st.state == RUNNING:
        bo.last_pull_error.pop(f"{pod.metadata.uid}/{c.name}", None)


def _image_pull_step(pod: core_v1.Pod, c: core_v1.Container, st: ContainerStatus, init: bool,
                     bo: BackoffState, actions: PodActions) -> None:
    """A failed pull: count it once, then retry when the image back-off allows.

    Upstream: EnsureImageExists (images/image_manager.go) — key "<pod uid>_<image>".
    Example: fails at 0 s -> retried at 10 s; fails again at 11 s -> retried at 31 s.
    """
    key = f"{pod.metadata.uid}_{c.image}"
    if bo.first_time(bo.pull_failures_seen, pod.metadata.uid or "", st.id):
        bo.image.next(key, bo.image.clock.now())
    bo.last_pull_error[f"{pod.metadata.uid}/{c.name}"] = (IMAGE_PULL_BACK_OFF, f'Back-off pulling image "{c.image}"')
    if bo.image.is_in_back_off_since_update(key):
        e = bo.image.entries[key]
        actions.requeue(e.last_update + e.backoff - bo.image.clock.now())
        return
    actions.start.append((c, st.attempt, init))


def _restart_step(pod: core_v1.Pod, c: core_v1.Container, st: ContainerStatus, init: bool,
                  bo: BackoffState, actions: PodActions) -> None:
    """Restart an exited container unless it is in CrashLoopBackOff.

    Upstream: doBackOff. The back-off counts from the container's finishedAt: the first exit
    restarts at once, the second waits 10 s, then 20 s, 40 s ... 5 min.
    """
    key = f"{pod.metadata.name}_{pod.metadata.namespace}_{pod.metadata.uid}_{c.name}"
    ts = st.finished_at if st.finished_at is not None else bo.crash.clock.now()
    if bo.crash.is_in_back_off_since(key, ts):
        msg = (f"back-off {go_duration_seconds(bo.crash.get(key))} restarting failed container={c.name} "
               f"pod={format_pod(pod)}")
        actions.waiting[c.name or ""] = (CRASH_LOOP_BACK_OFF, msg)
        actions.back_off_events.append((c, st.id))
        actions.requeue(bo.crash.remaining_since(key, ts))
        return
    bo.crash.next(key, ts)
    actions.start.append((c, st.attempt + 1, init))
