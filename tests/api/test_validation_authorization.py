"""authorization.k8s.io/v1 review validation (pkg/apis/authorization/validation/validation_test.go)."""
from __future__ import annotations

from typing import Any

from kubeplane.api.validation import authorization as v


def msgs(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


RES = {"verb": "get", "resource": "pods", "namespace": "ns"}


def test_subject_access_review() -> None:
    assert v.validate_subject_access_review({"spec": {"user": "u", "resourceAttributes": RES}}) == []
    assert msgs(v.validate_subject_access_review({"spec": {}})) == [
        "spec.resourceAttributes: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified",
        'spec.user: Invalid value: "": at least one of user or group must be specified']
    both = {"spec": {"groups": ["g"], "resourceAttributes": RES, "nonResourceAttributes": {"path": "/", "verb": "get"}}}
    assert msgs(v.validate_subject_access_review(both)) == [
        'spec.nonResourceAttributes: Invalid value: {"Path":"/","Verb":"get"}: cannot be specified in combination with resourceAttributes']
    named = {"metadata": {"name": "x"}, "spec": {"user": "u", "resourceAttributes": RES}}
    assert msgs(v.validate_subject_access_review(named)) == [
        'metadata: Invalid value: {"name":"x","creationTimestamp":null}: must be empty']


def test_self_and_local_reviews() -> None:
    assert v.validate_self_subject_access_review({"metadata": {"creationTimestamp": None}, "spec": {"resourceAttributes": RES}}) == []
    local = {"metadata": {"namespace": "other"}, "spec": {"user": "u", "resourceAttributes": RES}}
    assert msgs(v.validate_local_subject_access_review(local)) == [
        'spec.resourceAttributes.namespace: Invalid value: "ns": must match metadata.namespace']
    local = {"metadata": {"namespace": "ns"}, "spec": {"user": "u", "nonResourceAttributes": {"path": "/"}}}
    assert msgs(v.validate_local_subject_access_review(local)) == [
        'spec.nonResourceAttributes: Invalid value: {"Path":"/","Verb":""}: disallowed on this kind of request']
