"""What the Python client libraries send, answered as a real API server answers it: write
options (an apply needs a fieldManager, force is an apply's only), Time and MicroTime fields as
the Go types write them back (the official client sends isoformat()'s `+00:00`), and the
metadata-only lists client-go's metadata client asks for.

Upstream: ValidatePatchOptions (apimachinery meta/v1/validation), metav1.Time / MicroTime's JSON
methods, asPartialObjectMetadataList (endpoints/handlers/response.go).
"""
from __future__ import annotations

import datetime as dt
import json
import re

import pytest
from kubernetes.client import (ApiException, CoordinationV1Api, CoreV1Api, V1ConfigMap, V1Lease,
                               V1LeaseSpec, V1ObjectMeta)

from .cluster import Cluster

NS = "default"
MICRO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


def raw_get(c, path: str, accept: str = "application/json") -> tuple[int, dict]:
    method, url, hdrs, _, _ = c.param_serialize("GET", path, header_params={"Accept": accept},
                                                auth_settings=["BearerToken"])
    resp = c.call_api(method, url, header_params=hdrs)
    resp.read()
    return resp.status, json.loads(resp.data)


def test_lease_times_come_back_in_utc_as_leader_election_writes_them(cluster: Cluster) -> None:
    now = dt.datetime(2026, 11, 28, 7, 56, 55, 332476, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    with cluster.python_client() as c:
        api = CoordinationV1Api(c)
        api.create_namespaced_lease(NS, V1Lease(metadata=V1ObjectMeta(name="le"), spec=V1LeaseSpec(
            holder_identity="me", lease_duration_seconds=15, acquire_time=now, renew_time=now, lease_transitions=0)))
        status, body = raw_get(c, f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/le")
        assert status == 200
        assert body["spec"]["renewTime"] == body["spec"]["acquireTime"] == "2026-11-28T05:56:55.332476Z"
        lease = api.read_namespaced_lease("le", NS)
        assert lease.spec.renew_time == now          # the same instant, parsed back by the client
        lease.spec.renew_time = dt.datetime.now(dt.timezone.utc).replace(microsecond=1)
        renewed = api.replace_namespaced_lease("le", NS, lease)
        assert renewed.spec.renew_time == lease.spec.renew_time
        assert MICRO.fullmatch(raw_get(c, f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/le")[1]
                               ["spec"]["renewTime"])
        # a MicroTime Go cannot parse (isoformat() of a whole second has no fraction) is a 400
        lease.spec.renew_time = lease.spec.renew_time.replace(microsecond=0)
        with pytest.raises(ApiException) as e:
            api.replace_namespaced_lease("le", NS, lease)
        assert e.value.status == 400
        assert "cannot parse \\\"+00:00\\\" as \\\".000000\\\"" in e.value.body


def test_write_options_of_patches(cluster: Cluster) -> None:
    with cluster.python_client() as c:
        core = CoreV1Api(c)
        core.create_namespaced_config_map(NS, V1ConfigMap(metadata=V1ObjectMeta(name="wo"), data={"a": "1"}))
        with pytest.raises(ApiException) as e:
            core.patch_namespaced_config_map("wo", NS, {"data": {"a": "2"}}, force=True)
        assert e.value.status == 422
        assert json.loads(e.value.body)["message"] == (
            'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch')
        apply = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "wo"}, "data": {"a": "3"}}
        with pytest.raises(ApiException) as e:
            core.patch_namespaced_config_map("wo", NS, apply, _content_type="application/apply-patch+yaml")
        assert e.value.status == 422
        assert json.loads(e.value.body)["message"] == (
            'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch')
        applied = core.patch_namespaced_config_map("wo", NS, apply, field_manager="t", force=True,
                                                   _content_type="application/apply-patch+yaml")
        assert applied.data == {"a": "3"}


def test_lightkube_apply_and_patch(cluster: Cluster) -> None:
    lightkube = pytest.importorskip("lightkube")
    from lightkube.resources.core_v1 import ConfigMap
    from lightkube.types import PatchType
    client = lightkube.Client(config=lightkube.KubeConfig.from_file(str(cluster.kubeconfig)))
    cm = ConfigMap.from_dict({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "lk", "namespace": NS},
                              "data": {"a": "1"}})
    assert client.apply(cm, field_manager="lk", force=True).data == {"a": "1"}
    # lightkube sends force only with an apply (a real server refuses it on the others)
    patched = client.patch(ConfigMap, "lk", {"data": {"a": "2"}}, namespace=NS, patch_type=PatchType.MERGE, force=True)
    assert patched.data == {"a": "2"}


def test_client_go_metadata_list(cluster: Cluster) -> None:
    accept = ("application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,"
              "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json")
    with cluster.python_client() as c:
        status, body = raw_get(c, f"/api/v1/namespaces/{NS}/configmaps?limit=1", accept)
        assert status == 200
        assert (body["kind"], body["apiVersion"]) == ("PartialObjectMetadataList", "meta.k8s.io/v1")
        assert body["items"] and set(body["items"][0]) == {"kind", "apiVersion", "metadata"}
        status, body = raw_get(c, f"/api/v1/namespaces/{NS}/configmaps?timeoutSeconds=abc")
        assert (status, body["message"]) == (400, 'strconv.ParseInt: parsing "abc": invalid syntax')
