"""matchPolicy Equivalent: the equivalent-resource registry and the rule matching that uses it.

The tables are upstream's TestShouldCallHook (plugin/webhook/generic/webhook_test.go) and
TestMatcher's equivalent cases (plugin/policy/matching/matching_test.go), with their mapper.
"""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.apiserver.admission.equivalent import GVK, GVR, EquivalentResourceRegistry, from_registry
from kubeplane.apiserver.admission.interface import Attributes, Operation
from kubeplane.apiserver.admission.webhook.rules import match_rules
from kubeplane.api import errors

Obj = dict[str, Any]


def upstream_mapper() -> EquivalentResourceRegistry:
    """TestShouldCallHook's mapper: deployments co-located in every group."""
    m = EquivalentResourceRegistry(lambda group, resource: "/deployments" if resource == "deployments" else "")
    for g, v in (("extensions", "v1beta1"), ("apps", "v1"), ("apps", "v1beta1"), ("apps", "v1alpha1")):
        m.register_kind_for(GVR(g, v, "deployments"), "", GVK(g, v, "Deployment"))
    m.register_kind_for(GVR("extensions", "v1beta1", "deployments"), "scale", GVK("extensions", "v1beta1", "Scale"))
    m.register_kind_for(GVR("apps", "v1", "deployments"), "scale", GVK("autoscaling", "v1", "Scale"))
    m.register_kind_for(GVR("apps", "v1beta1", "deployments"), "scale", GVK("apps", "v1beta1", "Scale"))
    m.register_kind_for(GVR("apps", "v1alpha1", "deployments"), "scale", GVK("apps", "v1alpha1", "Scale"))
    # invalid kinds, to trigger an error
    m.register_kind_for(GVR("example.com", "v1", "widgets"), "", GVK("", "", ""))
    m.register_kind_for(GVR("example.com", "v2", "widgets"), "", GVK("", "", ""))
    return m


def rule(group: str, version: str, *resources: str) -> Obj:
    return {"operations": ["*"], "apiGroups": [group], "apiVersions": [version], "resources": list(resources),
            "scope": "*"}


DEPLOY = Attributes(Operation.CREATE, "apps", "v1", "deployments", "Deployment", "ns", "name")
SCALE = Attributes(Operation.CREATE, "apps", "v1", "deployments", "Scale", "ns", "name", subresource="scale")
WIDGET = Attributes(Operation.CREATE, "example.com", "v2", "widgets", "Widget", "ns", "name")
EXT, APPS_B1, APPS = (("extensions", "v1beta1"), ("apps", "v1beta1"), ("apps", "v1"))
D, DS = ("deployments",), ("deployments", "deployments/scale")

CASES = [
    # name, rules, matchPolicy equivalent?, attrs, expected (resource, subresource, kind) or None
    ("no rules (just write)", [], True, DEPLOY, None),
    ("wildcard rule, match as requested", [rule("*", "*", "*")], False, DEPLOY,
     (GVR("apps", "v1", "deployments"), "", GVK("apps", "v1", "Deployment"))),
    ("specific rules, prefer exact match", [rule(*EXT, *D), rule(*APPS_B1, *D), rule(*APPS, *D)], True, DEPLOY,
     (GVR("apps", "v1", "deployments"), "", GVK("apps", "v1", "Deployment"))),
    ("specific rules, exact match miss", [rule(*EXT, *D), rule(*APPS_B1, *D)], False, DEPLOY, None),
    ("specific rules, equivalent match, prefer extensions", [rule(*EXT, *D), rule(*APPS_B1, *D)], True, DEPLOY,
     (GVR("extensions", "v1beta1", "deployments"), "", GVK("extensions", "v1beta1", "Deployment"))),
    ("specific rules, equivalent match, prefer apps", [rule(*APPS_B1, *D), rule(*EXT, *D)], True, DEPLOY,
     (GVR("apps", "v1beta1", "deployments"), "", GVK("apps", "v1beta1", "Deployment"))),
    ("specific rules, subresource prefer exact match", [rule(*EXT, *DS), rule(*APPS_B1, *DS), rule(*APPS, *DS)],
     True, SCALE, (GVR("apps", "v1", "deployments"), "scale", GVK("autoscaling", "v1", "Scale"))),
    ("specific rules, subresource exact match miss", [rule(*EXT, *DS), rule(*APPS_B1, *DS)], False, SCALE, None),
    ("specific rules, subresource equivalent match, prefer extensions", [rule(*EXT, *DS), rule(*APPS_B1, *DS)],
     True, SCALE, (GVR("extensions", "v1beta1", "deployments"), "scale", GVK("extensions", "v1beta1", "Scale"))),
    ("specific rules, subresource equivalent match, prefer apps", [rule(*APPS_B1, *DS), rule(*EXT, *DS)],
     True, SCALE, (GVR("apps", "v1beta1", "deployments"), "scale", GVK("apps", "v1beta1", "Scale"))),
    ("a rule without the subresource does not match it equivalently", [rule(*EXT, *D)], True, SCALE, None),
]


