"""Hostile input: every answer is upstream's status and message, nothing is written, never a 5xx.

Covers issue 10's decoding findings one by one (the YAML alias bomb, unknown fields stored,
the four 500s, the 30-digit resourceVersion, forged continue tokens), the stored-object size
limit, and a sweep: for every served kind, a null and wrong-typed values at every path of a
representative object, through create, update and every patch type.

Upstream references: yaml.v2 decode.go (allowedAliasRatio), sigs.k8s.io/json, handlers/rest.go
(transformDecodeError), structuredmerge.go (typed patch object), storage/continue.go,
storage/interfaces.go (ValidateListOptions), etcd3/store.go, handlers/create.go (isTooLargeError).
"""
from __future__ import annotations

import base64
import copy
import json
from typing import Any

import orjson
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubeplane.api import decode, yaml_aliases
from kubeplane.apiserver import objects
from kubeplane.apiserver.handlers import common
from kubeplane.apiserver.request import Request

YAML = {"content-type": "application/yaml"}
APPLY = {"content-type": "application/apply-patch+yaml"}
MERGE = {"content-type": "application/merge-patch+json"}
SMP = {"content-type": "application/strategic-merge-patch+json"}
JSON_PATCH = {"content-type": "application/json-patch+json"}
NODES = "/api/v1/nodes"
NAMESPACES = "/api/v1/namespaces"


def alias_bomb(levels: int, name: str = "bomb") -> bytes:
    """The issue's body: `a0: &a0 [x,x,x,x,x,x,x,x,x]`, `a1: &a1 [*a0 x9]`, ... (nine levels: 514 bytes)."""
    lines = ["apiVersion: v1", "kind: ConfigMap", f"metadata: {{name: {name}}}", "data:", "  k: v", "x:",
             "  a0: &a0 [x,x,x,x,x,x,x,x,x]"]
    lines += [f"  a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(lines).encode()


def status(r: Any) -> tuple[int, str, str]:
    body = r.json
    return r.status, body.get("reason", ""), body.get("message", "")


# --- the YAML alias bomb -------------------------------------------------------------------------


@pytest.mark.parametrize("levels", [7, 9])
async def test_alias_bomb_create_is_400_and_nothing_stored(api, levels) -> None:
    body = alias_bomb(levels)
    r = await api.call("POST", api.CMS, body=body, headers=YAML)
    summary = body[:30].hex() + " ..."
    assert status(r) == (400, "BadRequest", ("the object provided is unrecognized (must be of type ConfigMap): "
                                             "error converting YAML to JSON: yaml: document contains excessive "
                                             f"aliasing ({summary})"))
    assert (await api.get(f"{api.CMS}/bomb")).status == 404


async def test_alias_bomb_on_every_yaml_path(api) -> None:
    """Update, server-side apply and the subresources decode YAML through the same budget."""
    await api.create(api.CMS, api.configmap("bomb"))
    await api.create(api.PODS, api.pod("p"))
    await api.create(api.DEPLOYS, api.deployment("d"))
    rv = await api.rv(f"{api.CMS}/bomb")
    for method, path, headers in [("PUT", f"{api.CMS}/bomb", YAML),
                                  ("PATCH", f"{api.CMS}/bomb", APPLY),
                                  ("POST", f"{api.PODS}/p/binding", YAML),
                                  ("PUT", f"{api.DEPLOYS}/d/scale", YAML),
                                  ("DELETE", f"{api.CMS}/bomb", YAML)]:
        r = await api.call(method, path, {"fieldManager": "m"} if method == "PATCH" else None,
                           body=alias_bomb(9), headers=headers)
        assert r.status == 400, (method, path, r.json)
        assert "document contains excessive aliasing" in r.json["message"]
    assert await api.rv(f"{api.CMS}/bomb") == rv


def test_patch_pins_revision_reads_a_bomb_without_expanding_it() -> None:
    req = Request.build("PATCH", "/", "", APPLY, alias_bomb(9))
    assert common.patch_pins_revision(req, "application/apply-patch+yaml") is False


def test_bomb_is_never_constructed(monkeypatch) -> None:
    """The budget is checked on the node graph: construction never starts."""
    def refuse(self, node):
        raise AssertionError("constructed")
    monkeypatch.setattr(decode._YAMLLoader, "construct_document", refuse)
    with pytest.raises(decode.errors.BadRequest, match="excessive aliasing"):
        decode.decode_body(alias_bomb(9), "io.k8s.api.core.v1.ConfigMap", kind="ConfigMap", version="v1",
                           content_type="application/yaml")


@pytest.mark.parametrize("count,expected", [
    (400_000, 0.99), (1, 0.99), (4_000_000, 0.10), (10**9, 0.10),
    (2_200_000, 0.99 - 0.89 * 0.5),          # half way through the range
])
def test_allowed_alias_ratio_is_yaml_v2s(count, expected) -> None:
    assert yaml_aliases.allowed_alias_ratio(count) == pytest.approx(expected)


def expansions(doc: str) -> list[int]:
    node = yaml.compose(doc, Loader=yaml.CSafeLoader)
    counts, _, _ = yaml_aliases._expansions(node, yaml_aliases._alias_edges(node), doc)
    return [counts[id(v)] for _, v in node.value[0][1].value]


def test_expansion_counts_match_the_worked_example() -> None:
    """a0 = itself + 9 scalars; aN = itself + 9 x (the alias node + a(N-1)), as yaml.v2 counts."""
    doc = alias_bomb(5).decode().split("x:\n", 1)[1]
    assert expansions("x:\n" + doc) == [10, 100, 910, 8200, 73810]


def test_the_budget_fails_where_yaml_v2_fails() -> None:
    """Three levels (1,030 decoded, 990 from aliases: 96 %) pass; a3's sixth alias tips it over 99 %."""
    yaml_aliases.check(yaml.compose(alias_bomb(3), Loader=yaml.CSafeLoader), b"", max_growth=10**9)
    with pytest.raises(yaml_aliases.AliasError, match="^document contains excessive aliasing$"):
        yaml_aliases.check(yaml.compose(alias_bomb(4), Loader=yaml.CSafeLoader), b"", max_growth=10**9)


async def test_ordinary_anchors_and_merge_keys_still_work(api) -> None:
    doc = b"""apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: &labels {app: web, tier: fe}}
spec:
  replicas: 2
  selector: {matchLabels: *labels}
  template:
    metadata: {labels: *labels}
    spec:
      containers:
      - &c {name: a, image: nginx, env: &env [{name: X, value: "1"}]}
      - <<: *c
        name: b
        env: *env
"""
    r = await api.call("POST", api.DEPLOYS, body=doc, headers=YAML)
    assert r.status == 201, r.json
    spec = r.json["spec"]
    assert spec["selector"]["matchLabels"] == {"app": "web", "tier": "fe"}
    containers = spec["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["a", "b"]
    assert containers[1]["image"] == "nginx" and containers[1]["env"] == [{"name": "X", "value": "1"}]


async def test_an_anchor_containing_itself_is_400(api) -> None:
    r = await api.call("POST", api.CMS, body=b"metadata: {name: c}\nx: &loop [1, *loop]\n", headers=YAML)
    assert r.status == 400
    assert "error converting YAML to JSON: yaml: anchor 'loop' value contains itself" in r.json["message"]


async def test_aliases_adding_more_than_the_body_limit_are_413(api) -> None:
    """60 aliases of a 100 KB string: few nodes, 6 MB of document."""
    doc = ("metadata: {name: big}\nx: &x \"" + "y" * 100_000 + "\"\ndata:\n"
           + "".join(f"  k{i}: *x\n" for i in range(60)))
    r = await api.call("POST", api.CMS, body=doc.encode(), headers=YAML)
    assert status(r) == (413, "RequestEntityTooLarge", "Request entity too large: limit is 3145728")


# --- unknown fields ------------------------------------------------------------------------------


def deployment_with_unknowns() -> dict[str, Any]:
    d = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "bogus": 1},
         "spec": {"replicas": 1, "foo": "bar", "selector": {"matchLabels": {"app": "web"}},
                  "template": {"metadata": {"labels": {"app": "web"}},
                               "spec": {"containers": [{"name": "c", "image": "nginx", "extra": {"a": 1}}]}}},
         "zzz": [1]}
    return d


