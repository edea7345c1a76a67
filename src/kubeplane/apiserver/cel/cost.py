"""Cost of a compiled expression: cel-go's estimate at compile time and, standing for its
runtime cost tracker, the same walk over the actual values; and the size bound that keeps an
evaluation from building huge strings or lists.

Upstream: cel-go checker/cost.go (the estimator: a comprehension costs cost(range) +
size(range) * (cost(condition) + cost(step))), interpreter/runtimecost.go (CostTracker.costCall:
what each call costs on its arguments' sizes), the constants of common/cost.go, and Kubernetes'
CostEstimator (pkg/cel/library/cost.go). The C++ runtime exposes neither an estimator nor a
cost tracker, so the checked AST is read back from the compiled expression (its serialized
cel.expr.CheckedExpr, decoded by the small protobuf reader below) and walked here.

- estimate(ast, sizes): the worst case with each variable's size bound (a CRD schema's
  maxLength or maxItems for issue 13); an unknown size is UNBOUNDED, as cel-go's.
- runtime_estimate(ast, data, default): the walk with the sizes of the values the expression
  actually reaches in data (compiler.evaluate uses it for an expression whose estimate with
  unknown sizes is over the per-call limit: one that traverses its inputs). Equal to cel-go's
  actual cost where every branch runs (upstream's cost tables, tests/apiserver/cel/test_cost.py);
  above it where cel-go skips work (the other branch of a conditional, the rest of an all()
  after a false item).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar

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
    id: int = 0                       # the expression's id (its source position: positions())


_CONST = {1: "null", 2: "bool", 3: "int", 4: "uint", 5: "double", 6: "string", 7: "bytes"}


def _expr(b: bytes) -> Node:
    node = _expr_node(b)
    node.id = _one(fields(b), 2, 0)
    return node


def _expr_node(b: bytes) -> Node:
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


def positions(serialized: bytes) -> dict[int, int]:
    """Each expression id's offset in the source (cel.expr.SourceInfo.positions)."""
    checked = _one(fields(serialized), 2, serialized)
    info = fields(_one(fields(checked), 5, b""))
    out: dict[int, int] = {}
    for n, entry in info:
        if n == 4:
            ef = fields(entry)
            out[_one(ef, 1, 0)] = _one(ef, 2, 0)
    return out


def optional_typed(serialized: bytes) -> set[int]:
    """The ids of the expressions the checker typed as (or as holding) optionals
    (cel.expr.CheckedExpr.type_map; an optional is the abstract type "optional_type")."""
    checked = _one(fields(serialized), 2, serialized)
    out: set[int] = set()
    for n, entry in fields(checked):
        if n == 3:
            ef = fields(entry)
            if b"optional_type" in _one(ef, 2, b""):
                out.add(_one(ef, 1, 0))
    return out


def int64(raw: int) -> int:
    """A varint-encoded int64 (two's complement in 64 bits) as a Python int."""
    return raw - (1 << 64) if raw >= 1 << 63 else raw


def type_map(serialized: bytes) -> dict[int, str]:
    """Each expression id's checked type (cel.expr.CheckedExpr.type_map) as cel-go prints it."""
    checked = _one(fields(serialized), 2, serialized)
    out: dict[int, str] = {}
    for n, entry in fields(checked):
        if n == 3:
            ef = fields(entry)
            out[_one(ef, 1, 0)] = format_type(_one(ef, 2, b""))
    return out


_PRIMITIVES = {1: "bool", 2: "int", 3: "uint", 4: "double", 5: "string", 6: "bytes"}
_WELL_KNOWN = {1: "any", 2: "google.protobuf.Timestamp", 3: "google.protobuf.Duration"}


def format_type(b: bytes) -> str:
    """cel-go's FormatCELType of a serialized cel.expr.Type."""
    for num, v in fields(b):
        if num == 1:
            return "dyn"
        if num == 2:
            return "null_type"
        if num == 3:
            return _PRIMITIVES.get(v, "dyn")
        if num == 4:
            return f"wrapper({_PRIMITIVES.get(v, 'dyn')})"
        if num == 5:
            return _WELL_KNOWN.get(v, "dyn")
        if num == 6:
            return f"list({format_type(_one(fields(v), 1, b''))})"
        if num == 7:
            mf = fields(v)
            return f"map({format_type(_one(mf, 1, b''))}, {format_type(_one(mf, 2, b''))})"
        if num in (9, 10):
            return v.decode()
        if num == 11:
            return f"type({format_type(v)})" if v else "type"
        if num == 12:
            return "*error*"
        if num == 14:
            af = fields(v)
            params = [format_type(p) for n, p in af if n == 2]
            name = _one(af, 1, b"").decode()
            return f"{name}({', '.join(params)})" if params else name
    return "dyn"


