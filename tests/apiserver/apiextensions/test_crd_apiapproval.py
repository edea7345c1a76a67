"""The API approval policy of the protected groups, from upstream's tables
(apihelpers TestIsProtectedCommunityGroup / TestGetAPIApprovalState, validation
TestValidateCustomResourceDefinition's approval rows, the apiapproval controller's
TestCalculateCondition)."""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.apiserver.apiextensions.apiapproval import (
    State, approval_state, calculate_condition, is_protected_community_group, validate_api_approval,
)

from .test_crd_controller import CRDS, crd_manifest, served, until  # noqa: F401

KEP = "see https://github.com/kubernetes/enhancements/pull/1111"
MISSING = f'protected groups must have approval annotation "api-approved.kubernetes.io", {KEP}'
INVALID = ('protected groups must have approval annotation "api-approved.kubernetes.io" with either a URL or a '
           f'reason starting with "unapproved", {KEP}')


@pytest.mark.parametrize(("group", "protected"), [
    ("k8s.io", True), ("kubernetes.io", True), ("foo.k8s.io", True), ("foo.kubernetes.io", True),
    ("fook8s.io", False), ("example.com", False), ("k8s.io.example.com", False), ("sigs.k8s.io", True)])
def test_protected_community_groups(group: str, protected: bool) -> None:
    assert is_protected_community_group(group) is protected


@pytest.mark.parametrize(("value", "state"), [
    (None, State.MISSING), ("", State.MISSING), ("unapproved", State.BYPASSED),
    ("unapproved, experimental-only", State.BYPASSED),
    ("https://github.com/kubernetes/kubernetes/pull/78458", State.APPROVED),
    ("false", State.INVALID), ("yes", State.INVALID), ("/just/a/path", State.INVALID)])
def test_approval_states(value: str | None, state: State) -> None:
    assert approval_state({} if value is None else {"api-approved.kubernetes.io": value})[0] == state


def crd(group: str, annotation: str | None = None) -> dict[str, Any]:
    m = crd_manifest(group=group)
    m["metadata"]["name"] = f"foos.{group}"
    if annotation is not None:
        m["metadata"]["annotations"] = {"api-approved.kubernetes.io": annotation}
    return m


def test_validation_on_create_and_update() -> None:
    assert [str(e) for e in validate_api_approval(crd("sigs.k8s.io"), None)] == [
        f"metadata.annotations[api-approved.kubernetes.io]: Required value: {MISSING}"]
    assert [str(e) for e in validate_api_approval(crd("sigs.k8s.io", "nope"), None)] == [
        f'metadata.annotations[api-approved.kubernetes.io]: Invalid value: "nope": {INVALID}']
    assert validate_api_approval(crd("sigs.k8s.io", "unapproved"), None) == []
    assert validate_api_approval(crd("sigs.k8s.io", "https://github.com/kubernetes/kubernetes/pull/1"), None) == []
    assert validate_api_approval(crd("example.com"), None) == []
    # an update keeping the state (missing -> missing, invalid -> invalid) is never refused
    assert validate_api_approval(crd("sigs.k8s.io"), crd("sigs.k8s.io")) == []
    assert validate_api_approval(crd("sigs.k8s.io", "bad"), crd("sigs.k8s.io", "worse")) == []
    assert len(validate_api_approval(crd("sigs.k8s.io"), crd("sigs.k8s.io", "unapproved"))) == 1


def test_conditions() -> None:
    assert calculate_condition(crd("example.com")) is None
    assert calculate_condition(crd("sigs.k8s.io")) == ("False", "MissingAnnotation", MISSING)
    assert calculate_condition(crd("sigs.k8s.io", "bad")) == ("False", "InvalidAnnotation", INVALID)
    assert calculate_condition(crd("sigs.k8s.io", "unapproved, testing")) == (
        "False", "UnapprovedAnnotation", 'not approved: "unapproved, testing"')
    assert calculate_condition(crd("sigs.k8s.io", "https://github.com/kubernetes/kubernetes/pull/1")) == (
        "True", "ApprovedAnnotation", "approved in https://github.com/kubernetes/kubernetes/pull/1")


async def test_the_server_refuses_and_reports(served: Any) -> None:  # noqa: F811
    api = served
    r = await api.create(CRDS, crd("sigs.k8s.io"))
    assert (r.status, r.json["message"]) == (
        422, 'CustomResourceDefinition.apiextensions.k8s.io "foos.sigs.k8s.io" is invalid: '
             f"metadata.annotations[api-approved.kubernetes.io]: Required value: {MISSING}")
    r = await api.create(CRDS, crd("sigs.k8s.io", "unapproved, testing only"))
    assert r.status == 201, r.json

    async def condition() -> Any:
        conds = (await api.get(f"{CRDS}/foos.sigs.k8s.io")).json.get("status", {}).get("conditions") or []
        return next((c for c in conds if c["type"] == "KubernetesAPIApprovalPolicyConformant"), None)
    c = await until(condition, "the approval condition")
    assert (c["status"], c["reason"], c["message"]) == (
        "False", "UnapprovedAnnotation", 'not approved: "unapproved, testing only"')

    r = await api.call("PATCH", f"{CRDS}/foos.sigs.k8s.io", body={"metadata": {"annotations": {
        "api-approved.kubernetes.io": "https://github.com/kubernetes/kubernetes/pull/1"}}},
        headers={"content-type": "application/merge-patch+json"})
    assert r.status == 200, r.json

    async def approved() -> Any:
        got = await condition()
        return got if got and got["status"] == "True" else None
    c = await until(approved, "the condition approved")
    assert c["reason"] == "ApprovedAnnotation"