def assert_no_unknowns(obj: dict[str, Any]) -> None:
    assert "zzz" not in obj and "bogus" not in obj["metadata"] and "foo" not in obj["spec"]
    assert "extra" not in obj["spec"]["template"]["spec"]["containers"][0]


@pytest.mark.parametrize("mode", ["Ignore", "Warn", None])
async def test_unknown_fields_are_dropped_on_create(api, mode) -> None:
    r = await api.create(api.DEPLOYS, deployment_with_unknowns(), {"fieldValidation": mode} if mode else None)
    assert r.status == 201
    assert_no_unknowns(r.json)
    assert_no_unknowns((await api.get(f"{api.DEPLOYS}/web")).json)
    warnings = [v for k, v in r.headers if k == "warning"]
    if mode == "Ignore":
        assert warnings == []
    else:
        assert '299 - "unknown field \\"spec.foo\\""' in warnings
        assert '299 - "unknown field \\"spec.template.spec.containers[0].extra\\""' in warnings


async def test_unknown_fields_are_refused_in_strict_mode(api) -> None:
    r = await api.create(api.DEPLOYS, deployment_with_unknowns(), {"fieldValidation": "Strict"})
    assert r.status == 400 and r.json["message"].startswith(
        'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: unknown field')
    assert (await api.get(f"{api.DEPLOYS}/web")).status == 404


async def test_unknown_fields_are_dropped_from_yaml_and_updates(api) -> None:
    r = await api.call("POST", api.CMS, {"fieldValidation": "Ignore"},
                       body=b"metadata: {name: y}\ndata: {k: v}\nextra: {a: 1}\n", headers=YAML)
    assert r.status == 201 and "extra" not in r.json
    cm = (await api.get(f"{api.CMS}/y")).json
    cm["extra"] = 1
    cm["metadata"]["more"] = {"x": 1}
    r = await api.call("PUT", f"{api.CMS}/y", {"fieldValidation": "Ignore"}, body=cm)
    assert r.status == 200 and "extra" not in r.json and "more" not in r.json["metadata"]


