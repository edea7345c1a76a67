"""Tables of resource.k8s.io/v1. Upstream: AddHandlers (pkg/printers/internalversion/printers.go):
printDeviceClass, printResourceClaim, printResourceClaimTemplate, printResourceSlice."""
from __future__ import annotations

from typing import Any

from .columns import Column, _age, _col, _name
from .printers import Row, translate_timestamp_since

Obj = dict[str, Any]


def name_age_columns() -> list[Column]:
    return [_name(), _age()]


def print_name_age(obj: Obj, now: float) -> Row:
    meta = obj.get("metadata") or {}
    return [meta.get("name", ""), translate_timestamp_since(meta.get("creationTimestamp"), now)], None


def claim_columns() -> list[Column]:
    return [_name(), _col("State", "string", "A summary of the current state (allocated, pending, reserved, etc.)."), _age()]


def resource_claim_state(claim: Obj) -> str:
    """Upstream: resourceClaimState"""
    meta, status = claim.get("metadata") or {}, claim.get("status") or {}
    states = []
    if meta.get("deletionTimestamp"):
        states.append("deleted")
    if not status.get("allocation"):
        if not meta.get("deletionTimestamp"):
            states.append("pending")
    else:
        states.append("allocated")
        if status.get("reservedFor"):
            states.append("reserved")
        elif meta.get("deletionTimestamp"):
            states.append("deallocating")
    return ",".join(states)


def print_claim(claim: Obj, now: float) -> Row:
    meta = claim.get("metadata") or {}
    return [meta.get("name", ""), resource_claim_state(claim),
            translate_timestamp_since(meta.get("creationTimestamp"), now)], None


def slice_columns() -> list[Column]:
    return [_name(), _col("Node", "string", "The node of this slice"),
            _col("Driver", "string", "The driver of this slice"),
            _col("Pool", "string", "The pool name of this slice"), _age()]


def print_slice(s: Obj, now: float) -> Row:
    meta, spec = s.get("metadata") or {}, s.get("spec") or {}
    return [meta.get("name", ""), spec.get("nodeName") or "<none>", spec.get("driver", ""),
            (spec.get("pool") or {}).get("name", ""),
            translate_timestamp_since(meta.get("creationTimestamp"), now)], None
