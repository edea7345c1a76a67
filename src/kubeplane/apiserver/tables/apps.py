"""Table columns and rows of StatefulSets, DaemonSets and ControllerRevisions (Deployments and
ReplicaSets: columns.py/printers.py).

Upstream: AddHandlers, printStatefulSet, printDaemonSet, printControllerRevision
(pkg/printers/internalversion/printers.go).
"""
from __future__ import annotations

from typing import Any

from .columns import CONTAINERS_DOC, IMAGES_DOC, Column, _age, _col, _doc, _name
from .printers import Row, format_label_selector, format_labels, layout_container_cells, translate_timestamp_since

Obj = dict[str, Any]
_APPS = "io.k8s.api.apps.v1."


def _template_containers(spec: Obj) -> tuple[str, str]:
    return layout_container_cells(((spec.get("template") or {}).get("spec") or {}).get("containers"))


def stateful_set_columns() -> list[Column]:
    return [
        _name(),
        _col("Ready", "string", "Number of the pod with ready state"),
        _age(),
        _col("Containers", "string", CONTAINERS_DOC, priority=1),
        _col("Images", "string", IMAGES_DOC, priority=1),
    ]


def print_stateful_set(sts: Obj, now: float) -> Row:
    """Upstream: printStatefulSet"""
    meta, spec, status = sts.get("metadata") or {}, sts.get("spec") or {}, sts.get("status") or {}
    names, images = _template_containers(spec)
    return [meta.get("name", ""), f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}",
            translate_timestamp_since(meta.get("creationTimestamp"), now), names, images], None


def daemon_set_columns() -> list[Column]:
    status = _APPS + "DaemonSetStatus"
    return [
        _name(),
        _col("Desired", "integer", _doc(status, "desiredNumberScheduled")),
        _col("Current", "integer", _doc(status, "currentNumberScheduled")),
        _col("Ready", "integer", _doc(status, "numberReady")),
        _col("Up-to-date", "integer", _doc(status, "updatedNumberScheduled")),
        _col("Available", "integer", _doc(status, "numberAvailable")),
        _col("Node Selector", "string", _doc("io.k8s.api.core.v1.PodSpec", "nodeSelector")),
        _age(),
        _col("Containers", "string", CONTAINERS_DOC, priority=1),
        _col("Images", "string", IMAGES_DOC, priority=1),
        _col("Selector", "string", _doc(_APPS + "DaemonSetSpec", "selector"), priority=1),
    ]


def print_daemon_set(ds: Obj, now: float) -> Row:
    """Upstream: printDaemonSet"""
    meta, spec, status = ds.get("metadata") or {}, ds.get("spec") or {}, ds.get("status") or {}
    names, images = _template_containers(spec)
    node_selector = ((spec.get("template") or {}).get("spec") or {}).get("nodeSelector")
    return [meta.get("name", ""), status.get("desiredNumberScheduled", 0), status.get("currentNumberScheduled", 0),
            status.get("numberReady", 0), status.get("updatedNumberScheduled", 0), status.get("numberAvailable", 0),
            format_labels(node_selector), translate_timestamp_since(meta.get("creationTimestamp"), now),
            names, images, format_label_selector(spec.get("selector"))], None


def controller_revision_columns() -> list[Column]:
    return [
        _name(),
        _col("Controller", "string", "Controller of the object"),
        _col("Revision", "string", _doc(_APPS + "ControllerRevision", "revision")),
        _age(),
    ]


def controller_of(meta: Obj) -> Obj | None:
    """Upstream: metav1.GetControllerOf"""
    return next((r for r in meta.get("ownerReferences") or [] if isinstance(r, dict) and r.get("controller")), None)


def print_controller_revision(cr: Obj, now: float) -> Row:
    """Upstream: printControllerRevision — the controller as formatResourceName prints it
    with its kind: lower-cased "kind.group/name" ("statefulset.apps/web")."""
    meta = cr.get("metadata") or {}
    ref = controller_of(meta)
    controller = "<none>"
    if ref is not None:
        api_version = ref.get("apiVersion") or ""
        group = api_version.split("/")[0] if "/" in api_version else ""
        kind = ref.get("kind", "") + (f".{group}" if group else "")
        controller = f"{kind.lower()}/{ref.get('name', '')}"
    return [meta.get("name", ""), controller, cr.get("revision", 0),
            translate_timestamp_since(meta.get("creationTimestamp"), now)], None
