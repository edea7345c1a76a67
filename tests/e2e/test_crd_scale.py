"""Real kubectl against `kubeplane up --nodes 0`: what custom objects share with built-ins —
`kubectl scale` through the CRD's scale subresource, fieldValidation of unknown nested fields
(`--validate`), field selectors on selectableFields, and printer columns with priorities.
"""
from __future__ import annotations

import json

import yaml

from .cluster import Cluster

GROUP = "scale.example.com"


def widget_crd() -> str:
    version = {
        "name": "v1", "served": True, "storage": True,
        "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                 "statusReplicasPath": ".status.replicas",
                                                 "labelSelectorPath": ".status.selector"}},
        "schema": {"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"replicas": {"type": "integer"},
                                                      "color": {"type": "string"}}},
            "status": {"type": "object", "properties": {"replicas": {"type": "integer"},
                                                        "selector": {"type": "string"}}}}}},
        "selectableFields": [{"jsonPath": ".spec.color"}],
        "additionalPrinterColumns": [
            {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
            {"name": "Color", "type": "string", "jsonPath": ".spec.color", "priority": 1}]}
    return yaml.safe_dump({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{GROUP}"},
        "spec": {"group": GROUP, "scope": "Namespaced", "versions": [version],
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"}}})


def widget(name: str, replicas: int = 1, color: str = "red", extra: str = "") -> str:
    return (f"apiVersion: {GROUP}/v1\nkind: Widget\nmetadata:\n  name: {name}\n"
            f"spec:\n  replicas: {replicas}\n  color: {color}\n{extra}")


def _established(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", input=widget_crd())
    cluster.kubectl("wait", "--for=condition=Established", f"crd/widgets.{GROUP}", "--timeout=20s")


def test_kubectl_scale_on_a_custom_resource(cluster: Cluster) -> None:
    _established(cluster)
    cluster.kubectl("apply", "-f", "-", input=widget("w1"))
    out = cluster.kubectl("scale", "--replicas=3", "widget/w1").stdout
    assert f"widget.{GROUP}/w1 scaled" in out
    assert cluster.kubectl("get", "widget", "w1", "-o", "jsonpath={.spec.replicas}").stdout == "3"
    cluster.kubectl("patch", "widget", "w1", "--subresource=status", "--type=merge",
                    "-p", json.dumps({"status": {"replicas": 3, "selector": "app=w1"}}))
    scale = json.loads(cluster.kubectl("get", "--raw", f"/apis/{GROUP}/v1/namespaces/default/widgets/w1/scale").stdout)
    assert (scale["kind"], scale["spec"], scale["status"]) == ("Scale", {"replicas": 3},
                                                               {"replicas": 3, "selector": "app=w1"})
    # a precondition kubectl checks against the Scale
    res = cluster.kubectl("scale", "--current-replicas=2", "--replicas=5", "widget/w1", check=False)
    assert res.returncode != 0 and "Expected replicas to be 2, was 3" in res.stderr, res.stderr


def test_unknown_nested_fields_as_kubectl_shows_them(cluster: Cluster) -> None:
    _established(cluster)
    bad = widget("w2", extra="  bogus: 1\n")
    res = cluster.kubectl("apply", "--validate=strict", "-f", "-", input=bad, check=False)
    assert res.returncode != 0
    assert ('Widget in version "v1" cannot be handled as a Widget: strict decoding error: '
            'unknown field "spec.bogus"') in res.stderr, res.stderr
    res = cluster.kubectl("apply", "--validate=warn", "-f", "-", input=bad)
    assert 'Warning: unknown field "spec.bogus"' in res.stderr, res.stderr
    assert "bogus" not in cluster.get_json("widget", "w2")["spec"]
    res = cluster.kubectl("create", "--validate=false", "-f", "-", input=widget("w3", extra="  bogus: 1\n"))
    assert "Warning" not in res.stderr, res.stderr


def test_field_selectors_and_wide_columns(cluster: Cluster) -> None:
    _established(cluster)
    cluster.kubectl("apply", "-f", "-", input=widget("red1", color="red"))
    cluster.kubectl("apply", "-f", "-", input=widget("blue1", color="blue"))
    out = cluster.kubectl("get", "widgets", "--field-selector", "spec.color=blue", "-o", "name").stdout
    assert out.split() == [f"widget.{GROUP}/blue1"]
    res = cluster.kubectl("get", "widgets", "--field-selector", "spec.replicas=1", check=False)
    assert res.returncode != 0 and "field label not supported: spec.replicas" in res.stderr, res.stderr
    head = cluster.kubectl("get", "widget", "blue1").stdout.splitlines()[0].split()
    assert head == ["NAME", "REPLICAS"]
    wide = cluster.kubectl("get", "widget", "blue1", "-o", "wide").stdout.splitlines()
    assert wide[0].split() == ["NAME", "REPLICAS", "COLOR"] and wide[1].split() == ["blue1", "1", "blue"]
