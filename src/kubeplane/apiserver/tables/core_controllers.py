"""Table columns and rows of ReplicationControllers and PodTemplates.

Upstream: AddHandlers, printReplicationController, printPodTemplate
(pkg/printers/internalversion/printers.go).
"""
from __future__ import annotations

from typing import Any

from .columns import CONTAINERS_DOC, IMAGES_DOC, Column, _age, _col, _doc, _name
from .printers import Row, format_labels, layout_container_cells, translate_timestamp_since

Obj = dict[str, Any]
_CORE = "io.k8s.api.core.v1."


def replication_controller_columns() -> list[Column]:
    spec, status = _CORE + "ReplicationControllerSpec", _CORE + "ReplicationControllerStatus"
    return [
        _name(),
        _col("Desired", "integer", _doc(spec, "replicas")),
        _col("Current", "integer", _doc(status, "replicas")),
        _col("Ready", "integer", _doc(status, "readyReplicas")),
        _age(),
        _col("Containers", "string", CONTAINERS_DOC, priority=1),
        _col("Images", "string", IMAGES_DOC, priority=1),
        _col("Selector", "string", _doc(spec, "selector"), priority=1),
    ]


def print_replication_controller(rc: Obj, now: float) -> Row:
    """Upstream: printReplicationController"""
    meta, spec, status = rc.get("metadata") or {}, rc.get("spec") or {}, rc.get("status") or {}
    names, images = layout_container_cells(((spec.get("template") or {}).get("spec") or {}).get("containers"))
    return [meta.get("name", ""), spec.get("replicas", 1), status.get("replicas", 0), status.get("readyReplicas", 0),
            translate_timestamp_since(meta.get("creationTimestamp"), now),
            names, images, format_labels(spec.get("selector"))], None


def pod_template_columns() -> list[Column]:
    return [
        _name(),
        _col("Containers", "string", CONTAINERS_DOC),
        _col("Images", "string", IMAGES_DOC),
        _col("Pod Labels", "string", "The labels for the pod template."),
    ]


def print_pod_template(pt: Obj, now: float) -> Row:
    """Upstream: printPodTemplate (no Age column)."""
    template = pt.get("template") or {}
    names, images = layout_container_cells((template.get("spec") or {}).get("containers"))
    return [(pt.get("metadata") or {}).get("name", ""), names, images,
            format_labels((template.get("metadata") or {}).get("labels"))], None
