"""Cost estimation of a compiled expression, as cel-go's checker estimates it, and the size
bound that keeps an evaluation from building huge strings or lists.

Upstream: cel-go checker/cost.go (CostEstimator: per-node cost ranges, size estimates, the
comprehension rule cost(range) + size(range) * (cost(condition) + cost(step))), the constants of
common/cost.go, and Kubernetes' library costs (pkg/cel/library/cost.go). The C++ runtime exposes
neither an estimator nor a runtime cost tracker, so the checked AST is read back from the
compiled expression (its serialized cel.expr.CheckedExpr, decoded by the small protobuf reader
below) and walked here.

estimate(ast, sizes) -> (cost, size) with each variable's size bound (a CRD schema's maxLength or
maxItems for issue 13, or the request's byte size for an admission evaluation); an unknown size
is UNBOUNDED, as cel-go's. The runtime check (compiler.evaluate) uses the estimate with the
actual object's size for an expression that can build strings or lists (concatenation,
replace, join, format, map): such an expression whose estimate exceeds the per-call limit fails
before it runs, with upstream's `operation cancelled: actual cost limit exceeded`; others are
bounded by the runtime's iteration budget.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

UNBOUNDED = 2 ** 63 - 1
STRING_TRAVERSAL_COST_FACTOR = 0.1
REGEX_STRING_LENGTH_COST_FACTOR = 0.25
LIST_CREATE_BASE_COST = 10
MAP_CREATE_BASE_COST = 30
STRUCT_CREATE_BASE_COST = 40
SELECT_AND_IDENT_COST = 1

# Functions whose result can be larger than their inputs: an expression without them cannot
# grow data beyond its inputs and the literals.
GROWING = frozenset({"_+_", "replace", "join", "format", "map", "filter", "quote", "lowerAscii", "upperAscii",
                     "split", "findAll", "getQuery", "base64.encode", "base64.decode", "strings.quote"})


# --- a protobuf wire-format reader (just enough for cel.expr.CheckedExpr) --------------------

def _varint(b: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        c = b[i]
        i += 1
        result |= (c & 0x7F) << shift
        if c < 0x80:
            return result, i
        shift += 7


def fields(b: bytes) -> list[tuple[int, Any]]:
    """(field number, value) pairs: an int for varint/fixed fields, bytes for length-delimited."""
    out: list[tuple[int, Any]] = []
    i, n = 0, len(b)
    while i < n:
        key, i = _varint(b, i)
        num, wire = key >> 3, key & 7
        v: int | bytes
        if wire == 0:
            v, i = _varint(b, i)
        elif wire == 1:
            v, i = int.from_bytes(b[i:i + 8], "little"), i + 8
        elif wire == 2:
            ln, i = _varint(b, i)
            v, i = b[i:i + ln], i + ln
        elif wire == 5:
            v, i = int.from_bytes(b[i:i + 4], "little"), i + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        out.append((num, v))
    return out


def _one(fs: list[tuple[int, Any]], num: int, default: Any = None) -> Any:
    for n, v in fs:
        if n == num:
            return v
    return default


@dataclass(slots=True)
class Node:
    """One cel.expr.Expr: kind is const, ident, select, call, list, struct or comprehension."""
    kind: str
    name: str = ""                    # ident name, select field, call function, iter var
    args: list[Node] = field(default_factory=list)   # call: target first (member) then args
    value: Any = None                 # const value; select: test_only
    member: bool = False
    comp: dict[str, Node] = field(default_factory=dict)


_CONST = {1: "null", 2: "bool", 3: "int", 4: "uint", 5: "double", 6: "string", 7: "bytes"}


def _expr(b: bytes) -> Node:
    fs = fields(b)
    for num, v in fs:
        if num == 3:      # const_expr
            cf = fields(v)
            kind, raw = (cf[0] if cf else (1, 0))
            return Node("const", value=(_CONST.get(kind, "?"), raw))
        if num == 4:      # ident_expr
            return Node("ident", name=_one(fields(v), 1, b"").decode())
        if num == 5:      # select_expr
            sf = fields(v)
            return Node("select", name=_one(sf, 2, b"").decode(), args=[_expr(_one(sf, 1, b""))],
                        value=bool(_one(sf, 3, 0)))
        if num == 6:      # call_expr
            cf = fields(v)
            target = _one(cf, 1)
            args = [_expr(a) for n, a in cf if n == 3]
            if target is not None:
                return Node("call", name=_one(cf, 2, b"").decode(), args=[_expr(target), *args], member=True)
            return Node("call", name=_one(cf, 2, b"").decode(), args=args)
        if num == 7:      # list_expr
            return Node("list", args=[_expr(e) for n, e in fields(v) if n == 1])
        if num == 8:      # struct_expr (maps)
            entries = []
            for n, e in fields(v):
                if n == 2:
                    ef = fields(e)
                    key, val = _one(ef, 3), _one(ef, 4)
                    if key is not None:
                        entries.append(_expr(key))
                    if val is not None:
                        entries.append(_expr(val))
            return Node("struct", args=entries)
        if num == 9:      # comprehension_expr
            cf = fields(v)
            parts = {"range": 2, "init": 4, "cond": 5, "step": 6, "result": 7}
            return Node("comprehension", name=_one(cf, 1, b"").decode(),
                        comp={k: _expr(_one(cf, n, b"")) for k, n in parts.items()},
                        value=_one(cf, 3, b"").decode())
    return Node("const", value=("null", 0))


def checked_ast(serialized: bytes) -> Node:
    """The root Expr of a compiled expression's serialized (Any-wrapped) CheckedExpr."""
    anyf = fields(serialized)
    checked = _one(anyf, 2, serialized)
    return _expr(_one(fields(checked), 4, b""))


