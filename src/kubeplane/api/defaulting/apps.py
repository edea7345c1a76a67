"""apps/v1 StatefulSet and DaemonSet defaulting (Deployments and ReplicaSets: api/defaults.py).

Upstream: SetDefaults_StatefulSet, SetDefaults_DaemonSet (pkg/apis/apps/v1/defaults.go) and the
generated walk into the pod template (and, for StatefulSets, the volume claim templates:
SetDefaults_PersistentVolumeClaim/-Spec of pkg/apis/core/v1/defaults.go).
"""
from __future__ import annotations

from typing import Any

from .. import defaults
from ..defaults import _items, _sub

Obj = dict[str, Any]


def set_defaults_stateful_set(sts: Obj) -> None:
    """Upstream: SetDefaults_StatefulSet (MaxUnavailableStatefulSet is off by default: no
    rollingUpdate.maxUnavailable default)."""
    spec = _sub(sts, "spec")
    if not spec.get("podManagementPolicy"):
        spec["podManagementPolicy"] = "OrderedReady"
    strategy = _sub(spec, "updateStrategy")
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
        if strategy.get("rollingUpdate") is None:
            strategy["rollingUpdate"] = {}
    ru = strategy.get("rollingUpdate")
    if strategy["type"] == "RollingUpdate" and isinstance(ru, dict) and ru.get("partition") is None:
        ru["partition"] = 0
    retention = _sub(spec, "persistentVolumeClaimRetentionPolicy")
    for key in ("whenDeleted", "whenScaled"):
        if not retention.get(key):
            retention[key] = "Retain"
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    defaults.set_defaults_pod_template(spec)
    for pvc in _items(spec, "volumeClaimTemplates"):
        set_defaults_persistent_volume_claim(pvc)


def set_defaults_persistent_volume_claim(pvc: Obj) -> None:
    """Upstream: SetDefaults_PersistentVolumeClaim (phase Pending) and
    SetDefaults_PersistentVolumeClaimSpec (volumeMode Filesystem)."""
    spec = _sub(pvc, "spec")
    if not spec.get("volumeMode"):
        spec["volumeMode"] = "Filesystem"
    status = _sub(pvc, "status")
    if not status.get("phase"):
        status["phase"] = "Pending"


def set_defaults_daemon_set(ds: Obj) -> None:
    """Upstream: SetDefaults_DaemonSet"""
    spec = _sub(ds, "spec")
    strategy = _sub(spec, "updateStrategy")
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
    if strategy["type"] == "RollingUpdate":
        ru = _sub(strategy, "rollingUpdate")
        if ru.get("maxUnavailable") is None:
            ru["maxUnavailable"] = 1
        if ru.get("maxSurge") is None:
            ru["maxSurge"] = 0
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    defaults.set_defaults_pod_template(spec)
