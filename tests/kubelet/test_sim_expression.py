"""The selector engine: jq-like paths and kwok's four operators (table-driven)."""
from __future__ import annotations

import pytest

import json

from kubeplane.kubelet.runtime.sim.expression import ExpressionError, Query, Requirement, Selector, jq_string
from kubeplane.kubelet.runtime.sim.renderer import Renderer

POD = {
    "metadata": {"name": "web", "labels": {"app": "web"}, "annotations": {"kwok.x-k8s.io/delay": "5s"},
                 "finalizers": ["a"]},
    "spec": {"init": False, "containers": [{"name": "a", "image": "nginx"}, {"name": "b", "image": "redis"}]},
    "status": {"phase": "Running", "restartCount": 2,
               "conditions": [{"type": "Ready", "status": "True"}, {"type": "Initialized", "status": "False"}]},
}


@pytest.mark.parametrize("path,want", [
    pytest.param(".status.phase", ["Running"], id="field"),
    pytest.param(".status.missing", [None], id="absent-field-is-null"),
    pytest.param(".status.phase.deeper", [None], id="field-of-scalar-is-null"),
    pytest.param('.metadata.annotations["kwok.x-k8s.io/delay"]', ["5s"], id="bracket-key"),
    pytest.param(".spec.containers[].name", ["a", "b"], id="iterate"),
    pytest.param(".spec.containers.[].image", ["nginx", "redis"], id="kwok-dot-iterate"),
    pytest.param(".spec.containers[1].name", ["b"], id="index"),
    pytest.param(".spec.containers[5].name", [None], id="index-out-of-range"),
    pytest.param(".status.nothing[]", [], id="iterate-null-yields-nothing"),
    pytest.param('.status.conditions[] | select(.type == "Ready") | .status', ["True"], id="select-eq"),
    pytest.param('.status.conditions.[] | select( .type != "Ready" ) | .type', ["Initialized"], id="select-ne"),
    pytest.param(".", [POD], id="identity"),
])
def test_query(path: str, want: list) -> None:
    assert Query.parse(path).execute(POD) == want


@pytest.mark.parametrize("key,op,values,want", [
    pytest.param(".status.phase", "In", ["Running"], True, id="in-hit"),
    pytest.param(".status.phase", "In", ["Pending", "Failed"], False, id="in-miss"),
    pytest.param(".status.phase", "NotIn", ["Pending"], True, id="notin-hit"),
    pytest.param(".status.phase", "NotIn", ["Running"], False, id="notin-miss"),
    pytest.param(".status.missing", "NotIn", ["x"], True, id="notin-absent"),
    pytest.param(".status.missing", "In", ["null"], False, id="in-never-matches-absent"),
    pytest.param(".spec.init", "In", ["false"], True, id="bool-as-jq-prints"),
    pytest.param(".status.restartCount", "In", ["2"], True, id="number-as-string"),
    pytest.param(".spec.containers[].image", "In", ["redis"], True, id="in-any-of-stream"),
    pytest.param(".metadata.deletionTimestamp", "DoesNotExist", [], True, id="doesnotexist"),
    pytest.param(".metadata.finalizers", "Exists", [], True, id="exists"),
    pytest.param(".metadata.finalizers", "DoesNotExist", [], False, id="doesnotexist-present"),
    pytest.param('.status.conditions[] | select(.type == "Ready") | .status', "In", ["True"], True, id="kwok-ready"),
    pytest.param('.status.conditions[] | select(.type == "Gone") | .status', "Exists", [], False, id="select-none"),
])
def test_requirement(key: str, op: str, values: list[str], want: bool) -> None:
    assert Requirement(key, op, tuple(values)).matches(POD) is want


@pytest.mark.parametrize("bad", [
    pytest.param(lambda: Requirement(".a", "Equals", ("x",)), id="unknown-operator"),
    pytest.param(lambda: Requirement(".a", "In", ()), id="in-without-values"),
    pytest.param(lambda: Query.parse("status.phase"), id="no-leading-dot"),
    pytest.param(lambda: Query.parse(".a[x]"), id="bad-subscript"),
    pytest.param(lambda: Query.parse('.a | select(.b > 1)'), id="unsupported-comparison"),
])
def test_invalid_expressions_raise(bad) -> None:
    with pytest.raises(ExpressionError):
        bad()


def test_selector_ands_labels_annotations_expressions() -> None:
    sel = Selector.from_dict({"matchLabels": {"app": "web"},
                              "matchAnnotations": {"kwok.x-k8s.io/delay": "5s"},
                              "matchExpressions": [{"key": ".status.phase", "operator": "In", "values": ["Running"]}]})
    assert sel.matches(POD)
    assert not Selector.from_dict({"matchLabels": {"app": "db"}}).matches(POD)
    assert not Selector.from_dict({"matchExpressions": [{"key": ".status.phase", "operator": "In",
                                                         "values": ["Pending"]}]}).matches(POD)


def test_renderer_paths_helpers_and_pipes() -> None:
    r = Renderer({"Now": lambda: "2024-05-01T10:00:00Z", "PodIP": lambda: "10.244.0.2",
                  "Echo": lambda *a: "-".join(map(str, a))})
    out = r.render('a: {{ Now | Quote }}\nb: {{ .spec.containers[0].image }}\nc: {{ PodIP() }}\n'
                   'd: {{ .status.missing }}\ne: {{ .spec.init }}\nf: {{ Echo("x", .status.restartCount) }}\n'
                   'g: {{ .metadata.name | Echo "p" }}', POD)
    assert out == ('a: "2024-05-01T10:00:00Z"\nb: nginx\nc: 10.244.0.2\nd: null\ne: false\nf: x-2\ng: p-web')


def test_renderer_is_sandboxed() -> None:
    r = Renderer()
    for tpl in ("{{ __import__('os') }}", "{{ open }}", "{{ .__class__ }}x{{ Missing }}"):
        with pytest.raises(ExpressionError):
            r.render(tpl, POD)


@pytest.mark.parametrize("value, printed", [
    (True, "true"), (False, "false"), (None, "null"), ("Running", "Running"), ("", ""),
    (3, "3"), (3.0, "3"), (1.5, "1.5"), ({"a": [1, True]}, '{"a":[1,true]}'), ([], "[]"),
])
def test_jq_string_prints_scalars_as_jq_raw_output_does(value: object, printed: str) -> None:
    assert jq_string(value) == printed
    if isinstance(value, bool) or value is None:
        assert printed == json.dumps(value)          # the encoder it no longer calls


def test_a_boolean_field_matches_its_printed_value() -> None:
    r = Requirement(".spec.init", "In", ("false",))
    assert r.matches({"spec": {"init": False}}) and not r.matches({"spec": {"init": True}})
    assert not r.matches({"spec": {}})

