"""A pod's sim sandbox and container attempts, rebuilt from its recorded API status.

The sim runtime keeps its sandboxes and containers in memory; they die with the process that
ran them, while the pods still say in their status what the kubelet last reported. Upstream's
kubelet restarts against a runtime that kept running (the CRI still lists the pod's sandbox
and containers, and computePodActions finds nothing to do). Here the status is the durable
record and the runtime's objects are rebuilt from it, so that the kubelet's next status
computation gives the status already stored: no write, no container event.

Mapping (the pod's status -> sim objects; object id = the hex of a `kubeplane-sim://` containerID):

    sandbox     exists if PodReadyToStartContainers is True or any container has a containerID;
                Ready when that condition is True (its podIP is taken from the node's range
                again), else NotReady (a finished pod's sandbox, torn down)
    per container status (init and app), restartCount R:
      state.running                  -> attempt R, Running (startedAt, imageID, readiness
                                        Success when ready; an unready one is left to the stages)
      state.terminated               -> attempt R, Exited (exitCode, reason, message, times)
      lastState.terminated, and state
        waiting CrashLoopBackOff     -> attempt R, Exited: the kubelet restarts it at once (its
                                        back-off, like upstream's, lived in memory only)
        anything else                -> attempt R - 1, Exited (what lastState shows)
      state.waiting otherwise        -> nothing: that attempt starts over

What cannot be rebuilt is what the status never showed: an attempt being pulled or created
(waiting, no containerID) starts again, so its Pulled/Created events may repeat; Started
never does: the kubelet records it only once the status showing the attempt running is
written (Kubelet._record_runtime_event). Stage timers
start afresh from the rebuilt state (crash-loop's crash delay, readiness-delay's wait).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ....api.types import core_v1
from .. import EXITED, RUNNING, as_container

POD_READY_TO_START_CONTAINERS = "PodReadyToStartContainers"
CRASH_LOOP_BACK_OFF = "CrashLoopBackOff"


@dataclass(frozen=True, slots=True)
class Attempt:
    """One container attempt to rebuild: its object id and the .status of its sim object."""

    oid: str
    container: core_v1.Container
    init: bool
    attempt: int
    status: dict[str, Any]


def restored_sandbox(pod: core_v1.Pod, prefix: str) -> tuple[bool, str] | None:
    """(ready, podIP) of the pod's sandbox as its status records it, or None if it had none."""
    st = pod.status
    if st is None:
        return None
    ready = any(c.type == POD_READY_TO_START_CONTAINERS and c.status == "True" for c in st.conditions or ())
    started = any(_oid(cs.container_id, prefix) or _oid(_last_terminated(cs).container_id, prefix)
                  for cs in _statuses(st))
    if not (ready or started):
        return None
    return ready, st.pod_ip or ""


def restored_attempts(pod: core_v1.Pod, prefix: str) -> list[Attempt]:
    """The container attempts the pod's status records, oldest first per container."""
    if pod.status is None or pod.spec is None:
        return []
    by_name = {cs.name: cs for cs in _statuses(pod.status)}
    out: list[Attempt] = []
    ephemeral = [as_container(ec) for ec in pod.spec.ephemeral_containers or ()]   # never started twice
    for init, containers in ((True, pod.spec.init_containers or ()), (False, pod.spec.containers or ()),
                             (False, ephemeral)):
        for c in containers:
            cs = by_name.get(c.name)
            if cs is not None:
                out.extend(_attempts(c, cs, init, prefix))
    return out


def _attempts(c: core_v1.Container, cs: core_v1.ContainerStatus, init: bool, prefix: str) -> list[Attempt]:
    r = cs.restart_count or 0
    state = cs.state or core_v1.ContainerState()
    last = _last_terminated(cs)
    out: list[Attempt] = []
    if (oid := _oid(last.container_id, prefix)):
        crash_looping = state.waiting is not None and state.waiting.reason == CRASH_LOOP_BACK_OFF
        out.append(Attempt(oid, c, init, r if crash_looping else max(0, r - 1), _exited(last, cs.image_id)))
    if state.running is not None and (oid := _oid(cs.container_id, prefix)):
        running: dict[str, Any] = {"state": RUNNING, "startedAt": state.running.started_at,
                                   "imageID": cs.image_id or ""}
        if cs.ready:
            running["readiness"] = "Success"
        out.append(Attempt(oid, c, init, r, running))
    elif state.terminated is not None and (oid := _oid(state.terminated.container_id or cs.container_id, prefix)):
        out.append(Attempt(oid, c, init, r, _exited(state.terminated, cs.image_id)))
    return out


def _exited(t: core_v1.ContainerStateTerminated, image_id: str | None) -> dict[str, Any]:
    status: dict[str, Any] = {"state": EXITED, "exitCode": t.exit_code if t.exit_code is not None else 0,
                              "imageID": image_id or ""}
    for key, value in (("reason", t.reason), ("message", t.message), ("startedAt", t.started_at),
                       ("finishedAt", t.finished_at)):
        if value:
            status[key] = value
    return status


def _statuses(st: core_v1.PodStatus) -> list[core_v1.ContainerStatus]:
    return (list(st.init_container_statuses or ()) + list(st.container_statuses or ())
            + list(st.ephemeral_container_statuses or ()))


def _last_terminated(cs: core_v1.ContainerStatus) -> core_v1.ContainerStateTerminated:
    last = cs.last_state.terminated if cs.last_state is not None else None
    return last if last is not None else core_v1.ContainerStateTerminated()


def _oid(container_id: str | None, prefix: str) -> str:
    """The object id of a containerID this runtime made ("" for another runtime's, or none)."""
    if not container_id or not container_id.startswith(prefix):
        return ""
    return container_id[len(prefix):]
