"""/openapi/v2 read by real clients: kubectl's v2 explain (protobuf through client-go's
discovery OpenAPISchema), `kubectl get --raw`, and the official Python client."""
from __future__ import annotations

import json

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