# What makes an optional value (an unchecked expression has no types to tell).
OPTIONAL_MAKERS = frozenset({"optional.of", "optional.none", "optional.ofNonZeroValue", "_?._", "_[?_]",
                             "first", "last"})


def passes_optional(node: Node, python_functions: frozenset[str], optional_ids: set[int] | None) -> Node | None:
    """The first call that would hand an optional to a Python function (the binding crashes the
    process converting one), or that hides one in dyn(); None if none can. optional_ids: the
    checker's optional-typed expressions, None for an unchecked expression (then any optional
    maker under such a call counts)."""
    if node.kind == "call" and (node.name in python_functions or node.name == "dyn"):
        for a in node.args:
            if optional_ids is not None and a.id in optional_ids:
                return node
            if optional_ids is None and _makes_optional(a):
                return node
    for child in [*node.args, *node.comp.values()]:
        found = passes_optional(child, python_functions, optional_ids)
        if found is not None:
            return found
    return None


def _makes_optional(node: Node) -> bool:
    if node.kind == "call" and node.name in OPTIONAL_MAKERS:
        return True
    return any(_makes_optional(c) for c in [*node.args, *node.comp.values()])


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
    vals: list[Any] | None = None   # the actual values it may be (runtime estimate), None: unknown
    decl: Any = None   # its declared type (a CRD rule's self: celvalidation DeclType), None: unknown


def size_of(v: Any) -> int:
    """cel-go's size of a value: a string's code points, bytes, a list's or map's items."""
    return len(v) if isinstance(v, (str, bytes, list, dict)) else 1


def _known(vals: list[Any]) -> Estimate:
    """An identifier or field whose actual values are known (cost: one select)."""
    return Estimate(SELECT_AND_IDENT_COST, max((size_of(v) for v in vals), default=0), vals=vals)


def _sat(x: float) -> int:
    return UNBOUNDED if x >= UNBOUNDED else int(math.ceil(x))


def _add(*xs: int) -> int:
    return _sat(sum(xs))


def _mul(a: int, b: int) -> int:
    return _sat(a * b)


def estimate(node: Node, sizes: dict[str, int], bound: dict[str, Any] | None = None,
             decls: dict[str, Any] | None = None) -> Estimate:
    """The worst-case cost and result size of node; sizes: each variable's size bound (a dyn
    variable's nested values are bounded by the same size); decls: variables' declared types
    (kind, max_elements, fields, elem: a CRD rule's self), whose values are bounded by them."""
    b = dict(bound or {})
    for name, decl in (decls or {}).items():
        b["@decl:" + name] = decl
    return _estimate(node, sizes, b, [0])


def runtime_estimate(node: Node, data: dict[str, Any], default_size: int) -> tuple[int, int]:
    """(cost, peak) of evaluating node against data: the estimator with the sizes of the actual
    values each identifier, field and index reaches (a comprehension's variable: the largest of
    its range's items; default_size bounds what it cannot follow, computed values), and cel-go's
    runtime cost of each call on them. It stands for cel-go's actual cost (the C++ runtime
    tracks none): equal where every branch runs, an upper bound otherwise (it counts the dearer
    branch of a conditional, and every item of an all() that would stop at a false one)."""
    out = [0]
    got = _estimate(node, {"*": default_size, **{k: default_size for k in data}}, {"@data": data}, out)
    return got.cost, out[0]


def bounded(node: Node, size: int) -> tuple[int, int]:
    """(cost, peak) with every input, and every value in it, at most `size` long: a bound of
    the runtime cost against an activation of that many bytes."""
    out = [0]
    got = _estimate(node, {"*": size}, {"@default": size}, out)
    return got.cost, out[0]


def exceeds_budget_message(cost_name: str, cost: int, limit: int) -> str:
    """Upstream (apiextensions validation getCostErrorMessage): the text of a CRD rule whose
    estimated cost is over its budget."""
    factor = cost / limit
    if factor > 100:
        text = "more than 100x"
    elif factor < 1.5:
        text = f"{factor:f}x"
    else:
        text = f"{factor:.1f}x"
    return (f"{cost_name} exceeds budget by factor of {text} (try simplifying the rule, or adding maxItems, "
            f"maxProperties, and maxLength where arrays, maps, and strings are declared)")


