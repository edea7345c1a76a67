"""The API pod status the kubelet reports, computed from what the runtime says.

    status = generate_api_pod_status(pod, rt_status, node_ip="172.18.0.2",
                                     is_ready=prober.is_ready, waiting=actions.waiting)

Everything is a wire-format dict, shaped exactly as the official clients expect: every
container status carries name, image, imageID ("" until pulled), ready, restartCount,
started and a state with exactly one of waiting/running/terminated.

Upstream: generateAPIPodStatus, convertToAPIContainerStatuses, getPhase (kubelet_pods.go).
"""
from __future__ import annotations

from typing import Any, Callable

from ..api.types import core_v1, to_dict
from ..utils.clock import rfc3339
from .runtime import CREATED, CREATING, EXITED, RUNNING, SANDBOX_READY, WAITING, ContainerStatus, PodStatus
from .status import generate

Obj = dict[str, Any]

CONTAINER_CREATING = "ContainerCreating"
POD_INITIALIZING = "PodInitializing"
CONTAINER_STATUS_UNKNOWN = "ContainerStatusUnknown"


def generate_api_pod_status(pod: core_v1.Pod, rt: PodStatus, *, node_ip: str,
                            is_ready: Callable[[core_v1.Container, ContainerStatus], bool],
                            waiting: dict[str, tuple[str, str]] | None = None,
                            terminal: bool = False,
                            is_started: Callable[[core_v1.Container, ContainerStatus], bool] | None = None) -> Obj:
    """The pod's status as the kubelet would report it now (startTime and transition times
    are filled in by the status manager).

    waiting: container name -> (reason, message) for containers the kubelet is holding back
    (CrashLoopBackOff, or the last pull error while a retry is being pulled).
    terminal: the pod is being deleted and all its containers have stopped.
    is_started: whether a running container has passed its startup probe (default: yes).
    Upstream: generateAPIPodStatus (kubelet_pods.go)
    """
    spec = spec_view(pod.spec)
    old = _old_view(pod.status)
    waiting = waiting or {}
    has_init = bool(pod.spec.init_containers) if pod.spec else False
    init = convert_to_api_container_statuses(pod.spec.init_containers or [], rt, has_init, is_ready, waiting,
                                             terminal, init=True) if has_init else []
    app = convert_to_api_container_statuses(pod.spec.containers or [], rt, has_init, is_ready, waiting, terminal,
                                            is_started=is_started)
    phase = get_phase(spec, init, app, terminal)
    s: Obj = {"phase": phase}
    if pod.metadata and pod.metadata.generation:    # the spec this status reflects (upstream: PodObservedGenerationTracking)
        s["observedGeneration"] = pod.metadata.generation
    if pod.status and pod.status.qos_class:
        s["qosClass"] = pod.status.qos_class
    s["conditions"] = _conditions(spec, old, rt, init, app, phase, terminal)
    if node_ip:
        s["hostIP"], s["hostIPs"] = node_ip, [{"ip": node_ip}]
    ip = rt.sandbox.ip if rt.sandbox is not None else ""
    ip = ip or old.get("podIP") or ""                 # keep the IP once assigned, as upstream
    if ip:
        s["podIP"], s["podIPs"] = ip, [{"ip": ip}]
    if has_init:
        s["initContainerStatuses"] = init
    s["containerStatuses"] = app
    if pod.spec.ephemeral_containers:
        s["ephemeralContainerStatuses"] = ephemeral_container_statuses(pod, rt, has_init, waiting, terminal)
    return s


def ephemeral_container_statuses(pod: core_v1.Pod, rt: PodStatus, has_init: bool,
                                 waiting: dict[str, tuple[str, str]], terminal: bool) -> list[Obj]:
    """As app containers' statuses, sorted by name, never ready and without `started` (the
    prober reports neither for them). Upstream: generateAPIPodStatus' EphemeralContainerStatuses"""
    ecs: list[Any] = list(pod.spec.ephemeral_containers or ())     # name, image, resources as a Container's
    out = convert_to_api_container_statuses(ecs, rt, has_init, _never, waiting, terminal, is_started=_never)
    for st in out:
        st.pop("started", None)
    return sorted(out, key=lambda st: st["name"] or "")


def _never(c: Any, st: ContainerStatus) -> bool:
    return False


