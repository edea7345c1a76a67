"""Compiling a schema node's x-kubernetes-validations, and the checks of them when a CRD is
written.

Upstream: Compile/compileRule (apiextensions-apiserver pkg/apiserver/schema/cel/compilation.go)
and the CEL part of ValidateCustomResourceDefinitionOpenAPISchema (pkg/apis/apiextensions/
validation/validation.go).

A rule is first checked with `self` and `oldSelf` of the node's declared type (decltype.py,
typedenv.py: objects as protobuf messages), which gives upstream's compile errors (`undefined
field 'x'`, `found no matching overload ...`); it then runs as compiled with objects `dyn`
(types.py), which is as fast as before. Without protobuf the first step is skipped (objects are
`dyn`: a rule naming a field the schema lacks fails when evaluated). A rule with optionalOldSelf
runs wrapped so that `oldSelf` is an optional: `cel.bind(oldSelf, <has old> ?
optional.of(<old>) : optional.none(), rule)`, and type-checked so too.

The estimated cost is cel-go's (cel/cost.py) with `self` of the node's declared type: every
string, list and map as long as its schema allows (maxLength, maxItems, maxProperties), or as a
request can hold (decltype.py). costs.py multiplies it by the node's cardinality and checks the
limits; without a declared type (a node CEL does not see), `self` and every value in it are as
large as the largest list or map the schema allows below the node (max_size).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError, JSONValue

from ..schema.fieldpath import valid_field_path
from ..schema.structural import Structural, structural_from
from ..schema.validation import child, index
from . import decltype, typedenv, types

Obj = dict[str, Any]

SELF = "self"
OLD_SELF = "oldSelf"
HAS_OLD = "kubeplaneHasOldSelf__"       # the optionalOldSelf wrapping's variables
OLD_VALUE = "kubeplaneOldSelf__"
STATIC_ESTIMATED_COST_LIMIT = 10_000_000
# Upstream names the root type selfType<nanoseconds>, new on each compile, so that no rule can
# depend on it; here a fixed name (the environments are cached by type).
SELF_TYPE_NAME = "selfType0"
MAX_REQUEST_SIZE_BYTES = 3 * 1024 * 1024   # upstream: celconfig.MaxRequestSizeBytes


@dataclass(slots=True)
class CompiledRule:
    rule: Obj
    program: Any = None          # compiler.CompilationResult, None on an error
    error: str = ""
    uses_old_self: bool = False
    optional_old_self: bool = False
    message_program: Any = None
    message_error: str = ""
    max_cost: int = 0
    message_max_cost: int = 0
    field_path: str = ""         # the normalized fieldPath ("" if none)
    type_key: str = "dyn"        # self's runtime type (types.py)
    max_cardinality: int = 1     # how often the node may be in an object (under unbounded lists)


def _str(rule: Obj, k: str) -> str:
    v = rule.get(k)
    return v if isinstance(v, str) else ""


def compile_rules(s: Structural, rules: list[Any] | None = None, resource_root: bool = False) -> list[CompiledRule]:
    """Upstream: Compile — one result per rule of s.x_validations (or of `rules`: an allOf's,
    on the values of s). Those of s.x_validations are kept on s (a CRD write checks them, then
    their costs; s does not change once built)."""
    if rules is None:
        memo = s._cel_rules
        if memo is None:
            memo = s._cel_rules = {}
        hit = memo.get(resource_root)
        if hit is None:
            hit = memo[resource_root] = _compile_rules(s, None, resource_root)
        return hit
    return _compile_rules(s, rules, resource_root)


def _compile_rules(s: Structural, rules: list[Any] | None, resource_root: bool) -> list[CompiledRule]:
    from kubeplane.apiserver.cel import compiler       # the engine loads on first use
    size = max_size(s)
    decl = decltype.schema_decl_type(s, resource_root)
    if decl is not None:
        decl = decltype.assign_type_name(decl, SELF_TYPE_NAME)
    out = []
    for rule in s.x_validations if rules is None else rules:
        rule = rule if isinstance(rule, dict) else {}
        out.append(_compile_rule(compiler, s, rule, size, decl))
    return out


def unsupported(s: Structural) -> str:
    """Upstream (Compile): the error of rules on a node CEL cannot see."""
    return (f"rule declared on schema that does not support validation rules type: '{s.type}' "
            f"x-kubernetes-preserve-unknown-fields: '{str(s.x_preserve_unknown_fields).lower()}'")


def _typed_errors(cr: CompiledRule, decl: decltype.DeclType | None) -> bool | None:
    """Check the rule and its messageExpression with self (and oldSelf) of the node's declared
    type (typedenv.py); record upstream's errors; False if the rule does not compile, None if
    it could not be checked so (no protobuf, or a node CEL does not see)."""
    if decl is None:
        return None
    env = typedenv.typed_env(decl, optional_old_self=cr.optional_old_self)
    if env is None:
        return None
    err, out = env.check(_str(cr.rule, "rule"))
    if err or out != "bool":
        cr.error = err or "cel expression must evaluate to a bool"
        return False
    msg = _str(cr.rule, "messageExpression")
    if msg:
        err, out = env.check(msg)
        if err or out != "string":
            cr.message_error = "messageExpression " + err if err else "messageExpression must evaluate to a string"
    return True


def _compile_rule(compiler: Any, s: Structural, rule: Obj, size: int,
                  decl: decltype.DeclType | None = None) -> CompiledRule:
    text = _str(rule, "rule")
    cr = CompiledRule(rule, optional_old_self=rule.get("optionalOldSelf") is True, type_key=types.type_key(s))
    if not text.strip():
        return cr
    typed = _typed_errors(cr, decl)
    if typed is False:
        return cr
    # an optionalOldSelf rule is first checked with oldSelf dyn (it is an optional in the rule),
    # then compiled wrapped below
    env = types.env(cr.type_key, SELF, OLD_SELF)
    res = (types.env("dyn", SELF, OLD_SELF) if cr.optional_old_self else env).compile(text, (compiler.ANY,))
    if res.program is not None and cr.optional_old_self and not _uses(res.ast, OLD_SELF):
        res = env.compile(text, (compiler.ANY,))      # no optional after all: run it as any rule
    if res.program is None and typed:
        # checked with the declared types already: what the runtime's checker refuses here
        # (`5 < 10.0`, cel-go's cross-type comparisons) runs unchecked
        res = env.compile(text, (compiler.ANY,), checked=False)
    if res.program is None:
        cr.error = res.error
        return cr
    if res.output_type not in ("bool", "dyn"):
        cr.error = "cel expression must evaluate to a bool"
        return cr
    cr.uses_old_self = _uses(res.ast, OLD_SELF)
    decls = {SELF: decl, OLD_SELF: decl} if decl is not None else None
    cr.max_cost = res.estimated_cost({SELF: size, OLD_SELF: size}, decls)
    if decl is not None:
        cr.max_cardinality = decltype.max_cardinality(decl.min_serialized_size)
    cr.program = res
    if cr.optional_old_self and cr.uses_old_self:
        wrapped = types.env(cr.type_key, SELF, HAS_OLD, OLD_VALUE).compile(
            f"cel.bind({OLD_SELF}, {HAS_OLD} ? optional.of({OLD_VALUE}) : optional.none(), ({text}\n))",
            (compiler.ANY,))
        if wrapped.program is None:
            cr.error, cr.program = wrapped.error, None
            return cr
        cr.program = wrapped
    msg = _str(rule, "messageExpression")
    if msg and not cr.message_error:
        m = env.compile(msg, (compiler.ANY,))
        if m.program is None:
            cr.message_error = "messageExpression " + m.error
        elif m.output_type not in ("string", "dyn"):
            cr.message_error = "messageExpression must evaluate to a string"
        else:
            cr.message_program = m
            cr.message_max_cost = m.estimated_cost({SELF: size, OLD_SELF: size}, decls)
    fp = _str(rule, "fieldPath")
    if fp:
        try:
            cr.field_path = valid_field_path(fp, s)[0]
        except ValueError:
            pass
    return cr


def _uses(node: Any, name: str) -> bool:
    """Whether the checked expression references the variable `name`."""
    if node is None:
        return False
    if node.kind == "ident" and node.name == name:
        return True
    return any(_uses(a, name) for a in node.args) or any(_uses(c, name) for c in node.comp.values())


def max_size(s: Structural | None) -> int:
    """The size bound of `self` and the values in it: a list's or map's own bound, else the
    largest list or map below s when there is one (iterations dominate the estimate; nested
    collections and long strings inside a loop are then under-counted, erring on the side of
    accepting a CRD upstream might refuse), else the longest string."""
    sizes = {"collection": 0, "scalar": 1}
    if s is not None and (s.type == "array" or s.type == "object" and s.additional_properties_schema is not None):
        _sizes(s, sizes, 64)               # a list or map: its own bound (the loops over it dominate)
    else:
        _sizes(s, sizes, 0)
    return sizes["collection"] or sizes["scalar"]


def _sizes(s: Structural | None, out: dict[str, int], depth: int) -> None:
    if s is None or depth > 64:
        return
    vv = s.value_validation
    if s.x_int_or_string or s.x_preserve_unknown_fields and not s.properties:
        out["scalar"] = max(out["scalar"], MAX_REQUEST_SIZE_BYTES)
        out["collection"] = max(out["collection"], MAX_REQUEST_SIZE_BYTES // 3)
    elif s.type == "string":
        own = vv.max_length if vv is not None and vv.max_length is not None else MAX_REQUEST_SIZE_BYTES - 2
        out["scalar"] = max(out["scalar"], own)
    elif s.type == "array":
        unbounded = MAX_REQUEST_SIZE_BYTES // (_min_serialized(s.items) + 1)
        own = vv.max_items if vv is not None and vv.max_items is not None else unbounded
        out["collection"] = max(out["collection"], own)
    elif s.type == "object":
        if s.additional_properties is not None and s.additional_properties is not False:
            unbounded = MAX_REQUEST_SIZE_BYTES // (_min_serialized(s.additional_properties_schema) + 5)
            own = vv.max_properties if vv is not None and vv.max_properties is not None else unbounded
        else:
            own = len(s.properties)
        out["collection"] = max(out["collection"], own)
    for p in s.properties.values():
        _sizes(p, out, depth + 1)
    _sizes(s.items, out, depth + 1)
    _sizes(s.additional_properties_schema, out, depth + 1)


def _min_serialized(s: Structural | None) -> int:
    """Upstream's MinSerializedSize of a value of this schema (`""`, `[]`, `{}`, `0`)."""
    if s is None:
        return 1
    return 2 if s.type in ("string", "array", "object") else 1


