"""Strict decoding: upstream's texts for unknown/duplicate fields, type and syntax errors.

The expected strings come from upstream: test/e2e/apimachinery/field_validation.go (conformance),
test/integration/apiserver/field_validation_test.go (the JSON/YAML bodies and warning lists),
and the Go encoding/json / sigs.k8s.io/json error formats.
"""
from __future__ import annotations

import json
import time

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.api import decode, errors

DEP = "io.k8s.api.apps.v1.Deployment"


def body_of(**spec: object) -> bytes:
    base = {"selector": {"matchLabels": {"app": "nginx"}},
            "template": {"metadata": {"labels": {"app": "nginx"}},
                         "spec": {"containers": [{"name": "nginx", "image": "nginx:latest"}]}}}
    return orjson.dumps({"apiVersion": "apps/v1", "kind": "Deployment",
                         "metadata": {"name": "my-dep", "labels": {"app": "nginx"}}, "spec": {**base, **spec}})


def decode_dep(body: bytes, validation: str | None = None, ctype: str = "application/json") -> tuple[dict, list[str]]:
    return decode.decode_body(body, DEP, kind="Deployment", version="v1", content_type=ctype,
                              field_validation=validation)


def bad_request(body: bytes, validation: str | None = None, ctype: str = "application/json") -> str:
    with pytest.raises(errors.BadRequest) as exc:
        decode_dep(body, validation, ctype)
    assert exc.value.code == 400 and exc.value.reason == "BadRequest"
    return exc.value.message


# --- upstream's conformance and integration bodies -----------------------------------------------

CONFORMANCE_BODY = b"""{
  "apiVersion": "apps/v1", "kind": "Deployment",
  "metadata": {"name": "my-dep", "labels": {"app": "nginx"}},
  "spec": {
    "unknownField": "foo",
    "replicas": 2,
    "replicas": 3,
    "selector": {"matchLabels": {"app": "nginx"}},
    "template": {"metadata": {"labels": {"app": "nginx"}},
                 "spec": {"containers": [{"name": "nginx", "image": "nginx:latest"}]}}
  }
}"""

INVALID_BODY_JSON = b"""{
  "apiVersion": "apps/v1", "kind": "Deployment",
  "metadata": {"name": "x", "labels": {"app": "nginx"}},
  "spec": {
    "unknown1": "val1",
    "unknownDupe": "valDupe",
    "unknownDupe": "valDupe2",
    "paused": true,
    "paused": false,
    "selector": {"matchLabels": {"app": "nginx"}},
    "template": {"metadata": {"labels": {"app": "nginx"}},
                 "spec": {"containers": [{"name": "nginx", "image": "nginx:latest", "unknownNested": "val1",
                                          "imagePullPolicy": "Always", "imagePullPolicy": "Never"}]}}
  }
}"""

INVALID_BODY_YAML = b"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: x
  labels:
    app: nginx
