"""ValidatingAdmissionPolicy: CEL validations of writes, chosen by policies and their bindings.

Upstream: pkg/admission/plugin/policy/validating (plugin.go, dispatcher.go Dispatch,
validator.go Validate) and policy/generic (CollectParams). For each policy whose
matchConstraints select the request, each binding of it whose matchResources select it too:
collect the params (paramKind/paramRef), then the policy's matchConditions, variables,
validations and auditAnnotations run; a failed validation is a Deny (403-class error with
upstream's message), a warning or an audit annotation as the binding's validationActions say;
compile and runtime errors follow the policy's failurePolicy.

Policies and bindings are read from watch-fed indexes of their storage prefixes (_index.py) and
compiled when either changes, never per request: with no binding, a request costs one look
at the index's watcher (~0.5 us) and no coroutine.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from ....api import errors
from ..chain import _NOTHING, register
from ..interface import Attributes, Operation, forbidden
from . import validatingadmissionpolicy_matching as matching
from ._policy import PolicyIndex, PolicyPlugin, _ConfigError

if TYPE_CHECKING:
    from ...cel import compiler
    from ...cel.matchconditions import MatchConditions
    from ...server import APIServer

# The CEL engine (apiserver/cel, ~30 ms to import) is imported by the functions below, which
# run only once a policy is bound: a server without policies starts without it.

Obj = dict[str, Any]

POLICIES = "/registry/validatingadmissionpolicies/"
BINDINGS = "/registry/validatingadmissionpolicybindings/"
PREFIX = "/registry/validatingadmissionpolic"
MAX_AUDIT_ANNOTATION_VALUE_LENGTH = 10 * 1024
_REASON_CODES = {"Forbidden": 403, "Unauthorized": 401, "RequestEntityTooLarge": 413, "Invalid": 422}


@dataclass(slots=True)
class Validator:
    """A policy's compiled expressions. Upstream: validator + its CEL filters."""
    policy: Obj
    env: compiler.Env
    failure_policy: str
    match_conditions: MatchConditions
    variables: list[tuple[str, compiler.CompilationResult]]
    validations: list[tuple[Obj, compiler.CompilationResult, compiler.CompilationResult | None]]
    audit_annotations: list[tuple[str, compiler.CompilationResult]]
    bindings: list[Obj] = field(default_factory=list)

    @property
    def name(self) -> str:
        return str(self.policy["metadata"]["name"])


def compile_policy(policy: Obj) -> Validator:
    from ...cel import compiler
    from ...cel.matchconditions import MatchConditions
    from ...cel.validation import policy_variables
    spec = policy.get("spec") or {}
    env = compiler.env(*policy_variables(spec))
    message_env = compiler.env(*policy_variables(spec, authorizer=False))    # upstream: no authorizer there
    return Validator(
        policy=policy,
        env=env,
        failure_policy=spec.get("failurePolicy") or "Fail",
        match_conditions=MatchConditions(spec.get("matchConditions") or [], spec.get("failurePolicy") or "Fail",
                                         env.variables),
        variables=[(str(v.get("name", "")), env.compile(str(v.get("expression", "")), (compiler.ANY,)))
                   for v in spec.get("variables") or []],
        validations=[(v, env.compile(str(v.get("expression", ""))),
                      message_env.compile(str(v["messageExpression"]), (compiler.STRING,))
                      if v.get("messageExpression") else None)
                     for v in spec.get("validations") or []],
        audit_annotations=[(str(x.get("key", "")), env.compile(str(x.get("valueExpression", "")),
                                                                (compiler.STRING, "null_type")))
                           for x in spec.get("auditAnnotations") or []],
    )


@dataclass(slots=True)
class Decision:
    validator: Validator
    binding: Obj | None
    message: str
    reason: str = ""
    elapsed: float = 0.0          # the expression's evaluation, for the check metrics
    error: bool = False           # an evaluation error (not a validation that returned false)


