"""Evaluating a custom object's x-kubernetes-validations.

Upstream: Validator (apiextensions-apiserver pkg/apiserver/schema/cel/validation.go): a tree
of validators mirroring the schema where rules are, walked over the object with one runtime
cost budget (celconfig.RuntimeCELCostBudget); `oldSelf` is the correlated old value (the same
property or map key; in a list, the item of the same key for a list-type map, else none), a
transition rule without one is skipped unless it sets optionalOldSelf; an error whose value is
unchanged from the old object (ratcheting) and whose rule does not use oldSelf is a warning
(upstream: warning.AddWarning with the error's text), collected by celvalidation.warnings().
"""
from __future__ import annotations

from time import perf_counter
from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

from ..schema.structural import Structural
from ..schema.validation import child, index, key
from . import add_warnings, types
from .compilation import HAS_OLD, OLD_SELF, OLD_VALUE, SELF, CompiledRule, compile_rules
from .values import to_cel

OUT_OF_BUDGET = "validation failed due to running out of cost budget, no further validation rules will be run"


class _Run:
    """One validation: the engine, the runtime cost budget, whether unchanged values ratchet,
    and the ratcheted errors (upstream: warnings)."""
    __slots__ = ("compiler", "budget", "ratchet", "warnings")

    def __init__(self, compiler: Any, budget: Any, ratchet: bool) -> None:
        self.compiler, self.budget, self.ratchet = compiler, budget, ratchet
        self.warnings: list[FieldError] = []


class _Out(Exception):
    """The budget ran out (upstream: remainingBudget < 0): stop every rule."""