@pytest.mark.parametrize("headers,patch", [
    (MERGE, {"spec": {"foo": 1, "template": {"spec": {"containers": [{"name": "c", "image": "x", "bar": 2}]}}}}),
    (SMP, {"spec": {"foo": 1, "template": {"spec": {"containers": [{"name": "c", "bar": 2}]}}}}),
    (JSON_PATCH, [{"op": "add", "path": "/spec/foo", "value": 1},
                  {"op": "add", "path": "/spec/template/spec/containers/0/bar", "value": 2}]),
])
@pytest.mark.parametrize("mode", ["Ignore", "Warn"])
async def test_unknown_fields_are_dropped_from_patches(api, headers, patch, mode) -> None:
    await api.create(api.DEPLOYS, api.deployment("web"))
    r = await api.call("PATCH", f"{api.DEPLOYS}/web", {"fieldValidation": mode}, body=patch, headers=headers)
    assert r.status == 200, r.json
    stored = (await api.get(f"{api.DEPLOYS}/web")).json
    assert "foo" not in stored["spec"] and "bar" not in stored["spec"]["template"]["spec"]["containers"][0]
    if mode == "Warn":
        assert ("warning", '299 - "unknown field \\"spec.foo\\""') in r.headers


async def test_unknown_fields_in_a_status_update_are_dropped(api) -> None:
    await api.create(api.PODS, api.pod("p"))
    pod = (await api.get(f"{api.PODS}/p")).json
    pod["status"]["phaseX"] = "Running"
    r = await api.call("PUT", f"{api.PODS}/p/status", {"fieldValidation": "Ignore"}, body=pod)
    assert r.status == 200 and "phaseX" not in r.json["status"]


@pytest.mark.parametrize("mode", ["Ignore", "Warn", "Strict"])
async def test_apply_refuses_undeclared_fields(api, mode) -> None:
    """Upstream's typed conversion of the applied object fails whatever fieldValidation says."""
    config = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
              "spec": {"foo": 1, "selector": {"matchLabels": {"app": "web"}},
                       "template": {"metadata": {"labels": {"app": "web"}},
                                    "spec": {"containers": [{"name": "c", "image": "nginx", "bar": 1}]}}}}
    r = await api.call("PATCH", f"{api.DEPLOYS}/web", {"fieldManager": "me", "fieldValidation": mode},
                       body=config, headers=APPLY)
    assert status(r) == (400, "BadRequest", (
        "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): errors:\n"
        "  .spec.foo: field not declared in schema\n"
        '  .spec.template.spec.containers[name="c"].bar: field not declared in schema'))
    assert (await api.get(f"{api.DEPLOYS}/web")).status == 404


# --- the four 500s -------------------------------------------------------------------------------


async def test_lone_surrogate_becomes_the_replacement_character(api) -> None:
    """Go's unquote turns an unpaired surrogate escape into U+FFFD; a pair stays one character."""
    body = b'{"metadata":{"name":"s"},"data":{"k":"\\ud800","p":"a\\ud83d\\ude00b\\udc00"}}'
    r = await api.call("POST", api.CMS, body=body)
    assert r.status == 201
    assert (await api.get(f"{api.CMS}/s")).json["data"] == {"k": "\ufffd", "p": "a\U0001f600b\ufffd"}
    r = await api.call("POST", api.CMS, body=b'{"metadata":{"name":"t"},"data":{"\\udc00":"v"}}')
    assert r.status == 422 and r.json["details"]["causes"][0]["field"] == "data[\ufffd]"


async def test_lone_surrogate_in_a_patch(api) -> None:
    await api.create(api.CMS, api.configmap("s"))
    r = await api.call("PATCH", f"{api.CMS}/s", body=b'{"data":{"k":"\\udfff"}}', headers=MERGE)
    assert r.status == 200 and r.json["data"]["k"] == "\ufffd"


async def test_namespace_with_null_finalizers(api) -> None:
    r = await api.create(NAMESPACES, {"metadata": {"name": "n1"}, "spec": {"finalizers": None}})
    assert r.status == 201 and r.json["spec"] == {"finalizers": ["kubernetes"]}


async def test_binding_with_a_list_for_metadata(api) -> None:
    await api.create(api.PODS, api.pod("p"))
    r = await api.call("POST", f"{api.PODS}/p/binding", body={"metadata": [None], "target": {"name": "n"}})
    assert status(r) == (400, "BadRequest", ('Binding in version "v1" cannot be handled as a Binding: json: cannot '
                                             "unmarshal array into Go struct field Binding.metadata of type v1.ObjectMeta"))
    assert "nodeName" not in (await api.get(f"{api.PODS}/p")).json["spec"]


@pytest.mark.parametrize("field,value,code", [
    ("status", {"addresses": [None], "conditions": None}, 201),     # [null] is one empty address
    ("spec", {"taints": [None]}, 422),                              # one empty taint: key required
    ("spec", {"podCIDRs": [None]}, 422),
    ("status", {"nodeInfo": None, "capacity": {"cpu": None}}, 201),
])
async def test_node_with_nested_nulls(api, field, value, code) -> None:
    r = await api.create(NODES, {"metadata": {"name": "n"}, field: value})
    assert r.status == code, r.json


