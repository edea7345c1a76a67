"""/openapi/v2: the document's shape for every served kind, upstream's ConfigMap paths exactly,
and the handler's negotiation, ETag, gzip and protobuf (the real kubectl reads both forms:
tests/e2e/test_openapi_v2.py)."""
from __future__ import annotations

import gzip
import json
import pathlib
import re
import subprocess
import sys
from typing import Any

import orjson
import pytest

from kubeplane.api import resources as res
from kubeplane.api.protobuf.wire import iter_fields
from kubeplane.apiserver import openapi_v2
from kubeplane.apiserver.request import Request

TESTDATA = pathlib.Path(__file__).parent / "testdata"
PROTO_ACCEPT = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    return orjson.loads(openapi_v2.served().json)


def ops(doc: dict[str, Any]) -> dict[str, tuple[str, str, dict[str, Any]]]:
    """operationId -> (path, method, operation)."""
    return {op["operationId"]: (path, method, op) for path, item in doc["paths"].items()
            for method, op in item.items() if method != "parameters"}


def params(doc: dict[str, Any], path: str, method: str) -> dict[str, dict[str, Any]]:
    """Every parameter of one operation (its own and its path's), $refs resolved, by name."""
    item = doc["paths"][path]
    out = {}
    for p in item.get("parameters", []) + item[method].get("parameters", []):
        if "$ref" in p:
            p = doc["parameters"][p["$ref"].removeprefix("#/parameters/")]
        out[p["name"]] = p
    return out


# --- shape, for every served kind -----------------------------------------------------------------


def expected_operations(r: res.ResourceInfo) -> dict[str, str]:
    """operationId -> x-kubernetes-action, as upstream's installer names them."""
    gv = ("Core" if not r.group else openapi_v2.to_valid_operation_id(r.group.removesuffix(".k8s.io"), True)) \
        + r.version.capitalize()
    ns = "Namespaced" if r.namespaced else ""
    v = set(r.verbs)
    out = {}
    for verb, prefix, action, infix in (("list", "list", "list", ns), ("create", "create", "post", ns),
                                        ("deletecollection", "delete", "deletecollection", "Collection" + ns),
                                        ("get", "read", "get", ns), ("update", "replace", "put", ns),
                                        ("patch", "patch", "patch", ns), ("delete", "delete", "delete", ns),
                                        ("watch", "watch", "watch", ns)):
        if verb in v:
            out[f"{prefix}{gv}{infix}{r.kind}"] = action
    if "watch" in v:
        out[f"watch{gv}{ns}{r.kind}List"] = "watchlist"
    if r.namespaced and "list" in v:
        out[f"list{gv}{r.kind}ForAllNamespaces"] = "list"
    if r.namespaced and "watch" in v:
        out[f"watch{gv}{r.kind}ListForAllNamespaces"] = "watchlist"
    for sub in r.subresources:
        if sub.name in ("attach", "exec", "portforward"):      # connect GET and POST
            for method in openapi_v2.CONNECT_METHODS:
                out[f"connect{gv}{method.capitalize()}{ns}{r.kind}{sub.name.capitalize()}"] = "connect"
            continue
        if sub.name == "proxy":          # connect operations, one per HTTP method, with and without a path
            for method in openapi_v2.PROXY_METHODS:
                for suffix in ("", "WithPath"):
                    out[f"connect{gv}{method.capitalize()}{ns}{r.kind}Proxy{suffix}"] = "connect"
            continue
        for verb in sub.verbs:
            prefix, action = {"get": ("read", "get"), "update": ("replace", "put"), "patch": ("patch", "patch"),
                              "create": ("create", "post")}[verb]
            out[f"{prefix}{gv}{ns}{r.kind}{sub.name.capitalize()}"] = action
    return out


# metrics.k8s.io's document is metrics-server's upstream: kubeplane publishes none
OURS = [r for r in res.RESOURCES if r.group != "metrics.k8s.io"]


