"""Table columns and row printers of scheduling.k8s.io/v1 PriorityClasses and node.k8s.io/v1
RuntimeClasses.

Upstream: AddHandlers, printPriorityClass and printRuntimeClass
(pkg/printers/internalversion/printers.go).
"""
from __future__ import annotations

from typing import Any

from .columns import Column, _age, _col, _doc, _name
from .printers import Row, translate_timestamp_since

Obj = dict[str, Any]
_PC = "io.k8s.api.scheduling.v1.PriorityClass"


def priority_class_columns() -> list[Column]:
    return [
        _name(),
        _col("Value", "integer", _doc(_PC, "value")),
        _col("Global-Default", "boolean", _doc(_PC, "globalDefault")),
        _age(),
        _col("PreemptionPolicy", "string", _doc(_PC, "preemptionPolicy")),
    ]


def print_priority_class(obj: Obj, now: float) -> Row:
    meta = obj.get("metadata") or {}
    return [meta.get("name", ""), obj.get("value", 0), bool(obj.get("globalDefault", False)),
            translate_timestamp_since(meta.get("creationTimestamp"), now), obj.get("preemptionPolicy") or ""], None


def runtime_class_columns() -> list[Column]:
    # Upstream reads the description as ObjectMeta{}.SwaggerDoc()["handler"], which is "".
    return [_name(), _col("Handler", "string", ""), _age()]


def print_runtime_class(obj: Obj, now: float) -> Row:
    meta = obj.get("metadata") or {}
    return [meta.get("name", ""), obj.get("handler", ""),
            translate_timestamp_since(meta.get("creationTimestamp"), now)], None
