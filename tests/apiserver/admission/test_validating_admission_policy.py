"""The ValidatingAdmissionPolicy plugin on a memory store, with upstream's messages and cases
(pkg/admission/plugin/policy/validating/admission_test.go: TestBasicPolicyDefinitionFailure,
TestDefinitionDoesntMatch, TestReconfigureBinding, TestNativeTypeParam, TestAuditValidationAction,
TestWarnValidationAction, TestMultipleValidationActions, TestMatchConditions, TestAuditAnnotations,
TestNamespaceParamRefName, TestParamRef, TestCompositionRun...)."""
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from kubeplane.api import errors
from kubeplane.apiserver.admission import Attributes, Operation
from kubeplane.apiserver.admission.plugins.validatingadmissionpolicy import ValidatingAdmissionPolicy
from kubeplane.apiserver.server import APIServer

NS = "default"
RULES = [{"apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"], "operations": ["CREATE", "UPDATE"]}]


def policy(name: str = "replicalimit-policy.example.com", validations: list[dict[str, Any]] | None = None,
           **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"failurePolicy": "Fail", "matchConstraints": {"resourceRules": RULES},
                         "validations": validations or [{"expression": "object.spec.replicas <= 5"}], **spec}
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name}, "spec": s}


def binding(name: str = "replicalimit-binding-test.example.com", policy_name: str = "replicalimit-policy.example.com",
            actions: tuple[str, ...] = ("Deny",), **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {"policyName": policy_name, "validationActions": list(actions), **spec}}


def deployment(replicas: int = 6, name: str = "d1", labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": NS, "labels": labels or {"app": "x"}},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}


def attrs(obj: Any, op: Operation = Operation.CREATE, old: Any = None, ns: str = NS) -> Attributes:
    return Attributes(op, "apps", "v1", "deployments", "Deployment", ns, obj["metadata"]["name"], obj, old_obj=old)


async def put(server: APIServer, *objs: dict[str, Any]) -> None:
    for o in objs:
        plural = {"ValidatingAdmissionPolicy": "validatingadmissionpolicies",
                  "ValidatingAdmissionPolicyBinding": "validatingadmissionpolicybindings",
                  "ConfigMap": "configmaps", "Namespace": "namespaces"}[o["kind"]]
        ns = o["metadata"].get("namespace")
        key = f"/registry/{plural}/{ns + '/' if ns else ''}{o['metadata']['name']}"
        if await server.storage.get(key) is not None:
            await server.storage.delete(key)
        await server.storage.create(key, o)


async def denial(plugin: ValidatingAdmissionPolicy, a: Attributes) -> errors.StatusError:
    with pytest.raises(errors.StatusError) as e:
        await plugin.validate(a)
    return e.value


async def test_no_policy_admits(server: APIServer) -> None:
    p = ValidatingAdmissionPolicy(server)
    await p.validate(attrs(deployment(6)))
    assert p.validators == []


async def test_policy_without_binding_does_nothing(server: APIServer) -> None:
    await put(server, policy())
    p = ValidatingAdmissionPolicy(server)
    await p.validate(attrs(deployment(6)))


async def test_deny_with_upstreams_message(server: APIServer) -> None:
    await put(server, policy(), binding())
    p = ValidatingAdmissionPolicy(server)
    await p.validate(attrs(deployment(5)))
    e = await denial(p, attrs(deployment(6)))
    assert e.code == 422 and e.reason == "Invalid"
    assert e.message == ('deployments.apps "d1" is forbidden: ValidatingAdmissionPolicy '
                         "'replicalimit-policy.example.com' with binding 'replicalimit-binding-test.example.com' "
                         "denied request: failed expression: object.spec.replicas <= 5")
    assert e.details and e.details["causes"][-1]["message"].startswith("ValidatingAdmissionPolicy ")


async def test_message_reason_and_message_expression(server: APIServer) -> None:
    await put(server, policy(validations=[
        {"expression": "object.spec.replicas <= 5", "message": "too many", "reason": "Forbidden"}]), binding())
    p = ValidatingAdmissionPolicy(server)
    e = await denial(p, attrs(deployment(6)))
    assert e.code == 403 and e.reason == "Forbidden" and e.message.endswith("denied request: too many")
    await put(server, policy(validations=[
        {"expression": "object.spec.replicas <= 5", "message": "too many",
         "messageExpression": "'replicas ' + string(object.spec.replicas) + ' > 5'"}]))
    e = await denial(p, attrs(deployment(7)))
    assert e.message.endswith("denied request: replicas 7 > 5")
    # a messageExpression that fails (or is blank) falls back to the message
    await put(server, policy(validations=[
        {"expression": "object.spec.replicas <= 5", "message": "too many", "messageExpression": "object.nope"}]))
    e = await denial(p, attrs(deployment(7)))
    assert e.message.endswith("denied request: too many")


async def test_warn_and_audit_actions(server: APIServer) -> None:
    await put(server, policy(), binding(actions=("Warn", "Audit")))
    p = ValidatingAdmissionPolicy(server)
    a = attrs(deployment(6))
    await p.validate(a)
    assert a.warnings == ["Validation failed for ValidatingAdmissionPolicy 'replicalimit-policy.example.com' with "
                          "binding 'replicalimit-binding-test.example.com': failed expression: object.spec.replicas <= 5"]
    failures = json.loads(a.audit_annotations["validation.policy.admission.k8s.io/validation_failure"])
    assert failures == [{"message": "failed expression: object.spec.replicas <= 5",
                         "policy": "replicalimit-policy.example.com",
                         "binding": "replicalimit-binding-test.example.com", "expressionIndex": 0,
                         "validationActions": ["Warn", "Audit"]}]


async def test_rules_and_exclusions(server: APIServer) -> None:
    await put(server, policy(matchConstraints={"resourceRules": RULES, "excludeResourceRules": [
        {"apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"], "operations": ["*"],
         "resourceNames": ["excluded"]}]}), binding())
    p = ValidatingAdmissionPolicy(server)
    await p.validate(attrs(deployment(6, name="excluded")))
    await p.validate(Attributes(Operation.DELETE, "apps", "v1", "deployments", "Deployment", NS, "d1",
                                None, old_obj=deployment(6)))        # DELETE is not in the rules
    await denial(p, attrs(deployment(6), Operation.UPDATE, old=deployment(1)))