@pytest.mark.parametrize("r", OURS, ids=lambda r: f"{r.group or 'core'}/{r.plural}")
def test_every_operation_of_a_served_kind(doc: dict[str, Any], r: res.ResourceInfo) -> None:
    by_id = ops(doc)
    want = expected_operations(r)
    prefix = f"/apis/{r.group}/{r.version}/" if r.group else f"/api/{r.version}/"
    mine = {i for i, (path, _, _) in by_id.items() if path.startswith(prefix) and path.removeprefix(prefix)
            .removeprefix("watch/").removeprefix("namespaces/{namespace}/").split("/")[0] == r.plural}
    assert set(want) <= set(by_id)
    for op_id, action in want.items():
        path, method, op = by_id[op_id]
        assert op["x-kubernetes-action"] == action, op_id
        assert op["tags"] == [openapi_v2.tag(r.group, r.version)]
        assert op["schemes"] == ["https"] and op["responses"]["401"] == {"description": "Unauthorized"}
        sub = next((s for s in r.subresources if path.endswith("/" + s.name)
                    or s.name == "proxy" and path.endswith("/proxy/{path}")), None)
        kind = sub.kind if sub else r.kind
        group, version = (sub.group, sub.version) if sub and sub.group else (r.group, r.version)
        assert op["x-kubernetes-group-version-kind"] == {"group": group, "version": version, "kind": kind}
        if "{namespace}" in path:
            assert params(doc, path, method)["namespace"]["required"] is True
    assert mine == set(want)              # nothing documented that the kind does not serve


def test_kind_definitions_carry_their_group_version_kind(doc: dict[str, Any]) -> None:
    for r in OURS:
        gvks = doc["definitions"][r.definition]["x-kubernetes-group-version-kind"]
        assert {"group": r.group, "kind": r.kind, "version": r.version} in gvks
        if "list" not in r.verbs:            # the create-only reviews have no list
            continue
        assert doc["definitions"][r.definition + "List"]["properties"]["items"]["items"] == {
            "$ref": "#/definitions/" + r.definition}


def test_pod_subresources(doc: dict[str, Any]) -> None:
    by_id = ops(doc)
    path, method, op = by_id["patchCoreV1NamespacedPodStatus"]
    assert (path, method) == ("/api/v1/namespaces/{namespace}/pods/{name}/status", "patch")
    assert op["description"] == "partially update status of the specified Pod"
    assert op["consumes"] == ["application/json-patch+json", "application/merge-patch+json",
                              "application/strategic-merge-patch+json", "application/apply-patch+yaml"]
    assert set(params(doc, path, method)) == {"body", "dryRun", "fieldManager", "fieldValidation", "force",
                                              "name", "namespace", "pretty"}
    # binding: its only operation is a POST, so everything but the body moves to the path item
    path, _, op = by_id["createCoreV1NamespacedPodBinding"]
    assert op["description"] == "create binding of a Pod"
    assert op["parameters"] == [{"name": "body", "in": "body", "required": True,
                                 "schema": {"$ref": "#/definitions/io.k8s.api.core.v1.Binding"}}]
    path_params = doc["paths"][path]["parameters"]
    assert [p.get("name") or p["$ref"].split("/")[-1] for p in path_params] == [
        "dryRun", "fieldManager-Qy4HdaTW", "fieldValidation", "name", "namespace-vgWSWtn3", "pretty-tJGM1-ng"]
    assert path_params[3]["description"] == "name of the Binding"
    path, _, op = by_id["readCoreV1NamespacedPodLog"]
    assert op["produces"] == ["text/plain", "application/json", "application/yaml",
                              "application/vnd.kubernetes.protobuf"]
    assert op["responses"]["200"] == {"description": "OK", "schema": {"type": "string"}}
    assert set(params(doc, path, "get")) == {"container", "follow", "insecureSkipTLSVerifyBackend", "limitBytes",
                                             "name", "namespace", "pretty", "previous", "sinceSeconds", "stream",
                                             "tailLines", "timestamps"}


