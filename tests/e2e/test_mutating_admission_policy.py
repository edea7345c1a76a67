"""MutatingAdmissionPolicy with the real kubectl: a policy bound to a namespace adds a label to
new Deployments (ApplyConfiguration) and an annotation (JSONPatch); a failing mutation is
refused with upstream's message."""
from __future__ import annotations

import json
from typing import Any

from .cluster import Cluster, eventually

RULES = [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["deployments"]}]


def policy(name: str, *mutations: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {"failurePolicy": "Fail", "reinvocationPolicy": "IfNeeded",
                     "matchConstraints": {"resourceRules": RULES}, "mutations": list(mutations)}}


def binding(name: str, policy_name: str, ns: str) -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {"policyName": policy_name,
                     "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}}}}}


def deployment(name: str, ns: str) -> str:
    return json.dumps({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
                       "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                                "template": {"metadata": {"labels": {"app": name}},
                                             "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})


def test_policy_adds_a_label_to_new_deployments(cluster: Cluster) -> None:
    cluster.kubectl("create", "namespace", "map-on")
    cluster.kubectl("create", "namespace", "map-off")
    cluster.apply_yaml(policy("add-team-label.example.com",
                              {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": (
                                  'Object{metadata: Object.metadata{labels: {"team": "platform"}}}')}},
                              {"patchType": "JSONPatch", "jsonPatch": {"expression": (
                                  '[JSONPatch{op: "add", path: "/metadata/annotations", value: {}},'
                                  ' JSONPatch{op: "add", path: "/metadata/annotations/"'
                                  ' + jsonpatch.escapeKey("example.com/mutated-by"), value: "policy"}]')}}))
    cluster.apply_yaml(binding("add-team-label-binding.example.com", "add-team-label.example.com", "map-on"))

    created: list[dict[str, Any]] = []

    def labelled() -> bool:
        """Create a deployment (the plugin sees the policy once its watch delivers it)."""
        name = f"web-{len(created)}"
        cluster.kubectl("create", "-f", "-", input=deployment(name, "map-on"))
        created.append(json.loads(cluster.kubectl("get", "deployment", name, "-n", "map-on", "-o", "json").stdout))
        return created[-1]["metadata"].get("labels") == {"team": "platform"}
    eventually(labelled, "the policy labels new deployments")
    got = created[-1]
    assert got["metadata"]["annotations"]["example.com/mutated-by"] == "policy"
    assert got["spec"]["template"]["metadata"]["labels"] == {"app": got["metadata"]["name"]}

    # the binding's namespace only
    cluster.kubectl("create", "-f", "-", input=deployment("web", "map-off"))
    got = json.loads(cluster.kubectl("get", "deployment", "web", "-n", "map-off", "-o", "json").stdout)
    assert "labels" not in got["metadata"]


def test_failing_mutation_is_refused(cluster: Cluster) -> None:
    cluster.kubectl("create", "namespace", "map-fail")
    cluster.apply_yaml(policy("broken.example.com",
                              {"patchType": "JSONPatch", "jsonPatch": {"expression": (
                                  '[JSONPatch{op: "replace", path: "/spec/nothing/here", value: 1}]')}}))
    cluster.apply_yaml(binding("broken-binding.example.com", "broken.example.com", "map-fail"))

    def refused() -> bool:
        res = cluster.kubectl("create", "-f", "-", input=deployment("web", "map-fail"), check=False)
        return res.returncode != 0
    eventually(refused, "the broken policy refuses new deployments")
    res = cluster.kubectl("create", "-f", "-", input=deployment("web", "map-fail"), check=False)
    assert res.stderr.startswith("The deployments \"web\" is invalid: : policy 'broken.example.com' with binding "
                                 "'broken-binding.example.com' denied request: JSON Patch: "), res.stderr
