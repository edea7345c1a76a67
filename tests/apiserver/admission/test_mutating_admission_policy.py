"""The MutatingAdmissionPolicy plugin on a memory store, with upstream's cases
(pkg/admission/plugin/policy/mutating/dispatcher_test.go: simple patch, with param, both
policies reinvoked, a policy setting the match condition a later one matches; patch/
json_patch_test.go and smd_test.go: JSONPatch ops, a failed test, atomic fields; the policy
errors of policy_dispatcher.go) and its object-literal rewriting (cel/mutation.py)."""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.api import errors
from kubeplane.apiserver.admission import Attributes, Operation
from kubeplane.apiserver.admission.plugins.mutatingadmissionpolicy import MutatingAdmissionPolicy
from kubeplane.apiserver.cel import mutation
from kubeplane.apiserver.server import APIServer

NS = "default"
RULES = [{"apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"], "operations": ["*"]}]


def apply_configuration(expression: str) -> dict[str, Any]:
    return {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": expression}}


def json_patch(expression: str) -> dict[str, Any]:
    return {"patchType": "JSONPatch", "jsonPatch": {"expression": expression}}


def policy(name: str, *mutations: dict[str, Any], **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"failurePolicy": "Fail", "reinvocationPolicy": "Never",
                         "matchConstraints": {"resourceRules": RULES}, "mutations": list(mutations), **spec}
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
            "metadata": {"name": name}, "spec": s}


def binding(policy_name: str, name: str = "binding", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding",
            "metadata": {"name": name}, "spec": {"policyName": policy_name, **spec}}


def deployment(replicas: int | None = 1, labels: dict[str, str] | None = None) -> dict[str, Any]:
    d: dict[str, Any] = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d1", "namespace": NS, **({"labels": labels} if labels else {})},
        "spec": {"selector": {"matchLabels": {"app": "x"}},
                 "template": {"metadata": {"labels": {"app": "x"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}], "volumes": [{"name": "x"}]}}}}
    if replicas is not None:
        d["spec"]["replicas"] = replicas
    return d


def attrs(obj: dict[str, Any], op: Operation = Operation.CREATE) -> Attributes:
    return Attributes(op, "apps", "v1", "deployments", "Deployment", NS, "d1", obj)


async def put(server: APIServer, *objs: dict[str, Any]) -> None:
    for o in objs:
        plural = {"MutatingAdmissionPolicy": "mutatingadmissionpolicies",
                  "MutatingAdmissionPolicyBinding": "mutatingadmissionpolicybindings",
                  "ConfigMap": "configmaps"}[o["kind"]]
        ns = o["metadata"].get("namespace")
        key = f"/registry/{plural}/{ns + '/' if ns else ''}{o['metadata']['name']}"
        if await server.storage.get(key) is not None:
            await server.storage.delete(key)
        await server.storage.create(key, o)


async def admit(server: APIServer, obj: dict[str, Any]) -> dict[str, Any]:
    await MutatingAdmissionPolicy(server).admit(a := attrs(obj))
    assert a.obj is not None
    return a.obj


async def denial(server: APIServer, obj: dict[str, Any]) -> errors.StatusError:
    with pytest.raises(errors.StatusError) as e:
        await MutatingAdmissionPolicy(server).admit(attrs(obj))
    return e.value


async def test_no_policy_leaves_the_object(server: APIServer) -> None:
    d = deployment()
    assert await admit(server, d) == deployment()


async def test_simple_patch(server: APIServer) -> None:
    await put(server, policy("policy1", apply_configuration(
        "Object{\n  spec: Object.spec{\n    replicas: object.spec.replicas + 100\n  }\n}")), binding("policy1"))
    got = await admit(server, deployment(1))
    assert got["spec"]["replicas"] == 101
    assert [v["name"] for v in got["spec"]["template"]["spec"]["volumes"]] == ["x"]   # merged, not replaced
    assert got["spec"]["strategy"]["type"] == "RollingUpdate"                 # defaulted after


async def test_with_param(server: APIServer) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm1", "namespace": NS},
          "data": {"key": "10"}}
    await put(server, cm, policy("policy1", apply_configuration(
        "Object{spec: Object.spec{replicas: int(params.data['key'])}}"),
        paramKind={"apiVersion": "v1", "kind": "ConfigMap"}),
        binding("policy1", paramRef={"name": "cm1", "namespace": NS, "parameterNotFoundAction": "Deny"}))
    assert (await admit(server, deployment(1)))["spec"]["replicas"] == 10


