"""rbac.authorization.k8s.io/v1 defaulting and validation, after upstream's validation_test.go
(pkg/apis/rbac/validation) and defaults_test.go."""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api.defaulting import rbac as defaulting
from kubeplane.api.validation import rbac as v

GROUP = "rbac.authorization.k8s.io"


def msgs(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def role(rules: list[dict[str, Any]], ns: str = "default") -> dict[str, Any]:
    return {"metadata": {"name": "r", "namespace": ns}, "rules": rules}


def test_defaults_fill_role_ref_and_subject_groups() -> None:
    b = {"roleRef": {"kind": "ClusterRole", "name": "view"},
         "subjects": [{"kind": "User", "name": "u"}, {"kind": "Group", "name": "g"},
                      {"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}]}
    defaulting.set_defaults_binding(b)
    assert b["roleRef"]["apiGroup"] == GROUP
    assert [s["apiGroup"] for s in b["subjects"]] == [GROUP, GROUP, ""]


def test_valid_role_and_non_resource_cluster_role() -> None:
    assert v.validate_role(role([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}])) == []
    cr = {"metadata": {"name": "cr"}, "rules": [{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]}
    assert v.validate_cluster_role(cr) == []


@pytest.mark.parametrize("rule,expected", [
    ({"apiGroups": [""], "resources": ["pods"]}, ["rules[0].verbs: Required value: verbs must contain at least one value"]),
    ({"resources": ["pods"], "verbs": ["get"]},
     ["rules[0].apiGroups: Required value: resource rules must supply at least one api group"]),
    ({"apiGroups": [""], "verbs": ["get"]},
     ["rules[0].resources: Required value: resource rules must supply at least one resource"]),
    ({"nonResourceURLs": ["/api"], "verbs": ["get"]},
     ['rules[0].nonResourceURLs: Invalid value: ["/api"]: namespaced rules cannot apply to non-resource URLs']),
])
def test_role_rules(rule: dict[str, Any], expected: list[str]) -> None:
    assert msgs(v.validate_role(role([rule]))) == expected


def test_cluster_role_rules_cannot_mix_resources_and_urls() -> None:
    cr = {"metadata": {"name": "cr"}, "rules": [{"nonResourceURLs": ["/api"], "resources": ["pods"], "verbs": ["get"]}]}
    assert msgs(v.validate_cluster_role(cr)) == [
        'rules[0].nonResourceURLs: Invalid value: ["/api"]: rules cannot apply to both regular resources and non-resource URLs']


def test_aggregation_rule_needs_a_selector() -> None:
    cr = {"metadata": {"name": "cr"}, "aggregationRule": {}}
    assert msgs(v.validate_cluster_role(cr)) == [
        "aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil"]


def test_names_are_path_segments() -> None:
    assert msgs(v.validate_role({"metadata": {"name": "a/b", "namespace": "default"}})) == [
        'metadata.name: Invalid value: "a/b": may not contain \'/\'']


def binding(**ref: str) -> dict[str, Any]:
    return {"metadata": {"name": "b", "namespace": "default"},
            "roleRef": {"apiGroup": GROUP, "kind": "Role", "name": "r", **ref},
            "subjects": [{"kind": "User", "apiGroup": GROUP, "name": "u"}]}


def test_role_binding_role_ref() -> None:
    assert v.validate_role_binding(binding()) == []
    assert msgs(v.validate_role_binding(binding(kind="Pod", apiGroup="x"))) == [
        'roleRef.apiGroup: Unsupported value: "x": supported values: "rbac.authorization.k8s.io"',
        'roleRef.kind: Unsupported value: "Pod": supported values: "Role", "ClusterRole"']
    crb = {**binding(kind="Role"), "metadata": {"name": "b"}}
    assert msgs(v.validate_cluster_role_binding(crb)) == [
        'roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"']
    assert msgs(v.validate_role_binding(binding(name=""))) == ["roleRef.name: Required value"]


def test_subjects() -> None:
    b = binding()
    b["subjects"] = [{"kind": "ServiceAccount", "apiGroup": GROUP, "name": "sa"}, {"kind": "Robot", "name": "x"},
                     {"kind": "User", "name": ""}]
    assert msgs(v.validate_role_binding(b)) == [
        'subjects[0].apiGroup: Unsupported value: "rbac.authorization.k8s.io": supported values: ""',
        'subjects[1].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"',
        "subjects[2].name: Required value",
        'subjects[2].apiGroup: Unsupported value: "": supported values: "rbac.authorization.k8s.io"']
    crb = {"metadata": {"name": "c"}, "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "r"},
           "subjects": [{"kind": "ServiceAccount", "name": "sa"}]}
    assert msgs(v.validate_cluster_role_binding(crb)) == ["subjects[0].namespace: Required value"]


def test_role_ref_cannot_change() -> None:
    old = binding()
    old["metadata"]["resourceVersion"] = "1"
    new = binding(name="other")
    new["metadata"]["resourceVersion"] = "1"
    assert msgs(v.validate_role_binding_update(new, old)) == [
        'roleRef: Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"Role","Name":"other"}: '
        'cannot change roleRef']
    same = binding()
    same["metadata"]["resourceVersion"] = "1"
    assert v.validate_role_binding_update(same, old) == []