def peak(node: Node, sizes: dict[str, int]) -> int:
    """The largest value the expression may build (0: it builds none)."""
    out = [0]
    _estimate(node, sizes, {}, out)
    return out[0]


def _estimate(node: Node, sizes: dict[str, int], bound: dict[str, Any], peak: list[int]) -> Estimate:
    r = _estimate_node(node, sizes, bound, peak)
    if node.kind == "call" and node.name in GROWING and r.size > peak[0]:
        peak[0] = r.size
    return r


def _estimate_node(node: Node, sizes: dict[str, int], bound: dict[str, Any], peak: list[int]) -> Estimate:
    k = node.kind
    if k == "const":
        value = _const_value(node)
        return Estimate(0, size_of(value), vals=[value])
    if k == "ident":
        vals = _ident_values(node.name, bound)
        if vals is not None:
            return _known(vals)
        decl = bound.get("@decl:" + node.name)
        if decl is not None:
            return _declared(SELECT_AND_IDENT_COST, decl)
        return Estimate(SELECT_AND_IDENT_COST, bound.get(node.name, sizes.get(node.name, bound.get("@default", UNBOUNDED))))
    if k == "select":
        inner = _estimate(node.args[0], sizes, bound, peak)
        if inner.decl is not None and inner.vals is None:
            cost = _add(inner.cost, SELECT_AND_IDENT_COST)
            if node.value:            # has() on a declared value: free (upstream's TestCostEstimation)
                return Estimate(0, 1)
            field = _member(inner.decl, node.name)
            return _declared(cost, field) if field is not None else Estimate(cost, UNBOUNDED)
        if inner.vals is not None and not node.value:
            got = _known([v[node.name] for v in inner.vals if isinstance(v, dict) and node.name in v])
            return Estimate(_add(inner.cost, SELECT_AND_IDENT_COST), got.size, vals=got.vals)
        return Estimate(_add(inner.cost, SELECT_AND_IDENT_COST), inner.size if not node.value else 1)
    if k in ("list", "struct"):
        parts = [_estimate(a, sizes, bound, peak) for a in node.args]
        base = LIST_CREATE_BASE_COST if k == "list" else MAP_CREATE_BASE_COST
        est = Estimate(_add(base, *(p.cost for p in parts)), max([len(parts), *(p.size for p in parts)]))
        if k == "list" and all(p.vals is not None and len(p.vals) == 1 for p in parts):
            est.vals = [[p.vals[0] for p in parts if p.vals]]
        return est
    if k == "comprehension":
        return _comprehension(node, sizes, bound, peak)
    return _call(node, sizes, bound, peak)


def _declared(cost: int, decl: Any) -> Estimate:
    """A value of a declared type: its size is the type's bound (upstream's sizeEstimator:
    DeclType.MaxElements of the value's path)."""
    return Estimate(cost, decl.max_elements, decl=decl)


def _member(decl: Any, name: str) -> Any:
    """The declared type of a field of an object (or a value of a map, selected by key)."""
    if decl.kind == "object":
        return decl.fields.get(name)
    if decl.kind == "map":
        return decl.elem
    return None


def _ident_values(name: str, bound: dict[str, Any]) -> list[Any] | None:
    """The actual values an identifier may be, when a runtime estimate follows the data."""
    held = bound.get("@vals:" + name)
    if held is not None:
        return held                                       # a comprehension's variable
    data = bound.get("@data")
    if data is not None and name in data and "@vals:" + name not in bound:
        return [data[name]]
    return None


def _items(vals: list[Any]) -> list[Any]:
    out: list[Any] = []
    for v in vals:
        if isinstance(v, (list, dict)):
            out.extend(v)                                 # a map's keys, as CEL iterates it
    return out


