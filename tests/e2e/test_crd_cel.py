"""Real kubectl against `kubeplane up`: CRD validation rules (x-kubernetes-validations).

A custom object breaking a rule is refused with upstream's message; a transition rule
(`self == oldSelf`) refuses an update of an immutable field; a CRD whose rule does not compile
is refused with the compiler's error.
"""
from __future__ import annotations

import yaml

from .cluster import Cluster


def crd(rule: str = "self.replicas <= self.maxReplicas") -> str:
    spec = {"type": "object",
            "properties": {"replicas": {"type": "integer"}, "maxReplicas": {"type": "integer"},
                           "name": {"type": "string", "x-kubernetes-validations": [
                               {"rule": "self == oldSelf", "message": "Value is immutable"}]}},
            "x-kubernetes-validations": [
                {"rule": rule, "message": "replicas should be smaller than or equal to maxReplicas."}]}
    version = {"name": "v1", "served": True, "storage": True,
               "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}}
    return yaml.safe_dump({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.cel.example.com"},
        "spec": {"group": "cel.example.com", "scope": "Namespaced", "versions": [version],
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"}}})


def widget(replicas: int, max_replicas: int, name: str = "a") -> str:
    return yaml.safe_dump({"apiVersion": "cel.example.com/v1", "kind": "Widget", "metadata": {"name": "w1"},
                           "spec": {"replicas": replicas, "maxReplicas": max_replicas, "name": name}})


def test_rules_refuse_invalid_objects_and_immutable_updates(cluster: Cluster) -> None:
    bad = cluster.kubectl("apply", "-f", "-", input=crd("self.replicas <="), check=False)
    assert bad.returncode != 0
    assert ('The CustomResourceDefinition "widgets.cel.example.com" is invalid: '
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: "
            '{"Rule":"self.replicas \\u003c=",') in bad.stderr, bad.stderr
    assert "compilation failed: ERROR: <input>:1:17: Syntax error:" in bad.stderr, bad.stderr

    cluster.kubectl("apply", "-f", "-", input=crd())
    cluster.kubectl("wait", "--for=condition=Established", "crd/widgets.cel.example.com", "--timeout=20s")

    res = cluster.kubectl("apply", "-f", "-", input=widget(5, 3), check=False)
    assert res.returncode != 0
    assert ('The Widget "w1" is invalid: spec: Invalid value: replicas should be smaller than or equal to '
            "maxReplicas.") in res.stderr, res.stderr
    assert cluster.kubectl("get", "widgets", "-o", "name").stdout.strip() == ""

    assert "widget.cel.example.com/w1 created" in cluster.kubectl("apply", "-f", "-", input=widget(2, 3)).stdout
    assert "widget.cel.example.com/w1 configured" in \
        cluster.kubectl("apply", "-f", "-", input=widget(3, 3)).stdout          # name unchanged: allowed
    res = cluster.kubectl("apply", "-f", "-", input=widget(3, 3, name="b"), check=False)
    assert res.returncode != 0
    assert 'The Widget "w1" is invalid: spec.name: Invalid value: "b": Value is immutable' in res.stderr, res.stderr
    obj = cluster.get_json("widget", "w1")
    assert obj["spec"] == {"replicas": 3, "maxReplicas": 3, "name": "a"}


def test_rules_are_typed_from_the_schema(cluster: Cluster) -> None:
    """A rule naming a field the schema lacks is refused when the CRD is written (upstream's
    `undefined field`), and a date-time field is a timestamp in rules."""
    import pytest

    from kubeplane.apiserver.apiextensions.celvalidation import typedenv
    if not typedenv.available():
        pytest.skip("typed CRD rules need protobuf")
    bad = cluster.kubectl("apply", "-f", "-", input=crd("self.replica <= self.maxReplicas"), check=False)
    assert bad.returncode != 0
    assert "compilation failed: ERROR: <input>:1:5: undefined field 'replica'" in bad.stderr, bad.stderr
    doc = yaml.safe_load(crd("self.until > timestamp('2020-01-01T00:00:00Z')"))
    doc["metadata"]["name"] = "gadgets.cel.example.com"
    doc["spec"]["names"] = {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"}
    spec = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["until"] = {"type": "string", "format": "date-time"}
    cluster.kubectl("apply", "-f", "-", input=yaml.safe_dump(doc))
    cluster.kubectl("wait", "--for=condition=Established", "crd/gadgets.cel.example.com", "--timeout=20s")

    def gadget(until: str) -> str:
        return yaml.safe_dump({"apiVersion": "cel.example.com/v1", "kind": "Gadget", "metadata": {"name": "g1"},
                               "spec": {"replicas": 1, "maxReplicas": 2, "name": "a", "until": until}})
    res = cluster.kubectl("apply", "-f", "-", input=gadget("2019-06-01T00:00:00Z"), check=False)
    assert res.returncode != 0
    assert ('The Gadget "g1" is invalid: spec: Invalid value: replicas should be smaller than or equal to '
            "maxReplicas.") in res.stderr, res.stderr
    assert "gadget.cel.example.com/g1 created" in \
        cluster.kubectl("apply", "-f", "-", input=gadget("2021-06-01T00:00:00Z")).stdout
