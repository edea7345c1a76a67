"""The validation shortcuts an Event create takes keep upstream's answers: a path-segment name
without '/', '%' or dots, and metadata without labels, annotations, ownerReferences, finalizers or
managedFields, answer at once; anything else goes the full way."""
from __future__ import annotations

import pytest

from kubeplane.api.validation import meta as m
from kubeplane.api.validation.names import name_is_path_segment


# Upstream: TestValidatePathSegmentName (apimachinery/pkg/api/validation/path/name_test.go)
@pytest.mark.parametrize("name,prefix,expected", [
    ("", True, []), ("", False, []),
    ("a:b_c", True, []), ("a:b_c", False, []),
    (".", True, []), (".", False, ["may not be '.'"]),
    ("..", True, []), ("..", False, ["may not be '..'"]),
    ("a/b", True, ["may not contain '/'"]), ("a/b", False, ["may not contain '/'"]),
    ("a%b", True, ["may not contain '%'"]), ("a%b", False, ["may not contain '%'"]),
    ("../", True, ["may not contain '/'"]), ("../", False, ["may not contain '/'"]),
    ("a/%", False, ["may not contain '/'", "may not contain '%'"]),
    ("web-5d9c7b8f6-x2v4q.17a3b2c1d0e9f8a7", False, []),        # an Event's name
])
def test_path_segment_names(name: str, prefix: bool, expected: list[str]) -> None:
    assert name_is_path_segment(name, prefix) == expected


@pytest.mark.parametrize("meta", [
    {"name": "e", "namespace": "ns"},                                     # none of the five: the shortcut
    {"name": "e", "labels": {}}, {"name": "e", "finalizers": []}, {"name": "e", "annotations": {"a": "b"}},
    {"name": "e", "labels": {"-bad-": "x"}}, {"name": "e", "finalizers": ["bad finalizer"]},
    {"name": "e", "annotations": {"Bad Key": "x"}},
    {"name": "e", "ownerReferences": [{"apiVersion": "v1", "kind": "Event", "name": "x", "uid": "u"}]},
    {"name": "e", "managedFields": [{"operation": "Patch"}]},
])
def test_new_meta_maps_answer_what_the_full_checks_answer(meta: dict) -> None:
    full = m._validate_new_meta_maps.__wrapped__(meta.get("labels"), meta.get("annotations"),
                                                 meta.get("ownerReferences"), meta.get("finalizers"),
                                                 meta.get("managedFields"), "metadata")
    assert m._validate_meta_maps(meta, "metadata") == full
    assert bool(full) == any(k in str(meta) for k in ("bad", "Bad", "Event", "Patch"))
