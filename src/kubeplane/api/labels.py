"""Label and field selectors: parsing the query-string syntax and matching objects.

Mirrors k8s.io/apimachinery/pkg/labels (selector.go) and pkg/fields: equality-based
(`a=b`, `a==b`, `a!=b`) and set-based (`a in (x,y)`, `a notin (x)`, `a`, `!a`) requirements,
comma-separated and ANDed. A LabelSelector object (matchLabels/matchExpressions) converts to
the same Requirement list, so one matcher serves both.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Callable

from . import errors


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    op: str                     # "in", "notin", "exists", "!", "=", "!=", "gt", "lt"
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
        if op in ("gt", "lt"):
            return has and _compare(op, labels[self.key], self.values)
        return not has or labels[self.key] not in self.values  # "!=", "notin"


def _compare(op: str, value: str, values: tuple[str, ...]) -> bool:
    """Upstream: Requirement.Matches for Gt/Lt: both sides base-10 int64, else no match."""
    if len(values) != 1:
        return False
    try:
        have, want = _parse_int64(value), _parse_int64(values[0])
    except ValueError:
        return False
    return have > want if op == "gt" else have < want


def _parse_int64(s: str) -> int:
    """strconv.ParseInt(s, 10, 64)"""
    if not re.fullmatch(r"[+-]?[0-9]+", s):
        raise ValueError(s)
    n = int(s)
    if not -(1 << 63) <= n < (1 << 63):
        raise ValueError(s)
    return n


Selector = tuple[Requirement, ...]
EVERYTHING: Selector = ()


# --- the parser: upstream's Lexer and Parser (labels/selector.go), token for token ---------------

_EOS, _CPAR, _COMMA, _NOT, _DEQ, _EQ, _GT, _IDENT, _IN, _LT, _NEQ, _NOTIN, _OPAR = range(1, 14)
_STRING2TOKEN = {")": _CPAR, ",": _COMMA, "!": _NOT, "==": _DEQ, "=": _EQ, ">": _GT, "in": _IN, "<": _LT,
                 "!=": _NEQ, "notin": _NOTIN, "(": _OPAR}
_BINARY_OPERATORS = "in, notin, =, ==, !=, gt, lt"
_OPERATORS = {_IN: "in", _NOTIN: "notin", _EQ: "=", _DEQ: "=", _NEQ: "!=", _GT: "gt", _LT: "lt"}


def _lex(s: str) -> list[tuple[int, str]]:
    """Every (token, literal) of s, the end of string last. Upstream: Lexer.Lex (a special
    symbol is the longest operator it starts; a NUL byte ends the string, as read() does).
    One regular expression: a Python loop per character stalled the event loop for ~0.3 s on
    a selector of 1 MiB."""
    items = [(_STRING2TOKEN[special], special) if special else (_STRING2TOKEN.get(ident, _IDENT), ident)
             for special, ident in _TOKENS.findall(s.split("\x00", 1)[0])]
    items.append((_EOS, ""))
    return items


# Whitespace, then a special symbol (the two-character ones first) or an identifier (a run of
# anything else). Upstream: isWhitespace, isSpecialSymbol, scanSpecialSymbol, scanIDOrKeyword.
_TOKENS = re.compile(r"[ \t\r\n]*(?:(!=|==|[=!(),<>])|([^ \t\r\n=!(),<>]+))")


class _Parser:
    """Upstream: Parser (lookahead/consume in the Values context read in and notin as
    identifiers)."""

    def __init__(self, s: str) -> None:
        self.items = _lex(s)
        # the same tokens as the Values context reads them: "in" and "notin" are identifiers
        self.values_items = [(_IDENT, lit) if tok in (_IN, _NOTIN) else (tok, lit) for tok, lit in self.items]
        self.position = 0

    def lookahead(self, values: bool) -> tuple[int, str]:
        return (self.values_items if values else self.items)[self.position]

    def consume(self, values: bool) -> tuple[int, str]:
        tok, lit = self.lookahead(values)
        self.position += 1
        return tok, lit

    def parse(self) -> list[Requirement]:
        reqs: list[Requirement] = []
        while True:
            tok, lit = self.lookahead(True)
            if tok in (_IDENT, _NOT):
                try:
                    reqs.append(self.parse_requirement())
                except ValueError as e:
                    raise ValueError(f"unable to parse requirement: {e}") from None
                t, lit2 = self.consume(True)
                if t == _EOS:
                    return reqs
                if t != _COMMA:
                    raise ValueError(f"found '{lit2}', expected: ',' or 'end of string'")
                t2, lit3 = self.lookahead(True)
                if t2 not in (_IDENT, _NOT):
                    raise ValueError(f"found '{lit3}', expected: identifier after ','")
            elif tok == _EOS:
                return reqs
            else:
                raise ValueError(f"found '{lit}', expected: !, identifier, or 'end of string'")

    def parse_requirement(self) -> Requirement:
        key, op = self.parse_key_and_infer_operator()
        if op in ("exists", "!"):
            return new_requirement(key, op, ())
        op = self.parse_operator()
        values = self.parse_values() if op in ("in", "notin") else self.parse_exact_value()
        return new_requirement(key, op, tuple(sorted(values)))

    def parse_key_and_infer_operator(self) -> tuple[str, str]:
        op = ""
        tok, lit = self.consume(True)
        if tok == _NOT:
            op = "!"
            tok, lit = self.consume(True)
        if tok != _IDENT:
            raise ValueError(f"found '{lit}', expected: identifier")
        if msgs := _names().is_qualified_name(lit):
            # validateLabelKey with the parser's path, which Parse leaves nil: Go prints "<nil>"
            raise ValueError(str(errors.invalid("<nil>", lit, "; ".join(msgs))))
        if self.lookahead(True)[0] in (_EOS, _COMMA) and op != "!":
            op = "exists"
        return lit, op

    def parse_operator(self) -> str:
        tok, lit = self.consume(False)
        if tok not in _OPERATORS:
            raise ValueError(f"found '{lit}', expected: {_BINARY_OPERATORS}")
        return _OPERATORS[tok]

    def parse_values(self) -> set[str]:
        tok, lit = self.consume(True)
        if tok != _OPAR:
            raise ValueError(f"found '{lit}' expected: '('")
        tok, lit = self.lookahead(True)
        if tok in (_IDENT, _COMMA):
            values = self.parse_identifiers_list()
            if self.consume(True)[0] != _CPAR:
                raise ValueError(f"found '{lit}', expected: ')'")
            return values
        if tok == _CPAR:
            self.consume(True)
            return {""}
        raise ValueError(f"found '{lit}', expected: ',', ')' or identifier")

    def parse_identifiers_list(self) -> set[str]:
        """The values between the parentheses (the tokens read by index: a value list may be
        100,000 long). "(,", ",)" and ",," each stand for an empty value."""
        values: set[str] = set()
        items, pos = self.values_items, self.position
        while True:
            tok, lit = items[pos]
            pos += 1
            if tok == _IDENT:
                values.add(lit)
                tok2, lit2 = items[pos]
                if tok2 == _CPAR:
                    self.position = pos
                    return values
                if tok2 != _COMMA:
                    raise ValueError(f"found '{lit2}', expected: ',' or ')'")
            elif tok == _COMMA:
                if not values:
                    values.add("")
                tok2 = items[pos][0]
                if tok2 == _CPAR:
                    values.add("")
                    self.position = pos
                    return values
                if tok2 == _COMMA:
                    values.add("")
            else:
                raise ValueError(f"found '{lit}', expected: ',', or identifier")

    def parse_exact_value(self) -> set[str]:
        if self.lookahead(True)[0] in (_EOS, _COMMA):
            return {""}
        tok, lit = self.consume(True)
        if tok == _IDENT:
            return {lit}
        raise ValueError(f"found '{lit}', expected: identifier")


@functools.cache
def _names() -> Any:
    """validation.names (imported on first use: it imports this module); once, not per key."""
    from .validation import names
    return names


def new_requirement(key: str, op: str, values: tuple[str, ...]) -> Requirement:
    """A requirement whose key and values are valid label ones (ValueError with upstream's
    aggregated field errors otherwise). Upstream: NewRequirement, with no field path."""
    names = _names()
    errs = []
    if msgs := names.is_qualified_name(key):
        errs.append(errors.invalid("key", key, "; ".join(msgs)))
    if op in ("gt", "lt"):
        for i, v in enumerate(values):
            try:
                _parse_int64(v)
            except ValueError:
                errs.append(errors.invalid(f"values[{i}]", v, "for 'Gt', 'Lt' operators, the value must be an integer"))
    for i, v in enumerate(values):
        if msgs := names.is_valid_label_value(v):
            errs.append(errors.invalid(f"values[{i}][{key}]", v, "; ".join(msgs)))
    if errs:
        raise ValueError(errors.aggregate(errs))
    return Requirement(key, op, values)


# Selectors up to this length are cached (the same few come back); a longer one is parsed each
# time: 1,024 cached selectors of up to a 1 MiB URL each would hold a GiB.
_CACHED_MAX = 1024


def parse(s: str) -> Selector:
    """Parse a label selector string, requirements sorted by key; raises BadRequest with
    upstream's message on bad syntax or an invalid key or value.

    Example: "app=web,tier in (fe)" -> (Requirement("app", "=", ("web",)),
    Requirement("tier", "in", ("fe",))); "app=web_" -> BadRequest "unable to parse
    requirement: values[0][app]: Invalid value: "web_": a valid label must be …".

    Upstream: labels.Parse (apimachinery pkg/labels/selector.go), as the server's ListOptions
    conversion calls it (a BadRequest of its error). Cached: the same few selectors come back
    (a failed parse is not cached; it raises again).
    """
    if not s:
        return EVERYTHING
    return _parse_cached(s) if len(s) <= _CACHED_MAX else _parse(s)


@functools.lru_cache(maxsize=1024)
def _parse_cached(s: str) -> Selector:
    return _parse(s)


def _parse(s: str) -> Selector:
    try:
        reqs = _Parser(s).parse()
    except ValueError as e:
        raise errors.BadRequest(str(e)) from None
    return tuple(sorted(reqs, key=lambda r: r.key))


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
    for part in sorted(_split_terms(s or "")):
        if not part:
            continue
        term = _split_term(part)
        if term is None:
            raise errors.BadRequest(f"invalid selector: '{s}'; can't understand '{part}'")
        field, op, value = term
        value = _unescape_value(value)
        getter = (supported or META_FIELDS).get(field)
        if getter is None:
            if supported is None:
                raise errors.BadRequest(f'{errors.go_quote(field)} is not a known field selector: '
                                        'only "metadata.name", "metadata.namespace"')
            raise errors.BadRequest(f"field label not supported: {field}")
        out.append((getter, "!=" if op == "!=" else "=", value))
    return tuple(out)


def _split_terms(s: str) -> list[str]:
    """The terms of a field selector: split at commas a backslash does not escape.
    Upstream: fields.splitTerms"""
    terms, start, in_slash = [], 0, False
    for i, c in enumerate(s):
        if in_slash:
            in_slash = False
        elif c == "\\":
            in_slash = True
        elif c == ",":
            terms.append(s[start:i])
            start = i + 1
    terms.append(s[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    """(field, operator, value) at the first operator (!=, ==, = tried in that order at each
    position); spaces are kept, as upstream keeps them. Upstream: fields.splitTerm"""
    m = _FIELD_OPERATOR.search(term)       # leftmost; at one position "!=", "==", "=" in that order
    return (term[:m.start()], m.group(), term[m.end():]) if m is not None else None


_FIELD_OPERATOR = re.compile("!=|==|=")


def _unescape_value(s: str) -> str:
    """A value with its backslash escapes (of a backslash, a comma, an equals sign) undone; a
    bare comma or equals sign, or another escape, is a 400.
    Upstream: fields.UnescapeValue (its UnescapedRune prints the rune as a number, %v of a rune)."""
    if not any(c in s for c in "\\,="):
        return s
    out, in_slash = [], False
    for c in s:
        if in_slash:
            if c not in "\\,=":
                raise errors.BadRequest(f"invalid field selector: invalid escape sequence: \\{c}")
            out.append(c)
            in_slash = False
        elif c == "\\":
            in_slash = True
        elif c in ",=":
            raise errors.BadRequest(f"invalid field selector: unescaped character in value: {ord(c)}")
        else:
            out.append(c)
    if in_slash:
        raise errors.BadRequest("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def fields_match(sel: FieldSelector, obj: dict[str, Any]) -> bool:
    for getter, op, value in sel:
        if (getter(obj) == value) != (op == "="):
            return False
    return True


def exact_name(sel: FieldSelector, s: str) -> str | None:
    """If the field selector pins metadata.name (kubectl rollout status does), that name."""
    m = re.search(r"(?:^|,)metadata\.name==?([^,]*)", s or "")
    return m.group(1) if m else None
