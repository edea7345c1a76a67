"""Tables of flowcontrol.apiserver.k8s.io/v1. Upstream: AddHandlers (pkg/printers/internalversion/printers.go):
printFlowSchema, printPriorityLevelConfiguration."""
from __future__ import annotations

from typing import Any

from .columns import Column, _age, _col, _name
from .printers import Row, translate_timestamp_since

Obj = dict[str, Any]


def flow_schema_columns() -> list[Column]:
    return [
        _name(),
        _col("PriorityLevel", "string", "The name of the priority level this FlowSchema uses"),
        _col("MatchingPrecedence", "string", "The matching precedence of this FlowSchema"),
        _col("DistinguisherMethod", "string", "DistinguisherMethod of this FlowSchema"),
        _age(),
        _col("MissingPL", "string", "references a broken or non-existent PriorityLevelConfiguration"),
    ]


def print_flow_schema(fs: Obj, now: float) -> Row:
    meta, spec = fs.get("metadata") or {}, fs.get("spec") or {}
    dm = (spec.get("distinguisherMethod") or {}).get("type") or "<none>"
    missing = "?"
    for c in (fs.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Dangling":
            missing = c.get("status") or "?"
    return [meta.get("name", ""), (spec.get("priorityLevelConfiguration") or {}).get("name", ""),
            spec.get("matchingPrecedence", 0), dm,
            translate_timestamp_since(meta.get("creationTimestamp"), now), missing], None


def priority_level_columns() -> list[Column]:
    return [
        _name(),
        _col("Type", "string", "The type of the PriorityLevelConfiguration"),
        _col("NominalConcurrencyShares", "string", "Nominal concurrency shares of this priority level"),
        _col("Queues", "string", "Number of queues of this priority level"),
        _col("HandSize", "string", "Hand size of this priority level"),
        _col("QueueLengthLimit", "string", "Queue length limit of this priority level"),
        _age(),
    ]


def print_priority_level(plc: Obj, now: float) -> Row:
    meta, spec = plc.get("metadata") or {}, plc.get("spec") or {}
    ncs: Any = "<none>"
    queues: Any = "<none>"
    hand: Any = "<none>"
    qll: Any = "<none>"
    limited = spec.get("limited")
    if isinstance(limited, dict):
        ncs = limited.get("nominalConcurrencyShares", 0)
        q = (limited.get("limitResponse") or {}).get("queuing")
        if isinstance(q, dict):
            queues, hand, qll = q.get("queues", 0), q.get("handSize", 0), q.get("queueLengthLimit", 0)
    return [meta.get("name", ""), spec.get("type", ""), ncs, queues, hand, qll,
            translate_timestamp_since(meta.get("creationTimestamp"), now)], None
