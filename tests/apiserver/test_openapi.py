"""OpenAPI v3 documents: structure checks, and the real kubectl against a throwaway server."""
from __future__ import annotations

import http.server
import os
import pathlib
import re
import shutil
import subprocess
import sys
import threading
import urllib.parse
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from kubeplane.api import resources as res
from kubeplane.apiserver import openapi

KUBECTL = shutil.which("kubectl", path=str(pathlib.Path(__file__).resolve().parents[2] / ".venv" / "bin")) \
    or shutil.which("kubectl")


def doc(path: str) -> dict[str, Any]:
    raw = openapi.openapi_document(path)
    assert raw is not None
    return orjson.loads(raw)


# --- document structure -------------------------------------------------------------------------


def test_index_lists_every_group_version_with_a_content_hash() -> None:
    paths = openapi.openapi_index()["paths"]
    assert {"api", "apis", "api/v1", "apis/apps", "apis/apps/v1", "apis/coordination.k8s.io/v1",
            "apis/events.k8s.io/v1"} <= set(paths)
    url = paths["apis/apps/v1"]["serverRelativeURL"]
    assert re.fullmatch(r"/openapi/v3/apis/apps/v1\?hash=[0-9A-F]{128}", url)
    assert url.endswith(openapi.openapi_hash("apis/apps/v1"))


def test_hash_is_stable_and_differs_between_documents() -> None:
    assert openapi.openapi_hash("api/v1") == openapi.openapi_hash("/api/v1/")
    assert openapi.openapi_hash("api/v1") != openapi.openapi_hash("apis/apps/v1")


def test_unknown_document_is_none() -> None:
    assert openapi.openapi_document("apis/example.com/v1") is None
    assert openapi.openapi_document("apis/apps/v2") is None


def test_every_ref_resolves_within_its_document() -> None:
    for path in openapi.openapi_index()["paths"]:
        raw = openapi.openapi_document(path)
        assert raw is not None
        schemas = orjson.loads(raw)["components"]["schemas"]
        refs = set(re.findall(rb'"#/components/schemas/([^"]+)"', raw))
        assert {r.decode() for r in refs} <= set(schemas), path
        assert b"#/$defs/" not in raw and b'"null"' not in raw


@pytest.mark.parametrize("path,method,op_id,action,params", [
    ("/apis/apps/v1/namespaces/{namespace}/deployments/{name}", "patch", "patchAppsV1NamespacedDeployment",
     "patch", {"dryRun", "fieldManager", "fieldValidation", "force"}),
    ("/apis/apps/v1/namespaces/{namespace}/deployments", "post", "createAppsV1NamespacedDeployment",
     "post", {"dryRun", "fieldManager", "fieldValidation"}),
    ("/apis/apps/v1/namespaces/{namespace}/deployments/{name}", "put", "replaceAppsV1NamespacedDeployment",
     "put", {"dryRun", "fieldManager", "fieldValidation"}),
    ("/apis/apps/v1/namespaces/{namespace}/deployments", "get", "listAppsV1NamespacedDeployment", "list",
     {"allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit", "resourceVersion",
      "resourceVersionMatch", "sendInitialEvents", "timeoutSeconds", "watch"}),
    ("/apis/apps/v1/namespaces/{namespace}/deployments", "delete", "deleteAppsV1CollectionNamespacedDeployment",
     "deletecollection", {"gracePeriodSeconds", "propagationPolicy", "labelSelector", "dryRun"}),
    ("/apis/apps/v1/namespaces/{namespace}/deployments/{name}", "delete", "deleteAppsV1NamespacedDeployment",
     "delete", {"dryRun", "gracePeriodSeconds", "orphanDependents", "propagationPolicy"}),
    ("/apis/apps/v1/namespaces/{namespace}/deployments/{name}", "get", "readAppsV1NamespacedDeployment", "get",
     set()),
    ("/apis/apps/v1/deployments", "get", "listAppsV1DeploymentForAllNamespaces", "list", set()),
    ("/apis/apps/v1/watch/namespaces/{namespace}/deployments", "get", "watchAppsV1NamespacedDeploymentList",
     "watchlist", set()),
    ("/apis/apps/v1/watch/namespaces/{namespace}/deployments/{name}", "get", "watchAppsV1NamespacedDeployment",
     "watch", set()),
    ("/apis/apps/v1/namespaces/{namespace}/deployments/{name}/status", "patch",
     "patchAppsV1NamespacedDeploymentStatus", "patch", {"fieldValidation", "force"}),
    ("/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale", "put",
     "replaceAppsV1NamespacedDeploymentScale", "put", {"fieldValidation"}),
])
def test_apps_v1_operations_follow_upstream(path: str, method: str, op_id: str, action: str,
                                            params: set[str]) -> None:
    op = doc("apis/apps/v1")["paths"][path][method]
    assert op["operationId"] == op_id
    assert op["x-kubernetes-action"] == action
    assert params <= {p["name"] for p in op.get("parameters", []) if p["in"] == "query"}


