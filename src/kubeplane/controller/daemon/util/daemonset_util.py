"""Pure functions of the DaemonSet controller: the tolerations every daemon pod gets, the
node-name affinity that pins a pod to its node, template generation and update checks, and
the surge and unavailability budgets.

Upstream: pkg/controller/daemon/util/daemonset_util.go
"""
from __future__ import annotations

from ....api.types import apps_v1, core_v1
from ...deployment.util.deployment_util import get_scaled_value_from_int_or_percent

# Upstream: extensions.DaemonSetTemplateGenerationKey, apps.DefaultDaemonSetUniqueLabelKey
# (= ControllerRevisionHashLabelKey), appsv1.DeprecatedTemplateGeneration.
DAEMON_SET_TEMPLATE_GENERATION_KEY = "pod-template-generation"
DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY = "controller-revision-hash"
DEPRECATED_TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"
OBJECT_NAME_FIELD = "metadata.name"          # upstream: metav1.ObjectNameField

# Upstream: v1.TaintNode* keys.
TAINT_NODE_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_NODE_UNREACHABLE = "node.kubernetes.io/unreachable"
TAINT_NODE_DISK_PRESSURE = "node.kubernetes.io/disk-pressure"
TAINT_NODE_MEMORY_PRESSURE = "node.kubernetes.io/memory-pressure"
TAINT_NODE_PID_PRESSURE = "node.kubernetes.io/pid-pressure"
TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
TAINT_NODE_NETWORK_UNAVAILABLE = "node.kubernetes.io/network-unavailable"


def _match_toleration(a: core_v1.Toleration, b: core_v1.Toleration) -> bool:
    """Upstream: Toleration.MatchToleration (tolerationSeconds is not part of the identity)."""
    return (a.key == b.key and (a.effect or "") == (b.effect or "") and (a.operator or "") == (b.operator or "")
            and (a.value or "") == (b.value or ""))


def add_or_update_toleration_in_pod_spec(spec: core_v1.PodSpec, toleration: core_v1.Toleration) -> bool:
    """Replace the toleration with the same identity, or append it. Upstream: AddOrUpdateTolerationInPodSpec"""
    new: list[core_v1.Toleration] = []
    updated = False
    for t in spec.tolerations or []:
        if _match_toleration(toleration, t):
            if toleration == t:
                return False
            new.append(toleration)
            updated = True
            continue
        new.append(t)
    if not updated:
        new.append(toleration)
    spec.tolerations = new
    return True


def _exists(key: str, effect: str) -> core_v1.Toleration:
    return core_v1.Toleration(key=key, operator="Exists", effect=effect)


def add_or_update_daemon_pod_tolerations(spec: core_v1.PodSpec) -> None:
    """Daemon pods survive node problems: not-ready and unreachable (NoExecute, forever), the
    pressure, unschedulable and, for host-network pods, network-unavailable taints
    (NoSchedule). Upstream: AddOrUpdateDaemonPodTolerations"""
    add_or_update_toleration_in_pod_spec(spec, _exists(TAINT_NODE_NOT_READY, "NoExecute"))
    add_or_update_toleration_in_pod_spec(spec, _exists(TAINT_NODE_UNREACHABLE, "NoExecute"))
    add_or_update_toleration_in_pod_spec(spec, _exists(TAINT_NODE_DISK_PRESSURE, "NoSchedule"))
    add_or_update_toleration_in_pod_spec(spec, _exists(TAINT_NODE_MEMORY_PRESSURE, "NoSchedule"))
    add_or_update_toleration_in_pod_spec(spec, _exists(TAINT_NODE_PID_PRESSURE, "NoSchedule"))
    add_or_update_toleration_in_pod_spec(spec, _exists(TAINT_NODE_UNSCHEDULABLE, "NoSchedule"))
    if spec.host_network:
        add_or_update_toleration_in_pod_spec(spec, _exists(TAINT_NODE_NETWORK_UNAVAILABLE, "NoSchedule"))


def create_pod_template(template: core_v1.PodTemplateSpec, generation: int | None, hash_: str) -> core_v1.PodTemplateSpec:
    """The template daemon pods are made from: the tolerations added, labelled with the
    template generation and the revision hash. Upstream: CreatePodTemplate"""
    new = template.deep_copy()
    if new.spec is None:
        new.spec = core_v1.PodSpec()
    add_or_update_daemon_pod_tolerations(new.spec)
    if new.metadata is None:
        from ....api.types import meta_v1
        new.metadata = meta_v1.ObjectMeta()
    labels = dict(new.metadata.labels or {})
    if generation is not None:
        labels[DAEMON_SET_TEMPLATE_GENERATION_KEY] = str(generation)
    if hash_:
        labels[DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY] = hash_
    new.metadata.labels = labels
    return new


