"""The estimated cost of a CRD's rules when it is written: each rule's, times how often its
node may be in one object, against StaticEstimatedCostLimit; all of them against
StaticEstimatedCRDCostLimit.

Upstream: the cost checks of ValidateCustomResourceDefinitionOpenAPISchema and
validateCustomResourceDefinitionValidation (apiextensions-apiserver pkg/apis/apiextensions/
validation/validation.go: getExpressionCost, getCostErrorMessage) and CELSchemaContext
(cel_validation.go: MaxCardinality, the product of the maxItems/maxProperties of the lists and
maps above a node, unbounded if one has none; TotalCost with its four most expensive rules).
A rule's cost is cel-go's estimate with `self` of the node's declared type (decltype.py:
every string, list and map as long as its schema allows, or as a request can hold) times the
node's cardinality — when that is unbounded, as many of the node's smallest values as fit in a
request (MaxCardinality). A messageExpression's cost is not multiplied.
"""
from __future__ import annotations

from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

from ..schema.structural import structural_from
from ..schema.validation import child, index, key
from .compilation import STATIC_ESTIMATED_COST_LIMIT, compile_rules, exceeds

Obj = dict[str, Any]
STATIC_ESTIMATED_CRD_COST_LIMIT = 100_000_000
UINT64_MAX = 2 ** 64 - 1
MOST_EXPENSIVE = 4


class TotalCost:
    """Upstream: TotalCost — the sum of every rule's cost, and the four dearest rules of at
    least 1 % of the limit."""

    def __init__(self) -> None:
        self.total = 0
        self.most_expensive: list[tuple[int, str]] = []

    def observe(self, path: str, cost: int) -> None:
        self.total = min(self.total + cost, UINT64_MAX)
        if cost < STATIC_ESTIMATED_CRD_COST_LIMIT // 100:
            return
        self.most_expensive.append((cost, path))
        self.most_expensive.sort(key=lambda c: -c[0])       # stable: the first seen first among equals
        del self.most_expensive[MOST_EXPENSIVE:]


def check_costs(schema: Obj, path: str) -> list[FieldError]:
    """The cost errors of a version's openAPIV3Schema (at `path`, structural and valid):
    `estimated rule cost exceeds budget` per rule, then the total's."""
    total = TotalCost()
    errs: list[FieldError] = []
    _walk(schema, path, 1, True, total, errs)
    if total.total > STATIC_ESTIMATED_CRD_COST_LIMIT:
        for _, where in total.most_expensive:
            errs.append(errors.forbidden(where, "contributed to estimated rule cost total exceeding cost limit for "
                                                "entire OpenAPIv3 schema"))
        errs.append(errors.forbidden(path, exceeds("x-kubernetes-validations estimated rule cost total for entire "
                                                   "OpenAPIv3 schema", total.total, STATIC_ESTIMATED_CRD_COST_LIMIT)))
    return errs


def _walk(schema: Any, p: str, cardinality: int | None, root: bool, total: TotalCost,
          errs: list[FieldError], depth: int = 0) -> None:
    """cardinality: the node's MaxCardinality, None when unbounded."""
    if not isinstance(schema, dict) or depth > 64:
        return
    if isinstance(schema.get("x-kubernetes-validations"), list) and schema["x-kubernetes-validations"]:
        _rules(schema, p, cardinality, root or schema.get("x-kubernetes-embedded-resource") is True, total, errs)
    factor = _max_elements(schema)
    inner = cardinality * factor if cardinality is not None and factor is not None else None
    props = schema.get("properties")
    if isinstance(props, dict):
        for name, prop in props.items():
            _walk(prop, key(child(p, "properties"), name), inner, False, total, errs, depth + 1)
    ap = schema.get("additionalProperties")
    if isinstance(ap, dict):
        _walk(ap, child(p, "additionalProperties"), inner, False, total, errs, depth + 1)
    items = schema.get("items")
    if isinstance(items, dict):
        _walk(items, child(p, "items"), inner, False, total, errs, depth + 1)


def _max_elements(schema: Obj) -> int | None:
    """Upstream: extractMaxElements — how many children a value of the schema has at most
    (None: unbounded)."""
    t = schema.get("type")
    if t == "object":
        if schema.get("additionalProperties") is not None and schema.get("additionalProperties") is not False:
            n = schema.get("maxProperties")
            return max(n, 0) if isinstance(n, int) else None
        return 1
    if t == "array":
        n = schema.get("maxItems")
        return max(n, 0) if isinstance(n, int) else None
    return 1


def _rules(schema: Obj, p: str, cardinality: int | None, resource_root: bool, total: TotalCost,
           errs: list[FieldError]) -> None:
    s = structural_from(schema)
    if s.conversion_errors:
        return
    for i, cr in enumerate(compile_rules(s, None, resource_root)):
        rp = index(child(p, "x-kubernetes-validations"), i)
        if cr.program is not None:
            cost = _saturate(cr.max_cost * (cardinality if cardinality is not None else cr.max_cardinality))
            if cost > STATIC_ESTIMATED_COST_LIMIT:
                errs.append(errors.forbidden(child(rp, "rule"), exceeds("estimated rule cost", cost)))
            total.observe(child(rp, "rule"), cost)
        if cr.message_program is not None:
            if cr.message_max_cost > STATIC_ESTIMATED_COST_LIMIT:
                errs.append(errors.forbidden(child(rp, "messageExpression"),
                                             exceeds("estimated messageExpression cost", cr.message_max_cost)))
            total.observe(child(rp, "messageExpression"), cr.message_max_cost)


def _saturate(v: int) -> int:
    return min(v, UINT64_MAX)
