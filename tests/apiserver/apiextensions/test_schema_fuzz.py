"""Whatever a client sends as a CRD schema or a custom object, the library answers with field
errors, never an exception (the API server would turn one into a 500)."""
from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.apiserver.apiextensions.schema import (default, prune, structural_from, validate, validate_crd_schema,
                                                      validate_structural, validate_update)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2 ** 70), max_value=2 ** 70)
    | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(["a", "b", "name", "metadata", "kind"]),
                                                                 inner, max_size=4),
    max_leaves=20)

KEYS = ["type", "properties", "items", "additionalProperties", "required", "enum", "nullable", "default", "format",
        "pattern", "minimum", "maximum", "exclusiveMinimum", "multipleOf", "minLength", "maxLength", "minItems",
        "maxItems", "uniqueItems", "minProperties", "maxProperties", "allOf", "anyOf", "oneOf", "not",
        "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource", "x-kubernetes-int-or-string",
        "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type", "x-kubernetes-validations",
        "$ref", "description"]
leaf_values = st.sampled_from(["object", "array", "string", "integer", "number", "boolean", "null", "set", "map",
                               "atomic", "granular", "date-time", "int32", "uuid", "^a+$", "(", True, False, 0, 3, -1,
                               2.5, None, ["a"], ["name"], [], {}])
schemas = st.recursive(
    st.dictionaries(st.sampled_from(KEYS), leaf_values, max_size=5),
    lambda inner: st.dictionaries(st.sampled_from(KEYS), inner | leaf_values
                                  | st.dictionaries(st.sampled_from(["a", "b", "name", "metadata"]), inner, max_size=3)
                                  | st.lists(inner, max_size=2), max_size=6),
    max_leaves=25)


@settings(max_examples=300, deadline=None)
@given(schemas, json_values, json_values)
def test_no_exception(schema: dict[str, Any], obj: Any, old: Any) -> None:
    validate_crd_schema({"openAPIV3Schema": schema}, "spec.versions[0].schema", status_enabled=True)
    s = structural_from(schema)
    validate_structural(s, "x")
    validate(s, obj)
    validate_update(s, obj, old)
    o = copy.deepcopy(obj)
    prune(o, s)
    default(o, s)