@pytest.mark.parametrize(("rules_", "equivalent", "attrs", "want"),
                         [pytest.param(r, e, a, w, id=n) for n, r, e, a, w in CASES])
def test_should_call_hook_rules(rules_: list[Obj], equivalent: bool, attrs: Attributes,
                                want: tuple[GVR, str, GVK] | None) -> None:
    inv = match_rules(tuple(rules_), attrs, equivalent, upstream_mapper())
    if want is None:
        assert inv is None
        return
    assert inv is not None
    resource, sub, kind = want
    assert (inv.group, inv.version, inv.resource) == resource
    assert inv.subresource == sub
    assert (inv.kind_group, inv.kind_version, inv.kind) == kind


def test_equivalent_of_unknown_kind_is_an_internal_error() -> None:
    """TestShouldCallHook "invalid kind lookup"."""
    with pytest.raises(errors.StatusError) as e:
        match_rules((rule("example.com", "v1", "widgets"),), WIDGET, True, upstream_mapper())
    assert e.value.code == 500
    assert "unable to convert to example.com/v1, Resource=widgets: unknown kind" in e.value.message


def test_served_equivalents() -> None:
    """What kubeplane serves equivalently: cohabiting events, both HPA versions; a scale
    subresource's kind is autoscaling/v1 Scale; a resource served once has only itself."""
    m = from_registry()
    core, events = GVR("", "v1", "events"), GVR("events.k8s.io", "v1", "events")
    assert m.equivalent_resources_for(core, "") == [core, events]
    assert m.equivalent_resources_for(events, "") == [core, events]
    assert m.kind_for(events, "") == GVK("events.k8s.io", "v1", "Event")
    hpa2, hpa1 = GVR("autoscaling", "v2", "horizontalpodautoscalers"), GVR("autoscaling", "v1", "horizontalpodautoscalers")
    assert m.equivalent_resources_for(hpa1, "status") == [hpa2, hpa1]
    assert m.kind_for(hpa1, "status") == GVK("autoscaling", "v1", "HorizontalPodAutoscaler")
    for owner in (GVR("apps", "v1", "deployments"), GVR("apps", "v1", "replicasets"),
                  GVR("apps", "v1", "statefulsets"), GVR("", "v1", "replicationcontrollers")):
        assert m.equivalent_resources_for(owner, "scale") == [owner]
        assert m.kind_for(owner, "scale") == GVK("autoscaling", "v1", "Scale")
    pods = GVR("", "v1", "pods")
    assert m.equivalent_resources_for(pods, "") == [pods]
    assert m.kind_for(pods, "eviction") == GVK("policy", "v1", "Eviction")
    assert m.equivalent_resources_for(GVR("example.com", "v1", "widgets"), "") == []
