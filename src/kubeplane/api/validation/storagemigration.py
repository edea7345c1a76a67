"""storagemigration.k8s.io/v1 validation. Upstream: pkg/apis/storagemigration/validation/validation.go
(spec.resource required and immutable; status conditions not checked here)."""
from __future__ import annotations

from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

from . import meta as m
from .names import name_is_dns_subdomain

Obj = dict[str, Any]


def validate_storage_version_migration(svm: Obj) -> list[FieldError]:
    errs = m.validate_object_meta(svm.get("metadata") or {}, False, name_is_dns_subdomain)
    res = (svm.get("spec") or {}).get("resource") or {}
    if not res.get("resource"):
        errs.append(errors.required("spec.resource.resource", "resource is required"))
    return errs


def validate_storage_version_migration_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    errs += [e for e in validate_storage_version_migration(new) if not e.field.startswith("metadata.")]
    return errs + m.immutable((new.get("spec") or {}).get("resource"), (old.get("spec") or {}).get("resource"),
                              "spec.resource")
