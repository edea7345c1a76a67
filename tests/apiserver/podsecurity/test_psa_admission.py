"""PodSecurity's decisions, unit by unit (upstream: admission/admission_test.go, api/helpers_test.go)."""
from __future__ import annotations

import pathlib
from typing import Any

import pytest

from kubeplane.apiserver.authentication.user import authenticated
from kubeplane.api import errors
from kubeplane.apiserver.admission.interface import Attributes, Operation
from kubeplane.apiserver.admission.plugins.pod_security import record
from kubeplane.apiserver.admission.podsecurity import Admission, PodSecurityConfiguration, from_admission_config_file
from kubeplane.apiserver.admission.podsecurity.api import (LATEST, LevelVersion, Policy, parse_version,
                                                           policy_to_evaluate, v1)

P = "pod-security.kubernetes.io/"


def lv(s: str) -> LevelVersion:
    level, version = s.split(":")
    return LevelVersion(level, parse_version(version))


# --- labels -> policy (upstream: TestPolicyToEvaluate) --------------------------------------

@pytest.mark.parametrize("labels, enforce, audit, warn, n_errs", [
    ({}, "privileged:latest", "privileged:latest", "privileged:latest", 0),
    ({P + "enforce": "restricted"}, "restricted:latest", "privileged:latest", "restricted:latest", 0),
    ({P + "enforce": "baseline", P + "enforce-version": "v1.20"},
     "baseline:v1.20", "privileged:latest", "baseline:v1.20", 0),
    ({P + "enforce": "baseline", P + "enforce-version": "v1.20", P + "warn-version": "v1.22"},
     "baseline:v1.20", "privileged:latest", "baseline:v1.22", 0),
    ({P + "enforce": "restricted", P + "warn": "baseline"}, "restricted:latest", "privileged:latest",
     "baseline:latest", 0),
    ({P + "enforce": "bogus"}, "restricted:latest", "privileged:latest", "privileged:latest", 1),
    ({P + "warn": "bogus", P + "audit": "bogus"}, "privileged:latest", "privileged:latest", "privileged:latest", 2),
    ({P + "enforce-version": "1.20"}, "privileged:latest", "privileged:latest", "privileged:latest", 1),
    ({P + "audit": "baseline", P + "audit-version": "v1.0"}, "privileged:latest", "baseline:v1.0",
     "privileged:latest", 0),
])
def test_policy_to_evaluate(labels: dict[str, str], enforce: str, audit: str, warn: str, n_errs: int) -> None:
    policy, errs = policy_to_evaluate(labels, Policy())
    assert (str(policy.enforce), str(policy.audit), str(policy.warn), len(errs)) == (enforce, audit, warn, n_errs)


@pytest.mark.parametrize("text, ok", [("latest", True), ("v1.0", True), ("v1.25", True), ("v1.01", False),
                                      ("v2.0", False), ("1.25", False), ("v1.", False), ("Latest", False)])
def test_parse_version(text: str, ok: bool) -> None:
    if ok:
        assert str(parse_version(text)) == text
    else:
        with pytest.raises(ValueError, match='must be "latest" or "v1.x"'):
            parse_version(text)


def test_versions_newer_than_the_newest_check_use_the_newest() -> None:
    from kubeplane.apiserver.admission.podsecurity.registry import DEFAULT_EVALUATOR as e
    assert e.max_version == v1(37)
    assert e.checks_for(LevelVersion("restricted", v1(99))) == e.checks_for(LevelVersion("restricted", LATEST))
    assert len(e.checks_for(lv("baseline:v1.0"))) == 11 and len(e.checks_for(lv("baseline:latest"))) == 12


# --- pods -----------------------------------------------------------------------------------

def pod(name: str = "p", *, privileged: bool = False, image: str = "nginx", **spec: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"name": "c", "image": image}
    if privileged:
        c["securityContext"] = {"privileged": True}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns"},
            "spec": {"containers": [c], **spec}}


def ns(labels: dict[str, str] | None = None, name: str = "ns") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels or {}}}


def pod_attrs(obj: dict[str, Any], op: Operation = Operation.CREATE, old: dict[str, Any] | None = None,
              user: str = "alice", subresource: str = "") -> Attributes:
    return Attributes(op, "", "v1", "pods", "Pod", "ns", obj["metadata"]["name"], obj, old, subresource, user=authenticated(user))


def getter(namespace: dict[str, Any] | None) -> Any:
    async def get(name: str) -> dict[str, Any] | None:
        return namespace
    return get