def test_operation_gvk_and_subresource_kinds() -> None:
    paths = doc("apis/apps/v1")["paths"]
    item = "/apis/apps/v1/namespaces/{namespace}/deployments/{name}"
    assert paths[item]["patch"]["x-kubernetes-group-version-kind"] == \
        {"group": "apps", "kind": "Deployment", "version": "v1"}
    scale = paths[item + "/scale"]["get"]
    assert scale["x-kubernetes-group-version-kind"] == {"group": "autoscaling", "kind": "Scale", "version": "v1"}
    assert scale["responses"]["200"]["content"]["application/json"]["schema"] == \
        {"$ref": "#/components/schemas/io.k8s.api.autoscaling.v1.Scale"}
    assert {p["name"] for p in paths[item]["parameters"]} == {"name", "namespace", "pretty"}


def test_core_v1_cluster_scoped_and_pod_subresources() -> None:
    paths = doc("api/v1")["paths"]
    assert paths["/api/v1/nodes/{name}"]["get"]["operationId"] == "readCoreV1Node"
    assert paths["/api/v1/namespaces/{name}/status"]["put"]["operationId"] == "replaceCoreV1NamespaceStatus"
    assert "delete" not in paths["/api/v1/namespaces"]          # namespaces have no deletecollection
    binding = paths["/api/v1/namespaces/{namespace}/pods/{name}/binding"]["post"]
    assert binding["operationId"] == "createCoreV1NamespacedPodBinding"
    assert binding["x-kubernetes-group-version-kind"]["kind"] == "Binding"
    assert paths["/api/v1/namespaces/{namespace}/pods/{name}/log"]["get"]["operationId"] == \
        "readCoreV1NamespacedPodLog"
    assert doc("apis/coordination.k8s.io/v1")["paths"]["/apis/coordination.k8s.io/v1/namespaces/{namespace}"
                                                       "/leases"]["post"]["operationId"] == \
        "createCoordinationV1NamespacedLease"
    exec_ = paths["/api/v1/namespaces/{namespace}/pods/{name}/exec"]
    assert [exec_[m]["operationId"] for m in ("get", "post")] == ["connectCoreV1GetNamespacedPodExec",
                                                                 "connectCoreV1PostNamespacedPodExec"]
    assert exec_["get"]["x-kubernetes-action"] == "connect"
    assert exec_["get"]["x-kubernetes-group-version-kind"] == {"group": "", "kind": "PodExecOptions", "version": "v1"}
    assert exec_["get"]["responses"]["200"] == {"content": {"*/*": {"schema": {"type": "string"}}},
                                                "description": "OK"}
    assert [p["name"] for p in exec_["parameters"]] == ["command", "container", "name", "namespace", "stderr",
                                                        "stdin", "stdout", "tty"]
    forward = paths["/api/v1/namespaces/{namespace}/pods/{name}/portforward"]
    assert forward["post"]["operationId"] == "connectCoreV1PostNamespacedPodPortforward"
    assert next(p for p in forward["parameters"] if p["name"] == "ports")["schema"] == {"type": "integer",
                                                                                         "uniqueItems": True}
    assert paths["/api/v1/namespaces/{namespace}/pods/{name}/attach"]["get"]["operationId"] == \
        "connectCoreV1GetNamespacedPodAttach"


