"""/openapi/v2 read by real clients: kubectl's v2 explain (protobuf through client-go's
discovery OpenAPISchema), `kubectl get --raw`, and the official Python client."""
from __future__ import annotations

import json
from typing import Any

from .cluster import Cluster


def test_kubectl_explain_openapiv2_reads_the_protobuf_document(cluster: Cluster) -> None:
    out = cluster.kubectl("explain", "pods.spec.containers.resources", "--output=plaintext-openapiv2").stdout
    assert "KIND:     Pod" in out and "VERSION:  v1" in out
    assert "RESOURCE: resources <Object>" in out
    assert "limits\t<map[string]string>" in out


def test_kubectl_explain_openapiv2_with_api_version(cluster: Cluster) -> None:
    out = cluster.kubectl("explain", "deployments.spec.strategy", "--api-version=apps/v1",
                          "--output=plaintext-openapiv2").stdout
    assert "KIND:     Deployment" in out and "VERSION:  apps/v1" in out
    assert "rollingUpdate\t<Object>" in out


def test_kubectl_get_raw_returns_swagger_json(cluster: Cluster) -> None:
    doc = json.loads(cluster.kubectl("get", "--raw", "/openapi/v2").stdout)
    assert doc["swagger"] == "2.0"
    op = doc["paths"]["/api/v1/namespaces/{namespace}/pods"]["get"]
    assert op["operationId"] == "listCoreV1NamespacedPod"
    assert op["x-kubernetes-group-version-kind"] == {"group": "", "version": "v1", "kind": "Pod"}


def test_python_client_reads_it_gzipped_and_revalidates_with_etag(cluster: Cluster) -> None:
    with cluster.python_client() as api:
        def fetch(headers: dict[str, str]) -> Any:
            method, url, hdrs, _, _ = api.param_serialize("GET", "/openapi/v2", header_params=headers,
                                                          auth_settings=["BearerToken"])
            resp = api.call_api(method, url, header_params=hdrs)
            resp.read()
            return resp

        resp = fetch({"Accept-Encoding": "gzip"})
        assert resp.status == 200 and resp.getheader("Content-Encoding") == "gzip"
        doc = json.loads(resp.data)                     # urllib3 decodes the gzip body
        assert doc["definitions"]["io.k8s.api.apps.v1.Deployment"]["x-kubernetes-group-version-kind"] == [
            {"group": "apps", "kind": "Deployment", "version": "v1"}]
        etag = resp.getheader("ETag")
        again = fetch({"If-None-Match": etag})
        assert again.status == 304 and again.data == b"" and again.getheader("ETag") == etag
        assert again.getheader("Content-Type") is None
