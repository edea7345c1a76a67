"""Row printers: one function per resource turning an object into its table cells.

A kind's definition names its printer (ResourceDefinition.printer); tables.to_table reads it.

Upstream: pkg/printers/internalversion/printers.go. Upstream's server-side convertor always
prints with `Wide: true` (pkg/printers/storage), so every row carries the priority-1 cells
too and kubectl drops them unless asked for `-o wide`.

Objects are versioned JSON dicts (what storage holds). Upstream prints the *internal* type,
which after defaulting differs from the wire form only in that absent fields are zero values;
`.get(..., zero)` reproduces that. Each printer returns `(cells, row_conditions)`.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from kubeplane.api.conversion import event_events_v1_to_core
from kubeplane.utils.duration import human_duration

Obj = dict[str, Any]
Row = tuple[list[Any], list[dict[str, Any]] | None]
Printer = Callable[[Obj, float], Row]

NODE_UNREACHABLE_POD_REASON = "NodeLost"          # pkg/util/node.NodeUnreachablePodReason
LABEL_NODE_ROLE_PREFIX = "node-role.kubernetes.io/"
NODE_LABEL_ROLE = "kubernetes.io/role"
LOAD_BALANCER_WIDTH = 16

POD_SUCCESS_CONDITIONS = [{"type": "Completed", "status": "True", "reason": "Succeeded",
                           "message": "The pod has completed successfully."}]
POD_FAILED_CONDITIONS = [{"type": "Completed", "status": "True", "reason": "Failed",
                          "message": "The pod failed."}]


# --- time ---------------------------------------------------------------------------------

@functools.lru_cache(maxsize=8192)
def parse_time(ts: str) -> float:
    """Epoch seconds of an RFC 3339 metav1.Time / MicroTime ("2024-05-01T10:00:00Z").

    Cached: a list of pods shares few distinct creation seconds, and parsing dominates
    otherwise.
    """
    return datetime.fromisoformat(ts).timestamp()


def _epoch(ts: Any) -> float | None:
    """None for a zero (absent or null) timestamp, as metav1.Time.IsZero()."""
    return parse_time(ts) if ts else None


def translate_timestamp_since(ts: Any, now: float) -> str:
    """Upstream: translateTimestampSince / translateMicroTimestampSince (printers.go)"""
    if not ts:
        return "<unknown>"
    return human_duration(now - parse_time(ts))


def format_rfc3339(ts: Any) -> str:
    """metav1.Time.UTC().Format(time.RFC3339); the zero time for an absent timestamp."""
    if not ts:
        return "0001-01-01T00:00:00Z"
    return datetime.fromtimestamp(parse_time(ts), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- labels and selectors -------------------------------------------------------------------

def format_labels(labels: dict[str, str] | None) -> str:
    """Upstream: labels.FormatLabels: sorted "k=v,k2=v2", or "<none>"."""
    s = ",".join(f"{k}={labels[k]}" for k in sorted(labels)) if labels else ""
    return s or "<none>"


_OPS = {"In": " in ", "NotIn": " notin "}


def label_selector_string(sel: dict[str, Any] | None) -> str:
    """LabelSelectorAsSelector(sel).String(): requirements sorted by key, "" for none.

    Upstream: LabelSelectorAsSelector (apimachinery/pkg/apis/meta/v1/helpers.go) and
    Requirement.String (apimachinery/pkg/labels/selector.go).
    Example: {matchLabels: {app: web}, matchExpressions: [{key: tier, operator: In,
    values: [b, a]}]} -> "app=web,tier in (a,b)".
    """
    if not sel:
        return ""
    reqs = [(k, f"{k}={v}") for k, v in (sel.get("matchLabels") or {}).items()]
    for expr in sel.get("matchExpressions") or []:
        key, op, values = expr["key"], expr["operator"], expr.get("values") or []
        if op == "Exists":
            reqs.append((key, key))
        elif op == "DoesNotExist":
            reqs.append((key, "!" + key))
        else:
            vals = values[0] if len(values) == 1 else ",".join(sorted(values))
            reqs.append((key, f"{key}{_OPS[op]}({vals})"))
    reqs.sort(key=lambda r: r[0])
    return ",".join(r for _, r in reqs)


def format_label_selector(sel: dict[str, Any] | None) -> str:
    """Upstream: metav1.FormatLabelSelector: like the selector string, but "<none>" if empty."""
    return label_selector_string(sel) or "<none>"


def layout_container_cells(containers: list[Obj] | None) -> tuple[str, str]:
    """Upstream: layoutContainerCells: ("nginx,sidecar", "nginx:1.25,busybox")."""
    containers = containers or []
    return (",".join(c.get("name", "") for c in containers),
            ",".join(c.get("image", "") for c in containers))


# --- pods ----------------------------------------------------------------------------------

def _is_restartable_init_container(c: Obj | None) -> bool:
    """Upstream: IsRestartableInitContainer (pkg/api/pod): a sidecar (restartPolicy Always)."""
    return c is not None and c.get("restartPolicy") == "Always"


def _condition_true(conditions: list[Obj], type_: str) -> bool:
    """The first condition of `type_` decides. Upstream: isPodInitializedConditionTrue, and the
    readiness-gate loop of printPod (printers.go)."""
    for c in conditions:
        if c.get("type") == type_:
            return c.get("status") == "True"
    return False


def _later(current: float | None, ts: Any) -> float | None:
    """The later of a running maximum and a lastState.terminated.finishedAt."""
    t = _epoch(ts)
    return t if t is not None and (current is None or t > current) else current


def _terminated_reason(term: Obj, prefix: str) -> str:
    """"Init:Error" / "Init:Signal:9" / "ExitCode:137": a terminated state as STATUS text."""
    if term.get("reason"):
        return prefix + term["reason"]
    if term.get("signal"):
        return f"{prefix}Signal:{term['signal']}"
    return f"{prefix}ExitCode:{term.get('exitCode', 0)}"


class _PodTally:
    """Mutable counters printPod threads through its two loops."""
    __slots__ = ("reason", "ready", "restarts", "last_restart")

    def __init__(self, reason: str) -> None:
        self.reason, self.ready, self.restarts = reason, 0, 0
        self.last_restart: float | None = None


def _tally_init_containers(pod: Obj, t: _PodTally) -> tuple[bool, int, float | None]:
    """Walk init container statuses until the first unfinished one; set "Init:..." reasons.

    Returns (initializing, sidecar restarts, latest sidecar restart). Example: two init
    containers, the first done (exit 0), the second running -> reason "Init:1/2".
    """
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    init_specs = {c.get("name"): c for c in spec.get("initContainers") or []}
    n_init = len(spec.get("initContainers") or [])
    sidecar_restarts, sidecar_last = 0, None
    for i, cs in enumerate(status.get("initContainerStatuses") or []):
        count, finished = cs.get("restartCount", 0), ((cs.get("lastState") or {}).get("terminated") or {})
        t.restarts += count
        t.last_restart = _later(t.last_restart, finished.get("finishedAt"))
        sidecar = _is_restartable_init_container(init_specs.get(cs.get("name")))
        if sidecar:
            sidecar_restarts += count
            sidecar_last = _later(sidecar_last, finished.get("finishedAt"))
        state = cs.get("state") or {}
        term, waiting = state.get("terminated"), state.get("waiting")
        if term is not None and term.get("exitCode", 0) == 0:
            continue
        if sidecar and cs.get("started"):
            t.ready += 1 if cs.get("ready") else 0
            continue
        if term is not None:
            t.reason = _terminated_reason(term, "Init:")     # initialization failed
        elif waiting is not None and waiting.get("reason") and waiting["reason"] != "PodInitializing":
            t.reason = "Init:" + waiting["reason"]
        else:
            t.reason = f"Init:{i}/{n_init}"
        return True, sidecar_restarts, sidecar_last
    return False, sidecar_restarts, sidecar_last


def _tally_containers(pod: Obj, t: _PodTally) -> None:
    """Walk app containers last to first, so the first container's state wins the reason."""
    status = pod.get("status") or {}
    has_running = False
    for cs in reversed(status.get("containerStatuses") or []):
        t.restarts += cs.get("restartCount", 0)
        t.last_restart = _later(t.last_restart, ((cs.get("lastState") or {}).get("terminated")
                                                 or {}).get("finishedAt"))
        state = cs.get("state") or {}
        waiting, term = state.get("waiting"), state.get("terminated")
        if waiting is not None and waiting.get("reason"):
            t.reason = waiting["reason"]
        elif term is not None:
            t.reason = _terminated_reason(term, "")
        elif cs.get("ready") and state.get("running") is not None:
            has_running = True
            t.ready += 1
    # A finished container must not hide one still running (e.g. a completed sidecar-less job
    # container next to a server): report Running/NotReady instead of "Completed".
    if t.reason == "Completed" and has_running:
        ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                    for c in status.get("conditions") or [])     # hasPodReadyCondition
        t.reason = "Running" if ready else "NotReady"