def grows(node: Node) -> bool:
    """Whether the expression can build data larger than its inputs (see GROWING)."""
    if node.kind == "call" and node.name in GROWING:
        return True
    if node.kind == "comprehension":
        return any(grows(n) for n in node.comp.values())
    return any(grows(a) for a in node.args)


# --- the estimator ----------------------------------------------------------------------------

@dataclass(slots=True)
class Estimate:
    cost: int
    size: int          # the value's size: a string's length, a list's or map's items
    peak: int = 0      # the largest value a concatenation, replace, join or format may build


def _sat(x: float) -> int:
    return UNBOUNDED if x >= UNBOUNDED else int(math.ceil(x))


def _add(*xs: int) -> int:
    return _sat(sum(xs))


def _mul(a: int, b: int) -> int:
    return _sat(a * b)


def estimate(node: Node, sizes: dict[str, int], bound: dict[str, int] | None = None) -> Estimate:
    """The worst-case cost and result size of node; sizes: each variable's size bound (a dyn
    variable's nested values are bounded by the same size)."""
    return _estimate(node, sizes, bound or {}, [0])


def peak(node: Node, sizes: dict[str, int]) -> int:
    """The largest value the expression may build (0: it builds none)."""
    out = [0]
    _estimate(node, sizes, {}, out)
    return out[0]


def _estimate(node: Node, sizes: dict[str, int], bound: dict[str, int], peak: list[int]) -> Estimate:
    r = _estimate_node(node, sizes, bound, peak)
    if node.kind == "call" and node.name in GROWING and r.size > peak[0]:
        peak[0] = r.size
    return r


def _estimate_node(node: Node, sizes: dict[str, int], bound: dict[str, int], peak: list[int]) -> Estimate:
    k = node.kind
    if k == "const":
        kind, raw = node.value
        return Estimate(0, len(raw) if kind in ("string", "bytes") and isinstance(raw, bytes) else 1)
    if k == "ident":
        return Estimate(SELECT_AND_IDENT_COST, bound.get(node.name, sizes.get(node.name, UNBOUNDED)))
    if k == "select":
        inner = _estimate(node.args[0], sizes, bound, peak)
        return Estimate(_add(inner.cost, SELECT_AND_IDENT_COST), inner.size)
    if k == "list":
        parts = [_estimate(a, sizes, bound, peak) for a in node.args]
        return Estimate(_add(LIST_CREATE_BASE_COST, *(p.cost for p in parts)), max([len(parts), *(p.size for p in parts)]))
    if k == "struct":
        parts = [_estimate(a, sizes, bound, peak) for a in node.args]
        return Estimate(_add(MAP_CREATE_BASE_COST, *(p.cost for p in parts)), max([len(parts), *(p.size for p in parts)]))
    if k == "comprehension":
        return _comprehension(node, sizes, bound, peak)
    return _call(node, sizes, bound, peak)


