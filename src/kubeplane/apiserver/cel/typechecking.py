"""A ValidatingAdmissionPolicy's expressions checked against the schemas of the kinds it
matches: status.typeChecking.expressionWarnings.

Upstream: TypeChecker.Check (admission/plugin/policy/validating/typechecking.go): for each kind
the policy's resourceRules name (no wildcards, at most 10, sorted), each validation's expression
and messageExpression compiled with `object`/`oldObject` typed by the kind's OpenAPI schema and
`params` by the paramKind's; the issues of each kind become one warning per expression, as
"<group/version, Kind=kind>: <issues>". Type errors never change what the policy does.

What the engine allows: cel-expr-python declares variables only as CEL's own types or proto
messages, so the typed environment upstream builds from a schema is not available here. The
check walks the checked AST instead: every field selected from `object`, `oldObject` or
`params` (through nested objects, maps, list items and comprehension variables) must be in the
schema, and every `variables.<name>` must be a declared variable — cel-go's `undefined field
'<name>'` with its position. A schema that keeps unknown fields, or a map, accepts any name.
Missing (documented in the module docstring of cel/__init__): the type mismatches cel-go finds
with typed fields (`found no matching overload for '_==_' applied to '(string, int)'`).
"""
from __future__ import annotations

from typing import Any

from ...api import resources
from ...api.schema import definitions, resolve
from . import compiler, cost
from .validation import policy_variables

MAX_TYPES_TO_CHECK = 10
Obj = dict[str, Any]
# A schema that accepts any field name (unknown, or a map's values).
ANY: Obj = {"x-kubernetes-preserve-unknown-fields": True}


def check(policy: Obj) -> list[Obj]:
    """Upstream: TypeChecker.Check — the policy's expression warnings (empty: none)."""
    spec = policy.get("spec") or {}
    kinds = types_to_check(spec)
    if not kinds:
        return []
    params = _kind_schema(*_param_gvk(spec))
    variables = {str(v.get("name", "")) for v in spec.get("variables") or []}
    env = compiler.env(*policy_variables(spec))
    warnings: list[Obj] = []
    for i, v in enumerate(spec.get("validations") or []):
        for field in ("expression", "messageExpression"):
            expression = v.get(field)
            if not expression:
                continue
            text = _check_expression(env, str(expression), kinds, params, variables)
            if text:
                warnings.append({"fieldRef": f"spec.validations[{i}].{field}", "warning": text})
    return warnings


def types_to_check(spec: Obj) -> list[tuple[str, str, str, Obj]]:
    """Upstream: typesToCheck — (group, version, kind, schema) of each kind the resourceRules
    name without wildcards, at most MAX_TYPES_TO_CHECK, sorted by group, version, kind."""
    found: dict[tuple[str, str, str], Obj] = {}
    for rule in (spec.get("matchConstraints") or {}).get("resourceRules") or []:
        groups, versions = rule.get("apiGroups") or [], rule.get("apiVersions") or []
        plurals = rule.get("resources") or []
        if any("*" in x for x in (*groups, *versions, *plurals)) or not (groups and versions and plurals):
            continue
        for group in sorted(groups):
            for version in sorted(versions):
                for plural in sorted(plurals):
                    info = resources.lookup(group, version, plural.split("/", 1)[0])
                    if info is None or "/" in plural:
                        continue
                    schema = _kind_schema(group, version, info.kind)
                    if schema is not None:
                        found[(group, version, info.kind)] = schema
                    if len(found) == MAX_TYPES_TO_CHECK:
                        return [(*k, v) for k, v in sorted(found.items())]
    return [(*k, v) for k, v in sorted(found.items())]


def _param_gvk(spec: Obj) -> tuple[str, str, str]:
    kind = spec.get("paramKind") or {}
    group, _, version = str(kind.get("apiVersion") or "").rpartition("/")
    return group, version, str(kind.get("kind") or "")


def _kind_schema(group: str, version: str, kind: str) -> Obj | None:
    """The kind's OpenAPI definition (None: not a kind we have a schema of, not checked)."""
    if not kind:
        return None
    info = resources.for_version_kind(group, version, kind)
    if info is None:
        return None
    return definitions().get(info.definition) if info.definition else None