async def test_binding_match_resources_namespace_selector(server: APIServer) -> None:
    await put(server, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod", "labels": {"env": "prod"}}},
              policy(), binding(matchResources={"namespaceSelector": {"matchLabels": {"env": "prod"}}}))
    p = ValidatingAdmissionPolicy(server)
    await p.validate(attrs(deployment(6)))                             # default has no env=prod
    d = deployment(6)
    d["metadata"]["namespace"] = "prod"
    await denial(p, attrs(d, ns="prod"))


async def test_object_selector(server: APIServer) -> None:
    await put(server, policy(), binding(matchResources={"objectSelector": {"matchLabels": {"app": "guarded"}}}))
    p = ValidatingAdmissionPolicy(server)
    await p.validate(attrs(deployment(6)))
    await denial(p, attrs(deployment(6, labels={"app": "guarded"})))


async def test_reconfigure_binding_takes_effect(server: APIServer) -> None:
    await put(server, policy(), binding())
    p = ValidatingAdmissionPolicy(server)
    await denial(p, attrs(deployment(6)))
    await put(server, binding(policy_name="other-policy"))
    await p.validate(attrs(deployment(6)))


async def test_params_from_a_configmap(server: APIServer) -> None:
    await put(server,
              {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "limits", "namespace": NS},
               "data": {"max": "3"}},
              policy(paramKind={"apiVersion": "v1", "kind": "ConfigMap"},
                     validations=[{"expression": "object.spec.replicas <= int(params.data.max)",
                                   "messageExpression": "'at most ' + params.data.max"}]),
              binding(paramRef={"name": "limits", "parameterNotFoundAction": "Deny"}))
    p = ValidatingAdmissionPolicy(server)
    await p.validate(attrs(deployment(3)))
    e = await denial(p, attrs(deployment(4)))
    assert e.message.endswith("denied request: at most 3")
    await put(server, binding(paramRef={"name": "missing", "parameterNotFoundAction": "Deny"}))
    e = await denial(p, attrs(deployment(1)))
    assert e.message.endswith("denied request: failed to configure binding: no params found for policy binding "
                              "with `Deny` parameterNotFoundAction")
    await put(server, binding(paramRef={"name": "missing", "parameterNotFoundAction": "Allow"}))
    await p.validate(attrs(deployment(9)))


