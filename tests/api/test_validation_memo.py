"""Remembered-valid validation and the other write-path shortcuts in api/: each returns exactly
what the full check returns, for valid and invalid input, first time and again."""
from __future__ import annotations

import copy

import pytest

from kubeplane.apiserver.registry import REGISTRY
from kubeplane.apiserver.registry import scheme as defaults
from kubeplane.apiserver.registry.scheme import validate
from kubeplane.api.validation import core, memo, names
from kubeplane.api.validation import meta as m


def pod_spec(**extra) -> dict:
    spec = {"containers": [{"name": "c", "image": "nginx", "imagePullPolicy": "IfNotPresent",
                            "terminationMessagePolicy": "File", "resources": {}}],
            "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "terminationGracePeriodSeconds": 30}
    spec.update(extra)
    return spec


def test_remember_valid_skips_only_values_found_valid_before() -> None:
    calls: list[tuple] = []

    @memo.remember_valid
    def check(value, path):
        calls.append((value, path))
        return [f"{path}: bad"] if value.get("bad") else []

    assert check({"a": 1}, "x") == [] and check({"a": 1}, "x") == []
    assert len(calls) == 1                              # the repeat was remembered
    assert check({"a": 1}, "y") == [] and len(calls) == 2   # other arguments: another key
    assert check({"bad": 1}, "x") == ["x: bad"] and check({"bad": 1}, "x") == ["x: bad"]
    assert len(calls) == 4                              # errors are never remembered
    assert check({"a": 1.0}, "x") == [] and len(calls) == 5   # 1.0 is not 1 (JSON differs)
    assert check({1: "not json"}, "x") == [] and check({1: "not json"}, "x") == []
    assert len(calls) == 7                              # not encodable: always the full check


def test_remember_valid_is_bounded(monkeypatch) -> None:
    monkeypatch.setattr(memo, "MAX_ENTRIES", 3)

    @memo.remember_valid
    def check(value):
        return []

    for i in range(10):
        check(i)
    assert 1 <= len(check.seen) <= 3


def test_pod_spec_validation_after_a_valid_spec_gives_the_full_errors() -> None:
    full = core.validate_pod_spec.__wrapped__
    good = pod_spec()
    assert core.validate_pod_spec(good, "spec", True) == [] == core.validate_pod_spec(copy.deepcopy(good), "spec", True)
    bad = pod_spec(restartPolicy="Sometimes")
    bad["containers"][0]["name"] = "Bad_Name"
    first = core.validate_pod_spec(bad, "spec", True)
    assert [e.field for e in first] == ["spec.containers[0].name", "spec.restartPolicy"]
    again = core.validate_pod_spec(bad, "spec", True)
    assert [(e.field, e.type, e.detail) for e in again] == [(e.field, e.type, e.detail) for e in full(bad, "spec", True)]
    # The same spec is checked per path and per is_pod: a template may differ from a pod.
    host = pod_spec(hostNetwork=True)
    host["containers"][0]["ports"] = [{"containerPort": 80, "protocol": "TCP"}]
    assert core.validate_pod_spec(host, "spec.template.spec", False) == []
    errs = core.validate_pod_spec(host, "spec", True)
    assert [e.field for e in errs] == ["spec.containers[0].ports[0].hostPort"]


def token_volume_spec(*names: str, mounts: tuple[str, ...] | None = None) -> dict:
    """A pod spec with projected volumes of these names, mounted in its container (at one path each)."""
    spec = pod_spec(volumes=[{"name": n, "projected": {"defaultMode": 420, "sources": []}} for n in names])
    spec["containers"][0]["volumeMounts"] = [{"name": n, "readOnly": True, "mountPath": f"/var/run/{i}"}
                                             for i, n in enumerate(names if mounts is None else mounts)]
    return spec


def test_pod_specs_differing_in_generated_token_volume_names_share_one_check() -> None:
    """The ServiceAccount plugin's kube-api-access-<5 random> names: one full check for a
    ReplicaSet's pods, the same answers as the full check for anything else."""
    full = core.validate_pod_spec.__wrapped__
    key = memo.pod_spec_key
    assert key(token_volume_spec("kube-api-access-bcdfg"), "spec", True) == key(
        token_volume_spec("kube-api-access-zx987"), "spec", True)
    # distinct names stay distinct, equal ones equal, whatever the names
    two = key(token_volume_spec("kube-api-access-bcdfg", "kube-api-access-zx987"), "spec", True)
    assert two == key(token_volume_spec("kube-api-access-hjklm", "kube-api-access-npqrs"), "spec", True)
    assert two != key(token_volume_spec("kube-api-access-bcdfg", "kube-api-access-bcdfg"), "spec", True)
    # any 5 of [a-z0-9] (all give valid names alike); other characters or lengths are kept
    assert key(token_volume_spec("kube-api-access-abcde"), "spec", True) == key(
        token_volume_spec("kube-api-access-bcdfg"), "spec", True)
    for other in ("kube-api-access-ABCDE", "kube-api-access-ab.de", "kube-api-access-abcd"):
        assert key(token_volume_spec(other), "spec", True) != key(token_volume_spec("kube-api-access-bcdfg"),
                                                                   "spec", True)
    for invalid in ("kube-api-access-ABCDE", "kube-api-access-ab.de"):    # after the valid ones above
        assert core.validate_pod_spec(token_volume_spec(invalid), "spec", True) != []
    assert key(token_volume_spec("kube-api-access-bcdfgh"), "spec", True) != key(
        token_volume_spec("kube-api-access-bcdfg"), "spec", True)
    # a valid two-volume spec remembered does not make the duplicate-name one valid
    assert core.validate_pod_spec(token_volume_spec("kube-api-access-bcdfg", "kube-api-access-zx987"), "spec", True) == []
    dup = token_volume_spec("kube-api-access-bcdfg", "kube-api-access-bcdfg")
    assert [e.field for e in core.validate_pod_spec(dup, "spec", True)] == [e.field for e in full(dup, "spec", True)] != []
    # a mount naming an undeclared generated-looking volume
    stray = token_volume_spec("kube-api-access-bcdfg", mounts=("kube-api-access-zx987",))
    assert core.validate_pod_spec(stray, "spec", True) != []


def test_a_volume_named_like_the_placeholder_is_still_refused() -> None:
    """Regression: the placeholder was a JSON string ("kube-api-access-#0"), so a volume named
    so literally (not a DNS label) was taken for a remembered generated one."""
    assert core.validate_pod_spec(token_volume_spec("kube-api-access-bcdfg"), "spec", True) == []
    for name in ("kube-api-access-#0", "kube-api-access-\x000"):
        errs = core.validate_pod_spec(token_volume_spec(name), "spec", True)
        assert "spec.volumes[0].name" in [e.field for e in errs]


def test_new_object_meta_maps_after_valid_ones_give_the_full_errors() -> None:
    meta = {"name": "p", "namespace": "default", "labels": {"app": "web"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u",
                                 "controller": True}]}
    assert m._validate_meta_maps(meta, "metadata") == [] == m._validate_meta_maps(dict(meta), "metadata")
    bad = copy.deepcopy(meta)
    bad["labels"]["app"] = "-web"
    bad["ownerReferences"].append(dict(bad["ownerReferences"][0], name="rs2"))
    for _ in range(2):
        errs = m._validate_meta_maps(bad, "metadata")
        assert [e.field for e in errs] == ["metadata.labels", "metadata.ownerReferences"]
        assert "Only one reference can have Controller set to true" in errs[1].detail