LABEL = ('Object{metadata: Object.metadata{labels: {"%s": string(int(object.?metadata.labels["count"]'
         '.orValue("1")) + 1)}}}')


async def test_both_policies(server: APIServer) -> None:
    await put(server, policy("policy1", apply_configuration(LABEL % "policy1")), binding("policy1", "b1"),
              policy("policy2", apply_configuration(LABEL % "policy2")), binding("policy2", "b2"))
    got = await admit(server, deployment(None))
    assert got["metadata"]["labels"] == {"policy1": "2", "policy2": "2"}


async def test_first_policy_sets_what_the_second_matches(server: APIServer) -> None:
    await put(server,
              policy("policy1", apply_configuration(
                  'Object{metadata: Object.metadata{labels: {"environment": "production"}}}')),
              binding("policy1", "b1"),
              policy("policy2", apply_configuration('Object{metadata: Object.metadata{labels: {"done": "yes"}}}'),
                     matchConditions=[{"name": "prod", "expression":
                                       'object.?metadata.labels["environment"].orValue("") == "production"'}]),
              binding("policy2", "b2"))
    got = await admit(server, deployment())
    assert got["metadata"]["labels"] == {"environment": "production", "done": "yes"}


async def test_reinvocation_if_needed(server: APIServer) -> None:
    """policy1 (IfNeeded) sees the label policy2 sets only when reinvoked; with Never it is not."""
    copy_label = ('Object{metadata: Object.metadata{labels: {"seen": '
                  'object.?metadata.labels["late"].orValue("none")}}}')
    await put(server, policy("policy1", apply_configuration(copy_label), reinvocationPolicy="IfNeeded"),
              binding("policy1", "b1"),
              policy("policy2", apply_configuration('Object{metadata: Object.metadata{labels: {"late": "x"}}}')),
              binding("policy2", "b2"))
    assert (await admit(server, deployment()))["metadata"]["labels"] == {"seen": "x", "late": "x"}
    await put(server, policy("policy1", apply_configuration(copy_label), reinvocationPolicy="Never"))
    assert (await admit(server, deployment()))["metadata"]["labels"] == {"seen": "none", "late": "x"}


async def test_json_patch(server: APIServer) -> None:
    await put(server, policy("policy1", json_patch(
        '[JSONPatch{op: "add", path: "/metadata/labels", value: {}},'
        ' JSONPatch{op: "add", path: "/metadata/labels/" + jsonpatch.escapeKey("example.com/team"), value: "a"},'
        ' JSONPatch{op: "replace", path: "/spec/replicas", value: 3}]')), binding("policy1"))
    got = await admit(server, deployment(1))
    assert got["metadata"]["labels"] == {"example.com/team": "a"} and got["spec"]["replicas"] == 3


async def test_json_patch_failed_test_leaves_the_object(server: APIServer) -> None:
    await put(server, policy("policy1", json_patch(
        '[JSONPatch{op: "test", path: "/spec/replicas", value: 5},'
        ' JSONPatch{op: "replace", path: "/spec/replicas", value: 3}]')), binding("policy1"))
    assert (await admit(server, deployment(1)))["spec"]["replicas"] == 1


async def test_errors_follow_the_failure_policy(server: APIServer) -> None:
    await put(server, policy("policy1", json_patch(
        '[JSONPatch{op: "replace", path: "/spec/nope/deeper", value: 3}]')), binding("policy1"))
    e = await denial(server, deployment(1))
    assert e.code == 403 and e.reason == "Invalid"
    assert e.message.startswith("policy 'policy1' with binding 'binding' denied request: JSON Patch: ")
    assert e.details and e.details["causes"] == [{"message": e.message}]
    await put(server, policy("policy1", json_patch('[JSONPatch{op: "replace", path: "/spec/nope/deeper", value: 3}]'),
                             failurePolicy="Ignore"))
    assert (await admit(server, deployment(1)))["spec"]["replicas"] == 1
    await put(server, policy("policy1", apply_configuration("Object{spec: Object.spec{replicas: object.nope}}")))
    e = await denial(server, deployment(1))
    assert e.message == ("policy 'policy1' with binding 'binding' denied request: expression "
                         "'Object{spec: Object.spec{replicas: object.nope}}' resulted in error: no such key: nope")


