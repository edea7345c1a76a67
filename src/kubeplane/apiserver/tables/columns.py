"""Table column definitions per resource, exactly as upstream's AddHandlers registers them.

A kind's definition names its builder (ResourceDefinition.columns); column_definitions reads it.

Upstream: AddHandlers (pkg/printers/internalversion/printers.go)

Descriptions come from the same Go doc comments upstream reads through `SwaggerDoc()`; we
read them from the 1.37 schema. Where upstream quotes the deprecated extensions/v1beta1
types (ReplicaSet and Deployment columns) we use the apps/v1 text, the only one we ship.
Priority 1 marks a column kubectl shows only with `-o wide`; the server always sends them.
"""
from __future__ import annotations

import functools
from typing import Any

from kubeplane.api.schema import definitions

Column = dict[str, Any]

_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_CORE = "io.k8s.api.core.v1."
_APPS = "io.k8s.api.apps.v1."

CONTAINERS_DOC = "Names of each container in the template."
IMAGES_DOC = "Images referenced by each container in the template."


def _doc(definition: str, field: str) -> str:
    """The field's description: what upstream's `T{}.SwaggerDoc()[field]` returns."""
    return definitions()[definition]["properties"][field].get("description", "")


def _col(name: str, type_: str, description: str, *, fmt: str = "", priority: int = 0) -> Column:
    # Field order and presence as metav1.TableColumnDefinition encodes (no omitempty).
    return {"name": name, "type": type_, "format": fmt, "description": description,
            "priority": priority}


def _name() -> Column:
    return _col("Name", "string", _doc(_META, "name"), fmt="name")


def _age() -> Column:
    return _col("Age", "string", _doc(_META, "creationTimestamp"))


def pod_columns() -> list[Column]:
    return [
        _name(),
        _col("Ready", "string", "The aggregate readiness state of this pod for accepting traffic."),
        _col("Status", "string", "The aggregate status of the containers in this pod."),
        _col("Restarts", "string", "The number of times the containers in this pod have been "
             "restarted and when the last container in this pod has restarted."),
        _age(),
        _col("IP", "string", _doc(_CORE + "PodStatus", "podIP"), priority=1),
        _col("Node", "string", _doc(_CORE + "PodSpec", "nodeName"), priority=1),
        _col("Nominated Node", "string", _doc(_CORE + "PodStatus", "nominatedNodeName"), priority=1),
        _col("Readiness Gates", "string", _doc(_CORE + "PodSpec", "readinessGates"), priority=1),
    ]


def deployment_columns() -> list[Column]:
    return [
        _name(),
        _col("Ready", "string", "Number of the pod with ready state"),
        _col("Up-to-date", "string", _doc(_APPS + "DeploymentStatus", "updatedReplicas")),
        _col("Available", "string", _doc(_APPS + "DeploymentStatus", "availableReplicas")),
        _age(),
        _col("Containers", "string", CONTAINERS_DOC, priority=1),
        _col("Images", "string", IMAGES_DOC, priority=1),
        _col("Selector", "string", _doc(_APPS + "DeploymentSpec", "selector"), priority=1),
    ]


def replica_set_columns() -> list[Column]:
    return [
        _name(),
        _col("Desired", "integer", _doc(_APPS + "ReplicaSetSpec", "replicas")),
        _col("Current", "integer", _doc(_APPS + "ReplicaSetStatus", "replicas")),
        _col("Ready", "integer", _doc(_APPS + "ReplicaSetStatus", "readyReplicas")),
        _age(),
        _col("Containers", "string", CONTAINERS_DOC, priority=1),
        _col("Images", "string", IMAGES_DOC, priority=1),
        _col("Selector", "string", _doc(_APPS + "ReplicaSetSpec", "selector"), priority=1),
    ]


def node_columns() -> list[Column]:
    info, status = _CORE + "NodeSystemInfo", _CORE + "NodeStatus"
    return [
        _name(),
        _col("Status", "string", "The status of the node"),
        _col("Roles", "string", "The roles of the node"),
        _age(),
        _col("Version", "string", _doc(info, "kubeletVersion")),
        _col("Internal-IP", "string", _doc(status, "addresses"), priority=1),
        _col("External-IP", "string", _doc(status, "addresses"), priority=1),
        _col("OS-Image", "string", _doc(info, "osImage"), priority=1),
        _col("Kernel-Version", "string", _doc(info, "kernelVersion"), priority=1),
        _col("Container-Runtime", "string", _doc(info, "containerRuntimeVersion"), priority=1),
    ]


def event_columns() -> list[Column]:
    ev = _CORE + "Event"
    return [
        _col("Last Seen", "string", _doc(ev, "lastTimestamp")),
        _col("Type", "string", _doc(ev, "type")),
        _col("Reason", "string", _doc(ev, "reason")),
        _col("Object", "string", _doc(ev, "involvedObject")),
        _col("Subobject", "string", _doc(_CORE + "ObjectReference", "fieldPath"), priority=1),
        _col("Source", "string", _doc(ev, "source"), priority=1),
        _col("Message", "string", _doc(ev, "message")),
        _col("First Seen", "string", _doc(ev, "firstTimestamp"), priority=1),
        _col("Count", "string", _doc(ev, "count"), priority=1),
        _col("Name", "string", _doc(_META, "name"), fmt="name", priority=1),
    ]


def namespace_columns() -> list[Column]:
    return [_name(), _col("Status", "string", "The status of the namespace"), _age()]


def secret_columns() -> list[Column]:
    return [_name(), _col("Type", "string", _doc(_CORE + "Secret", "type")),
            _col("Data", "string", _doc(_CORE + "Secret", "data")), _age()]


def service_account_columns() -> list[Column]:
    return [_name(), _col("Secrets", "string", _doc(_CORE + "ServiceAccount", "secrets")), _age()]


def config_map_columns() -> list[Column]:
    return [_name(), _col("Data", "string", _doc(_CORE + "ConfigMap", "data")), _age()]


def service_columns() -> list[Column]:
    spec = _CORE + "ServiceSpec"
    return [
        _name(),
        _col("Type", "string", _doc(spec, "type")),
        _col("Cluster-IP", "string", _doc(spec, "clusterIP")),
        _col("External-IP", "string", _doc(spec, "externalIPs")),
        _col("Port(s)", "string", _doc(spec, "ports")),
        _age(),
        _col("Selector", "string", _doc(spec, "selector"), priority=1),
    ]


def lease_columns() -> list[Column]:
    return [_name(), _col("Holder", "string", _doc("io.k8s.api.coordination.v1.LeaseSpec",
                                                   "holderIdentity")), _age()]


def default_columns() -> list[Column]:
    """Upstream: defaultTableConvertor (k8s.io/apiserver/pkg/registry/rest/table.go)."""
    return [_name(), _col("Created At", "date", _doc(_META, "creationTimestamp"))]


@functools.cache
def column_definitions(group: str, resource: str, version: str = "") -> tuple[Column, ...]:
    """The columns for `resource` in `group` (the default NAME / CREATED AT for unknown ones),
    of `version` when given (a CRD's versions have their own).

    Cached and shared: callers copy before changing a column.
    """
    from ..registry import REGISTRY
    d = (version and REGISTRY.lookup(group, version, resource)) or REGISTRY.for_resource(group, resource)
    return tuple(d.columns() if d is not None else default_columns())