async def test_thirty_digit_resource_version(api) -> None:
    await api.create(api.CMS, api.configmap("c"))
    rv = "1" * 30
    invalid = (f'invalid resource version: resourceVersion: Invalid value: "{rv}": '
               f'strconv.ParseUint: parsing "{rv}": value out of range')
    for path in (api.CMS, f"{api.CMS}/c"):
        assert status(await api.get(path, {"resourceVersion": rv})) == (400, "BadRequest", invalid)
    watch = await api.open_watch(api.CMS, {"resourceVersion": rv})
    assert watch.status == 400 and orjson.loads(watch.body)["message"] == invalid
    cm = (await api.get(f"{api.CMS}/c")).json
    cm["metadata"]["resourceVersion"] = rv
    r = await api.call("PUT", f"{api.CMS}/c", body=cm)
    assert status(r) == (400, "BadRequest", f'strconv.ParseUint: parsing "{rv}": value out of range')
    # A delete precondition is compared as a string, as upstream: a conflict, not a parse error.
    r = await api.call("DELETE", f"{api.CMS}/c", body={"preconditions": {"resourceVersion": rv}})
    assert r.status == 409 and f"the ResourceVersion in the precondition ({rv}) does not match" in r.json["message"]


async def test_future_resource_version_on_get_is_504(api) -> None:
    await api.create(api.CMS, api.configmap("c"))
    current = api.storage.revision
    r = await api.get(f"{api.CMS}/c", {"resourceVersion": str(current + 10)})
    assert status(r) == (504, "Timeout", f"Too large resource version: {current + 10}, current: {current}")
    assert (await api.get(f"{api.CMS}/c", {"resourceVersion": str(current)})).status == 200


def token(**fields: Any) -> str:
    data = {"v": "meta.k8s.io/v1", "rv": 1, "start": "b\x00", **fields}
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


INVALID = "invalid continue token: continue key is not valid"


@pytest.mark.parametrize("tok,message", [
    pytest.param(token(rv="abc"), f"{INVALID}: json: cannot unmarshal string into Go struct field "
                 "continueToken.rv of type int64", id="non-numeric"),
    pytest.param(token(rv=1e30), f"{INVALID}: json: cannot unmarshal number 1e+30 into Go struct field "
                 "continueToken.rv of type int64", id="huge"),
    pytest.param(token(rv=2**63), f"{INVALID}: json: cannot unmarshal number 9223372036854775808 into Go struct "
                 "field continueToken.rv of type int64", id="beyond-int64"),
    pytest.param(token(v="meta.k8s.io/v2"), f"{INVALID}: server does not recognize this encoded version "
                 "meta.k8s.io/v2", id="wrong-version"),
    pytest.param(token(rv=0), f"{INVALID}: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
                 id="rv-0"),
    pytest.param(token(start=""), f"{INVALID}: encoded start key empty (version meta.k8s.io/v1)", id="no-start"),
    pytest.param(token(start="../kube-system/x"), f"{INVALID}: ../kube-system/x", id="path-traversal"),
    pytest.param("e30=", f"{INVALID}: illegal base64 data at input byte 3", id="padded"),
    pytest.param("abcde", f"{INVALID}: illegal base64 data at input byte 4", id="lone-sixth"),
    pytest.param("a*b", f"{INVALID}: illegal base64 data at input byte 1", id="bad-char"),
    pytest.param(base64.urlsafe_b64encode(b"[1]").decode().rstrip("="),
                 f"{INVALID}: json: cannot unmarshal array into Go value of type storage.continueToken", id="array"),
    pytest.param(base64.urlsafe_b64encode(b"{").decode().rstrip("="), f"{INVALID}: unexpected end of JSON input",
                 id="truncated"),
])
async def test_forged_continue_tokens_are_400(api, tok, message) -> None:
    await api.create(api.CMS, api.configmap("a"))
    assert status(await api.get(api.CMS, {"continue": tok})) == (400, "BadRequest", message)


async def test_continue_token_from_the_future_is_504_and_negative_means_latest(api) -> None:
    for n in "abc":
        await api.create(api.CMS, api.configmap(n))
    current = api.storage.revision
    r = await api.get(api.CMS, {"continue": token(rv=current + 1000)})
    assert status(r) == (504, "Timeout", f"Too large resource version: {current + 1000}, current: {current}")
    r = await api.get(api.CMS, {"continue": token(rv=-7)})
    assert r.status == 200
    assert [i["metadata"]["name"] for i in r.json["items"]] == ["c"]          # the start key is "b\x00"
    assert r.json["metadata"]["resourceVersion"] == str(current)


# --- the stored-object size limit ----------------------------------------------------------------


def huge_pod(name: str, size: int = 1_600_000) -> dict[str, Any]:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"containers": [{"name": "c", "image": "nginx", "args": ["x" * 1000] * (size // 1000)}]}}
    return pod


TOO_LARGE = (413, "RequestEntityTooLarge", "etcdserver: request is too large")


async def test_too_large_object_is_refused_on_create_update_patch_and_apply(api) -> None:
    assert status(await api.create(api.PODS, huge_pod("big"))) == TOO_LARGE
    assert (await api.get(f"{api.PODS}/big")).status == 404

    await api.create(api.DEPLOYS, api.deployment("d"))
    rv = await api.rv(f"{api.DEPLOYS}/d")
    args = ["x" * 1000] * 1600
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "c", "args": args}]}}}}
    assert status(await api.call("PATCH", f"{api.DEPLOYS}/d", body=patch, headers=SMP)) == TOO_LARGE
    ops = [{"op": "add", "path": "/spec/template/spec/containers/0/args", "value": args}]
    assert status(await api.call("PATCH", f"{api.DEPLOYS}/d", body=ops, headers=JSON_PATCH)) == TOO_LARGE
    d = (await api.get(f"{api.DEPLOYS}/d")).json
    d["spec"]["template"]["spec"]["containers"][0]["args"] = args
    assert status(await api.call("PUT", f"{api.DEPLOYS}/d", body=d)) == TOO_LARGE
    assert await api.rv(f"{api.DEPLOYS}/d") == rv
    config = huge_pod("applied")
    config["metadata"]["namespace"] = "default"
    r = await api.call("PATCH", f"{api.PODS}/applied", {"fieldManager": "me"}, body=config, headers=APPLY)
    assert status(r) == TOO_LARGE
    assert (await api.get(f"{api.PODS}/applied")).status == 404