@register
class ValidatingAdmissionPolicy(PolicyPlugin):
    NAME = "ValidatingAdmissionPolicy"
    VALIDATING = True
    CONFIG_PREFIX = PREFIX
    CONFIG_PREFIXES = (POLICIES, BINDINGS)

    def __init__(self, api: APIServer) -> None:
        super().__init__(api)
        self.index = PolicyIndex(api.storage, POLICIES, BINDINGS)
        self._generation: tuple[int, int] | None = (-1, -1)
        self.validators: list[Validator] = []

    def dormant(self) -> bool | None:
        """No policy bound (None until the policies are compiled as of now)."""
        if self.index.poll() != self._generation:
            return None
        return not self.validators

    def validate(self, a: Attributes) -> Awaitable[None]:  # type: ignore[override]
        """Nothing to await (no coroutine made) while no policy is bound and neither index
        changed: the cost of a write no policy can concern."""
        if self.index.poll() != self._generation:
            return self._rebuild_and_dispatch(a)
        return self.dispatch(a) if self.validators else _NOTHING

    async def _rebuild_and_dispatch(self, a: Attributes) -> None:
        await self._rebuild()
        if self.validators:
            await self.dispatch(a)

    async def _rebuild(self) -> None:
        """Compile the policies that have a binding (upstream keeps only those as hooks too)."""
        generation = await self.index.refresh()
        policies, bindings = self.index.polled()
        by_policy: dict[str, list[Obj]] = {}
        for b in bindings:
            by_policy.setdefault((b.get("spec") or {}).get("policyName", ""), []).append(b)
        validators = []
        for p in policies:
            bound = by_policy.get(p["metadata"]["name"])
            if bound:
                v = compile_policy(p)
                v.bindings = bound
                validators.append(v)
        self.validators, self._generation = validators, generation

    async def dispatch(self, a: Attributes) -> None:
        """Upstream: dispatcher.Dispatch."""
        from ...cel.activation import admission_request, namespace_object
        denied: list[Decision] = []
        failures: list[Obj] = []
        ns_holder: list[Obj | None] = []
        request: Obj | None = None
        for v in self.validators:
            spec = v.policy.get("spec") or {}
            constraints = spec.get("matchConstraints") or {}
            m = await self._matches(constraints, a, ns_holder, require_rules=True)
            if m is None:
                continue
            va = matching.versioned_attributes(a, m)    # matchPolicy Equivalent: as the matched kind
            for b in v.bindings:
                bspec = b.get("spec") or {}
                if not await self._matches(bspec.get("matchResources") or {}, a, ns_holder, require_rules=False):
                    continue
                try:
                    params = await self._params(spec.get("paramKind"), bspec.get("paramRef"), a)
                except _ConfigError as e:
                    if v.failure_policy != "Ignore":
                        denied.append(Decision(v, b, f"failed to configure binding: {e}"))
                    continue
                if request is None:
                    request = admission_request(a)
                namespace = namespace_object(await self._namespace(a, ns_holder)) if a.namespace else None
                req = request if va is a else matching.versioned_request(request, a, m)
                for param in params:
                    self._validate_one(v, b, va, param, req, namespace, denied, failures)
        if failures:
            a.audit_annotations["validation.policy.admission.k8s.io/validation_failure"] = json.dumps(failures)
        if denied:
            raise _denial(a, denied[0])

    def _validate_one(self, v: Validator, b: Obj, a: Attributes, param: Obj | None, request: Obj,
                      namespace: Obj | None, denied: list[Decision], failures: list[Obj]) -> None:
        """Upstream: validator.Validate and the dispatcher's handling of its decisions."""
        from ...cel import compiler
        from ...cel.activation import AUTHORIZER, REQUEST_RESOURCE, request_resource
        fail = v.failure_policy != "Ignore"
        data: Obj = {"object": a.obj, "oldObject": a.old_obj, "request": request, "params": param,
                     "namespaceObject": namespace, "authorizer": AUTHORIZER, REQUEST_RESOURCE: request_resource(a),
                     "variables": {}}
        env = v.env
        with compiler.authorizer(getattr(self.api, "authorizer", None), a.user):
            activation = env.activation(data)
            if v.match_conditions:
                m = v.match_conditions.match_activation(activation)
                if m.error:
                    self._act(v, b, a, 0, Decision(v, b, m.error, error=True), ["Deny"], denied, failures)
                    return
                if not m.matches:
                    return
            budget = compiler.Budget()          # upstream: celconfig.RuntimeCELCostBudget per Validate
            if v.variables:
                activation = self._with_variables(v, env, data, budget)
            actions = (b.get("spec") or {}).get("validationActions") or []
            results, elapsed = [], []
            for _, compiled, _ in v.validations:
                started = time.perf_counter()
                r = compiler.evaluate(compiled, activation)
                elapsed.append(time.perf_counter() - started)
                if not budget.charge(r.cost, r.refine):
                    self._error(v, b, a, Decision(v, b, compiler.OUT_OF_BUDGET, elapsed=elapsed[-1], error=True),
                                fail, denied, failures)
                    return
                results.append(r)
            # every messageExpression is evaluated (and charged) with what the validations left
            costs = (m.runtime_cost(activation) for _, _, m in v.validations if m is not None)
            messages_spent = all(budget.charge(c.spent, c.refine) for c in costs)
            for i, ((validation, _, message_expr), r) in enumerate(zip(v.validations, results)):
                if r.error or not messages_spent:
                    message = r.error or f"failed messageExpression: {compiler.OUT_OF_BUDGET}"
                    self._error(v, b, a, Decision(v, b, message, elapsed=elapsed[i], error=True), fail, denied,
                                failures, i)
                    continue
                if r.value is True:
                    continue
                d = Decision(v, b, _message(validation, message_expr, activation),
                             validation.get("reason") or "Invalid", elapsed[i])
                self._act(v, b, a, i, d, actions, denied, failures)
            self._audit_annotations(v, b, a, activation, fail, denied)

    @staticmethod
    def _audit_annotations(v: Validator, b: Obj, a: Attributes, activation: Any, fail: bool,
                           denied: list[Decision]) -> None:
        """Upstream: the auditAnnotation filter, with a budget of its own; an error denies
        (observed as a rejection) under failurePolicy Fail and is dropped under Ignore."""
        from ...cel import compiler
        budget = compiler.Budget()
        for key, compiled in v.audit_annotations:
            started = time.perf_counter()
            r = compiler.evaluate(compiled, activation)
            error = compiler.OUT_OF_BUDGET if not budget.charge(r.cost, r.refine) else r.error
            if error:
                if fail:
                    denied.append(Decision(v, b, error, elapsed=time.perf_counter() - started, error=True))
                    _observe(v, b, error, "deny", denied[-1].elapsed)
                if error == compiler.OUT_OF_BUDGET:
                    return
                continue
            value = r.value.strip() if isinstance(r.value, str) else ""
            if value:
                a.audit_annotations[f"{v.name}/{key}"] = value[:MAX_AUDIT_ANNOTATION_VALUE_LENGTH]

    @staticmethod
    def _with_variables(v: Validator, env: compiler.Env, data: Obj, budget: compiler.Budget) -> Any:
        """Evaluate the variables in order, each seeing the ones before it. Upstream composes
        them lazily (and charges a variable to the first expression using it); an erroring
        variable is left out, so an expression using it errors."""
        from ...cel import compiler
        variables: Obj = {}
        data["variables"] = variables
        activation = env.activation(data)
        for name, compiled in v.variables:
            r = compiler.evaluate(compiled, activation)
            budget.charge(r.cost, r.refine)
            if not r.error:
                variables[name] = r.value
                activation = env.activation(data)
        return activation

    def _error(self, v: Validator, b: Obj, a: Attributes, d: Decision, fail: bool, denied: list[Decision],
               failures: list[Obj], index: int = 0) -> None:
        """An evaluation error: a Deny under failurePolicy Fail, else let through (observed as
        allowed with its error type). Upstream: policyDecisionActionForError."""
        if fail:
            self._act(v, b, a, index, d, ["Deny"], denied, failures)
        else:
            _observe(v, b, d.message, "allow", d.elapsed)

    @staticmethod
    def _act(v: Validator, b: Obj, a: Attributes, index: int, d: Decision, actions: list[str],
             denied: list[Decision], failures: list[Obj]) -> None:
        for action in actions:
            if action == "Deny":
                denied.append(d)
            elif action == "Warn":
                a.warnings.append(f"Validation failed for ValidatingAdmissionPolicy '{v.name}' with binding "
                                  f"'{b['metadata']['name']}': {d.message}")
            elif action == "Audit":
                failures.append({"message": d.message, "policy": v.name, "binding": b["metadata"]["name"],
                                 "expressionIndex": index, "validationActions": actions})
            else:
                continue
            _observe(v, b, d.message if d.error else None, action.lower(), d.elapsed)