def spec_view(spec: core_v1.PodSpec | None) -> Obj:
    """The part of to_dict(spec) that the status computation reads: restartPolicy, the
    containers' names and the readiness gates. A defaulted spec's full dict (tolerations,
    resources, ports ...) costs more than the rest of the computation.
    """
    if spec is None:
        return {}
    view: Obj = {"containers": [{"name": c.name} for c in spec.containers or ()]}
    if spec.init_containers is not None:
        view["initContainers"] = [{"name": c.name} for c in spec.init_containers]
    if spec.readiness_gates is not None:
        view["readinessGates"] = [{"conditionType": g.condition_type} for g in spec.readiness_gates]
    if spec.restart_policy is not None:
        view["restartPolicy"] = spec.restart_policy
    return view


def _old_view(status: core_v1.PodStatus | None) -> Obj:
    """The part of to_dict(status) carried over: podIP and the conditions the kubelet does
    not own (wire dicts, as to_dict gives them)."""
    if status is None:
        return {}
    old: Obj = {"conditions": [to_dict(c) for c in status.conditions or ()
                               if c.type not in generate.KUBELET_CONDITIONS]}
    if status.pod_ip:
        old["podIP"] = status.pod_ip
    return old


def _conditions(spec: Obj, old: Obj, rt: PodStatus, init: list[Obj], app: list[Obj], phase: str,
                terminal: bool) -> list[Obj]:
    """Conditions not owned by the kubelet first (kept), then the kubelet's in upstream's order."""
    conds = [c for c in old.get("conditions") or () if c.get("type") not in generate.KUBELET_CONDITIONS]
    sandbox_ready = (not terminal and rt.sandbox is not None and rt.sandbox.state == SANDBOX_READY
                     and bool(rt.sandbox.ip))
    containers_ready = generate.generate_containers_ready_condition(spec, app, phase)
    conds.append(generate.generate_pod_ready_to_start_containers_condition(sandbox_ready))
    conds.append(generate.generate_pod_initialized_condition(spec, init, phase))
    conds.append(generate.generate_pod_ready_condition(spec, conds, app, phase, containers_ready))
    conds.append(containers_ready)
    conds.append({"type": generate.POD_SCHEDULED, "status": "True"})
    return conds


def convert_to_api_container_statuses(containers: list[core_v1.Container], rt: PodStatus, has_init: bool,
                                      is_ready: Callable[[core_v1.Container, ContainerStatus], bool],
                                      waiting: dict[str, tuple[str, str]], terminal: bool, *,
                                      init: bool = False,
                                      is_started: Callable[[core_v1.Container, ContainerStatus], bool] | None = None,
                                      ) -> list[Obj]:
    """One API status per container, in spec order.

    Upstream: convertToAPIContainerStatuses (kubelet_pods.go)
    """
    default_reason = POD_INITIALIZING if has_init else CONTAINER_CREATING
    out = []
    for c in containers:
        latest = rt.latest(c.name or "")
        if latest is not None and latest.init != init:
            latest = None
        st = _container_status(c, latest, rt.previous(c.name or "") if latest else None, default_reason,
                               waiting.get(c.name or ""), is_ready, init, is_started)
        if terminal:
            _terminate(st)
        out.append(st)
    return out


def _container_status(c: core_v1.Container, latest: ContainerStatus | None, previous: ContainerStatus | None,
                      default_reason: str, held: tuple[str, str] | None,
                      is_ready: Callable[[core_v1.Container, ContainerStatus], bool], init: bool,
                      is_started: Callable[[core_v1.Container, ContainerStatus], bool] | None = None) -> Obj:
    st: Obj = {"name": c.name, "image": c.image, "imageID": "", "ready": False, "restartCount": 0,
               "started": False, "state": {"waiting": {"reason": default_reason}}}
    if latest is None:
        if held is not None:                     # never created: why (an ephemeral container's target)
            st["state"] = {"waiting": _waiting(*held)}
        return st
    st["restartCount"] = latest.attempt
    if latest.state == WAITING:                  # the pull failed; no container exists
        st["state"] = {"waiting": _waiting(latest.reason, latest.message)}
    elif latest.state in (CREATING, CREATED) or latest.state not in (RUNNING, EXITED):
        st["state"] = {"waiting": _waiting(*(held or (CONTAINER_CREATING, "")))}
    else:
        st.update(image=latest.image, imageID=latest.image_ref, containerID=latest.id)
        _set_resources(st, c)
        if latest.state == RUNNING:
            st["state"] = {"running": {"startedAt": _time(latest.started_at)}}
            st["started"] = is_started is None or is_started(c, latest)
            st["ready"] = is_ready(c, latest)
        else:
            st["state"] = {"terminated": _terminated(latest)}
            st["ready"] = init and latest.exit_code == 0      # a completed init container is ready
            if held is not None:                 # exited, restart held back: CrashLoopBackOff
                st["lastState"] = st["state"]
                st["state"] = {"waiting": _waiting(*held)}
                st["ready"] = False
    if "lastState" not in st:
        prev = previous if previous is not None and previous.state == EXITED else None
        st["lastState"] = {"terminated": _terminated(prev)} if prev is not None else {}
    return st


