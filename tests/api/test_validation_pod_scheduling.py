"""A pod spec's affinity and topologySpreadConstraints, with upstream's messages and paths
(cases after TestValidatePod / TestValidateTopologySpreadConstraints in validation_test.go)."""
from __future__ import annotations

import copy
from typing import Any

import pytest

from kubeplane.apiserver.registry.scheme import set_defaults, validate

NA = "spec.affinity.nodeAffinity"
PA = "spec.affinity.podAffinity"
PAA = "spec.affinity.podAntiAffinity"
REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"
TSC = "spec.topologySpreadConstraints"
LABEL_MSG = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
             "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
             "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
DNS_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
                 "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
                 "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")
LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
                   "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
                   "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")


def pod(**spec: Any) -> dict:
    p = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
         "spec": {"containers": [{"name": "app", "image": "nginx:1.25"}], **copy.deepcopy(spec)}}
    set_defaults(p)
    return p


def strs(p: dict) -> list[str]:
    return [str(e) for e in validate(p)]


SEL = {"matchExpressions": [{"key": "key2", "operator": "In", "values": ["value1", "value2"]}]}
TERM = {"labelSelector": SEL, "namespaces": ["ns"], "topologyKey": "zone"}


def node_affinity(**na: Any) -> dict:
    return {"nodeAffinity": na}


def pod_affinity(kind: str = "podAffinity", required: list | None = None, preferred: list | None = None) -> dict:
    body: dict = {}
    if required is not None:
        body[REQ] = required
    if preferred is not None:
        body[PREF] = preferred
    return {kind: body}