def _comprehension(node: Node, sizes: dict[str, int], bound: dict[str, Any], peak: list[int]) -> Estimate:
    """cel-go: cost(range) + cost(init) + size(range) * (cost(condition) + cost(step)) + cost(result)."""
    rng = _estimate(node.comp["range"], sizes, bound, peak)
    inner = dict(bound)
    items = _items(rng.vals) if rng.vals is not None else None
    if items is not None and len(items) <= _MAX_FOLLOWED:  # runtime: the range's actual items
        inner[node.name] = max((size_of(v) for v in items), default=0)
        inner["@vals:" + node.name] = items
    else:
        inner[node.name] = max(rng.size, sizes.get("*", 0))   # an element: at most the range's size
        inner["@vals:" + node.name] = None    # unknown, and shadows a variable of that name
    inner["@decl:" + node.name] = _element(rng.decl)           # list items, a map's keys
    inner["@decl:" + str(node.value)] = None
    init = _estimate(node.comp["init"], sizes, inner, peak)
    # the accumulator gains at most one item per iteration (map, filter), or is the init (cel.bind)
    inner[str(node.value)] = _add(init.size, rng.size)
    if init.vals is not None and rng.size == 0:
        inner["@vals:" + str(node.value)] = init.vals     # cel.bind(name, value, ...)
    else:
        inner["@vals:" + str(node.value)] = None
    cond = _estimate(node.comp["cond"], sizes, inner, peak)
    step = _estimate(node.comp["step"], sizes, inner, peak)
    result = _estimate(node.comp["result"], sizes, inner, peak)
    cost = _add(rng.cost, init.cost, _mul(rng.size, _add(cond.cost, step.cost)), result.cost)
    return Estimate(cost, result.size, vals=result.vals if rng.size == 0 else None)


# A runtime estimate follows at most this many candidate values per node (an index of a
# comprehension's variable by another's): past it, the node's size is the bound.
_MAX_FOLLOWED = 100_000


def _const_value(node: Node) -> Any:
    kind, raw = node.value
    if kind == "string" and isinstance(raw, bytes):
        return raw.decode("utf-8", "replace")
    if kind == "int" and isinstance(raw, int):
        return raw - (1 << 64) if raw >= 1 << 63 else raw
    if kind == "bool":
        return bool(raw)
    if kind == "null":
        return None
    return raw


def _has_index(v: Any, key: Any) -> bool:
    if isinstance(v, dict):
        return key in v
    return isinstance(v, list) and isinstance(key, int) and 0 <= key < len(v)


def _factor(size: int, factor: float) -> int:
    """ceil(size * factor), saturated: cel-go's MultiplyByCostFactor."""
    return _sat(size * factor)


def traversal_cost(v: Any) -> int:
    """Kubernetes' traversalCost (library/cost.go) of an actual value: strings cost a tenth of
    their length (truncated), lists and maps the sum over their items."""
    if isinstance(v, (str, bytes)):
        return int(len(v) * STRING_TRAVERSAL_COST_FACTOR)
    if isinstance(v, list):
        return sum(traversal_cost(x) for x in v)
    if isinstance(v, dict):
        return sum(traversal_cost(k) + traversal_cost(x) for k, x in v.items())
    return 1


# Kubernetes' library functions with a nominal cost of 1 (library/cost.go), and cel-go's O(1) ones.
_NOMINAL = frozenset({"serviceAccount", "path", "group", "resource", "subresource", "namespace", "name", "allowed",
                      "reason", "error", "errored", "masked", "prefixLength", "family", "isUnspecified", "isLoopback",
                      "isLinkLocalMulticast", "isLinkLocalUnicast", "isGlobalUnicast", "sign", "asInteger",
                      "isInteger", "asApproximateFloat", "isGreaterThan", "isLessThan", "compareTo", "add", "sub",
                      "major", "minor", "patch", "getScheme", "getHostname", "getHost", "getPort", "getEscapedPath",
                      "getQuery", "format.named"})
_ONE_TRAVERSAL = frozenset({"url", "lowerAscii", "upperAscii", "substring", "trim", "jsonpatch.escapeKey", "cidr",
                            "isIP", "isCIDR", "quantity", "isQuantity", "semver", "isSemver", "startsWith",
                            "endsWith", "strings.quote", "quote", "isURL"})
_LIST_TRAVERSAL = frozenset({"isSorted", "sum", "max", "min", "indexOf", "lastIndexOf", "includes"})
_SELECTOR_LENGTH_TO_REQUIREMENTS = 0.5                     # "k," : the shortest requirement
_COST_PER_REQUIREMENT = LIST_CREATE_BASE_COST + STRUCT_CREATE_BASE_COST
_COMPARE = frozenset({"_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_"})
# Functions whose result is one of Kubernetes' opaque values (a URL, IP, Quantity, ...).
_OPAQUE_RESULT = frozenset({"url", "ip", "cidr", "quantity", "masked", "add", "sub", "semver", "check", "path",
                            "group", "resource", "subresource", "namespace", "name", "serviceAccount",
                            "format.named", "fieldSelector", "labelSelector"})
