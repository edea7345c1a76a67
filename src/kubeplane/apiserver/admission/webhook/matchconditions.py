"""A webhook's matchConditions: CEL expressions that must all be true for it to be called.

Upstream: matcher.Match (plugin/webhook/matchconditions/matcher.go). Each condition evaluates to
true, false or an error. Any false: the webhook is skipped. Otherwise, any error: with
failurePolicy Fail the request is refused (ShouldCallHook's 403, `<resource> "<name>" is
forbidden: <errors>`), with Ignore the webhook is skipped. All true: the webhook is called.

The CEL engine (apiserver/cel/) is plugged in through EVALUATOR, cel_evaluator below:

    EVALUATOR(conditions, activation) -> list of (True | False | Exception), one per condition

`conditions` are the webhook's matchConditions as stored ({"name", "expression"}), the
expressions compiled with upstream's match-condition environment (compile once and cache by
expression: this is called per request); `activation` holds the CEL variables `object`,
`oldObject`, `request` (the AdmissionRequest as request.create_v1_admission_review builds it),
and, for the `authorizer` variable, the server's authorizer and the request's user under
"authorizer" and "user" and its resource check under "authorizer.requestResource"; an
Exception is that condition's
evaluation error (its str() is the message), counted against the runtime cost budget
RuntimeCELCostBudgetMatchConditions as upstream.

Without an engine (EVALUATOR None: a test's), every condition is an evaluation error saying
so: a webhook with matchConditions is then refused under failurePolicy Fail and skipped under
Ignore, as upstream treats conditions it cannot evaluate, and never called blindly.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]

Evaluator = Callable[[Sequence[Obj], Obj], list[Any]]

NOT_AVAILABLE = "matchConditions cannot be evaluated: no CEL engine is available"


def cel_evaluator(conditions: Sequence[Obj], activation: Obj) -> list[Any]:
    """Each condition compiled (once: the environment caches by expression) in upstream's
    match-condition environment and evaluated: True, False or the error as an Exception."""
    from ...cel import compiler
    from ...cel.activation import AUTHORIZER, REQUEST_RESOURCE
    from ...cel.matchconditions import VARIABLES
    env = compiler.env(*VARIABLES)
    data = {"object": activation.get("object"), "oldObject": activation.get("oldObject"),
            "request": activation.get("request"), "namespaceObject": None, "authorizer": AUTHORIZER,
            REQUEST_RESOURCE: activation.get(REQUEST_RESOURCE)}
    act = env.activation(data)
    out: list[Any] = []
    with compiler.authorizer(activation.get("authorizer"), activation.get("user")):
        for cond in conditions:
            compiled = env.compile(str(cond.get("expression", "")))
            if compiled.error:
                out.append(RuntimeError(compiled.error))
                continue
            r = compiler.evaluate(compiled, act)
            out.append(RuntimeError(r.error) if r.error else r.value is not False)
    return out


EVALUATOR: Evaluator | None = cel_evaluator


@dataclass(slots=True, frozen=True)
class MatchResult:
    """Upstream: MatchResult — matches, or the error to refuse the request with."""
    matches: bool
    error: str = ""
    failed_condition: str = ""


def match(conditions: Sequence[Obj], activation: Obj, ignore_failures: bool) -> MatchResult:
    """Upstream: matcher.Match."""
    if EVALUATOR is None:
        results: list[Any] = [RuntimeError(NOT_AVAILABLE)] * len(conditions)
    else:
        try:
            results = EVALUATOR(conditions, activation)
        except Exception as e:       # the engine failed as a whole: upstream's filter error
            return MatchResult(False) if ignore_failures else MatchResult(False, str(e) or type(e).__name__)
    errs: list[str] = []
    for cond, result in zip(conditions, results):
        if isinstance(result, Exception):
            errs.append(str(result) or type(result).__name__)
        elif result is False:
            return MatchResult(False, failed_condition=str(cond.get("name") or ""))
    if errs:
        if ignore_failures:
            return MatchResult(False)
        return MatchResult(False, _aggregate(errs))
    return MatchResult(True)


def _aggregate(errs: list[str]) -> str:
    """utilerrors.NewAggregate(...).Error(): one message as it is, several as `[a, b]` (repeats once)."""
    unique = list(dict.fromkeys(errs))
    return unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"
