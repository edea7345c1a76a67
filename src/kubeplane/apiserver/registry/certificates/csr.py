"""CertificateSigningRequests: spec written once (its requestor from the request's user), the
status only through /status (not the approval conditions) and /approval (only them).
Upstream: pkg/registry/certificates/certificates/strategy.go."""
from __future__ import annotations

from datetime import datetime, timezone

from ....api import labels
from ....api.defaulting import certificates as defaulting
from ....api.resources import STATUS, Subresource
from ....api.validation import certificates as validation
from ...authentication.user import UserInfo
from ...tables import certificates as tables
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import Obj, Strategy

APPROVAL_TYPES = ("Approved", "Denied")


def _now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def populate_condition_timestamps(new: Obj, old: Obj) -> None:
    """Upstream: populateConditionTimestamps — lastUpdateTime now when unset; lastTransitionTime
    the old condition's when the status did not change, else now."""
    now = _now()
    old_conds = {c.get("type"): c for c in (old.get("status") or {}).get("conditions") or []}
    for c in (new.get("status") or {}).get("conditions") or []:
        if not isinstance(c, dict):
            continue
        c.setdefault("lastUpdateTime", now)
        if not c.get("lastTransitionTime"):
            prev = old_conds.get(c.get("type"))
            if prev and prev.get("status") == c.get("status") and prev.get("lastTransitionTime"):
                c["lastTransitionTime"] = prev["lastTransitionTime"]
            else:
                c["lastTransitionTime"] = c.get("lastUpdateTime") or now


def preserve_condition_instances(new: Obj, old: Obj, t: str) -> None:
    """Upstream: preserveConditionInstances — with as many conditions of type t as before, they
    stay the old ones; a different count is left for validation to refuse."""
    old_conds = [c for c in (old.get("status") or {}).get("conditions") or [] if c.get("type") == t]
    new_conds = (new.get("status") or {}).get("conditions") or []
    if len(old_conds) != sum(1 for c in new_conds if c.get("type") == t):
        return
    it = iter(old_conds)
    new["status"]["conditions"] = [next(it) if c.get("type") == t else c for c in new_conds]


class CSRStrategy(Strategy):
    has_status = True

    def prepare_for_create(self, obj: Obj) -> None:
        """Upstream: csrStrategy.PrepareForCreate — no status; the requestor is set below."""
        obj.pop("status", None)

    def prepare_for_create_by(self, obj: Obj, user: UserInfo) -> None:
        """Upstream: csrStrategy.PrepareForCreate — the requesting user's name, uid, groups and extra."""
        spec = obj.setdefault("spec", {})
        for k in ("username", "uid", "groups", "extra"):
            spec.pop(k, None)
        spec.update(user.to_dict())

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        """Upstream: csrStrategy.PrepareForUpdate — neither spec nor status change."""
        for part in ("spec", "status"):
            if part in old:
                new[part] = old[part]
            else:
                new.pop(part, None)

    def prepare_for_status_update(self, new: Obj, old: Obj) -> None:
        """Upstream: csrStatusStrategy.PrepareForUpdate — spec stays; the approval conditions
        stay the old ones (adding or removing one is refused by validation)."""
        new["spec"] = old.get("spec")
        for t in APPROVAL_TYPES:
            preserve_condition_instances(new, old, t)
        populate_condition_timestamps(new, old)

    def prepare_for_subresource_update(self, subresource: str, new: Obj, old: Obj) -> None:
        """Upstream: csrApprovalStrategy.PrepareForUpdate — only the conditions change."""
        new["spec"] = old.get("spec")
        conditions = (new.get("status") or {}).get("conditions")
        new["status"] = {k: v for k, v in (old.get("status") or {}).items() if k != "conditions"}
        if conditions:
            new["status"]["conditions"] = conditions
        populate_condition_timestamps(new, old)
        if not new["status"]:
            del new["status"]


CSRS = register(ResourceDefinition(
    "certificates.k8s.io", "v1", "CertificateSigningRequest", "certificatesigningrequests",
    "certificatesigningrequest", False, "io.k8s.api.certificates.v1.CertificateSigningRequest",
    short_names=("csr",),
    # /approval: the object through its approval strategy, served as /status is (upstream's ApprovalREST)
    subresources=(Subresource("approval", "CertificateSigningRequest", ("get", "patch", "update"),
                              handler="status"),
                  STATUS("CertificateSigningRequest")),
    strategy=CSRStrategy(),
    defaulter=defaulting.set_defaults_csr, defaults_outside_spec=True,
    validate=validation.validate_csr, validate_update=validation.validate_csr_update,
    validate_status_update=validation.validate_csr_status_update,
    columns=tables.csr_columns, printer=tables.print_csr,
    field_selectors={**labels.NAME_FIELD, "spec.signerName": labels.path("spec", "signerName")},
))