_OPAQUE = {"@opaque": True}     # the value a runtime estimate knows of an opaque result: not a string
CHECK_COST = 350_000
# Upstream: ConstantFormats' MaxRegexSize (library/format.go; uuid, date and datetime: the length
# of kube-openapi's strfmt patterns, approximately).
FORMAT_REGEX_SIZES = {"dns1123Label": 30, "dns1123Subdomain": 60, "dns1035Label": 30, "qualifiedName": 60,
                      "dns1123LabelPrefix": 30, "dns1123SubdomainPrefix": 60, "dns1035LabelPrefix": 30,
                      "labelValue": 40, "uri": 1103, "uuid": 87, "byte": 84, "date": 80, "datetime": 80}     # an authorization check: two per expression fit the per-call limit


def _call_cost(node: Node, parts: list[Estimate], result_size: int) -> int:
    """The cost of the call itself, its arguments apart: cel-go's CostTracker.costCall
    (interpreter/runtimecost.go) and Kubernetes' CostEstimator.CallCost, on the arguments'
    sizes (actual ones in a runtime estimate, bounds otherwise)."""
    name = node.name
    s = [p.size for p in parts]
    if name in ("_&&_", "_||_", "_?_:_"):
        return 0                                          # only their operands cost
    if name in _NOMINAL:
        return 1
    if name == "check":
        return CHECK_COST
    if name in ("fieldSelector", "labelSelector") and len(s) == 2:   # Kubernetes' selectorCostEstimate
        return _add(LIST_CREATE_BASE_COST, _factor(s[1], STRING_TRAVERSAL_COST_FACTOR),
                    _mul(_factor(s[1], _SELECTOR_LENGTH_TO_REQUIREMENTS), _COST_PER_REQUIREMENT))
    if name in ("startsWith", "endsWith") and len(s) == 2:    # cel-go: the prefix's (suffix's) length
        return _factor(s[1], STRING_TRAVERSAL_COST_FACTOR)
    if name in _ONE_TRAVERSAL or (name in ("string", "bytes") and _stringish(parts[0])):
        return _factor(s[0], STRING_TRAVERSAL_COST_FACTOR)
    if name == "ip":
        return 1 if node.member else _factor(s[0], STRING_TRAVERSAL_COST_FACTOR)
    if name == "ip.isCanonical":
        return _factor(s[0], 2 * STRING_TRAVERSAL_COST_FACTOR)
    if name in ("replace", "split") and s:
        return _factor(s[0], 2 * STRING_TRAVERSAL_COST_FACTOR)
    if name == "join":
        return _factor(result_size, 2 * STRING_TRAVERSAL_COST_FACTOR)
    if name in ("matches", "find", "findAll") and len(s) >= 2:
        return _mul(_factor(s[0] + 1, STRING_TRAVERSAL_COST_FACTOR), _factor(s[1], REGEX_STRING_LENGTH_COST_FACTOR))
    if name == "validate" and len(s) == 2:            # a format: its regex's size (Format.MaxRegexSize)
        receiver = node.args[0]
        fmt = receiver.name.removeprefix("format.") if receiver.kind == "call" else ""
        regex = FORMAT_REGEX_SIZES.get(fmt, max(FORMAT_REGEX_SIZES.values()))
        return _mul(_factor(s[1] + 1, STRING_TRAVERSAL_COST_FACTOR), _factor(regex, REGEX_STRING_LENGTH_COST_FACTOR))
    if name == "contains" and len(s) == 2:
        return _mul(_factor(s[0], STRING_TRAVERSAL_COST_FACTOR), _factor(s[1], STRING_TRAVERSAL_COST_FACTOR))
    if name in _COMPARE and len(s) == 2:
        return _factor(min(s), STRING_TRAVERSAL_COST_FACTOR)
    if name == "_+_" and len(s) == 2:
        if any(p.vals is not None and all(isinstance(v, list) for v in p.vals) for p in parts):
            return 1                                      # list concatenation: O(1)
        return _factor(s[0] + s[1], STRING_TRAVERSAL_COST_FACTOR)
    if name == "@in" and len(s) == 2:
        return s[1]
    if name in _LIST_TRAVERSAL and node.member and parts:
        target = parts[0]
        if target.vals is not None and all(isinstance(v, (list, str)) for v in target.vals):
            return max((traversal_cost(v) for v in target.vals), default=0)
        return s[0]
    if name == "containsIP" and len(s) == 2:
        return _factor(2 * s[0], STRING_TRAVERSAL_COST_FACTOR) + (
            _factor(s[1], STRING_TRAVERSAL_COST_FACTOR) if _stringish(parts[1]) else 0)
    if name == "containsCIDR" and len(s) == 2:
        return (_factor(2 * s[0], STRING_TRAVERSAL_COST_FACTOR) + _factor(s[0], STRING_TRAVERSAL_COST_FACTOR) + 1
                + (_factor(s[1], STRING_TRAVERSAL_COST_FACTOR) if _stringish(parts[1]) else 0))
    return 1