async def test_match_conditions_variables_and_audit_annotations(server: APIServer) -> None:
    await put(server, policy(
        matchConditions=[{"name": "not-exempt", "expression": "!('exempt' in object.metadata.labels)"}],
        variables=[{"name": "replicas", "expression": "object.spec.replicas"},
                   {"name": "limit", "expression": "variables.replicas > 10 ? 10 : 5"}],
        validations=[{"expression": "variables.replicas <= variables.limit"}],
        auditAnnotations=[{"key": "high-replica-count", "valueExpression":
                           "object.spec.replicas > 3 ? 'Deployment spec.replicas set to ' + "
                           "string(object.spec.replicas) : null"}]), binding())
    p = ValidatingAdmissionPolicy(server)
    a = attrs(deployment(4))
    await p.validate(a)
    assert a.audit_annotations == {"replicalimit-policy.example.com/high-replica-count":
                                   "Deployment spec.replicas set to 4"}
    e = await denial(p, attrs(deployment(6)))
    assert e.message.endswith("failed expression: variables.replicas <= variables.limit")
    await p.validate(attrs(deployment(6, labels={"exempt": "yes"})))


async def test_failure_policy_on_errors(server: APIServer) -> None:
    await put(server, policy(validations=[{"expression": "object.spec.nope == 1"}]), binding())
    p = ValidatingAdmissionPolicy(server)
    e = await denial(p, attrs(deployment(1)))
    assert e.message.endswith("denied request: expression 'object.spec.nope == 1' resulted in error: no such key: nope")
    await put(server, policy(validations=[{"expression": "object.spec.nope == 1"}], failurePolicy="Ignore"))
    await p.validate(attrs(deployment(1)))


async def test_compile_error_denies_with_fail(server: APIServer) -> None:
    await put(server, policy(validations=[{"expression": "object.spec.replicas < "}]), binding())
    p = ValidatingAdmissionPolicy(server)
    e = await denial(p, attrs(deployment(1)))
    assert "denied request: compilation error: compilation failed: ERROR: <input>:1:24: Syntax error" in e.message


async def test_runtime_cost_limit(server: APIServer) -> None:
    d = deployment(1)
    d["spec"]["items"] = list(range(300))
    await put(server, policy(validations=[
        {"expression": "object.spec.items.all(a, object.spec.items.all(b, a * b >= 0))"}]), binding())
    p = ValidatingAdmissionPolicy(server)
    e = await denial(p, attrs(d))
    assert e.message.endswith("resulted in error: operation cancelled: actual cost limit exceeded")


async def test_runtime_cost_budget_of_a_policy(server: APIServer) -> None:
    """Upstream: each validation within the per-call limit, together over the policy's budget
    (celconfig.RuntimeCELCostBudget, 10,000,000): one decision, upstream's ErrOutOfBudget text.
    Here a regex over a 500 KB field: ceil(500,001 * 0.1) * ceil(20 * 0.25) = 250,005 each."""
    d = deployment(1)
    d["spec"]["blob"] = "a" * 500_000
    check = {"expression": "object.spec.blob.matches('^a+(b|c|d|e|f)?a*$')"}
    await put(server, policy(validations=[check] * 39), binding())
    p = ValidatingAdmissionPolicy(server)
    await p.validate(attrs(d))                                  # 39 * 250,005 = 9,750,195
    await put(server, policy(validations=[check] * 41))         # 10,250,205
    e = await denial(p, attrs(d))
    assert e.message.endswith("denied request: validation failed due to running out of cost budget, "
                              "no further validation rules will be run")
    await put(server, policy(validations=[check] * 41, failurePolicy="Ignore"))
    await p.validate(attrs(d))


async def test_message_expressions_spend_what_validations_left(server: APIServer) -> None:
    d = deployment(1)
    d["spec"]["blob"] = "a" * 500_000
    check = {"expression": "object.spec.blob.matches('^a+(b|c|d|e|f)?a*$')",
             "messageExpression": "object.spec.blob.matches('^a+(b|c|d|e|f)?a*$') ? 'x' : 'y'"}
    await put(server, policy(validations=[check] * 21), binding())
    p = ValidatingAdmissionPolicy(server)
    e = await denial(p, attrs(d))
    assert e.message.endswith("denied request: failed messageExpression: validation failed due to running out of "
                              "cost budget, no further validation rules will be run")