def _observe(v: Validator, b: Obj, error: str | None, action: str, elapsed: float) -> None:
    """Upstream: celmetrics.Metrics.Observe{Admission,Rejection,Warn,Audit}."""
    from .. import policy_metrics
    policy_metrics.observe(policy_metrics.VALIDATING, (v.name, str(b["metadata"]["name"]),
                                                       policy_metrics.error_type(error), action), elapsed)




def _message(validation: Obj, message_expr: compiler.CompilationResult | None, activation: Any) -> str:
    """Upstream: the messageExpression's string (trimmed, one line, at most 5 KiB), else
    message, else `failed expression: <expression>`."""
    from ...cel import compiler
    if message_expr is not None:
        r = compiler.evaluate(message_expr, activation)
        if not r.error and isinstance(r.value, str):
            m = r.value.strip()
            if m and len(m) <= compiler.MAX_EVALUATED_MESSAGE_EXPRESSION_SIZE_BYTES and "\n" not in m:
                return m
    if (validation.get("message") or "").strip():
        return str(validation["message"]).strip()
    return f"failed expression: {str(validation.get('expression', '')).strip()}"


def _denial(a: Attributes, d: Decision) -> errors.StatusError:
    """Upstream: the end of dispatcher.Dispatch — admission.NewForbidden, then the decision's
    reason (Invalid if none) and its code, and the message as a cause."""
    if d.binding is not None:
        message = (f"ValidatingAdmissionPolicy '{d.validator.name}' with binding '{d.binding['metadata']['name']}' "
                   f"denied request: {d.message}")
    else:
        message = f"ValidatingAdmissionPolicy '{d.validator.name}' denied request: {d.message}"
    err = forbidden(a, message)
    reason = d.reason or "Invalid"
    details = dict(err.details or {})
    details["causes"] = [*details.get("causes", []), {"message": message}]
    return errors.StatusError(_REASON_CODES.get(reason, 422), reason, err.message, details)


__all__ = ["ValidatingAdmissionPolicy", "compile_policy", "Operation"]
