"""Strategies: the hooks upstream's generic registry calls around every write.

The base classes here; each kind's own strategy is in its module (registry/<group>/<kind>.py).

Upstream: pkg/registry/<group>/<resource>/strategy.go (PrepareForCreate, PrepareForUpdate,
the status strategies' ResetFields, AllowCreateOnUpdate, CheckGracefulDeleteStrategy).
"""
from __future__ import annotations

from typing import Any

from ...api.qos import compute_pod_qos
from ..authentication.user import UserInfo

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
        self.keep_stored_status(new, old)
        if self.sets_generation:
            gen = old["metadata"].get("generation", 0)
            changed = new.get("spec") != old.get("spec")
            if self.generation_watches_annotations:
                # Semantic.DeepEqual: an empty map equals an absent one.
                changed = changed or (new["metadata"].get("annotations") or {}) != (old["metadata"].get("annotations") or {})
            new["metadata"]["generation"] = gen + 1 if changed else gen

    def keep_stored_status(self, new: Obj, old: Obj) -> None:
        """With a /status subresource, a write of the main resource keeps the stored status."""
        if self.has_status:
            if "status" in old:
                new["status"] = old["status"]
            else:
                new.pop("status", None)
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

    def prepare_for_create_by(self, obj: Obj, user: UserInfo) -> None:
        """After prepare_for_create, with the requesting user's name (CertificateSigningRequests
        record their requestor, from the request's user info upstream)."""

    def prepare_for_subresource_update(self, subresource: str, new: Obj, old: Obj) -> None:
        """A write to a subresource other than status with its own strategy (CSR /approval)."""
        self.prepare_for_update(new, old)

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


def pod_qos_class(spec: Obj) -> str:
    """Upstream: qos.ComputePodQOS — BestEffort, Guaranteed or Burstable (api/qos.py)."""
    return compute_pod_qos(spec)


class StatusStrategy(Strategy):
    """Kinds with a plain /status subresource (nodes, namespaces, services)."""

    has_status = True

    def prepare_for_create(self, obj: Obj) -> None:
        pass                      # nodes and namespaces may be created with status


class CreateOnUpdateStrategy(Strategy):
    """Kinds a PUT may create (events, service accounts, leases): AllowCreateOnUpdate true."""
    allow_create_on_update = True


DEFAULT = Strategy()