def test_a_pod_create_rechecked_after_a_change_to_one_field() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}, "spec": pod_spec()}
    assert validate(pod) == []
    pod2 = copy.deepcopy(pod)
    pod2["spec"]["containers"][0]["image"] = ""
    assert [e.field for e in validate(pod2)] == ["spec.containers[0].image"]
    pod3 = copy.deepcopy(pod)
    pod3["metadata"]["name"] = "P"
    assert [e.field for e in validate(pod3)] == ["metadata.name"]


@pytest.mark.parametrize("fn, good, bad", [
    (names.is_qualified_name, "example.com/Name", "example.com/-x"),
    (names.is_valid_label_value, "v1.2", "v1.2-"),
    (names.is_dns1123_label, "web", "web.x"),
    (names.is_dns1123_subdomain, "web.x", "Web"),
])
def test_name_checks_remember_valid_values_only(fn, good, bad) -> None:
    assert fn(good) == [] and fn(good) == [] and good in fn.seen
    first = fn(bad)
    assert first and fn(bad) == first == fn.__wrapped__(bad) and bad not in fn.seen
    out = fn(good)
    out.append("caller's own list")                        # a fresh list each time
    assert fn(good) == []


def test_immutable_equal_and_semantically_equal_values() -> None:
    assert m.immutable("a", "a", "f") == []
    assert m.immutable({"x": [1, {}]}, {"x": [1, {}]}, "f") == []
    assert m.immutable({"a": {}}, {"a": None}, "f") == []        # semantic: {} is absent
    assert [e.detail for e in m.immutable("a", "b", "f")] == [m.FIELD_IMMUTABLE]
    assert [e.detail for e in m.immutable(1, True, "f")] == []    # Python: 1 == True, as before