def _pod_status_reason(pod: Obj, t: _PodTally) -> None:
    """Fill STATUS, READY count and RESTARTS in `t`. Upstream: printPod (printers.go)"""
    meta, status = pod.get("metadata") or {}, pod.get("status") or {}
    conditions = status.get("conditions") or []
    for c in conditions:
        if c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated":
            t.reason = "SchedulingGated"
    initializing, sidecar_restarts, sidecar_last = _tally_init_containers(pod, t)
    if not initializing or _condition_true(conditions, "Initialized"):
        # Only sidecars' restarts count once the pod is initialized; plain init containers
        # ran to completion and their history no longer matters.
        t.restarts, t.last_restart = sidecar_restarts, sidecar_last
        _tally_containers(pod, t)
    phase = status.get("phase", "")
    if meta.get("deletionTimestamp") and status.get("reason") == NODE_UNREACHABLE_POD_REASON:
        t.reason = "Unknown"
    elif meta.get("deletionTimestamp") and phase not in ("Succeeded", "Failed"):
        t.reason = "Terminating"


def _readiness_gates(pod: Obj) -> str:
    gates = (pod.get("spec") or {}).get("readinessGates") or []
    if not gates:
        return "<none>"
    conditions = (pod.get("status") or {}).get("conditions") or []
    true = sum(1 for g in gates if _condition_true(conditions, g.get("conditionType")))
    return f"{true}/{len(gates)}"