AFFINITY_CASES = [
    pytest.param(node_affinity(**{
        REQ: {"nodeSelectorTerms": [{"matchExpressions": [{"key": "key2", "operator": "In", "values": ["v1", "v2"]}]}]},
        PREF: [{"weight": 10, "preference": {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]}}],
    }), [], id="valid-node-affinity"),
    pytest.param(pod_affinity(required=[TERM], preferred=[{"weight": 10, "podAffinityTerm": TERM}]), [],
                 id="valid-pod-affinity"),
    pytest.param(pod_affinity("podAntiAffinity", required=[TERM]), [], id="valid-pod-anti-affinity"),
    pytest.param(node_affinity(**{REQ: {"nodeSelectorTerms": []}}),
                 [f"{NA}.{REQ}.nodeSelectorTerms: Required value: must have at least one node selector term"],
                 id="empty-node-selector-terms"),
    pytest.param(node_affinity(**{REQ: {"nodeSelectorTerms": [{"matchExpressions": [{"key": "key1"}]}]}}),
                 [f'{NA}.{REQ}.nodeSelectorTerms[0].matchExpressions[0].operator: Invalid value: "": '
                  "not a valid selector operator"], id="node-selector-operator-null"),
    pytest.param(node_affinity(**{REQ: {"nodeSelectorTerms": [{"matchExpressions": [
        {"key": "key1", "operator": "In", "values": ["-bad-"]}]}]}}),
                 [f'{NA}.{REQ}.nodeSelectorTerms[0].matchExpressions[0].values[0]: Invalid value: "-bad-": '
                  f"{LABEL_VALUE_MSG}"], id="required-node-affinity-label-value"),
    pytest.param(node_affinity(**{PREF: [{"weight": 1, "preference": {"matchExpressions": [
        {"key": "key1", "operator": "In", "values": ["-bad-"]}]}}]}), [],
                 id="preferred-node-affinity-allows-invalid-label-value"),
    pytest.param(node_affinity(**{PREF: [{"weight": 199, "preference": {"matchExpressions": [
        {"key": "foo", "operator": "In", "values": ["bar"]}]}}]}),
                 [f"{NA}.{PREF}[0].weight: Invalid value: 199: must be in the range 1-100"], id="node-weight-range"),
    pytest.param(node_affinity(**{PREF: [{"weight": 10, "preference": {"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["a", "b"]}]}}]}),
                 [f"{NA}.{PREF}[0].preference.matchFields[0].values: Required value: must be only one value when "
                  "`operator` is 'In' or 'NotIn' for node field selector"], id="preferred-match-fields"),
    pytest.param(pod_affinity("podAntiAffinity", required=[{
        "labelSelector": {"matchExpressions": [{"key": "key2", "operator": "Exists", "values": ["value1"]}]},
        "topologyKey": "zone"}]),
                 [f"{PAA}.{REQ}[0].labelSelector.matchExpressions[0].values: Forbidden: may not be specified when "
                  "`operator` is 'Exists' or 'DoesNotExist'"], id="anti-affinity-selector-exists-with-values"),
    pytest.param(pod_affinity(preferred=[{"weight": 10, "podAffinityTerm": {**TERM, "namespaces": ["INVALID_NAMESPACE"]}}]),
                 [f'{PA}.{PREF}[0].podAffinityTerm.namespace: Invalid value: "INVALID_NAMESPACE": {DNS_LABEL_MSG}'],
                 id="affinity-namespace-name"),
    pytest.param(pod_affinity(required=[{"labelSelector": SEL}]),
                 [f"{PA}.{REQ}[0].topologyKey: Required value: can not be empty",
                  f'{PA}.{REQ}[0].topologyKey: Invalid value: "": name part must be non-empty',
                  f'{PA}.{REQ}[0].topologyKey: Invalid value: "": {LABEL_MSG}'], id="affinity-empty-topology-key"),
    pytest.param(pod_affinity("podAntiAffinity", preferred=[{"weight": 10, "podAffinityTerm": {"labelSelector": SEL}}]),
                 [f"{PAA}.{PREF}[0].podAffinityTerm.topologyKey: Required value: can not be empty",
                  f'{PAA}.{PREF}[0].podAffinityTerm.topologyKey: Invalid value: "": name part must be non-empty',
                  f'{PAA}.{PREF}[0].podAffinityTerm.topologyKey: Invalid value: "": {LABEL_MSG}'],
                 id="anti-affinity-empty-topology-key"),
    pytest.param(pod_affinity(preferred=[{"weight": -1, "podAffinityTerm": TERM}]),
                 [f"{PA}.{PREF}[0].weight: Invalid value: -1: must be in the range 1-100"], id="pod-weight-range"),
    pytest.param(pod_affinity(required=[{**TERM, "namespaceSelector": {"matchLabels": {"-bad": "x"}}}]),
                 [f'{PA}.{REQ}[0].namespaceSelector.matchLabels: Invalid value: "-bad": {LABEL_MSG}'],
                 id="namespace-selector"),
    pytest.param(pod_affinity(required=[{"topologyKey": "zone", "matchLabelKeys": ["foo"]}]),
                 [f"{PA}.{REQ}[0].matchLabelKeys: Forbidden: must not be specified when labelSelector is not set"],
                 id="match-label-keys-without-selector"),
    pytest.param(pod_affinity(required=[{"topologyKey": "zone", "mismatchLabelKeys": ["foo"]}]),
                 [f"{PA}.{REQ}[0].mismatchLabelKeys: Forbidden: must not be specified when labelSelector is not set"],
                 id="mismatch-label-keys-without-selector"),
    pytest.param(pod_affinity(required=[{**TERM, "matchLabelKeys": ["/simple"]}]),
                 [f'{PA}.{REQ}[0].matchLabelKeys[0]: Invalid value: "/simple": prefix part must be non-empty'],
                 id="match-label-keys-name"),
    pytest.param(pod_affinity(required=[{**TERM, "matchLabelKeys": ["samekey"], "mismatchLabelKeys": ["samekey"]}]),
                 [f'{PA}.{REQ}[0].matchLabelKeys[0]: Invalid value: "samekey": exists in both matchLabelKeys and '
                  "mismatchLabelKeys"], id="same-key-in-match-and-mismatch"),
    pytest.param(pod_affinity(required=[{"topologyKey": "zone", "matchLabelKeys": ["key"], "labelSelector": {
        "matchExpressions": [{"key": "key", "operator": "In", "values": ["value1"]},
                             {"key": "key", "operator": "NotIn", "values": ["value2"]}]}}]),
                 [f'{PA}.{REQ}[0][0]: Invalid value: "key": exists in both matchLabelKeys and labelSelector'],
                 id="match-label-key-twice-in-selector"),
]


@pytest.mark.parametrize("affinity,expected", AFFINITY_CASES)
def test_affinity(affinity: dict, expected: list[str]) -> None:
    assert strs(pod(affinity=affinity)) == expected


def tsc(**c: Any) -> dict:
    return {"maxSkew": 1, "topologyKey": "k8s.io/zone", "whenUnsatisfiable": "DoNotSchedule", **c}


TSC_CASES = [
    pytest.param([tsc(), tsc(topologyKey="k8s.io/node", whenUnsatisfiable="ScheduleAnyway", minDomains=None)], [],
                 id="valid"),
    pytest.param([tsc(minDomains=3, nodeAffinityPolicy="Honor", nodeTaintsPolicy="Ignore",
                      labelSelector={"matchLabels": {"foo": "bar"}}, matchLabelKeys=["pod-template-hash"])], [],
                 id="valid-all-fields"),
    pytest.param([tsc(maxSkew=0)], [f"{TSC}[0].maxSkew: Invalid value: 0: must be greater than zero"], id="max-skew-zero"),
    pytest.param([tsc(maxSkew=-1)], [f"{TSC}[0].maxSkew: Invalid value: -1: must be greater than zero"],
                 id="max-skew-negative"),
    pytest.param([tsc(topologyKey="")], [f"{TSC}[0].topologyKey: Required value: can not be empty"],
                 id="empty-topology-key"),
    pytest.param([tsc(whenUnsatisfiable="N/A")],
                 [f'{TSC}[0].whenUnsatisfiable: Unsupported value: "N/A": supported values: "DoNotSchedule", '
                  '"ScheduleAnyway"'], id="when-unsatisfiable"),
    pytest.param([tsc(minDomains=-1)], [f"{TSC}[0].minDomains: Invalid value: -1: must be greater than zero"],
                 id="min-domains-negative"),
    pytest.param([tsc(minDomains=0)], [f"{TSC}[0].minDomains: Invalid value: 0: must be greater than zero"],
                 id="min-domains-zero"),
    pytest.param([tsc(minDomains=3, whenUnsatisfiable="ScheduleAnyway")],
                 [f"{TSC}[0].minDomains: Invalid value: 3: can only use minDomains if whenUnsatisfiable=DoNotSchedule, "
                  "not ScheduleAnyway"], id="min-domains-with-schedule-anyway"),
    pytest.param([tsc(), tsc()],
                 [f'{TSC}[0].{{topologyKey, whenUnsatisfiable}}: Duplicate value: "{{k8s.io/zone, DoNotSchedule}}"'],
                 id="duplicate-constraints"),
    pytest.param([tsc(nodeAffinityPolicy="invalid")],
                 [f'{TSC}[0].nodeAffinityPolicy: Unsupported value: "invalid": supported values: "Honor", "Ignore"'],
                 id="node-affinity-policy"),
    pytest.param([tsc(nodeTaintsPolicy="invalid")],
                 [f'{TSC}[0].nodeTaintsPolicy: Unsupported value: "invalid": supported values: "Honor", "Ignore"'],
                 id="node-taints-policy"),
    pytest.param([tsc(matchLabelKeys=["foo"])],
                 [f"{TSC}[0].matchLabelKeys: Forbidden: must not be specified when labelSelector is not set"],
                 id="match-label-keys-without-selector"),
    pytest.param([tsc(matchLabelKeys=["/simple"], labelSelector={"matchLabels": {"foo": "bar"}})],
                 [f'{TSC}[0].matchLabelKeys[0]: Invalid value: "/simple": prefix part must be non-empty'],
                 id="match-label-keys-name"),
    pytest.param([tsc(matchLabelKeys=["foo"], labelSelector={"matchLabels": {"foo": "bar"}})],
                 [f'{TSC}[0].matchLabelKeys[0]: Invalid value: "foo": exists in both matchLabelKeys and labelSelector'],
                 id="match-label-key-in-selector"),
    pytest.param([tsc(labelSelector={"matchLabels": {"NoUppercaseOrSpecialCharsLike=Equals": "foo"}})],
                 [f'{TSC}[0].labelSelector.matchLabels: Invalid value: "NoUppercaseOrSpecialCharsLike=Equals": '
                  f"{LABEL_MSG}"], id="label-selector"),
]


@pytest.mark.parametrize("constraints,expected", TSC_CASES)
def test_topology_spread_constraints(constraints: list, expected: list[str]) -> None:
    assert strs(pod(topologySpreadConstraints=constraints)) == expected


def test_a_pod_template_gets_the_same_rules() -> None:
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "r", "namespace": "default"},
          "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "b"}},
                   "template": {"metadata": {"labels": {"a": "b"}},
                                "spec": {"containers": [{"name": "app", "image": "nginx"}],
                                         "topologySpreadConstraints": [tsc(maxSkew=0)]}}}}
    set_defaults(rs)
    assert [str(e) for e in validate(rs)] == [
        "spec.template.spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero"]
