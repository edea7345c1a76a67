"""The values admission puts into every pod as one shared object (the ServiceAccount plugin's
token volume source, DefaultTolerationSeconds' tolerations) are never changed through a pod:
a patch of one pod, accepted or refused, leaves them and every other pod as they were."""
from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from kubeplane.apiserver.admission.plugins import default_toleration_seconds as dts
from kubeplane.apiserver.admission.plugins import service_account as sa_plugin
from kubeplane.apiserver.request import Request
from kubeplane.apiserver.server import APIServer

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
       "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
PRISTINE = (copy.deepcopy(sa_plugin.TOKEN_VOLUME_SOURCE), copy.deepcopy(dts.NOT_READY_TOLERATION),
            copy.deepcopy(dts.UNREACHABLE_TOLERATION))


pytestmark = pytest.mark.every_admission_plugin      # `server` with ServiceAccount (tests/apiserver/conftest.py)


async def call(server: APIServer, method: str, path: str, body: Any, ct: str = "application/json") -> tuple[int, Any]:
    resp = await server.route_trusted(Request.build(method, path, "", {"content-type": ct}, orjson.dumps(body)))
    return resp.status, orjson.loads(resp.body)


def unchanged() -> bool:
    return (sa_plugin.TOKEN_VOLUME_SOURCE, dts.NOT_READY_TOLERATION, dts.UNREACHABLE_TOLERATION) == PRISTINE


async def test_patches_of_a_pod_never_change_the_shared_values(server: APIServer) -> None:
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
    assert (await call(server, "POST", "/api/v1/namespaces/default/serviceaccounts", sa))[0] == 201
    for name in ("a", "b"):
        pod = copy.deepcopy(POD)
        pod["metadata"]["name"] = name
        status, body = await call(server, "POST", "/api/v1/namespaces/default/pods", pod)
        assert status == 201, body
        assert body["spec"]["tolerations"] == [dts.NOT_READY_TOLERATION, dts.UNREACHABLE_TOLERATION]
        assert body["spec"]["volumes"][0]["projected"] == sa_plugin.TOKEN_VOLUME_SOURCE
    stored = (await server.storage.get("/registry/pods/default/b")).obj
    assert stored["spec"]["tolerations"][0] is dts.NOT_READY_TOLERATION       # shared, as intended
    path = "/api/v1/namespaces/default/pods/a"
    # allowed: a toleration's seconds (JSON patch, merge patch, strategic merge patch)
    status, body = await call(server, "PATCH", path, [
        {"op": "replace", "path": "/spec/tolerations/0/tolerationSeconds", "value": 10}],
        "application/json-patch+json")
    assert status == 200 and body["spec"]["tolerations"][0]["tolerationSeconds"] == 10, body
    assert unchanged()
    status, body = await call(server, "PATCH", path, {"spec": {"tolerations": [
        {"key": dts.UNREACHABLE_TAINT, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 20}]}},
        "application/strategic-merge-patch+json")
    assert status == 200, body
    assert unchanged()
    # refused by validation after the patch was applied: the patch must not have touched them
    for patch in ([{"op": "replace", "path": "/spec/volumes/0/projected/defaultMode", "value": 256}],
                  [{"op": "add", "path": "/spec/volumes/0/projected/sources/-", "value": {"configMap": {"name": "x"}}}],
                  [{"op": "replace", "path": "/spec/volumes/0/projected/sources/0/serviceAccountToken/path",
                    "value": "t"}]):
        status, body = await call(server, "PATCH", path, patch, "application/json-patch+json")
        assert status == 422, (patch, body)
        assert unchanged()
    # (a changed key: DefaultTolerationSeconds adds the not-ready toleration back, an addition)
    status, body = await call(server, "PATCH", path, [{"op": "replace", "path": "/spec/tolerations/1/key",
                                                       "value": "other"}], "application/json-patch+json")
    assert status == 200, body
    assert unchanged()
    status, body = await call(server, "PATCH", path, {"spec": {"volumes": [
        {"name": body["spec"]["volumes"][0]["name"], "projected": {"defaultMode": 256}}]}},
        "application/strategic-merge-patch+json")
    assert status == 422, body
    assert unchanged()
    b = (await server.storage.get("/registry/pods/default/b")).obj
    assert b["spec"]["tolerations"] == list(PRISTINE[1:]) and b["spec"]["volumes"][0]["projected"] == PRISTINE[0]