spec:
  unknown1: val1
  unknownDupe: valDupe
  unknownDupe: valDupe2
  paused: true
  paused: false
  selector:
    matchLabels:
      app: nginx
  template:
    metadata:
      labels:
        app: nginx
    spec:
      containers:
      - name: nginx
        image: nginx:latest
        unknownNested: val1
        imagePullPolicy: Always
        imagePullPolicy: Never"""


def test_conformance_unknown_and_duplicate_message() -> None:
    msg = bad_request(CONFORMANCE_BODY, "Strict")
    assert msg == ('Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
                   'unknown field "spec.unknownField", duplicate field "spec.replicas"')


def test_conformance_unknown_metadata_field() -> None:
    body = body_of().replace(b'"name":"my-dep"', b'"name":"my-dep","unknownMeta":"foo"')
    assert bad_request(body, "Strict").endswith('strict decoding error: unknown field "metadata.unknownMeta"')


JSON_PROBLEMS = ['unknown field "spec.unknown1"', 'unknown field "spec.unknownDupe"', 'duplicate field "spec.paused"',
                 'unknown field "spec.template.spec.containers[0].unknownNested"',
                 'duplicate field "spec.template.spec.containers[0].imagePullPolicy"']


@pytest.mark.parametrize("validation", ["Warn", None])
def test_warn_is_the_default_and_lists_problems_in_document_order(validation: str | None) -> None:
    obj, warnings = decode_dep(INVALID_BODY_JSON, validation)
    # A field both unknown and duplicated is reported once, as unknown (typed decoding).
    assert warnings == JSON_PROBLEMS
    assert obj["spec"]["paused"] is False                        # the last duplicate wins
    assert obj["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "Never"


def test_strict_joins_all_problems() -> None:
    assert bad_request(INVALID_BODY_JSON, "Strict").endswith("strict decoding error: " + ", ".join(JSON_PROBLEMS))


def test_ignore_reports_nothing_and_drops_unknown_fields() -> None:
    obj, warnings = decode_dep(INVALID_BODY_JSON, "Ignore")
    assert warnings == [] and obj["spec"]["paused"] is False       # the last duplicate wins
    assert "unknown1" not in obj["spec"] and "unknownDupe" not in obj["spec"]
    assert "unknownNested" not in obj["spec"]["template"]["spec"]["containers"][0]


def test_yaml_warnings_split_duplicate_block_per_line() -> None:
    _, warnings = decode_dep(INVALID_BODY_YAML, "Warn", "application/yaml")
    # Exactly upstream's post-warn-validation-yaml list: YAMLToJSON sorts keys, hence this order.
    assert warnings == ['line 10: key "unknownDupe" already set in map',
                        'line 12: key "paused" already set in map',
                        'line 26: key "imagePullPolicy" already set in map',
                        'unknown field "spec.template.spec.containers[0].unknownNested"',
                        'unknown field "spec.unknown1"', 'unknown field "spec.unknownDupe"']


def test_yaml_strict_error_keeps_the_yaml_block() -> None:
    msg = bad_request(INVALID_BODY_YAML, "Strict", "application/apply-patch+yaml")
    assert ('strict decoding error: error converting YAML to JSON: yaml: unmarshal errors:\n'
            '  line 10: key "unknownDupe" already set in map\n  line 12: key "paused" already set in map\n'
            '  line 26: key "imagePullPolicy" already set in map, unknown field') in msg


def test_decode_yaml_and_json_helpers() -> None:
    obj, problems = decode.decode_yaml(b"a: 1\nb: 2\na: 3\n")
    assert obj == {"a": 3, "b": 2}
    assert problems == ['error converting YAML to JSON: yaml: unmarshal errors:\n  line 3: key "a" already set in map']
    assert decode.decode_yaml(b"t: 2024-01-02T03:04:05Z\n")[0] == {"t": "2024-01-02T03:04:05Z"}
    obj, dups = decode.decode_json(b'{"m": {"x": 1, "x": 2}, "l": [{"y": 1, "y": 1}]}')
    assert obj == {"m": {"x": 2}, "l": [{"y": 1}]}
    assert dups == ['duplicate field "m.x"', 'duplicate field "l[0].y"']


def test_duplicates_in_maps_and_unknown_subtrees() -> None:
    body = body_of().replace(b'"labels":{"app":"nginx"}},"spec"',
                             b'"labels":{"app":"nginx","app":"x"}},"spec"', 1)
    assert decode_dep(body)[1] == ['duplicate field "metadata.labels.app"']
    # Nothing inside an unknown field is looked at, duplicates included.
    assert decode_dep(body_of(extra={"a": 1}).replace(b'"a":1', b'"a":1,"a":2'))[1] == ['unknown field "spec.extra"']


def test_problems_are_deduplicated() -> None:
    body = body_of(foo=1).replace(b'"foo":1', b'"foo":1,"foo":2,"foo":3')
    assert decode_dep(body)[1] == ['unknown field "spec.foo"']


def test_field_problems_paths() -> None:
    obj = orjson.loads(body_of(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "x": 1}}))
    obj["spec"]["template"]["spec"]["containers"].append({"name": "b", "ports": [{"containerPort": 1, "bad": 2}]})
    obj["spec"]["template"]["spec"]["nodeSelector"] = {"k": "v"}                   # a map: any key is fine
    obj["metadata"]["managedFields"] = [{"fieldsV1": {"f:anything": {}}}]          # raw: not checked
    assert decode.field_problems(obj, DEP) == [      # document order: template precedes strategy
        'unknown field "spec.template.spec.containers[1].ports[0].bad"',
        'unknown field "spec.strategy.rollingUpdate.x"']


# --- type errors (always checked) -------------------------------------------------------------


@pytest.mark.parametrize("spec,expected", [
    ({"replicas": "3"}, "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"),
    ({"replicas": 3.5}, "json: cannot unmarshal number 3.5 into Go struct field DeploymentSpec.spec.replicas of type int32"),
    ({"replicas": 2**31}, "json: cannot unmarshal number 2147483648 into Go struct field DeploymentSpec.spec.replicas of type int32"),
    ({"replicas": True}, "json: cannot unmarshal bool into Go struct field DeploymentSpec.spec.replicas of type int32"),
    ({"paused": "yes"}, "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.paused of type bool"),
    ({"strategy": "Recreate"}, "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.strategy of type v1.DeploymentStrategy"),
    ({"selector": {"matchLabels": ["a"]}}, "json: cannot unmarshal array into Go struct field LabelSelector.spec.selector.matchLabels of type map[string]string"),
    ({"selector": {"matchLabels": {"a": 1}}}, "json: cannot unmarshal number into Go struct field LabelSelector.spec.selector.matchLabels of type string"),
    ({"strategy": {"rollingUpdate": {"maxSurge": True}}}, "json: cannot unmarshal bool into Go struct field RollingUpdateDeployment.spec.strategy.rollingUpdate.maxSurge of type int32"),
    ({"template": {"spec": {"containers": {"name": "x"}}}}, "json: cannot unmarshal object into Go struct field PodSpec.spec.template.spec.containers of type []v1.Container"),
    ({"template": {"spec": {"containers": [{"name": "x", "env": [{"name": "A", "value": 1}]}]}}},
     "json: cannot unmarshal number into Go struct field EnvVar.spec.template.spec.containers.env.value of type string"),
    ({"template": {"spec": {"containers": [{"name": "x", "resources": {"limits": {"cpu": "lots"}}}]}}},
     "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
    ({"template": {"spec": {"containers": [{"name": "x", "resources": {"limits": {"cpu": "1Mm"}}}]}}},
     "unable to parse quantity's suffix"),
])
def test_type_errors_are_bad_requests_whatever_the_validation(spec: dict, expected: str) -> None:
    for validation in ("Ignore", "Warn", "Strict"):
        msg = bad_request(body_of(**spec), validation)
        assert msg == f'Deployment in version "v1" cannot be handled as a Deployment: {expected}'


def test_valid_quantities_and_int_or_string() -> None:
    spec = {"strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}},
            "template": {"spec": {"containers": [{"name": "x", "resources": {
                "limits": {"cpu": "500m", "memory": "1.5Gi", "e": "1e3", "n": 2}}}]}}}
    assert decode_dep(body_of(**spec)) [1] == []


def test_first_saved_error_but_unmarshaler_errors_win() -> None:
    obj = orjson.loads(body_of(replicas="x", paused="y"))
    assert decode.type_errors(obj, DEP) == [
        'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal string into Go '
        "struct field DeploymentSpec.spec.replicas of type int32",
        'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal string into Go '
        "struct field DeploymentSpec.spec.paused of type bool"]
    obj["metadata"]["creationTimestamp"] = 5          # v1.Time's UnmarshalJSON returns its error at once
    obj["spec"]["strategy"] = {"rollingUpdate": {"maxSurge": {}}}
    assert decode.go_type_errors(obj, DEP) == [
        "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.creationTimestamp of type string"]


def test_typed_decode_checks_types_and_prunes_in_one_walk() -> None:
    """typed_decode = go_type_errors(obj)[0], else prune(obj): the same texts, the same object."""
    obj = orjson.loads(body_of(paused=None, extra=1))
    tmpl = obj["spec"]["template"]["spec"]
    tmpl["containers"].append({"name": "b", "image": "b", "ports": [{"containerPort": 1, "bad": 2}, None],
                               "args": ["x", None], "resources": {"limits": {"cpu": None}}})
    obj["metadata"]["labels"]["gone"] = None
    expected = orjson.loads(orjson.dumps(obj))
    unknown = decode.prune(expected, DEP)
    assert unknown == ['unknown field "spec.template.spec.containers[1].ports[0].bad"', 'unknown field "spec.extra"']
    assert decode.typed_decode(obj, DEP) == ("", unknown) and obj == expected
    second = expected["spec"]["template"]["spec"]["containers"][1]
    assert second["ports"] == [{"containerPort": 1}, {}] and second["args"] == ["x", ""]
    assert second["resources"] == {"limits": {"cpu": "0"}} and expected["metadata"]["labels"]["gone"] == ""
    assert "paused" not in expected["spec"]

    bad = orjson.loads(body_of(replicas="x", paused="y", extra=1))
    assert decode.typed_decode(bad, DEP)[0] == decode.go_type_errors(orjson.loads(body_of(replicas="x", paused="y")),
                                                                     DEP)[0]
    bad = orjson.loads(body_of(replicas="x"))
    bad["metadata"]["creationTimestamp"] = 5                # an UnmarshalJSON error wins over a saved one
    assert decode.typed_decode(bad, DEP)[0] == (
        "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.creationTimestamp of type string")


def test_a_clean_spec_is_remembered_and_the_rest_still_walked() -> None:
    """A spec decoded clean before is not walked again (decode._CLEAN_SPECS); the fields beside
    it still are: their unknown fields, nulls and type errors are reported and pruned as the
    first time; a spec with anything to report or prune is never remembered."""
    decode._CLEAN_SPECS.clear()
    first = orjson.loads(body_of())
    assert decode.typed_decode(first, DEP) == ("", [])
    assert (DEP, orjson.dumps(first["spec"])) in decode._CLEAN_SPECS
    again = orjson.loads(body_of())
    again["metadata"]["labels"]["gone"] = None
    again["metadata"]["bogus"] = 1
    again["status"] = {"replicas": "x"}
    before = dict(again)
    assert decode.typed_decode(again, DEP) == (
        "json: cannot unmarshal string into Go struct field DeploymentStatus.status.replicas of type int32",
        ['unknown field "metadata.bogus"'])
    assert list(again) == list(before) and again["spec"] is before["spec"]
    assert again["metadata"]["labels"]["gone"] == "" and "bogus" not in again["metadata"]
    dirty = orjson.loads(body_of(paused=None, extra=1))
    size = len(decode._CLEAN_SPECS)
    for _ in range(2):                               # reported and pruned each time
        obj = orjson.loads(body_of(paused=None, extra=1))
        assert decode.typed_decode(obj, DEP) == ("", ['unknown field "spec.extra"'])
        assert "paused" not in obj["spec"] and "extra" not in obj["spec"]
    assert len(decode._CLEAN_SPECS) == size and dirty["spec"]["extra"] == 1


def test_secret_data_must_be_base64() -> None:
    errs = decode.type_errors({"data": {"a": "aGVsbG8=", "b": "not base64!"}}, "io.k8s.api.core.v1.Secret")
    assert errs == ['Secret in version "v1" cannot be handled as a Secret: illegal base64 data at input byte 3']


def test_body_apiversion_and_kind_name_the_error() -> None:
    body = orjson.dumps({"apiVersion": "apps/v1beta9", "kind": "Deployment", "spec": {"replicas": "1"}})
    assert bad_request(body).startswith('Deployment in version "v1beta9" cannot be handled as a Deployment: ')


# --- syntax errors ----------------------------------------------------------------------------


@pytest.mark.parametrize("body,go_error", [
    (b"", "unexpected end of JSON input"),
    (b'{"a":', "unexpected end of JSON input"),
    (b'{"a" 1}', "invalid character '1' after object key"),
    (b'{"a":1 "b":2}', "invalid character '\"' after object key:value pair"),
    (b'{"a":1,}', "invalid character '}' looking for beginning of object key string"),
    (b'{"a":[1,]}', "invalid character ']' looking for beginning of value"),
    (b'{"a":[1 2]}', "invalid character '2' after array element"),
    (b'{"a":tru}', "invalid character '}' in literal true (expecting 'e')"),
    (b'{"a":01}', "invalid character '1' after object key:value pair"),
    (b'{"a":1.}', "invalid character '}' after decimal point in numeric literal"),
    (b'{"a":"\\x"}', "invalid character 'x' in string escape code"),
    (b'{"a":NaN}', "invalid character 'N' looking for beginning of value"),
    (b'{}{}', "invalid character '{' after top-level value"),
])
def test_syntax_errors_use_go_scanner_messages(body: bytes, go_error: str) -> None:
    msg = bad_request(body)
    assert msg.startswith("the object provided is unrecognized (must be of type Deployment): "
                          f"couldn't get version/kind; json parse error: {go_error} (")


def test_unrecognized_summarizes_body() -> None:
    assert bad_request(b"[1,2]").endswith("json: cannot unmarshal array into Go value of type struct { APIVersion "
                                          'string "json:\\"apiVersion,omitempty\\""; Kind string '
                                          '"json:\\"kind,omitempty\\"" } (5b312c325d)')
    long = b'{"apiVersion":"apps/v1","kind":"Deployment"'
    assert bad_request(long).endswith('({"apiVersion":"apps/v1","kind" ...)')
    assert bad_request(b'{"kind": 5}').endswith(
        "json: cannot unmarshal number into Go struct field .kind of type string ({\"kind\": 5})")


def test_yaml_syntax_error() -> None:
    msg = bad_request(b"a: b: c", ctype="application/yaml")
    assert "error converting YAML to JSON: yaml: line 1: mapping values are not allowed in this context" in msg


# --- helpers ----------------------------------------------------------------------------------


def test_strict_error_and_warning_texts() -> None:
    err = decode.strict_error("Deployment", ['unknown field "spec.foo"', 'duplicate field "x"'])
    assert err.code == 400
    assert err.message == ('Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
                           'unknown field "spec.foo", duplicate field "x"')
    block = 'yaml: unmarshal errors:\n  line 9: key "a" already set in map\n  line 14: key "b" already set in map'
    assert decode.warning_texts([block, 'unknown field "x"']) == [
        'line 9: key "a" already set in map', 'line 14: key "b" already set in map', 'unknown field "x"']


# --- the duplicate pre-check is conservative ------------------------------------------------------

_keys = st.sampled_from(['"a"', '"b"', '"a:b"', '"\\u003a"'])
_leaves = st.sampled_from(["1", '"x"', '"x:y"', '"::"', '"\\u003a"', "null", '""', "[]"])


@st.composite
def _json_text(draw: st.DrawFn, depth: int = 0) -> str:
    """Random JSON object text that may repeat keys, including colons and escaped colons."""
    n = draw(st.integers(0, 4))
    parts = []
    for _ in range(n):
        value = draw(_json_text(depth + 1)) if depth < 2 and draw(st.booleans()) else draw(_leaves)
        parts.append(f"{draw(_keys)}:{value}")
    return "{" + ",".join(parts) + "}"


@settings(max_examples=300, deadline=None)
@given(_json_text())
def test_precheck_never_misses_a_duplicate(text: str) -> None:
    body = text.encode()
    slow = json.loads(body, object_pairs_hook=decode._Pairs)
    has_dup = bool(decode._plain_duplicates(slow, "", []))
    if has_dup:
        assert decode._maybe_duplicates(body, orjson.loads(body))
    assert decode.decode_json(body)[1] == decode._plain_duplicates(slow, "", [])


def test_fast_path_is_fast() -> None:
    containers = [{"name": f"c{i}", "image": f"registry.example.com/app:{i}", "ports": [{"containerPort": 80 + i}],
                   "env": [{"name": f"E{j}", "value": f"v{j}:x"} for j in range(4)],
                   "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}}} for i in range(5)]
    obj = orjson.loads(body_of(replicas=3, template={"metadata": {"labels": {"app": "nginx"}},
                                                      "spec": {"containers": containers}}))
    obj["metadata"]["annotations"] = {"kubectl.kubernetes.io/last-applied-configuration": json.dumps(obj)}
    body = json.dumps(obj, indent=1).encode()
    assert len(body) > 4000
    assert decode_dep(body)[1] == []
    n = 200
    start = time.perf_counter()
    for _ in range(n):
        decode_dep(body, "Strict")
    per_call = (time.perf_counter() - start) / n
    assert per_call < 1e-3, per_call          # measured ~0.1 ms on the 2-core dev machine


@pytest.mark.parametrize("body", [b"[" * 100_000, b'{"a":' * 5000 + b"1" + b"}" * 5000])
def test_absurd_nesting_is_a_bad_request_not_a_crash(body: bytes) -> None:
    assert "json parse error: exceeded max depth" in bad_request(body)