def _node_name_term(node_name: str) -> core_v1.NodeSelectorTerm:
    return core_v1.NodeSelectorTerm(match_fields=[core_v1.NodeSelectorRequirement(
        key=OBJECT_NAME_FIELD, operator="In", values=[node_name])])


def replace_daemon_set_pod_node_name_node_affinity(affinity: core_v1.Affinity | None,
                                                   node_name: str) -> core_v1.Affinity:
    """Pin the pod to node_name with a required node affinity on metadata.name, replacing any
    required terms (they were checked against this node already); the scheduler binds it.
    Upstream: ReplaceDaemonSetPodNodeNameNodeAffinity"""
    selector = core_v1.NodeSelector(node_selector_terms=[_node_name_term(node_name)])
    if affinity is None:
        return core_v1.Affinity(node_affinity=core_v1.NodeAffinity(
            required_during_scheduling_ignored_during_execution=selector))
    if affinity.node_affinity is None:
        affinity.node_affinity = core_v1.NodeAffinity(required_during_scheduling_ignored_during_execution=selector)
        return affinity
    na = affinity.node_affinity
    if na.required_during_scheduling_ignored_during_execution is None:
        na.required_during_scheduling_ignored_during_execution = selector
        return affinity
    na.required_during_scheduling_ignored_during_execution.node_selector_terms = [_node_name_term(node_name)]
    return affinity


def get_target_node_name(pod: core_v1.Pod) -> str:
    """The node a daemon pod is for: spec.nodeName, else its metadata.name node affinity.
    Upstream: GetTargetNodeName"""
    spec = pod.spec
    if spec is not None and spec.node_name:
        return spec.node_name
    na = spec.affinity.node_affinity if spec is not None and spec.affinity is not None else None
    required = na.required_during_scheduling_ignored_during_execution if na is not None else None
    if required is not None:
        for term in required.node_selector_terms or []:
            for r in term.match_fields or []:
                if r.key == OBJECT_NAME_FIELD and r.operator == "In" and len(r.values or []) == 1:
                    return (r.values or [""])[0]
    raise ValueError(f"no node name found for pod {pod.metadata.namespace}/{pod.metadata.name}")


def get_template_generation(ds: apps_v1.DaemonSet) -> int | None:
    """The deprecated template generation annotation; None when absent or unparseable.
    Upstream: GetTemplateGeneration"""
    value = (ds.metadata.annotations or {}).get(DEPRECATED_TEMPLATE_GENERATION)
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None


def is_pod_updated(pod: core_v1.Pod, hash_: str, template_generation: int | None) -> bool:
    """The pod carries the current revision hash (or, for old pods, template generation).
    Upstream: IsPodUpdated"""
    labels = pod.metadata.labels or {}
    template_matches = (template_generation is not None
                        and labels.get(DAEMON_SET_TEMPLATE_GENERATION_KEY) == str(template_generation))
    hash_matches = bool(hash_) and labels.get(DEFAULT_DAEMON_SET_UNIQUE_LABEL_KEY) == hash_
    return hash_matches or template_matches


def _rolling(ds: apps_v1.DaemonSet) -> apps_v1.RollingUpdateDaemonSet | None:
    strategy = ds.spec.update_strategy if ds.spec else None
    if strategy is None or strategy.type != "RollingUpdate":
        return None
    return strategy.rolling_update or apps_v1.RollingUpdateDaemonSet()


def surge_count(ds: apps_v1.DaemonSet, number_to_schedule: int) -> int:
    """maxSurge of number_to_schedule, rounded up; 0 without a rolling update. Upstream: SurgeCount"""
    r = _rolling(ds)
    if r is None or r.max_surge is None:
        return 0
    return get_scaled_value_from_int_or_percent(r.max_surge, number_to_schedule, True)


def unavailable_count(ds: apps_v1.DaemonSet, number_to_schedule: int) -> int:
    """maxUnavailable of number_to_schedule, rounded up. Upstream: UnavailableCount"""
    r = _rolling(ds)
    if r is None:
        return 0
    return get_scaled_value_from_int_or_percent(r.max_unavailable if r.max_unavailable is not None else 1,
                                                number_to_schedule, True)


def allows_surge(ds: apps_v1.DaemonSet) -> bool:
    """Upstream: AllowsSurge"""
    try:
        return surge_count(ds, 1) != 0
    except ValueError:
        return False