# --- the checks when a CRD is written (crd_validation.CEL_HOOK) ------------------------------

def _rule_value(rule: Obj) -> JSONValue:
    """The internal ValidationRule as upstream's field error prints it (its JSON, Go's field
    names, no tags)."""
    return JSONValue({"Rule": _str(rule, "rule"), "Message": _str(rule, "message"),
                      "MessageExpression": _str(rule, "messageExpression"),
                      "Reason": rule.get("reason") if isinstance(rule.get("reason"), str) else None,
                      "FieldPath": _str(rule, "fieldPath"),
                      "OptionalOldSelf": rule.get("optionalOldSelf") if isinstance(rule.get("optionalOldSelf"), bool)
                      else None})


def exceeds(cost_name: str, cost: int, limit: int = STATIC_ESTIMATED_COST_LIMIT) -> str:
    from kubeplane.apiserver.cel.cost import exceeds_budget_message
    return exceeds_budget_message(cost_name, cost, limit)


def check_rules(schema: Obj, p: str, uncorrelatable: str | None = None) -> list[FieldError]:
    """Upstream: the CEL errors of ValidateCustomResourceDefinitionOpenAPISchema for the node
    at path p: compile errors, oldSelf under the items of a list that is not a list-type map
    (`uncorrelatable`: that list's path), optionalOldSelf unused. The costs are checked over
    the whole schema (costs.py)."""
    s = structural_from(schema)
    if s.conversion_errors:
        return []
    resource_root = p.endswith("openAPIV3Schema") or s.x_embedded_resource
    if typedenv.available() and decltype.schema_decl_type(s, resource_root) is None:
        return [errors.internal_error(child(p, "x-kubernetes-validations"), unsupported(s))]
    errs: list[FieldError] = []
    for i, cr in enumerate(compile_rules(s, None, resource_root)):
        rp = index(child(p, "x-kubernetes-validations"), i)
        if cr.error:
            errs.append(errors.invalid(child(rp, "rule"), _rule_value(cr.rule), cr.error))
        if cr.message_error:
            errs.append(errors.invalid(child(rp, "messageExpression"), _rule_value(cr.rule), cr.message_error))
        if cr.uses_old_self:
            if uncorrelatable is not None:
                errs.append(errors.invalid(child(rp, "rule"), _str(cr.rule, "rule"), "oldSelf cannot be used on the "
                                           f"uncorrelatable portion of the schema within {uncorrelatable}"))
        elif cr.program is not None and isinstance(cr.rule.get("optionalOldSelf"), bool):
            errs.append(errors.invalid(child(rp, "optionalOldSelf"), cr.rule["optionalOldSelf"],
                                       "may not be set if oldSelf is not used in rule"))
    return errs
