"""core/v1 ReplicationController and PodTemplate defaulting (the core kinds served since issue
11 that carry a pod template; the other new core kinds: api/defaulting/core.py).

Upstream: SetDefaults_ReplicationController (pkg/apis/core/v1/defaults.go) and the generated
walk into the pod templates (SetDefaults_PodSpec and the per-field defaulters, api/defaults.py).
"""
from __future__ import annotations

from typing import Any

from .. import defaults
from ..defaults import _sub

Obj = dict[str, Any]


def set_defaults_replication_controller(rc: Obj) -> None:
    """Upstream: SetDefaults_ReplicationController — the selector and the object's labels
    default to the template's labels; replicas to 1."""
    spec = _sub(rc, "spec")
    template = spec.get("template")
    labels = ((template.get("metadata") or {}).get("labels")) if isinstance(template, dict) else None
    if labels:
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        meta = _sub(rc, "metadata")
        if not meta.get("labels"):
            meta["labels"] = dict(labels)
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    if isinstance(template, dict):       # a nil template pointer stays nil
        defaults.set_defaults_pod_spec(_sub(template, "spec"))


def set_defaults_pod_template(pt: Obj) -> None:
    """The generated SetObjectDefaults_PodTemplate: the template's pod spec."""
    defaults.set_defaults_pod_spec(_sub(_sub(pt, "template"), "spec"))
