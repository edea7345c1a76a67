"""A stored custom object is defaulted on read only when a default would change it
(schema.needs_defaults, which the storage codec's decode asks): the answer must be exactly whether schema.default changes it."""
from __future__ import annotations

import copy
from typing import Any

import pytest

from kubeplane.apiserver.apiextensions import schema
from kubeplane.apiserver.apiextensions.schema import needs_defaults

ROOT = {"type": "object", "properties": {
    "spec": {"type": "object", "properties": {
        "replicas": {"type": "integer", "default": 1},
        "opt": {"type": "string", "nullable": True, "default": "x"},
        "plain": {"type": "string"},
        "ports": {"type": "array", "items": {"type": "object", "properties": {
            "protocol": {"type": "string", "default": "TCP"}, "port": {"type": "integer"}}}},
        "labels": {"type": "object", "additionalProperties": {"type": "string", "default": "v"}},
        "nested": {"type": "object", "default": {}, "properties": {"a": {"type": "integer", "default": 2}}}}},
    "status": {"type": "object", "properties": {"n": {"type": "integer"}}}}}


@pytest.mark.parametrize("obj", [
    {"spec": {"replicas": 3, "opt": None, "nested": {"a": 1}, "ports": [{"protocol": "UDP"}], "labels": {"k": "x"}}},
    {"spec": {"opt": "y", "nested": {"a": 1}}},                                  # replicas missing
    {"spec": {"replicas": None, "nested": {"a": 1}}},                           # a non-nullable null
    {"spec": {"replicas": 1, "opt": None}},                                     # nested (an object default)
    {"spec": {"replicas": 1, "nested": {}}},                                    # a default inside it
    {"spec": {"replicas": 1, "nested": {"a": 1}, "ports": [{"port": 80}]}},     # in array items
    {"spec": {"replicas": 1, "nested": {"a": 1}, "labels": {"k": None}}},       # an additionalProperties null
    {"spec": {"replicas": 1, "nested": {"a": 1}, "plain": None}},               # no default: nothing
    {"status": {"n": 1}},
    {},
    {"spec": "not an object"},
])
def test_needs_defaults_is_whether_defaulting_changes_the_object(obj: dict[str, Any]) -> None:
    s = schema.structural_from(ROOT)
    defaulted = copy.deepcopy(obj)
    schema.default(defaulted, s)
    assert needs_defaults(obj, s, {}) is (defaulted != obj)
