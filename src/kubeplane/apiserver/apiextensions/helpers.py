"""CRD conditions and version helpers. Upstream: apiextensions-apiserver
pkg/apihelpers/helpers.go (SetCRDCondition, FindCRDCondition, IsCRDConditionTrue,
CRDHasFinalizer, CRDRemoveFinalizer, IsStoredVersion, GetCRDStorageVersion)."""
from __future__ import annotations

import re
from typing import Any

Obj = dict[str, Any]

NAMES_ACCEPTED = "NamesAccepted"
ESTABLISHED = "Established"
TERMINATING = "Terminating"
CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"


def conditions(crd: Obj) -> list[Obj]:
    status = crd.get("status")
    conds = status.get("conditions") if isinstance(status, dict) else None
    return [c for c in conds if isinstance(c, dict)] if isinstance(conds, list) else []


def find_condition(crd: Obj, type_: str) -> Obj | None:
    return next((c for c in conditions(crd) if c.get("type") == type_), None)


def is_condition_true(crd: Obj, type_: str) -> bool:
    c = find_condition(crd, type_)
    return c is not None and c.get("status") == "True"


def set_condition(crd: Obj, type_: str, status: str, reason: str, message: str, now: str) -> None:
    """Upstream: SetCRDCondition — lastTransitionTime moves only when the status does."""
    existing = find_condition(crd, type_)
    if existing is None:
        st = crd.setdefault("status", {})
        st["conditions"] = [*conditions(crd), {"type": type_, "status": status, "lastTransitionTime": now,
                                               "reason": reason, "message": message}]
        return
    if existing.get("status") != status or not existing.get("lastTransitionTime"):
        existing["lastTransitionTime"] = now
    existing["status"], existing["reason"], existing["message"] = status, reason, message


def has_finalizer(crd: Obj, name: str) -> bool:
    return name in ((crd.get("metadata") or {}).get("finalizers") or [])


def remove_finalizer(crd: Obj, name: str) -> None:
    meta = crd["metadata"]
    rest = [f for f in meta.get("finalizers") or [] if f != name]
    if rest:
        meta["finalizers"] = rest
    else:
        meta.pop("finalizers", None)


def storage_version(crd: Obj) -> str:
    """Upstream: GetCRDStorageVersion (validation guarantees exactly one)."""
    for v in (crd.get("spec") or {}).get("versions") or []:
        if isinstance(v, dict) and v.get("storage"):
            return str(v.get("name", ""))
    return ""


def add_stored_version(crd: Obj) -> None:
    """The storage version joins status.storedVersions (upstream: the strategy's
    PrepareForCreate/PrepareForUpdate loop over spec.versions with IsStoredVersion)."""
    version = storage_version(crd)
    if not version:
        return
    status = crd.setdefault("status", {})
    stored = status.get("storedVersions")
    stored = stored if isinstance(stored, list) else []
    if version not in stored:
        status["storedVersions"] = [*stored, version]


def version_priority(v: str) -> tuple[int, int, int, str]:
    """A sort key in upstream's kube-aware version order (version.CompareKubeAwareVersionStrings,
    highest first): GA before beta before alpha, higher numbers first, then anything else
    alphabetically."""
    m = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", v)
    if not m:
        return (3, 0, 0, v)
    major, stage, minor = int(m.group(1)), m.group(2), int(m.group(3) or 0)
    return ({None: 0, "beta": 1, "alpha": 2}[stage], -major, -minor, v)