def _comprehension(node: Node, sizes: dict[str, int], bound: dict[str, int], peak: list[int]) -> Estimate:
    """cel-go: cost(range) + cost(init) + size(range) * (cost(condition) + cost(step)) + cost(result)."""
    rng = _estimate(node.comp["range"], sizes, bound, peak)
    inner = dict(bound)
    inner[node.name] = max(rng.size, sizes.get("*", 0))   # an element: at most the range's size
    init = _estimate(node.comp["init"], sizes, inner, peak)
    # the accumulator gains at most one item per iteration (map, filter), or is the init (cel.bind)
    inner[str(node.value)] = _add(init.size, rng.size)
    cond = _estimate(node.comp["cond"], sizes, inner, peak)
    step = _estimate(node.comp["step"], sizes, inner, peak)
    result = _estimate(node.comp["result"], sizes, inner, peak)
    cost = _add(rng.cost, init.cost, _mul(rng.size, _add(cond.cost, step.cost)), result.cost)
    return Estimate(cost, result.size)


_TRAVERSE = frozenset({"contains", "startsWith", "endsWith", "_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_",
                       "lowerAscii", "upperAscii", "trim", "indexOf", "lastIndexOf", "charAt", "substring",
                       "string", "bytes", "int", "uint", "double", "isQuantity", "quantity", "url", "isURL",
                       "ip", "isIP", "cidr", "isCIDR", "ip.isCanonical"})
_LIST_LINEAR = frozenset({"isSorted", "sum", "min", "max", "@in", "exists", "all"})


def _call(node: Node, sizes: dict[str, int], bound: dict[str, int], peak: list[int]) -> Estimate:
    parts = [_estimate(a, sizes, bound, peak) for a in node.args]
    base = _add(*(p.cost for p in parts))
    name = node.name
    s = [p.size for p in parts]
    if name == "_+_" and len(s) == 2:                   # string or list concatenation
        size = _add(s[0], s[1])
        return Estimate(_add(base, _sat(size * STRING_TRAVERSAL_COST_FACTOR), 1), size)
    if name in ("_&&_", "_||_", "_?_:_", "!_", "-_", "_-_", "_*_", "_/_", "_%_", "size", "has", "@not_strictly_false",
                "_[_]", "dyn", "type", "orValue", "optional.of", "optional.none", "value", "hasValue", "_?._", "_[?_]"):
        return Estimate(_add(base, 1), max(s) if name in ("_?_:_", "_[_]", "dyn", "orValue", "value", "_?._", "_[?_]",
                                                          "optional.of") and s else 1)
    if name == "matches" or name in ("find", "findAll"):
        traversal = _sat(s[0] * REGEX_STRING_LENGTH_COST_FACTOR * max(s[1] if len(s) > 1 else 1, 1))
        return Estimate(_add(base, traversal), s[0] if name != "findAll" else _mul(s[0], s[0]))
    if name == "replace" and len(s) >= 3:               # every match may be replaced: |s| * |new|
        size = _mul(s[0], max(s[2], 1))
        return Estimate(_add(base, _sat(size * STRING_TRAVERSAL_COST_FACTOR)), size)
    if name in ("join", "format"):         # the items (their sizes bounded like the list's) and separators
        size = _mul(_add(s[0], 1), max(s[1:] or [1]))
        return Estimate(_add(base, _sat(size * STRING_TRAVERSAL_COST_FACTOR)), size)
    if name == "split":
        return Estimate(_add(base, _sat(s[0] * STRING_TRAVERSAL_COST_FACTOR)), s[0])
    if name in _LIST_LINEAR:
        return Estimate(_add(base, s[0] if s else 1), 1)
    if name in _TRAVERSE:
        return Estimate(_add(base, _sat(max(s or [1]) * STRING_TRAVERSAL_COST_FACTOR)), max(s or [1]))
    return Estimate(_add(base, 1), max(s or [1]))