async def test_authorizer_variable(server: APIServer) -> None:
    await put(server, policy(validations=[{"expression": "authorizer.group('apps').resource('deployments')"
                                                         ".namespace('default').check('delete').allowed()"}]),
              binding())
    p = ValidatingAdmissionPolicy(server)
    await p.validate(attrs(deployment(1)))     # AlwaysAllow


# --- the policy's own validation (upstream: pkg/apis/admissionregistration/validation/validation_test.go) -----

async def create_policy(server: APIServer, obj: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    import orjson
    from kubeplane.apiserver.request import Request
    resp = await server.route_trusted(Request.build(
        "POST", "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies", "",
        {"content-type": "application/json"}, orjson.dumps(obj)))
    return resp.status, orjson.loads(resp.body)


@pytest.mark.parametrize("spec, causes", [
    ({"validations": [{"expression": "object.x < 100"}]}, []),
    ({"validations": [{"expression": "object.x in ['foo', "}]},
     [("FieldValueInvalid", "spec.validations[0].expression",
       "Invalid value: \"object.x in ['foo', \": compilation failed: ERROR: <input>:1:21: Syntax error: missing ']' at '<EOF>'")]),
    ({"validations": [{"expression": "1 < 'asdf'"}]},
     [("FieldValueInvalid", "spec.validations[0].expression",
       "Invalid value: \"1 < 'asdf'\": compilation failed: ERROR: <input>:1:3: found no matching overload for "
       "'_<_' applied to '(int, string)'")]),
    ({"validations": [{"expression": "'string'"}]},
     [("FieldValueInvalid", "spec.validations[0].expression",
       "Invalid value: \"'string'\": must evaluate to bool but got string")]),
    ({"validations": [{"expression": "params.x < 1"}]},
     [("FieldValueInvalid", "spec.validations[0].expression",
       "Invalid value: \"params.x < 1\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'params'")]),
    ({"validations": [{"expression": "true", "messageExpression": "42"}]},
     [("FieldValueInvalid", "spec.validations[0].messageExpression",
       'Invalid value: "42": must evaluate to string but got int')]),
    ({"validations": [{"expression": "true", "messageExpression": "'x' + string(authorizer.path('/x').check('get').allowed())"}]},
     [("FieldValueInvalid", "spec.validations[0].messageExpression",
       "undeclared reference to 'authorizer'")]),
    ({"validations": [{"expression": "true", "message": "a\nb"}]},
     [("FieldValueInvalid", "spec.validations[0].message", "message must not contain line breaks")]),
    ({"validations": [{"expression": "true", "reason": "Nope"}]},
     [("FieldValueNotSupported", "spec.validations[0].reason", 'Unsupported value: "Nope"')]),
    ({"variables": [{"name": "foo-bar", "expression": "1"}], "validations": [{"expression": "variables.foo == 1"}]},
     [("FieldValueInvalid", "spec.variables[0].name", 'Invalid value: "foo-bar": name is not a valid CEL identifier')]),
    ({"auditAnnotations": [{"key": "k", "valueExpression": "42"}]},
     [("FieldValueInvalid", "spec.auditAnnotations[0].valueExpression",
       'Invalid value: "42": must evaluate to one of [string null_type] but got int')]),
    ({"matchConditions": [{"name": "m", "expression": "object.x"}], "validations": [{"expression": "true"}]}, []),
    ({"matchConditions": [{"name": "m", "expression": "'x'"}], "validations": [{"expression": "true"}]},
     [("FieldValueInvalid", "spec.matchConditions[0].expression",
       "Invalid value: \"'x'\": must evaluate to bool but got string")]),
], ids=["ok", "syntax", "no-overload", "not-bool", "params-without-paramKind", "message-not-string",
        "message-has-no-authorizer", "message-line-break", "reason", "variable-name", "audit-annotation-type",
        "match-condition-dyn", "match-condition-type"])
async def test_policy_validation(server: APIServer, spec: dict[str, Any], causes: list[tuple[str, str, str]]) -> None:
    obj = policy(name="p", **spec)
    if "validations" not in spec:
        del obj["spec"]["validations"]
    status, body = await create_policy(server, obj)
    if not causes:
        assert status == 201, body
        return
    assert status == 422, body
    got = [(c["reason"], c["field"], c["message"]) for c in body["details"]["causes"]]
    assert len(got) == len(causes), got
    for (reason, fld, message), (greason, gfield, gmessage) in zip(causes, got):
        assert (greason, gfield) == (reason, fld) and message in gmessage, got


class _DenyDeletes:
    def authorize(self, a: Any) -> Any:
        from kubeplane.apiserver.authorization.authorizer import Decision
        if a.verb == "delete":
            return Decision.DENY, "no deletes for " + a.user.name
        return Decision.ALLOW, ""


async def test_authorizer_checks_the_requests_user(server: APIServer) -> None:
    """authorizer and authorizer.requestResource ask the API server's authorizer for the
    request's user (upstream's example: only users who may delete may set replicas > 5). A
    messageExpression has no authorizer (upstream): it falls back to the message."""
    from kubeplane.apiserver.authentication.user import authenticated
    await put(server, policy(variables=[
        {"name": "reason", "expression": "authorizer.group('apps').resource('deployments').namespace('default')"
                                         ".check('delete').reason()"}], validations=[
        {"expression": "object.spec.replicas <= 5 || authorizer.requestResource.check('delete').allowed()",
         "message": "may not scale", "messageExpression": "authorizer.path('/x').check('get').reason()"},
        {"expression": "variables.reason == ''", "messageExpression": "variables.reason"}]), binding())
    server.authorizer = _DenyDeletes()       # type: ignore[assignment]
    p = ValidatingAdmissionPolicy(server)
    a = attrs(deployment(6))
    a.user = authenticated("jane")
    e = await denial(p, a)
    assert e.message.endswith("denied request: may not scale")
    a = attrs(deployment(5))
    a.user = authenticated("jane")
    e = await denial(p, a)
    assert e.message.endswith("denied request: no deletes for jane")


EVENTS_RULES = [{"apiGroups": ["events.k8s.io"], "apiVersions": ["v1"], "resources": ["events"], "operations": ["*"]}]


def core_event(message: str) -> Attributes:
    obj = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1", "namespace": NS},
           "involvedObject": {"kind": "Pod", "name": "p"}, "reason": "Started", "message": message}
    return Attributes(Operation.CREATE, "", "v1", "events", "Event", NS, "e1", obj)