class Validator:
    """Upstream: Validator — the rules of one schema node and the validators below it."""

    __slots__ = ("schema", "rules", "resource_root", "items", "properties", "additional_properties", "all_of")

    def __init__(self, s: Structural, resource_root: bool, src: Any = None) -> None:
        """src: where the rules are (a NestedValueValidation of an allOf), else s itself."""
        src = s if src is None else src
        self.schema = s
        self.resource_root = resource_root
        self.rules: list[CompiledRule] = []
        if src.x_validations:
            from kubeplane.apiserver.cel import metrics
            started = perf_counter()
            self.rules = compile_rules(s, src.x_validations, resource_root)
            metrics.observe_compilation(perf_counter() - started)
        items = s.items
        self.items = _new(_parts(src)[0], items, items.x_embedded_resource) if items is not None else None
        ap = s.additional_properties_schema
        self.additional_properties = _new(_parts(src)[2], ap, ap.x_embedded_resource) if ap is not None else None
        self.properties: dict[str, Validator] = {}
        for k, p in _parts(src)[1].items():
            node = s.properties.get(k)
            v = _new(p, node, node.x_embedded_resource) if node is not None else None
            if v is not None:
                self.properties[k] = v
        self.all_of = [v for n in _parts(src)[3] if (v := _new(n, s, resource_root)) is not None]

    def check(self, obj: Any, old: Any, fld_path: str, ratchet: bool = True) -> list[FieldError]:
        """Upstream: Validator.Validate with RuntimeCELCostBudget (old None on a create);
        ratchet: WithRatcheting (the strategy's updates), off for a CRD's defaults."""
        from kubeplane.apiserver.cel import compiler, metrics
        started = perf_counter()
        run = _Run(compiler, compiler.Budget(), ratchet)
        errs: list[FieldError] = []
        try:
            self._validate(run, fld_path, obj, old, errs)
        except _Out:
            pass
        except (TypeError, ValueError, RuntimeError, OverflowError) as e:   # a value the engine cannot take
            errs.append(errors.internal_error(fld_path or "<nil>", f"evaluating validation rules: {e}"))
        if run.warnings:
            add_warnings(str(e) for e in run.warnings)
        metrics.observe_evaluation(perf_counter() - started)
        return errs

    def _validate(self, run: _Run, path: str, obj: Any, old: Any, errs: list[FieldError]) -> None:
        if obj is None:
            return
        if self.rules:
            self._expressions(run, path, obj, old, errs)
        for v in self.all_of:
            v._validate(run, path, obj, old, errs)
        if isinstance(obj, list):
            if self.items is not None:
                olds = _map_list(self.schema, old)
                for i, x in enumerate(obj):
                    self.items._validate(run, index(path, i), x, olds(x), errs)
        elif isinstance(obj, dict):
            old_map = old if isinstance(old, dict) else {}
            if self.additional_properties is not None:
                for k, x in obj.items():
                    self.additional_properties._validate(run, key(path, k), x, old_map.get(k), errs)
            for k, x in obj.items():
                p = self.properties.get(k)
                if p is not None:
                    p._validate(run, child(path, k), x, old_map.get(k), errs)

    def _expressions(self, run: _Run, path: str, obj: Any, old: Any, errs: list[FieldError]) -> None:
        """Upstream: validateExpressions."""
        compiler, budget = run.compiler, run.budget
        s = self.schema
        at = path or "<nil>"
        if budget.remaining <= 0:
            errs.append(errors.invalid(at, s.type, OUT_OF_BUDGET))
            raise _Out
        plain: Any = None
        optional: Any = None
        for cr in self.rules:
            if cr.error:
                errs.append(errors.invalid(at, s.type, f"rule compile error: {cr.error}"))
                continue
            if cr.program is None:
                continue
            if cr.uses_old_self and old is None and not cr.optional_old_self:
                continue
            if cr.optional_old_self and cr.uses_old_self:
                if optional is None:
                    optional = self._activation(obj, old, True)
                act = optional
            else:
                if plain is None:
                    plain = self._activation(obj, old, False)
                act = plain
            res = compiler.evaluate(cr.program, act)
            # a call over the per-call limit is refused before it runs (it spent nothing)
            if not res.cost_exceeded and not budget.charge(res.cost, res.refine):
                errs.append(errors.invalid(at, s.type, OUT_OF_BUDGET))
                raise _Out
            # ratcheting (upstream's addErr): a rule without oldSelf failing on an unchanged value
            # is a warning, not an error
            out = run.warnings if run.ratchet and not cr.uses_old_self and old is not None and \
                (res.error or res.value is not True) and old == obj else errs
            if res.error:
                msg = _cause(res.error)
                if msg.startswith("no such overload"):
                    out.append(errors.invalid(at, s.type, f"'{msg}': call arguments did not match a supported "
                                              f"operator, function or macro signature for rule: {_rule_string(cr.rule)}"))
                elif res.cost_exceeded:
                    errs.append(errors.invalid(at, s.type, f"'{msg}': no further validation rules will be run due to "
                                               f"call cost exceeds limit for rule: {_rule_string(cr.rule)}"))
                    raise _Out
                else:
                    out.append(errors.invalid(at, s.type, f"{msg} evaluating rule: {_rule_string(cr.rule)}"))
                continue
            if res.value is True:
                continue
            where = child(path, cr.field_path) if cr.field_path else at
            detail = None
            if cr.message_program is not None:
                detail = self._message(compiler, budget, cr, plain or self._activation(obj, old, False),
                                       where, errs)
            if detail is None:
                detail = _message_or_default(cr.rule)
            value = errors._OMIT if s.type in ("object", "array") else obj
            out.append(_error_for_reason(where, value, detail, cr.rule.get("reason")))

    def _activation(self, obj: Any, old: Any, optional: bool) -> Any:
        s, root = self.schema, self.resource_root
        this = to_cel(obj, s, root)
        key = self.rules[0].type_key
        if optional:
            data = {SELF: this, HAS_OLD: old is not None, OLD_VALUE: to_cel(old, s, root)}
            return types.env(key, SELF, HAS_OLD, OLD_VALUE).activation(data)
        data = {SELF: this} if old is None else {SELF: this, OLD_SELF: to_cel(old, s, root)}
        return types.env(key, SELF, OLD_SELF).activation(data)

    def _message(self, compiler: Any, budget: Any, cr: CompiledRule, act: Any, where: str,
                 errs: list[FieldError]) -> str | None:
        """Upstream: evalMessageExpression — the message, or None (the rule's message then)."""
        res = compiler.evaluate(cr.message_program, act)
        if res.cost_exceeded:
            errs.append(errors.invalid(where, self.schema.type, "no further validation rules will be run due to call "
                                       f"cost exceeds limit for messageExpression: {_go_quote(cr.rule)}"))
            raise _Out
        if not budget.charge(res.cost, res.refine):
            errs.append(errors.invalid(where, self.schema.type, "messageExpression evaluation failed due to running out "
                                       "of cost budget, no further validation rules will be run"))
            raise _Out
        if res.error or not isinstance(res.value, str):
            return None
        msg = res.value.strip()
        if not msg or "\n" in msg or len(msg.encode()) > compiler.MAX_EVALUATED_MESSAGE_EXPRESSION_SIZE_BYTES:
            return None
        return msg