def _set_resources(st: Obj, c: core_v1.Container) -> None:
    """The container's allocated requests and the resources it runs with: those of the spec,
    which the sim applies at once (an in-place resize shows here at the next sync, with no
    PodResizePending/PodResizeInProgress on the way). A running container's `resources` also
    tells the API server this kubelet can resize (isPodResizeRequestSupported).
    Upstream: convertToAPIContainerStatuses' AllocatedResources and
    convertContainerStatusResources (kubelet_pods.go), the allocation manager's allocation
    """
    r = c.resources
    requests, limits = (r.requests, r.limits) if r is not None else (None, None)
    if requests:
        st["allocatedResources"] = dict(requests)
    res: Obj = {}
    if limits:
        res["limits"] = dict(limits)
    if requests:
        res["requests"] = dict(requests)
    st["resources"] = res


def _waiting(reason: str, message: str = "") -> Obj:
    w: Obj = {"reason": reason}
    if message:
        w["message"] = message
    return w


def _terminated(cs: ContainerStatus) -> Obj:
    t: Obj = {"exitCode": cs.exit_code if cs.exit_code is not None else 0, "containerID": cs.id}
    if cs.reason:
        t["reason"] = cs.reason
    if cs.message:
        t["message"] = cs.message
    if cs.started_at is not None:
        t["startedAt"] = _time(cs.started_at)
    if cs.finished_at is not None:
        t["finishedAt"] = _time(cs.finished_at)
    return t


def _terminate(st: Obj) -> None:
    """A deleted pod's container that never reached terminated: report it gone.

    Upstream: the status manager's TerminatePod (status_manager.go)
    """
    st["ready"], st["started"] = False, False
    if "terminated" in st["state"]:
        return
    if "running" in st["state"]:
        st["lastState"] = st["state"]
    st["state"] = {"terminated": {"exitCode": 137, "reason": CONTAINER_STATUS_UNKNOWN,
                                  "message": "The container could not be located when the pod was terminated"}}


def _time(ts: float | None) -> str | None:
    return rfc3339(ts) if ts is not None else None


def get_phase(spec: Obj, init: list[Obj], app: list[Obj], terminal: bool) -> str:
    """The pod phase from its container statuses.

    Upstream: getPhase (kubelet_pods.go). Example: restartPolicy Always, one container
    exited 1 and waiting in CrashLoopBackOff -> it counts as stopped (it has a last
    termination), no container is running -> Running ("in the process of restarting").
    """
    policy = spec.get("restartPolicy") or "Always"
    pending_init = 0
    for s in init:
        state = s.get("state") or {}
        term = state.get("terminated")
        if term is not None and term.get("exitCode") == 0:
            continue
        if term is not None and policy == "Never":
            return "Failed"
        if "lastState" in s and (s["lastState"] or {}).get("terminated") and policy == "Never":
            return "Failed"
        pending_init += 1
    if pending_init and not terminal:
        return "Pending"
    running = waiting = stopped = succeeded = 0
    for s in app:
        state = s.get("state") or {}
        if "running" in state:
            running += 1
        elif "terminated" in state:
            stopped += 1
            succeeded += state["terminated"].get("exitCode") == 0
        elif (s.get("lastState") or {}).get("terminated"):
            stopped += 1
            succeeded += s["lastState"]["terminated"].get("exitCode") == 0
        else:
            waiting += 1
    if waiting and not terminal:
        return "Pending"
    if running and not terminal:
        return "Running"
    if terminal:
        return "Succeeded" if stopped == succeeded and not waiting else "Failed"
    if not stopped:
        return "Pending"
    if policy == "Always":
        return "Running"                 # every container is on its way back up
    if stopped == succeeded:
        return "Succeeded"
    return "Failed" if policy == "Never" else "Running"
