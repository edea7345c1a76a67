"""Deployment / ReplicaSet / Scale validation: every rule of deployment-behaviour.md §2."""
from __future__ import annotations

import copy
from typing import Any, Callable

import pytest

from kubeplane.api import errors
from kubeplane.apiserver.registry.scheme import set_defaults, validate, validate_status_update, validate_update, warnings

SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                 "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
                 "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
PERCENT_MSG = ("a valid percent string must be a numeric string followed by an ending '%' "
               "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')")
LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                   "and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
                   "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


def deployment(kind: str = "Deployment", **spec: Any) -> dict:
    d = {"apiVersion": "apps/v1", "kind": kind,
         "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
         "spec": {"selector": {"matchLabels": {"app": "web"}},
                  "template": {"metadata": {"labels": {"app": "web"}},
                               "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]}}}}
    d["spec"].update(spec)
    set_defaults(d)
    return d


def with_(d: dict, fn: Callable[[dict], Any]) -> dict:
    d = copy.deepcopy(d)
    fn(d)
    return d


def strs(errs: list) -> list[str]:
    return [str(e) for e in errs]


def test_defaulted_deployment_and_replica_set_are_valid() -> None:
    assert validate(deployment()) == []
    assert validate(deployment("ReplicaSet")) == []


def _tspec(d: dict) -> dict:
    return d["spec"]["template"]["spec"]


SPEC_CASES = [
    pytest.param(lambda d: d["spec"]["template"]["metadata"].update(labels={"app": "other"}),
                 ['spec.template.metadata.labels: Invalid value: {"app":"other"}: `selector` does not match template `labels`'],
                 id="selector-does-not-match-template"),
    pytest.param(lambda d: d["spec"].update(selector={}),
                 ["spec.selector: Invalid value: {}: empty selector is invalid for deployment"], id="empty-selector"),
    pytest.param(lambda d: d["spec"].pop("selector"),
                 ["spec.selector: Required value",
                  'spec.template.metadata.labels: Invalid value: {"app":"web"}: `selector` does not match template `labels`'],
                 id="nil-selector-required-and-matches-nothing"),
    pytest.param(lambda d: d["spec"]["selector"]["matchLabels"].update(app="bad value"),
                 [f'spec.selector.matchLabels: Invalid value: "bad value": {LABEL_VALUE_MSG}',
                  'spec.selector: Invalid value: {"matchLabels":{"app":"bad value"}}: invalid label selector'],
                 id="bad-selector-label-value"),
    pytest.param(lambda d: d["spec"]["selector"].update(matchExpressions=[{"key": "tier", "operator": "Near"}]),
                 ['spec.selector.matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator',
                  'spec.selector: Invalid value: {"matchLabels":{"app":"web"},"matchExpressions":[{"key":"tier",'
                  '"operator":"Near"}]}: invalid label selector'],
                 id="bad-selector-operator"),
    pytest.param(lambda d: d["spec"].update(replicas=-1),
                 ["spec.replicas: Invalid value: -1: must be greater than or equal to 0"], id="negative-replicas"),
    pytest.param(lambda d: d["spec"].update(minReadySeconds=-1),
                 ["spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0"],
                 id="negative-min-ready-seconds"),
    pytest.param(lambda d: d["spec"].update(revisionHistoryLimit=-1),
                 ["spec.revisionHistoryLimit: Invalid value: -1: must be greater than or equal to 0"],
                 id="negative-revision-history-limit"),
    pytest.param(lambda d: d["spec"].update(progressDeadlineSeconds=-1),
                 ["spec.progressDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0",
                  "spec.progressDeadlineSeconds: Invalid value: -1: must be greater than minReadySeconds"],
                 id="negative-progress-deadline"),
    pytest.param(lambda d: d["spec"].update(minReadySeconds=600),
                 ["spec.progressDeadlineSeconds: Invalid value: 600: must be greater than minReadySeconds"],
                 id="progress-deadline-not-above-min-ready"),
    pytest.param(lambda d: d["spec"]["strategy"]["rollingUpdate"].update(maxSurge=0, maxUnavailable=0),
                 ["spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0"],
                 id="surge-and-unavailable-both-0"),
    pytest.param(lambda d: d["spec"]["strategy"]["rollingUpdate"].update(maxSurge="0%", maxUnavailable=0),
                 ["spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0"],
                 id="surge-0-percent-and-unavailable-0"),
    pytest.param(lambda d: d["spec"]["strategy"]["rollingUpdate"].update(maxSurge=0, maxUnavailable="0%"),
                 ['spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "0%": may not be 0 when `maxSurge` is 0'],
                 id="surge-0-and-unavailable-0-percent"),
    pytest.param(lambda d: d["spec"]["strategy"]["rollingUpdate"].update(maxUnavailable="110%"),
                 ['spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "110%": must not be greater than 100%'],
                 id="unavailable-over-100-percent"),
    pytest.param(lambda d: d["spec"]["strategy"]["rollingUpdate"].update(maxSurge="200%"), [],
                 id="surge-200-percent-is-valid"),
    pytest.param(lambda d: d["spec"]["strategy"]["rollingUpdate"].update(maxSurge=-1),
                 ["spec.strategy.rollingUpdate.maxSurge: Invalid value: -1: must be greater than or equal to 0"],
                 id="negative-surge"),
    pytest.param(lambda d: d["spec"]["strategy"]["rollingUpdate"].update(maxUnavailable=-1),
                 ["spec.strategy.rollingUpdate.maxUnavailable: Invalid value: -1: must be greater than or equal to 0"],
                 id="negative-unavailable"),
    pytest.param(lambda d: d["spec"]["strategy"]["rollingUpdate"].update(maxSurge="20Percent"),
                 [f'spec.strategy.rollingUpdate.maxSurge: Invalid value: "20Percent": {PERCENT_MSG}'],
                 id="malformed-percent"),
    pytest.param(lambda d: d["spec"]["strategy"].update(type="Recreate"),
                 ["spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"],
                 id="recreate-with-rolling-update"),
    pytest.param(lambda d: d["spec"].update(strategy={"type": "Recreate"}), [], id="recreate-without-rolling-update"),
    pytest.param(lambda d: d["spec"].update(strategy={"type": "Foo"}),
                 ['spec.strategy: Unsupported value: {"type":"Foo"}: supported values: "Recreate", "RollingUpdate"'],
                 id="unknown-strategy-type"),
    pytest.param(lambda d: _tspec(d).update(restartPolicy="Never"),
                 ['spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"'],
                 id="template-restart-policy-never"),
    pytest.param(lambda d: _tspec(d).update(restartPolicy="OnFailure"),
                 ['spec.template.spec.restartPolicy: Unsupported value: "OnFailure": supported values: "Always"'],
                 id="template-restart-policy-on-failure"),
    pytest.param(lambda d: _tspec(d).update(activeDeadlineSeconds=30),
                 ["spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported"],
                 id="template-active-deadline"),
    pytest.param(lambda d: _tspec(d).update(containers=[]),
                 ["spec.template.spec.containers: Required value"], id="no-containers"),
    pytest.param(lambda d: d["metadata"].update(name="Bad_Name"),
                 [f'metadata.name: Invalid value: "Bad_Name": {SUBDOMAIN_MSG}'], id="bad-name"),
    pytest.param(lambda d: d["metadata"].update(name="a" * 254),
                 [f'metadata.name: Invalid value: "{"a" * 254}": must be no more than 253 characters'], id="name-too-long"),
    pytest.param(lambda d: d["metadata"].pop("name"),
                 ["metadata.name: Required value: name or generateName is required"], id="name-missing"),
]


@pytest.mark.parametrize("mutate,expected", SPEC_CASES)
def test_deployment_spec_rules(mutate: Callable[[dict], Any], expected: list[str]) -> None:
    assert strs(validate(with_(deployment(), mutate))) == expected


RS_CASES = [c for c in SPEC_CASES if c.id in {
    "selector-does-not-match-template", "empty-selector", "nil-selector-required-and-matches-nothing",
    "negative-replicas", "template-restart-policy-never", "template-active-deadline", "no-containers", "bad-name"}]


@pytest.mark.parametrize("mutate,expected", RS_CASES)
def test_replica_set_shares_the_spec_rules(mutate: Callable[[dict], Any], expected: list[str]) -> None:
    assert strs(validate(with_(deployment("ReplicaSet"), mutate))) == expected


def test_replica_set_min_ready_seconds() -> None:
    rs = with_(deployment("ReplicaSet"), lambda d: d["spec"].update(minReadySeconds=-5))
    assert strs(validate(rs)) == ["spec.minReadySeconds: Invalid value: -5: must be greater than or equal to 0"]


def test_invalid_renders_as_422_status() -> None:
    d = with_(deployment(), lambda d: d["spec"].update(replicas=-1))
    err = errors.Invalid("apps", "Deployment", "web", validate(d))
    st = err.status()
    assert (st["code"], st["reason"]) == (422, "Invalid")
    assert st["message"] == 'Deployment.apps "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0'
    assert st["details"]["causes"] == [{"reason": "FieldValueInvalid", "field": "spec.replicas",
                                        "message": "Invalid value: -1: must be greater than or equal to 0"}]


# --- update ----------------------------------------------------------------------------------------


def stored(kind: str = "Deployment") -> dict:
    return with_(deployment(kind), lambda d: d["metadata"].update(
        uid="u1", resourceVersion="5", generation=1, creationTimestamp="2024-01-01T00:00:00Z"))


@pytest.mark.parametrize("kind", ["Deployment", "ReplicaSet"])
def test_selector_is_immutable(kind: str) -> None:
    old = stored(kind)
    new = with_(old, lambda d: (d["spec"]["selector"]["matchLabels"].update(tier="x"),
                                d["spec"]["template"]["metadata"]["labels"].update(tier="x")))
    assert strs(validate_update(new, old)) == [
        'spec.selector: Invalid value: {"matchLabels":{"app":"web","tier":"x"}}: field is immutable']


def test_update_revalidates_spec_and_allows_template_change() -> None:
    old = stored()
    assert validate_update(with_(old, lambda d: _tspec(d)["containers"][0].update(image="nginx:1.26")), old) == []
    assert strs(validate_update(with_(old, lambda d: d["spec"].update(replicas=-2)), old)) == [
        "spec.replicas: Invalid value: -2: must be greater than or equal to 0"]


def test_equivalent_empty_selector_fields_are_not_a_change() -> None:
    old = stored()
    new = with_(old, lambda d: d["spec"]["selector"].update(matchExpressions=[]))
    assert validate_update(new, old) == []


@pytest.mark.parametrize("field,value", [
    pytest.param("name", "other", id="name"), pytest.param("namespace", "kube-system", id="namespace"),
    pytest.param("uid", "u2", id="uid"), pytest.param("creationTimestamp", "2025-01-01T00:00:00Z", id="creationTimestamp"),
])
def test_metadata_immutable_on_update(field: str, value: str) -> None:
    old = stored()
    errs = validate_update(with_(old, lambda d: d["metadata"].update({field: value})), old)
    assert f'metadata.{field}: Invalid value: "{value}": field is immutable' in strs(errs)


def test_update_needs_resource_version() -> None:
    old = stored()
    new = with_(old, lambda d: d["metadata"].pop("resourceVersion"))
    assert strs(validate_update(new, old)) == ['metadata.resourceVersion: Invalid value: "": must be specified for an update']


# --- status ------------------------------------------------------------------------------------------


STATUS_CASES = [
    pytest.param({"replicas": 3, "updatedReplicas": 3, "readyReplicas": 2, "availableReplicas": 2}, None, [],
                 id="valid"),
    pytest.param({"replicas": -1}, None,
                 ["status.replicas: Invalid value: -1: must be greater than or equal to 0",
                  # absent counts are 0, and 0 > -1: upstream reports each of them too
                  "status.updatedReplicas: Invalid value: 0: cannot be greater than status.replicas",
                  "status.readyReplicas: Invalid value: 0: cannot be greater than status.replicas",
                  "status.availableReplicas: Invalid value: 0: cannot be greater than status.replicas"],
                 id="negative-replicas"),
    pytest.param({"observedGeneration": -1, "unavailableReplicas": -1}, None,
                 ["status.observedGeneration: Invalid value: -1: must be greater than or equal to 0",
                  "status.unavailableReplicas: Invalid value: -1: must be greater than or equal to 0"], id="negative-others"),
    pytest.param({"replicas": 1, "updatedReplicas": 2, "readyReplicas": 2, "availableReplicas": 2}, None,
                 ["status.updatedReplicas: Invalid value: 2: cannot be greater than status.replicas",
                  "status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas",
                  "status.availableReplicas: Invalid value: 2: cannot be greater than status.replicas"],
                 id="counts-above-replicas"),
    pytest.param({"replicas": 3, "readyReplicas": 1, "availableReplicas": 2}, None,
                 ["status.availableReplicas: Invalid value: 2: cannot be greater than readyReplicas"],
                 id="available-above-ready"),
    pytest.param({"collisionCount": 1}, {"collisionCount": 2},
                 ["status.collisionCount: Invalid value: 1: cannot be decremented"], id="collision-count-decremented"),
    pytest.param({}, {"collisionCount": 2},
                 ["status.collisionCount: Invalid value: 0: cannot be decremented"], id="collision-count-cleared"),
    pytest.param({"collisionCount": 3}, {"collisionCount": 2}, [], id="collision-count-incremented"),
    pytest.param({"collisionCount": 0}, {}, [], id="collision-count-nil-to-zero"),
    pytest.param({"collisionCount": -1}, None,
                 ["status.collisionCount: Invalid value: -1: must be greater than or equal to 0"], id="collision-count-negative"),
]


@pytest.mark.parametrize("status,old_status,expected", STATUS_CASES)
def test_deployment_status_rules(status: dict, old_status: dict | None, expected: list[str]) -> None:
    old = with_(stored(), lambda d: d.update(status=old_status or {}))
    assert strs(validate_status_update(with_(old, lambda d: d.update(status=status)), old)) == expected


@pytest.mark.parametrize("status,expected", [
    pytest.param({"replicas": 2, "fullyLabeledReplicas": 2, "readyReplicas": 2, "availableReplicas": 1}, [], id="valid"),
    pytest.param({"replicas": 1, "fullyLabeledReplicas": 2, "readyReplicas": 2, "availableReplicas": 2},
                 ["status.fullyLabeledReplicas: Invalid value: 2: cannot be greater than status.replicas",
                  "status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas",
                  "status.availableReplicas: Invalid value: 2: cannot be greater than status.replicas"], id="above-replicas"),
    pytest.param({"replicas": 2, "readyReplicas": 0, "availableReplicas": 1},
                 ["status.availableReplicas: Invalid value: 1: cannot be greater than readyReplicas"], id="available-above-ready"),
    pytest.param({"observedGeneration": -1},
                 ["status.observedGeneration: Invalid value: -1: must be greater than or equal to 0"], id="negative"),
])
def test_replica_set_status_rules(status: dict, expected: list[str]) -> None:
    old = stored("ReplicaSet")
    assert strs(validate_status_update(with_(old, lambda d: d.update(status=status)), old)) == expected


# --- warnings and Scale ------------------------------------------------------------------------------


@pytest.mark.parametrize("name,expected", [
    pytest.param("web", [], id="dns-label"),
    pytest.param("web.v2", ["metadata.name: this is used in Pod names and hostnames, which can result in surprising "
                            "behavior; a DNS label is recommended: [must not contain dots]"], id="dotted"),
])
def test_name_warning(name: str, expected: list[str]) -> None:
    d = with_(deployment(), lambda d: d["metadata"].update(name=name))
    assert validate(d) == []
    assert warnings(d) == expected
    assert warnings(with_(d, lambda d: d.update(kind="ReplicaSet"))) == expected


def test_scale_replicas_non_negative() -> None:
    scale = {"apiVersion": "autoscaling/v1", "kind": "Scale",
             "metadata": {"name": "web", "namespace": "default", "resourceVersion": "5"}, "spec": {"replicas": -1}}
    assert strs(validate(scale)) == ["spec.replicas: Invalid value: -1: must be greater than or equal to 0"]
    assert validate(with_(scale, lambda s: s["spec"].update(replicas=0))) == []
