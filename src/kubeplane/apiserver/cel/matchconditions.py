"""matchConditions: named CEL conditions that decide whether a webhook (or a policy) applies.

Upstream: pkg/admission/plugin/webhook/matchconditions/matcher.go (Match). Every condition
true: match; any false: no match (the first false one named); errors and no false: the
failurePolicy decides (Fail: an error, Ignore: no match). Compiled once: build one
MatchConditions per webhook or policy when its configuration changes, call match() per request.

    mc = MatchConditions(webhook.get("matchConditions") or [], failure_policy="Fail")
    r = mc.match(attributes, authorizer=api.authorizer)
    if r.error: ...refuse with r.error (failurePolicy Fail)...
    elif not r.matches: ...skip the webhook...
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import compiler
from .activation import AUTHORIZER, REQUEST_RESOURCE, admission_request, request_resource

if TYPE_CHECKING:
    from ..admission.interface import Attributes

# Upstream: the variables a webhook's matchCondition sees (namespaceObject is declared, and null).
VARIABLES = ("object", "oldObject", "request", "namespaceObject", "authorizer", REQUEST_RESOURCE)


@dataclass(frozen=True, slots=True)
class MatchResult:
    matches: bool
    failed_condition: str = ""         # the name of the first condition that was false
    error: str = ""                    # set only with failurePolicy Fail


class MatchConditions:
    def __init__(self, conditions: list[dict[str, Any]], failure_policy: str = "Fail",
                 variables: tuple[str, ...] = VARIABLES) -> None:
        env = compiler.env(*variables)
        self.failure_policy = failure_policy or "Fail"
        self.conditions = [(str(c.get("name", "")), env.compile(str(c.get("expression", ""))))
                           for c in conditions]
        self.env = env

    def compile_errors(self) -> list[str]:
        return [r.error for _, r in self.conditions if r.error]

    def __bool__(self) -> bool:
        return bool(self.conditions)

    def match(self, a: Attributes, params: Any = None, authorizer: Any = None,
              request: dict[str, Any] | None = None) -> MatchResult:
        if not self.conditions:
            return MatchResult(True)
        data = {"object": a.obj, "oldObject": a.old_obj, "namespaceObject": None, "params": params,
                "request": request if request is not None else admission_request(a), "authorizer": AUTHORIZER,
                REQUEST_RESOURCE: request_resource(a)}
        return self.match_activation(self.env.activation(data), authorizer, a.user)

    def match_activation(self, activation: compiler.Activation, authorizer: Any = None,
                         user: Any = None) -> MatchResult:
        errors: list[str] = []
        with compiler.authorizer(authorizer, user):
            for name, compiled in self.conditions:
                r = compiler.evaluate(compiled, activation)
                if r.error:
                    errors.append(r.error)
                elif r.value is False:
                    return MatchResult(False, failed_condition=name)
        if errors:
            if self.failure_policy == "Fail":
                return MatchResult(False, error=errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]")
            return MatchResult(False)
        return MatchResult(True)