def print_pod(pod: Obj, now: float) -> Row:
    """NAME READY STATUS RESTARTS AGE | IP NODE NOMINATED-NODE READINESS-GATES.

    Upstream: printPod (printers.go). RESTARTS reads "5 (3m ago)" once a container has
    restarted and its last termination time is known.
    """
    meta, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    t = _PodTally(status.get("reason") or status.get("phase", ""))
    _pod_status_reason(pod, t)
    total = len(spec.get("containers") or []) + sum(
        1 for c in spec.get("initContainers") or [] if _is_restartable_init_container(c))
    restarts = str(t.restarts)
    if t.restarts and t.last_restart is not None:
        restarts = f"{t.restarts} ({human_duration(now - t.last_restart)} ago)"
    pod_ips = status.get("podIPs") or []
    cells = [meta.get("name", ""), f"{t.ready}/{total}", t.reason, restarts,
             translate_timestamp_since(meta.get("creationTimestamp"), now),
             (pod_ips[0].get("ip") if pod_ips else "") or "<none>",
             spec.get("nodeName") or "<none>",
             status.get("nominatedNodeName") or "<none>",
             _readiness_gates(pod)]
    phase = status.get("phase")
    conditions = POD_SUCCESS_CONDITIONS if phase == "Succeeded" else (
        POD_FAILED_CONDITIONS if phase == "Failed" else None)
    return cells, conditions


# --- workloads ------------------------------------------------------------------------------

def print_deployment(d: Obj, now: float) -> Row:
    """Upstream: printDeployment (printers.go)"""
    meta, spec, status = d.get("metadata") or {}, d.get("spec") or {}, d.get("status") or {}
    names, images = layout_container_cells(((spec.get("template") or {}).get("spec") or {})
                                           .get("containers"))
    return [meta.get("name", ""),
            f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}",
            status.get("updatedReplicas", 0), status.get("availableReplicas", 0),
            translate_timestamp_since(meta.get("creationTimestamp"), now),
            names, images, label_selector_string(spec.get("selector"))], None


def print_replica_set(rs: Obj, now: float) -> Row:
    """Upstream: printReplicaSet (printers.go)"""
    meta, spec, status = rs.get("metadata") or {}, rs.get("spec") or {}, rs.get("status") or {}
    names, images = layout_container_cells(((spec.get("template") or {}).get("spec") or {})
                                           .get("containers"))
    return [meta.get("name", ""), spec.get("replicas", 1), status.get("replicas", 0),
            status.get("readyReplicas", 0),
            translate_timestamp_since(meta.get("creationTimestamp"), now),
            names, images, format_label_selector(spec.get("selector"))], None