def test_schemas_are_openapi3_with_extensions_kept() -> None:
    schemas = doc("apis/apps/v1")["components"]["schemas"]
    dep = schemas["io.k8s.api.apps.v1.Deployment"]
    assert dep["type"] == "object"
    assert dep["x-kubernetes-group-version-kind"] == [{"group": "apps", "kind": "Deployment", "version": "v1"}]
    assert dep["properties"]["kind"] == {"description": dep["properties"]["kind"]["description"], "type": "string"}
    spec = schemas["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]
    assert spec["replicas"]["type"] == "integer" and spec["replicas"]["format"] == "int32"
    assert spec["strategy"]["allOf"] == [{"$ref": "#/components/schemas/io.k8s.api.apps.v1.DeploymentStrategy"}]
    assert spec["strategy"]["x-kubernetes-patch-strategy"] == "retainKeys"
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["items"] == {"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"}
    assert schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["format"] == "int-or-string"


def test_documents_are_built_lazily() -> None:
    # A fresh interpreter importing the module must not build anything (start-up cost).
    code = ("import kubeplane.apiserver.openapi as o; "
            "assert o._document_bytes.cache_info().currsize == 0; "
            "assert o._doc_paths.cache_info().currsize == 0")
    env = {**os.environ, "PYTHONPATH": str(pathlib.Path(openapi.__file__).resolve().parents[2])}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=60)


# --- the real kubectl ---------------------------------------------------------------------------


def _api_resource_list(group: str, version: str) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    for r in res.resources_in(group, version):
        items.append({"name": r.plural, "singularName": r.singular, "namespaced": r.namespaced, "kind": r.kind,
                      "verbs": list(r.verbs), "shortNames": list(r.short_names),
                      "categories": list(r.categories)})
        for s in r.subresources:
            sub: dict[str, Any] = {"name": f"{r.plural}/{s.name}", "singularName": "", "namespaced": r.namespaced,
                                   "kind": s.kind, "verbs": list(s.verbs)}
            if s.group:
                sub.update(group=s.group, version=s.version)
            items.append(sub)
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": items}