async def test_too_large_with_managed_fields_is_stored_without_them(api) -> None:
    """As upstream's handlers: etcd refused it, so it is tried once more without managedFields."""
    labels = {f"label-{i:06d}": "v" for i in range(45_000)}     # 0.86 MB of labels, 0.9 MB of managedFields
    cm = api.configmap("many", labels=labels)
    r = await api.create(api.CMS, cm, {"fieldManager": "kubectl-create"})
    assert r.status == 201, r.json
    stored = (await api.get(f"{api.CMS}/many")).json
    assert len(stored["metadata"]["labels"]) == 45_000 and "managedFields" not in stored["metadata"]
    assert len(orjson.dumps(stored)) <= objects.MAX_REQUEST_BYTES


async def test_a_light_request_cannot_outgrow_the_store(api) -> None:
    """The size check runs for heavy requests only (registry/store.py _validate_create): the worst growth
    we know, bare containers created with a fieldManager, must stay far below the 24-fold a
    light request would need to reach the limit."""
    containers, size = [], 0
    while size < common.OFFLOAD_BYTES - 100:
        containers.append({"name": f"a{len(containers)}", "image": "b"})
        size = len(json.dumps({"metadata": {"name": "light"}, "spec": {"containers": containers}}))
    r = await api.create(api.PODS, {"metadata": {"name": "light"}, "spec": {"containers": containers}},
                         {"fieldManager": "kubectl-create"})
    assert r.status == 201
    assert len((await api.get(f"{api.PODS}/light")).body) < objects.MAX_REQUEST_BYTES / 2


# --- more hostile bodies -------------------------------------------------------------------------


@pytest.mark.parametrize("body,headers,code,message", [
    pytest.param(b'{"metadata":{"name":"n"},"x":' + b"[" * 100_000 + b"]" * 100_000 + b"}", None, 400,
                 "exceeded max depth", id="json-deep"),
    pytest.param(b"metadata: {name: n}\nx: " + b"[" * 999 + b"]" * 999, YAML, 400, "exceeded max depth",
                 id="yaml-deep"),
    pytest.param(b'{"metadata":{"name":"n"},"data":{"a":NaN}}', None, 400,
                 "invalid character 'N' looking for beginning of value", id="nan"),
    pytest.param(b'{"metadata":{"name":"n","generation":1e400}}', None, 400,
                 "json: cannot unmarshal number 1e400 into Go struct field ObjectMeta.metadata.generation of type int64",
                 id="1e400"),
    pytest.param(b'{"metadata":{"name":"n","managedFields":[{"fieldsV1":{"a":1e400}}]}}', None, 400,
                 "json: cannot unmarshal number 1e400 into Go value of type float64", id="1e400-free-form"),
    pytest.param(b"metadata: {name: n}\ndata: {a: .inf}", YAML, 400, "json: unsupported value: +Inf", id="yaml-inf"),
    pytest.param(b"metadata: {name: n}\nx: !!python/name:os.system", YAML, 400,
                 "could not determine a constructor for the tag", id="yaml-python-tag"),
    pytest.param(b"[1, 2]", None, 400, "cannot unmarshal array into Go value of type struct", id="not-an-object"),
])
async def test_hostile_bodies_are_4xx(api, body, headers, code, message) -> None:
    r = await api.call("POST", api.CMS, body=body, headers=headers)
    assert r.status == code and message in r.json["message"], r.json


async def test_integers_longer_than_python_parses(api) -> None:
    """int() refuses more than 4,300 digits; Go's parsers do not care how long a number is."""
    digits = "1" * 5000
    r = await api.call("POST", api.CMS, body=b'{"metadata":{"name":"n","generation":' + digits.encode() + b"}}")
    assert r.status == 400 and f"cannot unmarshal number {digits} into Go struct field" in r.json["message"]
    r = await api.call("POST", api.CMS, body=f"metadata: {{name: n}}\ndata: {{a: {digits}}}".encode(), headers=YAML)
    assert r.status == 201 and r.json["data"]["a"] == digits      # beyond float64: yaml.v2 keeps the string
    r = await api.call("POST", api.CMS, body=b'{"metadata":{"name":"m"},"x":' + digits.encode() + b"}")
    assert r.status == 201                                          # an unknown field: dropped, number and all
    for query in ({"resourceVersion": digits}, {"limit": digits}):
        r = await api.get(api.CMS, query)
        assert r.status == 400 and r.json["message"].endswith(": value out of range")