def check_default(s: Structural, default: Any, path: str, resource_root: bool) -> list[FieldError]:
    """Upstream (defaulting.ValidateDefaults): a default under its schema's rules, as an update
    to itself, then (with no error) as a create."""
    v = new_validator(s, resource_root)
    if v is None:
        return []
    return v.check(default, default, path, ratchet=False) or v.check(default, None, path, ratchet=False)


def new_validator(s: Structural | None, resource_root: bool) -> Validator | None:
    """Upstream: NewValidator — None when no rule is at or under s."""
    return _new(s, s, resource_root)


def _new(src: Any, node: Structural | None, resource_root: bool) -> Validator | None:
    """Upstream: validator(validationSchema, nodeSchema, ...) — the rules of src (a Structural
    or an allOf's NestedValueValidation) on the values of node."""
    if src is None or node is None or not _has_rules(src):
        return None
    return Validator(node, resource_root, src)


def _parts(src: Any) -> tuple[Any, dict[str, Any], Any, list[Any]]:
    """(items, properties, additionalProperties, allOf) of a Structural or NestedValueValidation."""
    if isinstance(src, Structural):
        vv = src.value_validation
        return src.items, src.properties, src.additional_properties_schema, vv.all_of if vv is not None else []
    return src.items, src.properties or {}, src.additional_properties, src.vv.all_of


def _has_rules(src: Any, depth: int = 0) -> bool:
    if src is None or depth > 64:
        return False
    items, props, ap, all_of = _parts(src)
    return bool(src.x_validations) or _has_rules(items, depth + 1) or _has_rules(ap, depth + 1) or \
        any(_has_rules(p, depth + 1) for p in props.values()) or any(_has_rules(n, depth + 1) for n in all_of)


def _map_list(s: Structural, old: Any) -> Any:
    """Upstream: makeMapList(...).Get — the old item with the same keys of a list-type map."""
    keys = s.x_list_map_keys
    if s.x_list_type != "map" or not keys or not isinstance(old, list):
        return lambda _x: None
    by_key: dict[tuple[Any, ...], Any] = {}
    for x in old:
        if isinstance(x, dict):
            by_key.setdefault(_key_of(x, keys), x)

    def get(x: Any) -> Any:
        return by_key.get(_key_of(x, keys)) if isinstance(x, dict) else None
    return get


def _key_of(x: dict[str, Any], keys: list[str]) -> tuple[Any, ...]:
    return tuple(repr(x.get(k)) for k in keys)


def _cause(error: str) -> str:
    """The runtime's error without the `expression '...' resulted in error: ` prefix."""
    marker = "' resulted in error: "
    i = error.find(marker)
    msg = error[i + len(marker):] if i >= 0 else error
    return "division by zero" if msg == "divide by zero" else msg      # cel-go's words


def _go_quote(rule: dict[str, Any]) -> str:
    return errors.go_quote(str(rule.get("messageExpression") or ""))


def _rule_string(rule: dict[str, Any]) -> str:
    """Upstream: ruleErrorString."""
    msg = rule.get("message")
    if isinstance(msg, str) and msg:
        return msg.strip()
    text = rule.get("rule")
    return text.strip() if isinstance(text, str) else ""


def _message_or_default(rule: dict[str, Any]) -> str:
    """Upstream: ruleMessageOrDefault."""
    msg = rule.get("message")
    if isinstance(msg, str) and msg:
        return msg.strip()
    return f"failed rule: {_rule_string(rule)}"


def _error_for_reason(path: str, value: Any, detail: str, reason: Any) -> FieldError:
    """Upstream: fieldErrorForReason."""
    if reason == "FieldValueForbidden":
        return errors.forbidden(path, detail)
    if reason == "FieldValueRequired":
        return errors.required(path, detail)
    if reason == "FieldValueDuplicate":
        return errors.duplicate(path, value)
    return errors.FieldError(errors.INVALID, path, value, detail)
