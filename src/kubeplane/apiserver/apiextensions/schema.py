"""STUB of the structural schema library (owned by the "crschema" helper; the lead swaps in the
real module). Same public API; it accepts everything and changes nothing.

Agreed interface: structural_from, validate_structural, validate_crd_schema, validate, prune,
default (see /work/wt/SESSION8-13.md).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubeplane.api.errors import FieldError

Obj = dict[str, Any]


@dataclass
class Structural:
    """A structural schema (stub: the raw schema only)."""
    schema: Obj = field(default_factory=dict)


def structural_from(schema: Obj) -> Structural:
    return Structural(schema)


def validate_structural(schema: Obj, fld_path: str) -> list[FieldError]:
    return []


def validate_crd_schema(crd_version_schema: Obj, path: str) -> list[FieldError]:
    return []


def validate(s: Structural, obj: Obj) -> list[FieldError]:
    return []


def prune(obj: Obj, s: Structural, is_resource_root: bool = True) -> None:
    return None


def default(obj: Obj, s: Structural) -> None:
    return None