@pytest.mark.parametrize("match_policy", [None, "Equivalent", "Exact"])
async def test_match_policy_equivalent(server: APIServer, match_policy: str | None) -> None:
    """A policy for events.k8s.io/v1 events applies to a core/v1 event write unless its
    matchPolicy is Exact, and sees the object and `request` as the kind it matched (upstream:
    matchesResourceRules, VersionedAttributes, CreateAdmissionRequest)."""
    constraints: dict[str, Any] = {"resourceRules": EVENTS_RULES}
    if match_policy:
        constraints["matchPolicy"] = match_policy
    await put(server, policy(matchConstraints=constraints, validations=[
        {"expression": "object.note != 'bad'", "message": "bad note"},
        {"expression": "request.kind.group == 'events.k8s.io' && request.resource.group == 'events.k8s.io' "
                       "&& request.requestKind.group == '' && request.requestResource.version == 'v1'",
         "message": "wrong request"}]), binding())
    p = ValidatingAdmissionPolicy(server)
    await p.validate(core_event("fine"))
    if match_policy == "Exact":
        await p.validate(core_event("bad"))
        return
    e = await denial(p, core_event("bad"))
    assert e.message == ('events "e1" is forbidden: ValidatingAdmissionPolicy '
                         "'replicalimit-policy.example.com' with binding 'replicalimit-binding-test.example.com' "
                         "denied request: bad note")


async def test_excluded_equivalent_resource(server: APIServer) -> None:
    """excludeResourceRules match equivalently too: excluding events.k8s.io events excludes core events."""
    await put(server, policy(matchConstraints={"resourceRules": [{**EVENTS_RULES[0], "apiGroups": ["*"]}],
                                               "excludeResourceRules": EVENTS_RULES},
                             validations=[{"expression": "false"}]), binding())
    p = ValidatingAdmissionPolicy(server)
    await p.validate(core_event("any"))


