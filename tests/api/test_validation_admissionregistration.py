"""admissionregistration.k8s.io/v1 defaulting and validation, after upstream's defaults_test.go and
validation_test.go (pkg/apis/admissionregistration)."""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api.defaulting import admissionregistration as defaulting
from kubeplane.api.validation import admissionregistration as v


def msgs(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def hook(**over: Any) -> dict[str, Any]:
    w = {"name": "w.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
         "clientConfig": {"url": "https://example.com"}}
    w.update(over)
    return w


def config(*hooks: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "c"}, "webhooks": list(hooks)}


def test_webhook_defaults() -> None:
    c = config(hook(rules=[{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
                    clientConfig={"service": {"namespace": "n", "name": "s"}}))
    defaulting.set_defaults_mutating_webhook_configuration(c)
    w = c["webhooks"][0]
    assert (w["failurePolicy"], w["matchPolicy"], w["timeoutSeconds"], w["reinvocationPolicy"]) == \
        ("Fail", "Equivalent", 10, "Never")
    assert w["namespaceSelector"] == {} and w["objectSelector"] == {}
    assert w["rules"][0]["scope"] == "*" and w["clientConfig"]["service"]["port"] == 443
    c = config(hook(timeoutSeconds=5, failurePolicy="Ignore"))
    defaulting.set_defaults_validating_webhook_configuration(c)
    assert (c["webhooks"][0]["timeoutSeconds"], c["webhooks"][0]["failurePolicy"]) == (5, "Ignore")
    assert "reinvocationPolicy" not in c["webhooks"][0]


def test_policy_defaults() -> None:
    p = {"spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""]}]}}}
    defaulting.set_defaults_admission_policy(p)
    assert p["spec"]["failurePolicy"] == "Fail"
    mc = p["spec"]["matchConstraints"]
    assert (mc["matchPolicy"], mc["namespaceSelector"], mc["objectSelector"]) == ("Equivalent", {}, {})
    assert mc["resourceRules"][0]["scope"] == "*"


def test_valid_configuration() -> None:
    assert v.validate_validating_webhook_configuration(config(hook())) == []


@pytest.mark.parametrize("over,expected", [
    ({"name": "foo"}, ['webhooks[0].name: Invalid value: "foo": should be a domain with at least three segments separated by dots']),
    ({"sideEffects": None}, ["webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun"]),
    ({"sideEffects": "Some"}, ['webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun"']),
    ({"timeoutSeconds": 0}, ["webhooks[0].timeoutSeconds: Invalid value: 0: the timeout value must be between 1 and 30 seconds"]),
    ({"failurePolicy": "Maybe"}, ['webhooks[0].failurePolicy: Unsupported value: "Maybe": supported values: "Fail", "Ignore"']),
    ({"matchPolicy": "Loose"}, ['webhooks[0].matchPolicy: Unsupported value: "Loose": supported values: "Equivalent", "Exact"']),
    ({"admissionReviewVersions": []}, ["webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1"]),
    ({"admissionReviewVersions": ["v2"]},
     ['webhooks[0].admissionReviewVersions: Invalid value: ["v2"]: must include at least one of v1, v1beta1']),
    ({"clientConfig": {}}, ["webhooks[0].clientConfig: Required value: exactly one of url or service is required"]),
    ({"clientConfig": {"url": "http://a.b"}},
     ["webhooks[0].clientConfig.url: Invalid value: \"http://a.b\": 'https' is the only allowed URL scheme"]),
    ({"clientConfig": {"service": {"namespace": "n", "name": "s", "path": "x"}}},
     ["webhooks[0].clientConfig.service.path: Invalid value: \"x\": must start with a '/'"]),
    ({"rules": [{"operations": [], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "scope": "All"}]},
     ["webhooks[0].rules[0].operations: Required value",
      'webhooks[0].rules[0].scope: Unsupported value: "All": supported values: "*", "Cluster", "Namespaced"']),
])
def test_webhook_rules(over: dict[str, Any], expected: list[str]) -> None:
    w = hook(**over)
    if over.get("sideEffects", "x") is None:
        del w["sideEffects"]
    assert msgs(v.validate_validating_webhook_configuration(config(w))) == expected


def test_duplicate_names_and_reinvocation() -> None:
    assert msgs(v.validate_mutating_webhook_configuration(config(hook(), hook(reinvocationPolicy="Always")))) == [
        'webhooks[1].reinvocationPolicy: Unsupported value: "Always": supported values: "IfNeeded", "Never"',
        'webhooks[1].name: Duplicate value: "w.example.com"']


def test_policy_binding_actions() -> None:
    b = {"metadata": {"name": "b"}, "spec": {"policyName": "p", "validationActions": ["Deny", "Warn", "Deny"]}}
    errs = msgs(v.validate_validating_admission_policy_binding(b))
    assert 'spec.validationActions[2]: Duplicate value: "Deny"' in errs
    assert any("must not contain both Deny and Warn" in e for e in errs)
    assert msgs(v.validate_validating_admission_policy_binding({"metadata": {"name": "b"}, "spec": {}})) == [
        "spec.policyName: Required value", "spec.validationActions: Required value"]


@pytest.mark.parametrize("conditions, expected", [
    ([{"name": "exclude-leases", "expression": "request.resource.resource != 'leases'"}], []),
    ([{"name": "", "expression": "  "}],
     ["webhooks[0].matchConditions[0].expression: Required value", "webhooks[0].matchConditions[0].name: Required value"]),
    ([{"name": "a", "expression": "true"}, {"name": "a", "expression": "true"}],
     ['webhooks[0].matchConditions[1].name: Duplicate value: "a"']),
    ([{"name": "-a", "expression": "true"}],
     ['webhooks[0].matchConditions[0].name: Invalid value: "-a": name part must consist of alphanumeric characters, '
      "'-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
      "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"]),
    ([{"name": f"c{i}", "expression": "true"} for i in range(65)],
     ["webhooks[0].matchConditions: Too many: 65: must have at most 64 items"]),
])
def test_webhook_match_conditions(conditions: list[dict[str, Any]], expected: list[str]) -> None:
    """Upstream: validateMatchConditions (the expressions' CEL is not compiled: issue 12)."""
    c = config(hook(matchConditions=conditions))
    defaulting.set_defaults_validating_webhook_configuration(c)
    assert msgs(v.validate_validating_webhook_configuration(c)) == expected