def _gvk_string(group: str, version: str, kind: str) -> str:
    """schema.GroupVersionKind.String(): `apps/v1, Kind=Deployment`, `/v1, Kind=Pod`."""
    return f"{group}/{version}, Kind={kind}"


def _check_expression(env: compiler.Env, expression: str, kinds: list[tuple[str, str, str, Obj]],
                      params: Obj | None, variables: set[str]) -> str:
    serialized = env.checked(expression)
    if serialized is None:
        return ""                     # a compile error: refused when the policy was written
    ast, where = cost.checked_ast(serialized), cost.positions(serialized)
    messages = []
    for group, version, kind, schema in kinds:
        roots = {"object": schema, "oldObject": schema, "params": params,
                 "variables": {"properties": {v: ANY for v in variables}}}
        issues = [_issue(expression, where.get(node_id, 0), name) for node_id, name in _undefined(ast, roots, {})]
        if issues:
            messages.append(f"{_gvk_string(group, version, kind)}: " + "\n".join(issues) + "\n")
    return "\n".join(messages)


def _issue(expression: str, offset: int, name: str) -> str:
    """cel-go's issue text: `ERROR: <input>:line:col: message`, the line and a caret."""
    line_start = expression.rfind("\n", 0, offset) + 1
    line_no = expression.count("\n", 0, offset) + 1
    line_end = expression.find("\n", offset)
    text = expression[line_start:line_end if line_end >= 0 else len(expression)]
    col = offset - line_start
    return f"ERROR: <input>:{line_no}:{col + 1}: undefined field '{name}'\n | {text}\n | {'.' * col}^"


def _undefined(node: cost.Node, roots: dict[str, Obj | None], scope: dict[str, Obj | None]) -> list[tuple[int, str]]:
    """(select id, field) of every field its schema does not have, in source order."""
    out: list[tuple[int, str]] = []
    _walk(node, roots, scope, out)
    return sorted(out)


def _walk(node: cost.Node, roots: dict[str, Obj | None], scope: dict[str, Obj | None],
          out: list[tuple[int, str]]) -> Obj | None:
    """The schema of node's value (None: unknown), recording undefined fields on the way."""
    k = node.kind
    if k == "ident":
        if node.name in scope:
            return scope[node.name]
        return roots.get(node.name)
    if k == "select":
        parent = _walk(node.args[0], roots, scope, out)
        return _field(parent, node.name, node.id, out)
    if k == "comprehension":
        rng = _walk(node.comp["range"], roots, scope, out)
        inner = dict(scope)
        inner[node.name] = _element(rng)
        inner[str(node.value)] = None
        _walk(node.comp["init"], roots, inner, out)
        for part in ("cond", "step", "result"):
            _walk(node.comp[part], roots, inner, out)
        return None
    args = [_walk(a, roots, scope, out) for a in node.args]
    if k == "call" and node.name == "_[_]" and args:
        return _element(args[0], by_key=True)
    return None


def _field(parent: Obj | None, name: str, node_id: int, out: list[tuple[int, str]]) -> Obj | None:
    if parent is None:
        return None
    schema = _resolved(parent)
    props = schema.get("properties")
    if isinstance(props, dict) and name in props:
        return props[name]
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        return extra                                  # a map: any key, its values' schema
    if props is None or schema.get("x-kubernetes-preserve-unknown-fields") or extra is True:
        return None                                   # untyped: anything goes
    out.append((node_id, name))
    return None


def _element(schema: Obj | None, by_key: bool = False) -> Obj | None:
    """A list's items (a map's values when indexed, its keys — strings — when iterated)."""
    if schema is None:
        return None
    s = _resolved(schema)
    items = s.get("items")
    if isinstance(items, dict):
        return items
    extra = s.get("additionalProperties")
    if by_key and isinstance(extra, dict):
        return extra
    return None


def _resolved(schema: Obj) -> Obj:
    s = resolve(schema)
    for part in s.get("allOf") or []:             # {"allOf": [{"$ref": ...}], "description": ...}
        if isinstance(part, dict) and "$ref" in part:
            return resolve(part)
    return s