class _FakeAPI(http.server.BaseHTTPRequestHandler):
    """Legacy discovery, our OpenAPI v3, and a deployments endpoint that records writes."""

    requests: list[tuple[str, str, dict[str, list[str]], bytes]]

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, code: int, body: bytes, ctype: str = "application/json") -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json(self, code: int, obj: Any) -> None:
        self._send(code, orjson.dumps(obj))

    def _handle(self, method: str) -> None:
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query)
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.requests.append((method, url.path, query, body))
        path = url.path.rstrip("/")
        if path == "/api":
            return self._json(200, {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []})
        if path == "/apis":
            groups = [{"name": g, "versions": [{"groupVersion": f"{g}/{v}", "version": v}],
                       "preferredVersion": {"groupVersion": f"{g}/{v}", "version": v}}
                      for g, v in res.GROUP_VERSIONS if g]
            return self._json(200, {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
        for g, v in res.GROUP_VERSIONS:
            if path == (f"/apis/{g}/{v}" if g else f"/api/{v}"):
                return self._json(200, _api_resource_list(g, v))
        if path == "/openapi/v3":
            return self._json(200, openapi.openapi_index())
        if path.startswith("/openapi/v3/"):
            raw = openapi.openapi_document(path.removeprefix("/openapi/v3/"))
            return self._send(200, raw) if raw is not None else self._json(404, {})
        if method == "POST" and path == "/apis/apps/v1/namespaces/default/deployments":
            return self._send(201, body)
        return self._json(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound",
                                "code": 404, "message": "not found",
                                "details": {"name": path.rsplit("/", 1)[-1], "group": "apps",
                                            "kind": "deployments"}})

    def do_GET(self) -> None:  # noqa: N802
        self._handle("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._handle("POST")


@pytest.fixture
def fake_api(tmp_path: pathlib.Path) -> Iterator[tuple[pathlib.Path, list[Any]]]:
    if KUBECTL is None:
        pytest.skip("kubectl not installed")
    requests: list[Any] = []
    handler = type("Handler", (_FakeAPI,), {"requests": requests})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters: [{{name: fake, cluster: {{server: 'http://127.0.0.1:{server.server_port}'}}}}]\n"
        "users: [{name: u, user: {}}]\n"
        "contexts: [{name: fake, context: {cluster: fake, user: u, namespace: default}}]\n"
        "current-context: fake\n")
    try:
        yield kubeconfig, requests
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def _kubectl(kubeconfig: pathlib.Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(kubeconfig.parent), "KUBECTL_KUBERC": "false"}
    return subprocess.run([KUBECTL, "--kubeconfig", str(kubeconfig), "--cache-dir", str(kubeconfig.parent / "cache"),
                           *args], capture_output=True, text=True, env=env, timeout=60)  # type: ignore[list-item]


DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: nginx
  labels: {app: nginx}
spec:
  replicas: 2
  selector: {matchLabels: {app: nginx}}
  template:
    metadata: {labels: {app: nginx}}
    spec:
      containers: [{name: nginx, image: "nginx:1.24", ports: [{containerPort: 80}]}]
"""


def test_kubectl_apply_sends_field_validation_strict(fake_api: tuple[pathlib.Path, list[Any]]) -> None:
    kubeconfig, requests = fake_api
    manifest = kubeconfig.parent / "dep.yaml"
    manifest.write_text(DEPLOYMENT)
    out = _kubectl(kubeconfig, "apply", "-f", str(manifest))
    assert out.returncode == 0, out.stderr
    assert "deployment.apps/nginx created" in out.stdout
    fetched = [p for m, p, _, _ in requests if p.startswith("/openapi/")]
    assert "/openapi/v3" in fetched and "/openapi/v3/apis/apps/v1" in fetched
    assert not any(p.startswith("/openapi/v2") for p in fetched)
    (post,) = [r for r in requests if r[0] == "POST"]
    assert post[2]["fieldValidation"] == ["Strict"]
    assert post[2]["fieldManager"] == ["kubectl-client-side-apply"]
    assert orjson.loads(post[3])["spec"]["replicas"] == 2


def test_kubectl_explain_reads_field_docs(fake_api: tuple[pathlib.Path, list[Any]]) -> None:
    kubeconfig, _ = fake_api
    out = _kubectl(kubeconfig, "explain", "deployment.spec.strategy")
    assert out.returncode == 0, out.stderr
    assert "KIND:       Deployment" in out.stdout
    assert "FIELD: strategy <DeploymentStrategy>" in out.stdout
    assert "rollingUpdate\t<RollingUpdateDeployment>" in out.stdout
    assert "RollingUpdate" in out.stdout
    ru = _kubectl(kubeconfig, "explain", "deployment.spec.strategy.rollingUpdate.maxSurge")
    assert ru.returncode == 0, ru.stderr
    assert "maxSurge <IntOrString>" in ru.stdout
    limits = _kubectl(kubeconfig, "explain", "deployment.spec.template.spec.containers.resources")
    assert limits.returncode == 0, limits.stderr
    assert "limits\t<map[string]Quantity>" in limits.stdout
