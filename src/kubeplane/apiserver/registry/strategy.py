"""Strategies: the hooks upstream's generic registry calls around every write.

Upstream: pkg/registry/<group>/<resource>/strategy.go (PrepareForCreate, PrepareForUpdate,
the status strategies' ResetFields, AllowCreateOnUpdate, CheckGracefulDeleteStrategy).
"""
from __future__ import annotations

from typing import Any

from ...api.qos import compute_pod_qos
from ...api.resources import ResourceInfo

Obj = dict[str, Any]


class Strategy:
    """The default behaviour: no status subresource, no generation, no create-on-update."""

    has_status = False              # a /status subresource splits spec and status writes
    sets_generation = False         # metadata.generation tracks spec changes
    generation_watches_annotations = False
    allow_create_on_update = False
    status_keeps_labels = False     # /status writes cannot change labels (apps strategies)

    def prepare_for_create(self, obj: Obj) -> None:
        """Upstream: PrepareForCreate — clear status a client may not set."""
        if self.has_status:
            obj.pop("status", None)
        if self.sets_generation:
            obj["metadata"]["generation"] = 1

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        """Upstream: PrepareForUpdate — the main resource cannot write status."""
        if self.has_status:
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
        if self.sets_generation:
            gen = old["metadata"].get("generation", 0)
            changed = new.get("spec") != old.get("spec")
            if self.generation_watches_annotations:
                # Semantic.DeepEqual: an empty map equals an absent one.
                changed = changed or (new["metadata"].get("annotations") or {}) != (old["metadata"].get("annotations") or {})
            new["metadata"]["generation"] = gen + 1 if changed else gen

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        """Upstream: <kind>StatusStrategy.PrepareForUpdate — /status cannot write spec."""
        if "spec" in old:
            new["spec"] = old["spec"]
        else:
            new.pop("spec", None)
        if self.status_keeps_labels:
            _copy_meta(new, old, "labels")
        new["metadata"]["generation"] = old["metadata"].get("generation")
        if new["metadata"]["generation"] is None:
            del new["metadata"]["generation"]

    graceful = False                # implements RESTGracefulDeleteStrategy (pods)

    def check_graceful_delete(self, obj: Obj, requested: int | None) -> int:
        """Upstream: CheckGracefulDelete — the grace period (seconds) of a graceful strategy."""
        return 0


def _copy_meta(new: Obj, old: Obj, field: str) -> None:
    if field in old["metadata"]:
        new["metadata"][field] = old["metadata"][field]
    else:
        new["metadata"].pop(field, None)


class AppsStrategy(Strategy):
    """Deployments and ReplicaSets (pkg/registry/apps/{deployment,replicaset}/strategy.go)."""

    has_status = True
    sets_generation = True
    status_keeps_labels = True


class DeploymentStrategy(AppsStrategy):
    # Annotations are copied to ReplicaSets, so changing them is a spec change (strategy.go).
    generation_watches_annotations = True


class PodStrategy(Strategy):
    has_status = True

    def prepare_for_create(self, obj: Obj) -> None:
        obj["status"] = {"phase": "Pending", "qosClass": pod_qos_class(obj.get("spec") or {})}

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_update(new, old)

    graceful = True

    def check_graceful_delete(self, obj: Obj, requested: int | None) -> int:
        """Upstream: podStrategy.CheckGracefulDelete.

        The requested period, else spec.terminationGracePeriodSeconds (else 0); unscheduled and
        finished pods go at once (0); a negative period becomes 1. A pod on a node thus waits
        for its kubelet, which makes the final delete with grace 0.
        """
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        period = requested if requested is not None else int(spec.get("terminationGracePeriodSeconds") or 0)
        if not spec.get("nodeName") or status.get("phase") in ("Failed", "Succeeded"):
            period = 0
        return 1 if period < 0 else period


def pod_qos_class(spec: Obj) -> str:
    """Upstream: qos.ComputePodQOS — BestEffort, Guaranteed or Burstable (api/qos.py)."""
    return compute_pod_qos(spec)


class StatusStrategy(Strategy):
    """Kinds with a plain /status subresource (nodes, namespaces, services)."""

    has_status = True

    def prepare_for_create(self, obj: Obj) -> None:
        pass                      # nodes and namespaces may be created with status


class NamespaceStrategy(StatusStrategy):
    def prepare_for_create(self, obj: Obj) -> None:
        """Upstream: namespaceStrategy.PrepareForCreate — Active, with the `kubernetes` finalizer."""
        from ...api.defaults import namespace_finalizers_on_create
        obj["status"] = {"phase": "Active"}
        namespace_finalizers_on_create(obj)


class ServiceStrategy(StatusStrategy):
    allow_create_on_update = True

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_update(new, old)
        from .core.service.strategy import drop_type_dependent_fields
        drop_type_dependent_fields(new, old)


class CreateOnUpdateStrategy(Strategy):
    allow_create_on_update = True


_STRATEGIES: dict[tuple[str, str], Strategy] = {
    ("apps", "deployments"): DeploymentStrategy(),
    ("apps", "replicasets"): AppsStrategy(),
    ("", "pods"): PodStrategy(),
    ("", "nodes"): StatusStrategy(),
    ("", "namespaces"): NamespaceStrategy(),
    ("", "services"): ServiceStrategy(),
    ("", "events"): CreateOnUpdateStrategy(),
    ("events.k8s.io", "events"): CreateOnUpdateStrategy(),
    ("", "serviceaccounts"): CreateOnUpdateStrategy(),
    ("coordination.k8s.io", "leases"): CreateOnUpdateStrategy(),
}
_DEFAULT = Strategy()


def strategy_for(ri: ResourceInfo) -> Strategy:
    return _STRATEGIES.get((ri.group, ri.plural), _DEFAULT)