async def test_yaml_scalars_as_yaml_v2_gives_them(api) -> None:
    doc = b"metadata: {name: y}\ndata: {bin: !!binary aGVsbG8=, big: '1'}\nbinaryData: {}\n"
    r = await api.call("POST", api.CMS, body=doc, headers=YAML)
    assert r.status == 201 and r.json["data"] == {"bin": "hello", "big": "1"}
    r = await api.call("POST", api.DEPLOYS, body=b"metadata: {name: d}\nspec: {replicas: 123456789012345678901234}",
                       headers=YAML)
    assert r.status == 400 and "cannot unmarshal number 1.234567890123456" in r.json["message"]
    assert "into Go struct field " \
        "DeploymentSpec.spec.replicas of type int32" in r.json["message"]


async def test_duplicate_keys_by_the_thousand(api) -> None:
    body = b'{"metadata":{"name":"d"},"data":{' + b",".join(b'"k":"%d"' % i for i in range(20_000)) + b"}}"
    r = await api.call("POST", api.CMS, {"fieldValidation": "Strict"}, body=body)
    assert r.status == 400 and r.json["message"].endswith('strict decoding error: duplicate field "data.k"')
    r = await api.call("POST", api.CMS, {"fieldValidation": "Ignore"}, body=body)
    assert r.status == 201 and r.json["data"] == {"k": "19999"}


async def test_json_patch_copies_are_bounded(api) -> None:
    """30 copies of a list into itself would hold 2^30 elements: refused at 3 MiB of copies."""
    await api.create(api.CMS, api.configmap("c"))
    ops = [{"op": "add", "path": "/metadata/annotations", "value": {}},
           {"op": "add", "path": "/x", "value": ["y" * 1000]}]
    ops += [{"op": "copy", "from": "/x", "path": "/x/-"} for _ in range(30)]
    r = await api.call("PATCH", f"{api.CMS}/c", body=ops, headers=JSON_PATCH)
    assert status(r) == (422, "Invalid", "the server rejected our request due to an error in our request")


async def test_json_patch_limits(api) -> None:
    await api.create(api.CMS, api.configmap("c"))
    ops = [{"op": "test", "path": "/data/k", "value": "v"}] * 10_001
    r = await api.call("PATCH", f"{api.CMS}/c", body=ops, headers=JSON_PATCH)
    assert status(r) == (413, "RequestEntityTooLarge",
                         "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001")
    ops = [{"op": "add", "path": f"/data/k{i}", "value": "v"} for i in range(10_000)]
    r = await api.call("PATCH", f"{api.CMS}/c", body=ops, headers=JSON_PATCH)
    assert r.status == 200 and len(r.json["data"]) == 10_001


@pytest.mark.parametrize("patch", [
    {"$patch": None},
    {"metadata": {"$retainKeys": None}},
    {"metadata": {"$setElementOrder/finalizers": None, "finalizers": None}},
    {"metadata": {"$deleteFromPrimitiveList/finalizers": None}},
    {"metadata": {"finalizers": {"$patch": "delete"}}},
    {"metadata": {"labels": {"$patch": None}}},
    {"spec": None, "$setElementOrder/spec": [None]},
    {"spec": {"containers": [{"$patch": "delete"}]}},
    {"spec": {"containers": [None, {"name": None}]}},
    {"spec": {"$setElementOrder/containers": [None, {}], "containers": [{"name": "c"}]}},
])
async def test_strategic_directives_with_nulls_are_4xx_or_applied(api, patch) -> None:
    await api.create(api.PODS, api.pod("p"))
    r = await api.call("PATCH", f"{api.PODS}/p", body=patch, headers=SMP)
    assert r.status < 500, r.json


async def test_delete_options_are_typed(api) -> None:
    await api.create(api.CMS, api.configmap("c"))
    for body, message in [({"preconditions": [1]}, "Go struct field DeleteOptions.preconditions of type v1.Preconditions"),
                          ({"gracePeriodSeconds": "x"}, "Go struct field DeleteOptions.gracePeriodSeconds of type int64"),
                          ({"dryRun": "All"}, "Go struct field DeleteOptions.dryRun of type []string")]:
        r = await api.call("DELETE", f"{api.CMS}/c", body=body)
        assert r.status == 400 and message in r.json["message"], r.json
    assert (await api.get(f"{api.CMS}/c")).status == 200


@pytest.mark.parametrize("limit,message", [
    ("99999999999999999999", 'strconv.ParseInt: parsing "99999999999999999999": value out of range'),
    ("1e3", 'strconv.ParseInt: parsing "1e3": invalid syntax'),
])
async def test_limit_is_an_int64(api, limit, message) -> None:
    assert status(await api.get(api.CMS, {"limit": limit})) == (400, "BadRequest", message)


# --- big requests off the loop give what small ones give -----------------------------------------