async def test_audit_annotations_and_enforce_policy() -> None:
    adm = Admission()
    a = pod_attrs(pod(privileged=True))
    response = await adm.validate_pod(a, getter(ns({P + "audit": "baseline", P + "enforce": "baseline",
                                                    P + "enforce-version": "v1.30", P + "warn": "privileged"})))
    assert response.error is not None and response.error.code == 403
    assert response.audit_annotations == {
        P + "enforce-policy": "baseline:v1.30",
        P + "audit-violations": 'would violate PodSecurity "baseline:latest": privileged (container "c" must not set '
                            "securityContext.privileged=true)"}
    with pytest.raises(errors.StatusError):
        record(a, response)
    assert a.audit_annotations["pod-security.kubernetes.io/enforce-policy"] == "baseline:v1.30"


async def test_privileged_namespace_records_its_policy() -> None:
    response = await Admission().validate_pod(pod_attrs(pod(privileged=True)), getter(ns()))
    assert response.allowed and response.audit_annotations == {P + "enforce-policy": "privileged:latest"}


async def test_bad_labels_enforce_restricted_and_say_so() -> None:
    response = await Admission().validate_pod(pod_attrs(pod()), getter(ns({P + "enforce": "bogus"})))
    assert response.error is not None
    assert 'violates PodSecurity "restricted:latest"' in response.error.message
    assert response.audit_annotations[P + "error"] == (
        'Failed to parse policy: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "bogus": '
        "must be one of privileged, baseline, restricted")


async def test_ignored_subresources_and_insignificant_updates() -> None:
    restricted = getter(ns({P + "enforce": "restricted"}))
    adm = Admission()
    bad = pod(privileged=True)
    assert (await adm.validate_pod(pod_attrs(bad, subresource="status"), restricted)).allowed
    # An update that leaves the images alone is allowed (labels, tolerations, …).
    relabelled = pod(privileged=True)
    relabelled["metadata"]["labels"] = {"a": "b"}
    assert (await adm.validate_pod(pod_attrs(relabelled, Operation.UPDATE, bad), restricted)).allowed
    new_image = pod(privileged=True, image="nginx:2")
    assert not (await adm.validate_pod(pod_attrs(new_image, Operation.UPDATE, bad), restricted)).allowed
    # pods/ephemeralcontainers is evaluated
    with_debug = pod(privileged=True, ephemeralContainers=[{"name": "dbg", "image": "busybox"}])
    assert not (await adm.validate_pod(pod_attrs(with_debug, Operation.UPDATE, bad, subresource="ephemeralcontainers"),
                                       restricted)).allowed


async def test_exemptions() -> None:
    restricted = getter(ns({P + "enforce": "restricted"}))
    adm = Admission(PodSecurityConfiguration(exempt_usernames=frozenset({"system:admin"}),
                                             exempt_namespaces=frozenset({"ns"}),
                                             exempt_runtime_classes=frozenset({"kata"})))
    r = await adm.validate_pod(pod_attrs(pod(privileged=True)), restricted)
    assert r.allowed and r.audit_annotations == {P + "exempt": "namespace"}
    adm = Admission(PodSecurityConfiguration(exempt_usernames=frozenset({"system:admin"}),
                                             exempt_runtime_classes=frozenset({"kata"})))
    r = await adm.validate_pod(pod_attrs(pod(privileged=True), user="system:admin"), restricted)
    assert r.allowed and r.audit_annotations == {P + "exempt": "user"}
    r = await adm.validate_pod(pod_attrs(pod(privileged=True, runtimeClassName="kata")), restricted)
    assert r.allowed and r.audit_annotations == {P + "exempt": "runtimeClass"}
    assert not (await adm.validate_pod(pod_attrs(pod(privileged=True)), restricted)).allowed
    assert not (await adm.validate_pod(pod_attrs(pod(privileged=True, runtimeClassName=["kata"])), restricted)).allowed


async def test_configured_defaults_apply_to_unlabelled_namespaces() -> None:
    adm = Admission(PodSecurityConfiguration(Policy(lv("baseline:latest"), lv("privileged:latest"),
                                                    lv("restricted:v1.30"))))
    r = await adm.validate_pod(pod_attrs(pod()), getter(ns()))
    assert r.allowed and r.warnings[0].startswith('would violate PodSecurity "restricted:v1.30": ')
    assert not (await adm.validate_pod(pod_attrs(pod(privileged=True)), getter(ns()))).allowed


# --- pod controllers ------------------------------------------------------------------------