def test_scale_is_autoscaling_v1(doc: dict[str, Any]) -> None:
    path, _, op = ops(doc)["readAppsV1NamespacedDeploymentScale"]
    assert path == "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"
    assert op["x-kubernetes-group-version-kind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    assert op["responses"]["200"]["schema"] == {"$ref": "#/definitions/io.k8s.api.autoscaling.v1.Scale"}
    assert params(doc, path, "get")["name"]["description"] == "name of the Scale"


def test_deleting_a_pod_or_service_answers_the_object(doc: dict[str, Any]) -> None:
    by_id = ops(doc)
    assert by_id["deleteCoreV1NamespacedPod"][2]["responses"]["200"]["schema"]["$ref"].endswith("core.v1.Pod")
    assert by_id["deleteCoreV1NamespacedService"][2]["responses"]["202"]["schema"]["$ref"].endswith("v1.Service")
    assert by_id["deleteCoreV1Node"][2]["responses"]["200"]["schema"]["$ref"].endswith("meta.v1.Status")
    assert by_id["createCoreV1NamespacedEvent"][2]["description"] == "create an Event"


def test_discovery_operations(doc: dict[str, Any]) -> None:
    by_id = ops(doc)
    assert by_id["getCoreAPIVersions"][0] == "/api/"
    assert by_id["getAPIVersions"][2]["tags"] == ["apis"]
    assert by_id["getCoordinationAPIGroup"][0] == "/apis/coordination.k8s.io/"
    assert by_id["getEventsV1APIResources"][2]["tags"] == ["events_v1"]
    assert "x-kubernetes-action" not in by_id["getAppsV1APIResources"][2]


def test_operation_ids_and_tags_of_dotted_groups() -> None:
    """Upstream: GetOperationIDAndTags / ToValidOperationID (tags keep camel case, no dots)."""
    assert openapi_v2.gv_id("rbac.authorization.k8s.io", "v1") == "RbacAuthorizationV1"
    assert openapi_v2.tag("rbac.authorization.k8s.io", "v1") == "rbacAuthorization_v1"
    assert openapi_v2.gv_id("flowcontrol.apiserver.k8s.io", "v1beta3") == "FlowcontrolApiserverV1beta3"
    assert openapi_v2.tag("", "v1") == "core_v1" and openapi_v2.tag("apps") == "apps"


def test_every_ref_resolves_and_every_definition_is_used(doc: dict[str, Any]) -> None:
    raw = openapi_v2.served().json
    defs = {m.decode() for m in re.findall(rb'"#/definitions/([^"]+)"', raw)}
    assert defs == set(doc["definitions"])
    shared = {m.decode() for m in re.findall(rb'"#/parameters/([^"]+)"', raw)}
    assert shared == set(doc["parameters"])
    assert b"$defs" not in raw and b'"null"' not in raw


def test_definitions_are_swagger_2(doc: dict[str, Any]) -> None:
    d = doc["definitions"]
    assert d["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] == {
        "description": d["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["description"],
        "type": "string", "format": "int-or-string"}
    assert d["io.k8s.apimachinery.pkg.api.resource.Quantity"]["type"] == "string"
    assert d["io.k8s.apimachinery.pkg.apis.meta.v1.Time"] == {
        "description": d["io.k8s.apimachinery.pkg.apis.meta.v1.Time"]["description"],
        "type": "string", "format": "date-time"}
    pod = d["io.k8s.api.core.v1.Pod"]
    assert list(pod) == ["description", "type", "properties", "x-kubernetes-group-version-kind"]
    assert pod["properties"]["kind"] == {"description": pod["properties"]["kind"]["description"], "type": "string"}
    assert list(pod["properties"]["spec"]) == ["description", "$ref"]      # siblings beside the $ref, as upstream
    containers = d["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name" and containers["type"] == "array"
    assert not any("oneOf" in s or "anyOf" in s for s in d.values())


def test_keys_in_kube_openapis_order(doc: dict[str, Any]) -> None:
    assert list(doc) == ["swagger", "info", "paths", "definitions", "parameters", "securityDefinitions", "security"]
    assert doc["securityDefinitions"] == {"BearerToken": {"description": "Bearer Token authentication",
                                                          "type": "apiKey", "name": "authorization", "in": "header"}}
    item = doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"]
    assert list(item) == ["get", "put", "delete", "patch", "parameters"]
    assert list(item["put"]) == ["description", "consumes", "produces", "schemes", "tags", "operationId",
                                 "parameters", "responses", "x-kubernetes-action", "x-kubernetes-group-version-kind"]
    assert list(item["put"]["x-kubernetes-group-version-kind"]) == ["group", "version", "kind"]
    assert list(doc["parameters"]["pretty-tJGM1-ng"]) == ["uniqueItems", "type", "description", "name", "in"]


# --- against upstream's swagger.json -------------------------------------------------------------

# Every shared parameter name of upstream's document that our kinds use: the name is a hash of
# the parameter's JSON, so an equal name means an equal parameter.
UPSTREAM_SHARED = {
    "allowWatchBookmarks-HC2hJt-J", "body-2Y1dVQaQ", "body-78PwaGsr", "container-1GeXxFDC", "continue-QfD61s0i",
    "fieldManager-7c6nTn1T", "fieldManager-Qy4HdaTW", "fieldSelector-xIcQKXFG", "follow-9OIXh_2R",
    "force-tOGGb0Yi", "gracePeriodSeconds--K5HaBOS", "insecureSkipTLSVerifyBackend-gM00jVbe",
    "labelSelector-5Zw57w4C", "limit-1NfNmdNH", "limitBytes-zwd1RXuc", "namespace-vgWSWtn3",
    "orphanDependents-uRB25kX5", "pretty-tJGM1-ng", "previous-1jxDPu3y", "propagationPolicy-6jk3prlO",
    "resourceVersion-5WAnf1kx", "resourceVersionMatch-t8XhRHeC", "sendInitialEvents-rLXlEK_k",
    "sinceSeconds-vE2NLdnP", "tailLines-2fRTNzbP", "timeoutSeconds-yvYezaOC", "timestamps-c17fW1w_",
    "watch-XNNPZGbK",
    # the proxy subresources' path: in the path, and the pod's, node's and service's query option
    "path-z6Ciiujn", "path-oPbzgLUj", "path-rFDtV0x9", "path-QCf0eosM",
}
# Added since the copy of upstream's document we compare with (1.32: DeleteOptions'
# ignoreStoreReadErrorWithClusterBreakingPotential, PodLogOptions' stream).
NEWER = {"ignoreStoreReadErrorWithClusterBreakingPotential-QbNkfIqj", "stream-l-48cgXv"}
# The connect options of pods/attach, exec and portforward, from upstream's descriptions (k8s.io/api
# core/v1 types_swagger_doc_generated.go), named by the same hash: not in the excerpt above
# (command-Py3eQybp is the name in upstream's swagger.json).
CONNECT = {"command-Py3eQybp", "container-_Q-EJ3nR", "container-i5dOmRiM", "ports-91KROJmm", "stderr-26jJhFUR",
           "stderr-W_1TNlWc", "stdin-PSzNhyUC", "stdin-sEFnN3IS", "stdout--EZLRwV1", "stdout-005YMKE6",
           "tty-g7MlET_l", "tty-s0flW37O"}


def test_shared_parameters_are_named_as_upstream(doc: dict[str, Any]) -> None:
    assert set(doc["parameters"]) == UPSTREAM_SHARED | NEWER | CONNECT
    for name, p in doc["parameters"].items():
        assert openapi_v2.shared_parameter_name(p) == name


def test_configmap_paths_are_upstreams(doc: dict[str, Any]) -> None:
    upstream = json.loads((TESTDATA / "upstream_swagger_configmaps.json").read_text())["paths"]
    mine = {p: doc["paths"][p] for p in upstream}
    # normalise as upstream's checked-in file is: keys sorted; drop what 1.32 added
    text = json.dumps(mine, sort_keys=True).replace(
        ', {"$ref": "#/parameters/ignoreStoreReadErrorWithClusterBreakingPotential-QbNkfIqj"}', "")
    assert json.loads(text) == upstream


# --- serving ---------------------------------------------------------------------------------------


def get(headers: dict[str, str] | None = None, method: str = "GET") -> Any:
    return openapi_v2.serve(Request.build(method, "/openapi/v2", "", {k.lower(): v for k, v in (headers or {}).items()}))


def header(resp: Any, name: str) -> list[str]:
    return [v for k, v in resp.headers if k == name]


def test_json_by_default_with_etag_and_vary() -> None:
    resp = get()
    assert resp.status == 200 and resp.content_type == "application/json"
    assert resp.body == openapi_v2.served().json
    etag = header(resp, "etag")[0]
    assert re.fullmatch(r'"[0-9A-F]{128}"', etag)
    assert header(resp, "vary") == ["Accept-Encoding", "Accept"]
    assert header(resp, "last-modified")


@pytest.mark.parametrize("inm", ["{etag}", "W/{etag}", '"nope", {etag}', "*"])
def test_if_none_match_answers_304(inm: str) -> None:
    etag = header(get(), "etag")[0]
    resp = get({"If-None-Match": inm.format(etag=etag)})
    assert resp.status == 304 and resp.body == b"" and resp.content_type == ""
    assert header(resp, "etag") == [etag] and not header(resp, "last-modified")
    assert get({"If-None-Match": '"other"'}).status == 200
    assert get({"If-None-Match": inm.format(etag=etag)}, method="POST").status == 412


def test_if_modified_since() -> None:
    lm = header(get(), "last-modified")[0]
    assert get({"If-Modified-Since": lm}).status == 304
    assert get({"If-Modified-Since": "Mon, 01 Jan 1990 00:00:00 GMT"}).status == 200
    assert get({"If-Modified-Since": "yesterday"}).status == 200


@pytest.mark.parametrize("accept,content_type", [
    ("", "application/json"), ("*/*", "application/json"), ("application/*", "application/json"),
    ("application/json", "application/json"),
    (PROTO_ACCEPT, openapi_v2.PROTOBUF_TYPE),
    ("application/com.github.proto-openapi.spec.v2.v1.0+protobuf", openapi_v2.PROTOBUF_TYPE),
    (f"application/json;q=0.5, {PROTO_ACCEPT}", openapi_v2.PROTOBUF_TYPE),
    (f"{PROTO_ACCEPT}, application/json", openapi_v2.PROTOBUF_TYPE),
    ("text/html, */*;q=0.1", "application/json"),
])
def test_negotiation(accept: str, content_type: str) -> None:
    resp = get({"Accept": accept})
    assert resp.status == 200 and resp.content_type == content_type


@pytest.mark.parametrize("accept", ["text/html", "application/yaml", "application/vnd.kubernetes.protobuf",
                                    "////", ";;;", "application", "application/json;q=x/y"])
def test_unsupported_types_get_406(accept: str) -> None:
    resp = get({"Accept": accept})
    if accept == "application/json;q=x/y":      # a malformed q counts as 0, which still matches (goautoneg)
        assert resp.status == 200
        return
    assert resp.status == 406 and resp.body == b"" and header(resp, "vary") == ["Accept-Encoding", "Accept"]


def test_gzip_when_accepted() -> None:
    resp = get({"Accept-Encoding": "gzip, deflate"})
    assert header(resp, "content-encoding") == ["gzip"]
    assert gzip.decompress(resp.body) == openapi_v2.served().json
    proto = get({"Accept-Encoding": "gzip", "Accept": PROTO_ACCEPT})
    assert gzip.decompress(proto.body) == get({"Accept": PROTO_ACCEPT}).body
    for ae in ("", "deflate", "gzip;q=0", "identity"):
        assert not header(get({"Accept-Encoding": ae}), "content-encoding"), ae


def test_protobuf_document_fields() -> None:
    """Field numbers of gnostic's openapi_v2.Document: swagger 1, info 2, paths 8 (NamedPathItem 2)."""
    body = get({"Accept": PROTO_ACCEPT}).body
    fields = [(n, v) for n, _, v in iter_fields(body)]
    assert fields[0] == (1, b"2.0")
    info = dict((n, v) for n, _, v in iter_fields(dict(fields)[2]))
    assert info == {1: b"Kubernetes", 2: b"v1.37.0"}
    names = [dict((n, v) for n, _, v in iter_fields(v))[1] for n, _, v in iter_fields(dict(fields)[8])]
    assert b"/api/v1/namespaces/{namespace}/pods" in names and names == sorted(names)
    assert [n for n, _ in fields] == [1, 2, 8, 9, 10, 12, 13]


def test_served_through_the_api_server_and_not_built_at_start_up() -> None:
    code = ("import sys, kubeplane.apiserver.server, kubeplane.apiserver.app; "
            "print('kubeplane.apiserver.openapi_v2' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


async def test_route(api: Any) -> None:
    r = await api.call("GET", "/openapi/v2", headers={"Accept": PROTO_ACCEPT})
    assert r.status == 200 and r.content_type == openapi_v2.PROTOBUF_TYPE
    assert (await api.call("GET", "/openapi/v2/")).status == 404


def test_invalidate_rebuilds_on_next_request() -> None:
    before = openapi_v2.served()
    openapi_v2.invalidate()
    after = openapi_v2.served()
    assert after is not before and after.json == before.json and after.etag == before.etag


def test_pods_exec_attach_and_portforward_are_connect_operations(doc: dict[str, Any]) -> None:
    shared = doc["parameters"]
    for sub, kind, query in (("exec", "PodExecOptions", ["command", "container", "stderr", "stdin", "stdout", "tty"]),
                             ("attach", "PodAttachOptions", ["container", "stderr", "stdin", "stdout", "tty"]),
                             ("portforward", "PodPortForwardOptions", ["ports"])):
        item = doc["paths"][f"/api/v1/namespaces/{{namespace}}/pods/{{name}}/{sub}"]
        assert list(item) == ["get", "post", "parameters"]
        for method in ("get", "post"):
            op = item[method]
            assert op["operationId"] == f"connectCoreV1{method.capitalize()}NamespacedPod{sub.capitalize()}"
            assert op["description"] == f"connect {method.upper()} requests to {sub} of Pod"
            assert (op["consumes"], op["produces"]) == (["*/*"], ["*/*"])
            assert op["responses"]["200"] == {"description": "OK", "schema": {"type": "string"}}
            assert op["x-kubernetes-group-version-kind"] == {"group": "", "version": "v1", "kind": kind}
        params = [shared[p["$ref"].rsplit("/", 1)[1]] if "$ref" in p else p for p in item["parameters"]]
        assert [p["name"] for p in params] == sorted(query + ["name", "namespace"])
        assert next(p for p in params if p["name"] == "name")["description"] == f"name of the {kind}"
    ports = next(p for p in shared.values() if p["name"] == "ports")
    assert (ports["type"], ports["in"]) == ("integer", "query")