async def test_offloaded_requests_store_what_inline_ones_store(api, monkeypatch) -> None:
    """An oracle: the same create and patches, once on the loop, once in the worker thread."""
    results = []
    for threshold in (10**9, 0):
        monkeypatch.setattr(common, "OFFLOAD_BYTES", threshold)
        name = f"d{threshold}"
        d = api.deployment(name, labels={"app": "web"})
        d["spec"]["template"]["spec"]["containers"][0]["unknown"] = 1
        assert (await api.create(api.DEPLOYS, d)).status == 201
        patch = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "v2"}]}}}}
        assert (await api.call("PATCH", f"{api.DEPLOYS}/{name}", body=patch, headers=SMP)).status == 200
        obj = (await api.get(f"{api.DEPLOYS}/{name}")).json
        for k in ("name", "uid", "resourceVersion", "creationTimestamp"):
            obj["metadata"].pop(k)
        results.append(obj)
    assert results[0] == results[1]


# --- the sweep: nulls and wrong types at every path of every kind --------------------------------

META = {"labels": {"app": "web"}, "annotations": {"note": "x"}, "finalizers": ["example.com/f"],
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u1"}]}
POD_SPEC = {
    "containers": [{
        "name": "c", "image": "nginx", "args": ["a"], "ports": [{"name": "http", "containerPort": 80}],
        "env": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        "resources": {"requests": {"cpu": "10m"}, "limits": {"memory": "64Mi"}},
        "readinessProbe": {"httpGet": {"path": "/", "port": 80}},
        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
        "securityContext": {"capabilities": {"drop": ["ALL"]}},
    }],
    "volumes": [{"name": "data", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "cm", "items": [{"key": "k", "path": "p"}]}}],
    "tolerations": [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}],
    "nodeSelector": {"disk": "ssd"},
    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}},
    "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
                                   "labelSelector": {"matchLabels": {"app": "web"}}}],
    "imagePullSecrets": [{"name": "reg"}], "hostAliases": [{"ip": "10.0.0.1", "hostnames": ["a"]}],
}
TEMPLATE = {"metadata": {"labels": {"app": "web"}}, "spec": POD_SPEC}
SELECTOR = {"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]}
NS = "/api/v1/namespaces/default"
SAMPLES: dict[str, dict[str, Any]] = {
    NAMESPACES: {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns1", **META},
                 "spec": {"finalizers": ["kubernetes"]}},
    f"{NS}/pods": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1", **META}, "spec": POD_SPEC,
                   "status": {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False"}]}},
    NODES: {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", **META},
            "spec": {"podCIDRs": ["10.0.0.0/24"], "taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]},
            "status": {"capacity": {"cpu": "4"}, "conditions": [{"type": "Ready", "status": "True"}],
                       "addresses": [{"type": "InternalIP", "address": "10.0.0.5"}],
                       "nodeInfo": {"kubeletVersion": "v1.37.0"}}},
    f"{NS}/events": {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1", **META},
                     "involvedObject": {"kind": "Pod", "name": "p1", "namespace": "default"},
                     "reason": "Started", "message": "m", "type": "Normal", "count": 1,
                     "source": {"component": "kubelet"}, "firstTimestamp": "2023-11-14T22:13:20Z"},
    f"{NS}/configmaps": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm1", **META},
                         "data": {"k": "v"}, "binaryData": {"b": "aGVsbG8="}},
    f"{NS}/secrets": {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s1", **META}, "type": "Opaque",
                      "data": {"k": "aGVsbG8="}, "stringData": {"s": "v"}},
    f"{NS}/services": {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc1", **META},
                       "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}},
    f"{NS}/serviceaccounts": {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa1", **META},
                              "secrets": [{"name": "s"}], "imagePullSecrets": [{"name": "reg"}]},
    "/apis/apps/v1/namespaces/default/deployments": {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d1", **META},
        "spec": {"replicas": 2, "selector": SELECTOR, "template": TEMPLATE,
                 "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}}}},
    "/apis/apps/v1/namespaces/default/replicasets": {
        "apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs1", **META},
        "spec": {"replicas": 2, "selector": SELECTOR, "template": TEMPLATE}},
    "/apis/coordination.k8s.io/v1/namespaces/default/leases": {
        "apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l1", **META},
        "spec": {"holderIdentity": "h", "leaseDurationSeconds": 40, "renewTime": "2023-11-14T22:13:20.000000Z"}},
    "/apis/events.k8s.io/v1/namespaces/default/events": {
        "apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "ev1", **META},
        "eventTime": "2023-11-14T22:13:20.000000Z", "reportingController": "kubelet", "reportingInstance": "n1",
        "action": "Started", "reason": "Started", "type": "Normal", "regarding": {"kind": "Pod", "name": "p1"},
        "series": {"count": 2, "lastObservedTime": "2023-11-14T22:13:20.000000Z"}},
}
# A null, then one value of each other JSON type where something else is expected; two nulls in
# a list are two empty items (two volumeMounts without a mountPath were a KeyError).
SWEEP_VALUES: list[Any] = [None, "x", 7, True, {}, [], [None], [None, None]]


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for k, v in value.items():
            out += paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += paths(v, prefix + (i,))
    return out


def with_value(obj: Any, path: tuple[Any, ...], value: Any) -> Any:
    out = copy.deepcopy(obj)
    target = out
    for k in path[:-1]:
        target = target[k]
    target[path[-1]] = copy.deepcopy(value)
    return out


async def sweep(api, collection: str, sample: dict[str, Any]) -> list[str]:
    """Every verb with every SWEEP_VALUE at every path; returns what answered 5xx."""
    assert (await api.create(collection, sample)).status == 201
    item = f"{collection}/{sample['metadata']['name']}"
    failures = []
    for path in paths(sample):
        if path in (("apiVersion",), ("kind",), ("metadata", "name")):
            continue
        for value in SWEEP_VALUES:
            body = orjson.dumps(with_value(sample, path, value))
            for method, url, query, headers in (("POST", collection, None, None), ("PUT", item, None, None),
                                                ("PATCH", item, None, SMP), ("PATCH", item, None, MERGE),
                                                ("PATCH", item, {"fieldManager": "m"}, APPLY)):
                r = await api.call(method, url, query, body=body, headers=headers or {"content-type": "application/json"})
                if r.status >= 500:
                    failures.append(f"{method} {headers} {path}={value!r}: {r.json.get('message')}")
    return failures


@pytest.mark.parametrize("collection", list(SAMPLES), ids=[p.rsplit("/", 1)[-1] + ("-v1" if "events.k8s.io" in p else "")
                                                          for p in SAMPLES])
async def test_no_null_or_wrong_type_anywhere_gives_5xx(api, collection) -> None:
    assert await sweep(api, collection, SAMPLES[collection]) == []


async def test_subresources_with_nulls_and_wrong_types(api) -> None:
    await api.create(api.PODS, api.pod("p"))
    await api.create(api.DEPLOYS, api.deployment("d"))
    scale = (await api.get(f"{api.DEPLOYS}/d/scale")).json
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p"}, "target": {"kind": "Node", "name": "n"}}
    finalize = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}, "spec": {"finalizers": ["kubernetes"]}}
    for method, url, sample in [("PUT", f"{api.DEPLOYS}/d/scale", scale), ("POST", f"{api.PODS}/p/binding", binding),
                                ("PUT", f"{NAMESPACES}/default/finalize", finalize)]:
        for path in paths(sample):
            for value in SWEEP_VALUES:
                r = await api.call(method, url, body=with_value(sample, path, value))
                assert r.status < 500, (url, path, value, r.json)
    for value in SWEEP_VALUES:
        r = await api.call("PATCH", f"{api.DEPLOYS}/d/scale", body={"spec": {"replicas": value}}, headers=MERGE)
        assert r.status < 500, (value, r.json)


json_values = st.recursive(st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.text(max_size=5)
                           | st.floats(allow_nan=False, allow_infinity=False),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                           max_leaves=8)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(collection=st.sampled_from(list(SAMPLES)), data=st.data())
async def test_random_values_at_random_paths_never_give_5xx(api, collection, data) -> None:
    sample = SAMPLES[collection]
    candidates = [p for p in paths(sample) if p not in (("apiVersion",), ("kind",))]
    path = data.draw(st.sampled_from(candidates))
    body = with_value(sample, path, data.draw(json_values))
    body["metadata"] = body["metadata"] if isinstance(body.get("metadata"), dict) else {}
    body["metadata"]["name"] = "random"
    r = await api.call("POST", collection, body=json.dumps(body).encode())     # ints beyond 64 bits too
    assert r.status < 500, r.json
    if r.status == 201:
        await api.call("DELETE", f"{collection}/random")


@settings(max_examples=300, deadline=None)
@given(text=st.text(alphabet="ab:-&*[]{},!?|>'\"\\ \n#%@`<=01.~", max_size=60))
def test_random_yaml_text_is_decoded_or_refused(text) -> None:
    """Whatever the text, the decoder answers with an object or a Status error, never a crash."""
    try:
        decode.decode_body(b"metadata: {name: x}\n" + text.encode(), "io.k8s.api.core.v1.ConfigMap",
                           kind="ConfigMap", version="v1", content_type="application/yaml")
    except decode.errors.StatusError:
        pass


@settings(max_examples=300, deadline=None)
@given(raw=st.binary(max_size=40) | st.text(alphabet='{}[]":,\\u0123456789abcdefdDNaIfinty.e+-', max_size=40).map(str.encode))
def test_random_json_bytes_are_decoded_or_refused(raw) -> None:
    try:
        decode.decode_body(raw, "io.k8s.api.core.v1.ConfigMap", kind="ConfigMap", version="v1")
    except decode.errors.StatusError:
        pass


# --- Warning headers (upstream's warning recorder) -----------------------------------------------

@pytest.mark.parametrize("texts, want", [
    pytest.param(['unknown field "a"'], ['299 - "unknown field \\"a\\""'], id="quotes escaped"),
    pytest.param(["x", "x", ""], ['299 - "x"'], id="repeats and empty skipped"),
    pytest.param(['unknown field "a\x7f"', "b\x1f", "ok"], ['299 - "ok"'], id="control characters skipped"),
    pytest.param(["\udb31", "é\u0085", "é"], ['299 - "é"'], id="invalid UTF-8 and C1 controls skipped"),
    pytest.param(["a" * 3800, "b" * 296], ['299 - "' + "a" * 3800 + '"', '299 - "' + "b" * 296 + '"'], id="up to the total"),
    pytest.param(["a" * 4000, "b" * 300], ['299 - "' + "a" * 256 + '"', '299 - "' + "b" * 256 + '"'], id="over it: each cut"),
])
def test_warning_headers_as_upstreams_recorder(texts: list[str], want: list[str]) -> None:
    from kubeplane.apiserver.handlers.common import warning_headers
    assert [v for _, v in warning_headers(texts)] == want