# --- nodes and namespaces -------------------------------------------------------------------

def find_node_roles(node: Obj) -> list[str]:
    """Roles from node-role.kubernetes.io/<role> keys and the kubernetes.io/role value, sorted.

    Upstream: findNodeRoles (printers.go)
    """
    roles = set()
    for k, v in ((node.get("metadata") or {}).get("labels") or {}).items():
        if k.startswith(LABEL_NODE_ROLE_PREFIX) and len(k) > len(LABEL_NODE_ROLE_PREFIX):
            roles.add(k[len(LABEL_NODE_ROLE_PREFIX):])
        elif k == NODE_LABEL_ROLE and v:
            roles.add(v)
    return sorted(roles)


def _node_address(node: Obj, type_: str) -> str:
    for a in (node.get("status") or {}).get("addresses") or []:
        if a.get("type") == type_:
            return a.get("address", "")
    return "<none>"


def print_node(node: Obj, now: float) -> Row:
    """STATUS is Ready / NotReady / Unknown, plus ",SchedulingDisabled" when cordoned.

    Upstream: printNode (printers.go)
    """
    meta, spec, status = node.get("metadata") or {}, node.get("spec") or {}, node.get("status") or {}
    ready = None
    for c in status.get("conditions") or []:
        if c.get("type") == "Ready":
            ready = c      # the last Ready condition wins, as upstream's map does
    states = ["Unknown"] if ready is None else ["Ready" if ready.get("status") == "True" else "NotReady"]
    if spec.get("unschedulable"):
        states.append("SchedulingDisabled")
    info = status.get("nodeInfo") or {}
    return [meta.get("name", ""), ",".join(states), ",".join(find_node_roles(node)) or "<none>",
            translate_timestamp_since(meta.get("creationTimestamp"), now),
            info.get("kubeletVersion", ""),
            _node_address(node, "InternalIP"), _node_address(node, "ExternalIP"),
            info.get("osImage") or "<unknown>", info.get("kernelVersion") or "<unknown>",
            info.get("containerRuntimeVersion") or "<unknown>"], None


def print_namespace(ns: Obj, now: float) -> Row:
    """Upstream: printNamespace (printers.go)"""
    meta = ns.get("metadata") or {}
    return [meta.get("name", ""), (ns.get("status") or {}).get("phase", ""),
            translate_timestamp_since(meta.get("creationTimestamp"), now)], None


# --- events ---------------------------------------------------------------------------------

def format_event_source(source: Obj | None, reporting_controller: str, reporting_instance: str) -> str:
    """"component, host", falling back to reportingComponent / reportingInstance.

    Upstream: formatEventSource (printers.go)
    """
    source = source or {}
    component = source.get("component") or reporting_controller
    instance = source.get("host") or reporting_instance
    return f"{component}, {instance}" if instance else component


def print_event(ev: Obj, now: float) -> Row:
    """LAST SEEN TYPE REASON OBJECT MESSAGE | SUBOBJECT SOURCE FIRST-SEEN COUNT NAME.

    Upstream: printEvent (printers.go). New-API events (no first/lastTimestamp) fall back to
    eventTime, series.lastObservedTime and series.count; a singleton counts 1.
    """
    meta, ref = ev.get("metadata") or {}, ev.get("involvedObject") or {}
    first = (translate_timestamp_since(ev.get("firstTimestamp"), now) if ev.get("firstTimestamp")
             else translate_timestamp_since(ev.get("eventTime"), now))
    last = translate_timestamp_since(ev.get("lastTimestamp"), now) if ev.get("lastTimestamp") else first
    count = ev.get("count", 0)
    if (series := ev.get("series")) is not None:
        last = translate_timestamp_since(series.get("lastObservedTime"), now)
        count = series.get("count", 0)
    elif count == 0:
        count = 1
    kind = (ref.get("kind") or "").lower()
    target = f"{kind}/{ref['name']}" if ref.get("name") else kind
    return [last, ev.get("type", ""), ev.get("reason", ""), target, ref.get("fieldPath", ""),
            format_event_source(ev.get("source"), ev.get("reportingComponent", ""),
                                ev.get("reportingInstance", "")),
            (ev.get("message") or "").strip(), first, count, meta.get("name", "")], None