SAMPLES = {
    ("apps/v1", "Deployment"): {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}},
    ("apps/v1", "ReplicaSet"): {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}},
    ("v1", "Pod"): {"spec": {"containers": [{"name": "c", "image": "x", "ports": [{"containerPort": 80}]}],
                             "hostNetwork": True}},
    ("v1", "Service"): {"spec": {"ports": [{"port": 80}], "type": "LoadBalancer"}},
    ("v1", "LimitRange"): {"spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}}]}},
    ("storage.k8s.io/v1", "CSIDriver"): {"spec": {}},
    ("storage.k8s.io/v1", "VolumeAttachment"): {"spec": {"attacher": "a", "nodeName": "n", "source": {
        "inlineVolumeSpec": {"hostPath": {"path": "/x"}}}}},
    ("networking.k8s.io/v1", "NetworkPolicy"): {"spec": {"podSelector": {}, "ingress": [{"ports": [{"port": 80}]}]}},
    ("networking.k8s.io/v1", "IngressClass"): {"spec": {"controller": "a.io/c", "parameters": {"kind": "K", "name": "n"}}},
    ("autoscaling/v2", "HorizontalPodAutoscaler"): {"spec": {"maxReplicas": 3, "behavior": {}}},
    ("apps/v1", "StatefulSet"): {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}},
                                          "volumeClaimTemplates": [{"metadata": {"name": "d"}, "spec": {}}]}},
    ("apps/v1", "DaemonSet"): {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}},
    ("batch/v1", "CronJob"): {"spec": {"jobTemplate": {"spec": {"template": {"spec": {
        "containers": [{"name": "c", "image": "x"}]}}}}}},
    # authzmisc
    ("apiregistration.k8s.io/v1", "APIService"): {"spec": {"service": {"namespace": "n", "name": "s"}}},
    ("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicy"): {"spec": {}},
    ("admissionregistration.k8s.io/v1", "MutatingAdmissionPolicyBinding"): {"spec": {"matchResources": {}}},
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"): {"spec": {}},
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"): {"spec": {"matchResources": {}}},
    ("flowcontrol.apiserver.k8s.io/v1", "FlowSchema"): {"spec": {}},
    ("flowcontrol.apiserver.k8s.io/v1", "PriorityLevelConfiguration"): {"spec": {"type": "Limited", "limited": {}}},
    ("resource.k8s.io/v1", "ResourceClaim"): {"spec": {"devices": {"requests": [{"name": "r", "exactly": {}}]}}},
    ("resource.k8s.io/v1", "ResourceClaimTemplate"): {"spec": {"spec": {"devices": {"requests": [
        {"name": "r", "exactly": {}}]}}}},
}


SPEC_ONLY_DEFAULTS = sorted((d.api_version, d.kind) for d in REGISTRY.resources
                            if d.defaulter is not None and not d.defaults_outside_spec)


def test_the_samples_cover_every_kind_that_defaults_only_its_spec() -> None:
    assert SPEC_ONLY_DEFAULTS == sorted(SAMPLES)


@pytest.mark.parametrize("key", SPEC_ONLY_DEFAULTS)
def test_spec_only_defaulters_write_nothing_outside_spec(key) -> None:
    """What set_defaults_except_spec's early return (and the /status merge path) relies on."""
    api_version, kind = key
    obj = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "x", "labels": {"a": "b"}},
           "status": {"phase": "Pending", "conditions": [{"type": "Ready"}]}, **copy.deepcopy(SAMPLES[key])}
    before = copy.deepcopy(obj)
    defaults.set_defaults(obj)
    assert obj["spec"] != before["spec"]                          # the sample does get defaults
    assert {k: v for k, v in obj.items() if k != "spec"} == {k: v for k, v in before.items() if k != "spec"}
    spec = obj["spec"] = copy.deepcopy(before["spec"])
    defaults.set_defaults_except_spec(obj)
    assert obj == before and obj["spec"] is spec


def test_set_defaults_except_spec_still_defaults_a_spec_less_pod_and_other_kinds() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
    defaults.set_defaults_except_spec(pod)
    assert pod["spec"]["restartPolicy"] == "Always"               # as set_defaults, unchanged
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "spec": {},
            "status": {"capacity": {"cpu": "2"}}}
    defaults.set_defaults_except_spec(node)
    assert node["status"]["allocatable"] == {"cpu": "2"}