def _stringish(p: Estimate) -> bool:
    """A string or bytes value, or one that may be (unknown)."""
    return p.vals is None or any(isinstance(v, (str, bytes)) for v in p.vals)


def _call(node: Node, sizes: dict[str, int], bound: dict[str, Any], peak: list[int]) -> Estimate:
    parts = [_estimate(a, sizes, bound, peak) for a in node.args]
    name = node.name
    if name == "_?_:_" and len(parts) == 3:               # the condition and the dearer branch
        base = _add(parts[0].cost, max(parts[1].cost, parts[2].cost))
    else:
        base = _add(*(p.cost for p in parts))
    size, vals = _result(node, parts)
    est = Estimate(_add(base, _call_cost(node, parts, size)), size, vals=vals)
    if name == "_[_]" and len(parts) == 2 and vals is None and parts[0].decl is not None:
        elem = parts[0].decl.elem if parts[0].decl.kind in ("list", "map") else None
        if elem is not None:
            est.size, est.decl = elem.max_elements, elem
    return est


def _element(decl: Any) -> Any:
    """The declared type of what a comprehension over a value of type decl iterates: a list's
    items; a map's keys (strings of size 0, as upstream's StringType declares them)."""
    if decl is None:
        return None
    if decl.kind == "list":
        return decl.elem
    if decl.kind == "map":
        return _MapKey()
    return None


class _MapKey:
    """Upstream: a map's KeyType, StringType, whose MaxElements is 0."""
    kind = "string"
    max_elements = 0
    fields: ClassVar[dict[str, Any]] = {}
    elem = None


def _result(node: Node, parts: list[Estimate]) -> tuple[int, list[Any] | None]:
    """The size of a call's result (what peak() bounds), and its values where they are the
    arguments' (an index, dyn(), a conditional's branches)."""
    name = node.name
    s = [p.size for p in parts]
    if name == "_[_]" and len(parts) == 2 and parts[0].vals is not None and parts[1].vals is not None \
            and len(parts[0].vals) * len(parts[1].vals) <= _MAX_FOLLOWED:
        got = [v[k] for v in parts[0].vals for k in parts[1].vals if _has_index(v, k)]
        return max((size_of(v) for v in got), default=0), got
    if name in ("dyn", "_?_:_") and parts:
        tail = parts[-2:] if name == "_?_:_" else parts
        if all(p.vals is not None for p in tail):
            got = [v for p in tail for v in p.vals or []]
            return max((size_of(v) for v in got), default=0), got
    if name == "_+_" and len(s) == 2:                     # string or list concatenation
        return _add(s[0], s[1]), None
    if name in ("_?_:_", "_[_]", "dyn", "orValue", "value", "_?._", "_[?_]", "optional.of"):
        return (max(s) if s else 1), None
    if name in ("findAll",) and s:
        return _mul(s[0], s[0]), None
    if name == "replace" and len(s) >= 3:                 # every match may be replaced: |s| * |new|
        return _mul(s[0], max(s[2], 1)), None
    if name in ("join", "format"):     # the items (their sizes bounded like the list's) and separators
        if name == "join" and parts and parts[0].vals is not None and len(parts[0].vals) == 1 \
                and all(isinstance(x, str) for x in parts[0].vals[0]):
            items = parts[0].vals[0]
            sep = parts[1].vals[0] if len(parts) > 1 and parts[1].vals and isinstance(parts[1].vals[0], str) else ""
            return sum(len(x) for x in items) + len(sep) * max(len(items) - 1, 0), None
        return _mul(_add(s[0], 1), max(s[1:] or [1])), None
    if name in _OPAQUE_RESULT:
        return 1, [_OPAQUE]                               # no Sizer: size 1, as cel-go's actualSize
    if name in _COMPARE or name in ("_&&_", "_||_", "!_", "size", "has", "@not_strictly_false", "type", "hasValue",
                                    "@in", "matches", "contains", "startsWith", "endsWith"):
        return 1, None
    return max(s or [1]), None