async def test_cronjob_template_is_found() -> None:
    cj = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "cj", "namespace": "ns"},
          "spec": {"jobTemplate": {"spec": {"template": {"spec": {"hostPID": True, "containers": []}}}}}}
    a = Attributes(Operation.CREATE, "batch", "v1", "cronjobs", "CronJob", "ns", "cj", cj)
    r = await Admission().validate_pod_controller(a, getter(ns({P + "audit": "baseline", P + "enforce": "baseline"})))
    assert r.allowed and r.warnings == ['would violate PodSecurity "baseline:latest": host namespaces (hostPID=true)']
    assert r.audit_annotations[P + "audit-violations"] == r.warnings[0]


# --- namespaces -----------------------------------------------------------------------------

def ns_attrs(new: dict[str, Any], old: dict[str, Any] | None = None) -> Attributes:
    op = Operation.UPDATE if old is not None else Operation.CREATE
    name = new["metadata"]["name"]
    return Attributes(op, "", "v1", "namespaces", "Namespace", name if old else "", name, new, old)


def owned(p: dict[str, Any], uid: str) -> dict[str, Any]:
    p["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": uid,
                                         "controller": True}]
    return p


async def test_tightening_enforce_warns_about_existing_pods() -> None:
    pods = [pod("b-priv", privileged=True), pod("a-priv", privileged=True), pod("plain"),
            pod("host", hostNetwork=True), owned(pod("rs-1", privileged=True), "u1"),
            owned(pod("rs-2", privileged=True), "u1")]

    async def list_pods(namespace: str) -> list[dict[str, Any]]:
        assert namespace == "ns"
        return pods

    r = await Admission().validate_namespace(ns_attrs(ns({P + "enforce": "baseline"}), ns()), list_pods)
    assert r.allowed
    assert r.warnings == [
        'existing pods in namespace "ns" violate the new PodSecurity enforce level "baseline:latest"',
        "a-priv (and 3 other pods): privileged",
        "host: host namespaces",
    ]
    # Relaxing, or the same level again, checks nothing.
    assert (await Admission().validate_namespace(ns_attrs(ns({P + "enforce": "baseline"}),
                                                          ns({P + "enforce": "restricted"})), list_pods)).warnings == []


async def test_namespace_update_keeps_existing_bad_labels() -> None:
    """Unchanged invalid labels do not block an update (others may fix them later)."""
    bad = ns({P + "enforce": "bogus"})
    relabelled = ns({P + "enforce": "bogus", "team": "a"})
    r = await Admission().validate_namespace(ns_attrs(relabelled, bad), lambda n: None)  # type: ignore[arg-type]
    assert r.allowed
    r = await Admission().validate_namespace(ns_attrs(ns({P + "enforce": "bogus2"}), bad), lambda n: None)  # type: ignore[arg-type]
    assert r.error is not None and r.error.code == 422


async def test_exempt_namespace_labels_warn_they_are_ignored() -> None:
    adm = Admission(PodSecurityConfiguration(exempt_namespaces=frozenset({"ns"})))
    r = await adm.validate_namespace(ns_attrs(ns({P + "enforce": "restricted", P + "warn": "baseline"})), None)  # type: ignore[arg-type]
    assert r.warnings == ['namespace "ns" is exempt from Pod Security, and the policy '
                          "(enforce=restricted:latest, warn=baseline:latest) will be ignored"]


# --- configuration --------------------------------------------------------------------------

ADMISSION_CONFIG = """\
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults:
      enforce: baseline
      warn: restricted
      warn-version: v1.30
    exemptions:
      usernames: [system:admin]
      runtimeClasses: [kata]
      namespaces: [kube-system]
"""


def test_admission_configuration_file(tmp_path: pathlib.Path) -> None:
    f = tmp_path / "admission.yaml"
    f.write_text(ADMISSION_CONFIG)
    config = from_admission_config_file(f)
    assert config.defaults == Policy(lv("baseline:latest"), lv("privileged:latest"), lv("restricted:v1.30"))
    assert config.exempt_namespaces == {"kube-system"} and config.exempt_usernames == {"system:admin"}
    assert config.exempt_runtime_classes == {"kata"}
    assert from_admission_config_file(None) == PodSecurityConfiguration()


def test_admission_configuration_errors(tmp_path: pathlib.Path) -> None:
    f = tmp_path / "admission.yaml"
    f.write_text(ADMISSION_CONFIG.replace("enforce: baseline", "enforce: strict").replace("[kata]", "[kata, kata]"))
    with pytest.raises(ValueError) as e:
        from_admission_config_file(f)
    assert str(e.value) == (
        'PodSecurity invalid: [defaults.enforce: Invalid value: "strict": must be one of privileged, baseline, '
        'restricted, exemptions.runtimeClasses[1]: Duplicate value: "kata"]')
