"""ValidatingAdmissionPolicy with the real kubectl: a CEL rule bound to a namespace denies with
upstream's message, or warns."""
from __future__ import annotations

import json
from typing import Any

from .cluster import Cluster, eventually


def policy(name: str) -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {"failurePolicy": "Fail",
                     "matchConstraints": {"resourceRules": [
                         {"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                          "resources": ["deployments"]}]},
                     "validations": [{"expression": "object.spec.replicas <= 5"}]}}


def binding(name: str, policy_name: str, ns: str, action: str) -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {"policyName": policy_name, "validationActions": [action],
                     "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}}}}


def deployment(name: str, ns: str, replicas: int) -> str:
    return json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
                       "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                                "template": {"metadata": {"labels": {"app": name}},
                                             "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})


def test_policy_denies_and_warns(cluster: Cluster) -> None:
    cluster.kubectl("create", "namespace", "vap-deny")
    cluster.kubectl("create", "namespace", "vap-warn")
    cluster.apply_yaml(policy("replicalimit-policy.example.com"))
    cluster.apply_yaml(binding("replicalimit-binding-test.example.com", "replicalimit-policy.example.com",
                               "vap-deny", "Deny"))
    cluster.apply_yaml(policy("replicalimit-warn.example.com"))
    cluster.apply_yaml(binding("replicalimit-warn-binding.example.com", "replicalimit-warn.example.com",
                               "vap-warn", "Warn"))

    res = cluster.kubectl("create", "-f", "-", input=deployment("big", "vap-deny", 6), check=False)
    assert res.returncode != 0
    assert res.stderr.strip() == (
        'The deployments "big" is invalid: : ValidatingAdmissionPolicy \'replicalimit-policy.example.com\' '
        "with binding 'replicalimit-binding-test.example.com' denied request: failed expression: "
        "object.spec.replicas <= 5")
    assert cluster.kubectl("get", "deployment", "big", "-n", "vap-deny", check=False).returncode != 0
    assert cluster.kubectl("create", "-f", "-", input=deployment("small", "vap-deny", 5)).returncode == 0

    res = cluster.kubectl("create", "-f", "-", input=deployment("big", "vap-warn", 6))
    assert res.stdout.strip() == "deployment.apps/big created"
    assert res.stderr.strip() == (
        "Warning: Validation failed for ValidatingAdmissionPolicy 'replicalimit-warn.example.com' with binding "
        "'replicalimit-warn-binding.example.com': failed expression: object.spec.replicas <= 5")

    # an update past the limit is refused too (kubectl scale writes deployments/scale, a
    # subresource the rule does not name: allowed, as upstream); deleting the binding lifts it
    res = cluster.kubectl("patch", "deployment", "small", "-n", "vap-deny", "-p", '{"spec":{"replicas":7}}',
                          check=False)
    assert res.returncode != 0 and "denied request: failed expression: object.spec.replicas <= 5" in res.stderr
    assert cluster.kubectl("scale", "deployment", "small", "-n", "vap-deny", "--replicas=7").returncode == 0
    cluster.kubectl("delete", "validatingadmissionpolicybinding", "replicalimit-binding-test.example.com")
    eventually(lambda: cluster.kubectl("create", "-f", "-", input=deployment("big", "vap-deny", 6),
                                       check=False).returncode == 0, "the policy stops applying")


def test_policy_status_type_checking(cluster: Cluster) -> None:
    """The status controller writes observedGeneration and the type check's warnings (a field
    the Deployment schema lacks), and clears them once the policy is fixed."""
    bad = policy("typo-policy.example.com")
    bad["spec"]["validations"] = [{"expression": "object.spec.replicsa <= 5"}]
    cluster.apply_yaml(bad)

    def status() -> dict[str, Any]:
        out = cluster.kubectl("get", "validatingadmissionpolicy", "typo-policy.example.com", "-o", "json").stdout
        return json.loads(out).get("status") or {}
    eventually(lambda: status().get("observedGeneration") == 1, "the status controller checks the policy")
    warnings = status()["typeChecking"]["expressionWarnings"]
    assert [w["fieldRef"] for w in warnings] == ["spec.validations[0].expression"]
    assert warnings[0]["warning"].startswith("apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replicsa'")
    cluster.apply_yaml(policy("typo-policy.example.com"))
    eventually(lambda: status().get("observedGeneration") == 2, "the fixed policy is checked again")
    assert not status()["typeChecking"].get("expressionWarnings")