async def test_type_mismatch_and_atomic_fields(server: APIServer) -> None:
    await put(server, policy("policy1", apply_configuration(
        "Object{spec: Object.spec{selector: Object.spec.wrong{}}}")), binding("policy1"))
    e = await denial(server, deployment())
    assert e.message.endswith('denied request: type mismatch: unexpected type name "Object.spec.wrong", expected '
                              '"Object.spec.selector", which matches field name path from root Object type')
    await put(server, policy("policy1", apply_configuration(
        'Object{spec: Object.spec{selector: Object.spec.selector{matchLabels: {"a": "b"}}}}')))
    e = await denial(server, deployment())
    assert e.message.endswith("denied request: error applying patch: invalid ApplyConfiguration: may not mutate "
                              "atomic arrays, maps or structs: .spec.selector")


async def test_binding_param_not_found_and_config_errors(server: APIServer) -> None:
    await put(server, policy("policy1", apply_configuration("Object{}"),
                             paramKind={"apiVersion": "v1", "kind": "ConfigMap"}),
              binding("policy1", paramRef={"name": "missing", "namespace": NS, "parameterNotFoundAction": "Deny"}))
    e = await denial(server, deployment())
    assert e.reason == "Forbidden" and e.message == (
        "policy 'policy1' with binding 'binding' denied request: failed to configure binding: no params found for "
        "policy binding with `Deny` parameterNotFoundAction")


def test_rewrite_keeps_strings_and_maps() -> None:
    r = mutation.rewrite("Object{metadata: Object.metadata{labels: {'s': 'Object{x: 1}', \"k\": a.b}}}")
    assert r.expression == "{\"metadata\": {\"labels\": {'s': 'Object{x: 1}', \"k\": a.b}}}" and not r.errors
    r = mutation.rewrite("[JSONPatch{op: 'add', path: '/spec', value: Object.spec{replicas: 1}}]")
    assert r.expression == "[{\"op\": 'add', \"path\": '/spec', \"value\": {\"replicas\": 1}}]" and not r.errors
    r = mutation.rewrite("Object{spec: Object.spec{template: Object.spec.templat{}}}")
    assert r.errors == ['type mismatch: unexpected type name "Object.spec.templat", expected '
                        '"Object.spec.template", which matches field name path from root Object type']


def test_policy_expressions_are_compiled_when_written() -> None:
    from kubeplane.apiserver.cel.validation import validate_mutating_admission_policy
    good = policy("p", apply_configuration('Object{metadata: Object.metadata{labels: {"a": "b"}}}'),
                  json_patch('[JSONPatch{op: "add", path: "/x", value: 1}]'))
    assert validate_mutating_admission_policy(good) == []
    bad = policy("p", apply_configuration("Object{spec: Object.spec{replicas: object.spec.replicas +}}"),
                 matchConditions=[{"name": "c", "expression": "object.nope("}])
    fields = [e.field for e in validate_mutating_admission_policy(bad)]
    assert fields == ["spec.matchConditions[0].expression", "spec.mutations[0].applyConfiguration.expression"]


async def test_every_mutation_is_observed_in_the_check_metrics(server: APIServer) -> None:
    """Upstream: the dispatcher's ObserveAdmission / ObserveRejection around each dispatchOne."""
    from kubeplane.apiserver.admission import policy_metrics
    policy_metrics.reset()
    try:
        await put(server, policy("policy1", apply_configuration("Object{spec: Object.spec{replicas: 3}}"),
                                 json_patch("[JSONPatch{op: 'add', path: '/metadata/labels/a', value: object.nope}]")),
                  binding("policy1"))
        await denial(server, deployment(1, labels={"x": "y"}))
        got = {labels: int(sum(h[:-1])) for (sub, labels), h in policy_metrics._checks.items()
               if sub == policy_metrics.MUTATING}
        assert got == {("policy1", "binding", "no_error"): 1, ("policy1", "binding", "invalid_error"): 1}
    finally:
        policy_metrics.reset()
