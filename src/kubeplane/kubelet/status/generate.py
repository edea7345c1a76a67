"""The kubelet-owned pod conditions, computed from the container statuses it is about to report.

Statuses and conditions are wire-format dicts here (the JSON the API server stores), which
is what the status manager diffs and patches. Messages reproduce upstream's Go formatting:
`fmt.Sprintf("containers with unready status: %s", []string{"a", "b"})` prints
"containers with unready status: [a b]".

Upstream: pkg/kubelet/status/generate.go
"""
from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

POD_READY_TO_START_CONTAINERS = "PodReadyToStartContainers"
POD_INITIALIZED = "Initialized"
POD_READY = "Ready"
CONTAINERS_READY = "ContainersReady"
POD_SCHEDULED = "PodScheduled"

# Conditions the kubelet owns and regenerates on every sync (kubetypes.PodConditionsByKubelet
# plus PodReadyToStartContainers); anything else on the pod (DisruptionTarget, readiness-gate
# conditions) is carried over untouched.
KUBELET_CONDITIONS = (POD_READY_TO_START_CONTAINERS, POD_INITIALIZED, POD_READY, CONTAINERS_READY,
                      POD_SCHEDULED)

UNKNOWN_CONTAINER_STATUSES = "UnknownContainerStatuses"
POD_COMPLETED = "PodCompleted"
CONTAINERS_NOT_READY = "ContainersNotReady"
CONTAINERS_NOT_INITIALIZED = "ContainersNotInitialized"
READINESS_GATES_NOT_READY = "ReadinessGatesNotReady"


def _go_list(names: list[str]) -> str:
    return "[" + " ".join(names) + "]"


def _condition(type_: str, ok: bool, reason: str = "", message: str = "") -> Obj:
    c: Obj = {"type": type_, "status": "True" if ok else "False"}
    if reason:
        c["reason"] = reason
    if message:
        c["message"] = message
    return c


def generate_pod_ready_to_start_containers_condition(sandbox_ready: bool) -> Obj:
    """True once the sandbox exists with its network configured.

    Upstream: GeneratePodReadyToStartContainersCondition
    """
    return _condition(POD_READY_TO_START_CONTAINERS, sandbox_ready)


def generate_pod_initialized_condition(spec: Obj, init_statuses: list[Obj], phase: str) -> Obj:
    """True when every init container has completed (or there are none, or the pod
    already succeeded). Upstream: GeneratePodInitializedCondition
    """
    if not spec.get("initContainers") or phase == "Succeeded":
        return _condition(POD_INITIALIZED, True)
    incomplete = [s["name"] for s in init_statuses if not _succeeded(s)]
    if incomplete:
        return _condition(POD_INITIALIZED, False, CONTAINERS_NOT_INITIALIZED,
                          f"containers with incomplete status: {_go_list(incomplete)}")
    return _condition(POD_INITIALIZED, True)


def generate_containers_ready_condition(spec: Obj, statuses: list[Obj], phase: str) -> Obj:
    """True when every app container is ready. Upstream: GenerateContainersReadyCondition"""
    if phase == "Succeeded":
        return _condition(CONTAINERS_READY, False, POD_COMPLETED)
    by_name = {s["name"]: s for s in statuses}
    unknown = [c["name"] for c in spec.get("containers") or () if c["name"] not in by_name]
    unready = [c["name"] for c in spec.get("containers") or ()
               if c["name"] in by_name and not by_name[c["name"]].get("ready")]
    if unknown:
        return _condition(CONTAINERS_READY, False, UNKNOWN_CONTAINER_STATUSES,
                          f"containers with unknown status: {_go_list(unknown)}")
    if unready:
        return _condition(CONTAINERS_READY, False, CONTAINERS_NOT_READY,
                          f"containers with unready status: {_go_list(unready)}")
    return _condition(CONTAINERS_READY, True)


def generate_pod_ready_condition(spec: Obj, conditions: list[Obj], statuses: list[Obj], phase: str,
                                 containers_ready: Obj | None = None) -> Obj:
    """ContainersReady plus every readiness gate's condition True. containers_ready: that
    condition when the caller has computed it already (it is not modified).

    Upstream: GeneratePodReadyCondition
    """
    cr = containers_ready if containers_ready is not None else generate_containers_ready_condition(spec, statuses, phase)
    if cr["status"] != "True":
        return {**cr, "type": POD_READY}
    missing, false = [], []
    present = {c.get("type"): c for c in conditions}
    for gate in spec.get("readinessGates") or ():
        ct = gate.get("conditionType")
        if ct not in present:
            missing.append(ct)
        elif present[ct].get("status") != "True":
            false.append(ct)
    if missing or false:
        msgs = [f"corresponding condition of pod readiness gate \"{ct}\" does not exist." for ct in missing]
        msgs += [f"the status of pod readiness gate \"{ct}\" is not \"True\", but False" for ct in false]
        return _condition(POD_READY, False, READINESS_GATES_NOT_READY, ", ".join(msgs))
    return _condition(POD_READY, True)


def _succeeded(status: Obj) -> bool:
    terminated = (status.get("state") or {}).get("terminated")
    return terminated is not None and terminated.get("exitCode") == 0
