"""Label and field selectors: parsing the query-string syntax and matching objects.

Mirrors k8s.io/apimachinery/pkg/labels (selector.go) and pkg/fields: equality-based
(`a=b`, `a==b`, `a!=b`) and set-based (`a in (x,y)`, `a notin (x)`, `a`, `!a`) requirements,
comma-separated and ANDed. A LabelSelector object (matchLabels/matchExpressions) converts to
the same Requirement list, so one matcher serves both.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from . import errors

_TOKEN = re.compile(r"\s*(!=|==|=|\(|\)|,|!|[^\s!=(),]+)")


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    op: str                     # "in", "notin", "exists", "!", "=", "!="
    values: tuple[str, ...] = ()

    def matches(self, labels: dict[str, str]) -> bool:
        op = self.op
        if op == "exists":
            return self.key in labels
        if op == "!":
            return self.key not in labels
        has = self.key in labels
        if op in ("=", "in"):
            return has and labels[self.key] in self.values
        return not has or labels[self.key] not in self.values  # "!=", "notin"


Selector = tuple[Requirement, ...]
EVERYTHING: Selector = ()


def parse(s: str) -> Selector:
    """Parse a label selector string; raises BadRequest on bad syntax."""
    tokens = _TOKEN.findall(s or "")
    reqs: list[Requirement] = []
    i = 0

    def fail(msg: str) -> errors.BadRequest:
        return errors.BadRequest(f"unable to parse requirement: {msg}")

    while i < len(tokens):
        tok = tokens[i]
        if tok == "!":
            if i + 1 >= len(tokens):
                raise fail("found '', expected: identifier")
            reqs.append(Requirement(tokens[i + 1], "!"))
            i += 2
        else:
            key = tok
            if key in ("=", "==", "!=", "(", ")", ","):
                raise fail(f"found '{key}', expected: !, identifier, or 'end of string'")
            nxt = tokens[i + 1] if i + 1 < len(tokens) else ","
            if nxt == ",":
                reqs.append(Requirement(key, "exists"))
                i += 1
            elif nxt in ("=", "==", "!="):
                if i + 2 >= len(tokens) or tokens[i + 2] in (",", "(", ")"):
                    value = ""
                    i += 2
                else:
                    value = tokens[i + 2]
                    i += 3
                reqs.append(Requirement(key, "!=" if nxt == "!=" else "=", (value,)))
            elif nxt in ("in", "notin"):
                if i + 2 >= len(tokens) or tokens[i + 2] != "(":
                    raise fail("found '', expected: '('")
                j, values = i + 3, []
                while j < len(tokens) and tokens[j] != ")":
                    if tokens[j] != ",":
                        values.append(tokens[j])
                    j += 1
                if j >= len(tokens):
                    raise fail("found '', expected: ')'")
                reqs.append(Requirement(key, nxt, tuple(values)))
                i = j + 1
            else:
                raise fail(f"found '{nxt}', expected: in, notin, =, ==, !=, gt, lt")
        if i < len(tokens):
            if tokens[i] != ",":
                raise fail(f"found '{tokens[i]}', expected: ',' or 'end of string'")
            i += 1
    for r in reqs:
        if not r.key:
            raise fail("empty key")
    return tuple(reqs)


def matches(sel: Selector, labels: dict[str, str] | None) -> bool:
    labels = labels or {}
    return all(r.matches(labels) for r in sel)


_OPS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


def from_label_selector(ls: dict[str, Any] | None) -> Selector | None:
    """metav1.LabelSelectorAsSelector: None (nil) selects nothing, {} selects everything."""
    if ls is None:
        return None
    reqs = [Requirement(k, "=", (v,)) for k, v in sorted((ls.get("matchLabels") or {}).items())]
    for e in ls.get("matchExpressions") or []:
        op = _OPS.get(e.get("operator", ""))
        if op is None:
            raise errors.BadRequest(f"{errors.go_quote(str(e.get('operator')))} is not a valid label selector operator")
        reqs.append(Requirement(e["key"], op, tuple(e.get("values") or ())))
    return tuple(reqs)


def selector_string(ls: dict[str, Any]) -> str:
    """The canonical string form of a LabelSelector, requirements sorted by key.

    Upstream: LabelSelectorAsSelector(ls).String() — the selector sorts its requirements by
    key and each requirement sorts its values: {matchLabels: {b: 1}, matchExpressions:
    [{key: a, operator: In, values: [y, x]}]} -> "a in (x,y),b=1".
    """
    reqs: list[tuple[str, str]] = [(k, f"{k}={v}") for k, v in (ls.get("matchLabels") or {}).items()]
    for e in ls.get("matchExpressions") or []:
        key, op, vals = e["key"], e["operator"], ",".join(sorted(e.get("values") or []))
        if op == "In":
            reqs.append((key, f"{key} in ({vals})"))
        elif op == "NotIn":
            reqs.append((key, f"{key} notin ({vals})"))
        elif op == "Exists":
            reqs.append((key, key))
        else:
            reqs.append((key, f"!{key}"))
    return ",".join(text for _, text in sorted(reqs, key=lambda r: r[0]))


# --- field selectors --------------------------------------------------------------------

FieldGetter = Callable[[dict[str, Any]], str]


def path(*keys: str) -> FieldGetter:
    """A field selector's getter for the value at obj[keys[0]][keys[1]]… ("" when absent)."""
    def get(obj: dict[str, Any]) -> str:
        cur: Any = obj
        for k in keys:
            if not isinstance(cur, dict):
                return ""
            cur = cur.get(k)
        return "" if cur is None else str(cur)
    return get