# --- the check metrics (upstream's policy/validating/metrics and policy/mutating/metrics) ---

@pytest.fixture
def fresh_metrics() -> Iterator[None]:
    from kubeplane.apiserver.admission import policy_metrics
    policy_metrics.reset()
    yield
    policy_metrics.reset()


def checks(subsystem: str) -> dict[tuple[str, ...], int]:
    from kubeplane.apiserver.admission import policy_metrics
    return {labels: int(sum(h[:-1])) for (sub, labels), h in policy_metrics._checks.items() if sub == subsystem}


def test_check_error_types() -> None:
    """Upstream: ErrorType (validating and mutating errors.go)"""
    from kubeplane.apiserver.admission.policy_metrics import error_type
    assert error_type(None) == "no_error"
    assert error_type("compilation failed: ERROR: <input>:1:1: ...") == "compile_error"
    assert error_type("compilation error: x") == "compile_error"
    assert error_type("validation failed due to running out of cost budget, no further validation rules will "
                      "be run") == "out_of_budget"
    assert error_type("expression 'x' resulted in error: no such key: y") == "invalid_error"


async def test_checks_are_observed_per_binding_action(server: APIServer, fresh_metrics: None) -> None:
    """A failed validation once per action of the binding; a passing one not at all."""
    from kubeplane.apiserver.admission import policy_metrics
    p = ValidatingAdmissionPolicy(server)
    await put(server, policy(), binding(actions=("Warn", "Audit")))
    await p.validate(attrs(deployment(6)))
    await p.validate(attrs(deployment(5)))
    name = ("replicalimit-policy.example.com", "replicalimit-binding-test.example.com")
    assert checks(policy_metrics.VALIDATING) == {(*name, "no_error", "warn"): 1, (*name, "no_error", "audit"): 1}
    await put(server, binding(actions=("Deny",)))
    await denial(p, attrs(deployment(6)))
    assert checks(policy_metrics.VALIDATING)[(*name, "no_error", "deny")] == 1


@pytest.mark.parametrize("failure_policy, action", [("Fail", "deny"), ("Ignore", "allow")])
async def test_an_evaluation_error_is_observed_as_its_failure_policy_decides(
        server: APIServer, fresh_metrics: None, failure_policy: str, action: str) -> None:
    from kubeplane.apiserver.admission import policy_metrics
    p = ValidatingAdmissionPolicy(server)
    await put(server, policy(validations=[{"expression": "object.spec.nope > 1"}], failurePolicy=failure_policy),
              binding())
    if failure_policy == "Fail":
        await denial(p, attrs(deployment(6)))
    else:
        await p.validate(attrs(deployment(6)))
    assert checks(policy_metrics.VALIDATING) == {
        ("replicalimit-policy.example.com", "replicalimit-binding-test.example.com", "invalid_error", action): 1}


async def test_the_check_families_on_metrics(server: APIServer, fresh_metrics: None) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    from kubeplane.apiserver.admission import policy_metrics
    from kubeplane.apiserver.authentication.user import authenticated
    from kubeplane.apiserver.request import Request
    policy_metrics.observe(policy_metrics.MUTATING, ("p", "b", "no_error"), 0.002)
    policy_metrics.observe(policy_metrics.VALIDATING, ("p", "b", "no_error", "deny"), 0.0000001)
    server.authenticator.token_file.tokens["admin"] = authenticated("admin", "system:masters")
    resp = await server.handle(Request.build("GET", "/metrics", "", {"authorization": "Bearer admin"}))
    families = {f.name: f for f in text_string_to_metric_families(resp.body.decode())}
    mutating = families["apiserver_mutating_admission_policy_check"]
    assert [(s.name, s.labels, s.value) for s in mutating.samples] == [
        ("apiserver_mutating_admission_policy_check_total",
         {"policy": "p", "policy_binding": "b", "error_type": "no_error"}, 1.0)]
    duration = families["apiserver_validating_admission_policy_check_duration_seconds"]
    assert [(s.labels["le"], s.value) for s in duration.samples if s.name.endswith("_bucket")] == [
        ("5e-07", 1.0), ("0.001", 1.0), ("0.01", 1.0), ("0.1", 1.0), ("1.0", 1.0), ("+Inf", 1.0)]
    assert duration.samples[0].labels["enforcement_action"] == "deny"