def print_events_v1_event(ev: Obj, now: float) -> Row:
    """events.k8s.io/v1 Events share core's storage and printer: print the core form."""
    return print_event(event_events_v1_to_core(ev), now)


# --- config and service objects -------------------------------------------------------------

def print_config_map(cm: Obj, now: float) -> Row:
    """Upstream: printConfigMap (printers.go)"""
    meta = cm.get("metadata") or {}
    return [meta.get("name", ""), len(cm.get("data") or {}) + len(cm.get("binaryData") or {}),
            translate_timestamp_since(meta.get("creationTimestamp"), now)], None


def print_secret(s: Obj, now: float) -> Row:
    """Upstream: printSecret (printers.go)"""
    meta = s.get("metadata") or {}
    return [meta.get("name", ""), s.get("type", ""), len(s.get("data") or {}),
            translate_timestamp_since(meta.get("creationTimestamp"), now)], None


def print_service_account(sa: Obj, now: float) -> Row:
    """Upstream: printServiceAccount (printers.go)"""
    meta = sa.get("metadata") or {}
    return [meta.get("name", ""), len(sa.get("secrets") or []),
            translate_timestamp_since(meta.get("creationTimestamp"), now)], None


def print_lease(lease: Obj, now: float) -> Row:
    """Upstream: printLease (printers.go)"""
    meta = lease.get("metadata") or {}
    return [meta.get("name", ""), (lease.get("spec") or {}).get("holderIdentity") or "",
            translate_timestamp_since(meta.get("creationTimestamp"), now)], None


def _load_balancer_ips(svc: Obj, wide: bool) -> str:
    """Upstream: loadBalancerStatusStringer (printers.go): sorted unique IPs/hostnames."""
    seen = set()
    for ing in ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []:
        if ing.get("ip"):
            seen.add(ing["ip"])
        elif ing.get("hostname"):
            seen.add(ing["hostname"])
    r = ",".join(sorted(seen))
    if not wide and len(r) > LOAD_BALANCER_WIDTH:
        r = r[:LOAD_BALANCER_WIDTH - 3] + "..."
    return r


def service_external_ip(svc: Obj, wide: bool) -> str:
    """Upstream: getServiceExternalIP (printers.go)"""
    spec = svc.get("spec") or {}
    external_ips = spec.get("externalIPs") or []
    type_ = spec.get("type", "")
    if type_ in ("ClusterIP", "NodePort"):
        return ",".join(external_ips) if external_ips else "<none>"
    if type_ == "LoadBalancer":
        lb = _load_balancer_ips(svc, wide)
        if external_ips:
            return ",".join(([*lb.split(",")] if lb else []) + external_ips)
        return lb or "<pending>"
    if type_ == "ExternalName":
        return spec.get("externalName", "")
    return "<unknown>"


def make_port_string(ports: list[Obj] | None) -> str:
    """Upstream: makePortString (printers.go): "80/TCP,443:30443/TCP"."""
    pieces = []
    for p in ports or []:
        proto = p.get("protocol", "")
        if p.get("nodePort", 0) > 0:
            pieces.append(f"{p.get('port', 0)}:{p['nodePort']}/{proto}")
        else:
            pieces.append(f"{p.get('port', 0)}/{proto}")
    return ",".join(pieces)


def print_service(svc: Obj, now: float) -> Row:
    """Upstream: printService (printers.go). The server prints wide, so EXTERNAL-IP is never
    clipped to 16 characters here (as upstream's server-side output)."""
    meta, spec = svc.get("metadata") or {}, svc.get("spec") or {}
    cluster_ips = spec.get("clusterIPs") or []
    return [meta.get("name", ""), spec.get("type", ""),
            cluster_ips[0] if cluster_ips else "<none>",
            service_external_ip(svc, True), make_port_string(spec.get("ports")) or "<none>",
            translate_timestamp_since(meta.get("creationTimestamp"), now),
            format_labels(spec.get("selector"))], None


def print_default(obj: Obj, now: float) -> Row:
    """Upstream: defaultTableConvertor.ConvertToTable (k8s.io/apiserver/pkg/registry/rest)"""
    meta = obj.get("metadata") or {}
    return [meta.get("name", ""), format_rfc3339(meta.get("creationTimestamp"))], None