def flag(*keys: str) -> FieldGetter:
    """A boolean field as strconv.FormatBool shows it (absent is false)."""
    get = path(*keys)
    return lambda o: "true" if get(o) in ("True", "true") else "false"


# Every kind's fields: upstream's DefaultMetaV1FieldSelectorConversion. A kind with its own
# field label conversion (upstream: AddFieldLabelConversionFunc in pkg/apis/core/v1/conversion.go,
# pkg/apis/events/v1) lists its fields in its registry definition (field_selectors); an unknown
# field is then "field label not supported: <field>".
META_FIELDS: dict[str, FieldGetter] = {
    "metadata.name": path("metadata", "name"),
    "metadata.namespace": path("metadata", "namespace"),
}
NAME_FIELD = {"metadata.name": META_FIELDS["metadata.name"]}      # cluster-scoped kinds' conversions


FieldSelector = tuple[tuple[FieldGetter, str, str], ...]


def parse_fields(s: str, supported: dict[str, FieldGetter] | None) -> FieldSelector:
    """Parse `a=b,c!=d` against the fields a kind supports (its registry definition's
    field_selectors; None: the default metadata.name/metadata.namespace); an unknown field is a 400.

    Upstream: fields.ParseSelector + Scheme.ConvertFieldLabel (the handler wraps the error in
    a BadRequest with the conversion's own words).
    """
    out = []
    for part in filter(None, (p.strip() for p in (s or "").split(","))):
        m = re.fullmatch(r"([^=!]+)(==|!=|=)(.*)", part)
        if not m:
            raise errors.BadRequest(f"invalid selector: '{s}'; can't understand '{part}'")
        field, op, value = m.group(1).strip(), m.group(2), m.group(3).strip()
        getter = (supported or META_FIELDS).get(field)
        if getter is None:
            if supported is None:
                raise errors.BadRequest(f'{errors.go_quote(field)} is not a known field selector: '
                                        'only "metadata.name", "metadata.namespace"')
            raise errors.BadRequest(f"field label not supported: {field}")
        out.append((getter, "!=" if op == "!=" else "=", value))
    return tuple(out)


def fields_match(sel: FieldSelector, obj: dict[str, Any]) -> bool:
    for getter, op, value in sel:
        if (getter(obj) == value) != (op == "="):
            return False
    return True


def exact_name(sel: FieldSelector, s: str) -> str | None:
    """If the field selector pins metadata.name (kubectl rollout status does), that name."""
    m = re.search(r"(?:^|,)metadata\.name==?([^,]*)", s or "")
    return m.group(1) if m else None
