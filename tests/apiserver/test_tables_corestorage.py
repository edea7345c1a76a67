"""Printers of the storage, endpoint and quota kinds: upstream's cells (printers.go)."""
from __future__ import annotations

from kubeplane.apiserver.tables import core_storage, discovery, storage

NOW = 1_700_000_000.0
CREATED = "2023-11-14T22:03:20Z"          # 10 minutes before NOW


def _cells(row: tuple[list[object], object]) -> list[object]:
    return row[0]


def test_persistent_volume_row() -> None:
    pv = {"metadata": {"name": "pv1", "creationTimestamp": CREATED,
                       "annotations": {"volume.beta.kubernetes.io/storage-class": "beta"}},
          "spec": {"capacity": {"storage": "5Gi"}, "accessModes": ["ReadWriteMany", "ReadWriteOnce", "ReadWriteOnce"],
                   "persistentVolumeReclaimPolicy": "Retain", "claimRef": {"namespace": "ns", "name": "c"},
                   "storageClassName": "ignored", "volumeMode": "Block"},
          "status": {"phase": "Bound"}}
    assert _cells(core_storage.print_persistent_volume(pv, NOW)) == [
        "pv1", "5Gi", "RWO,RWX", "Retain", "Bound", "ns/c", "beta", "<unset>", "", "10m", "Block"]
    pv["metadata"]["deletionTimestamp"] = CREATED
    assert _cells(core_storage.print_persistent_volume(pv, NOW))[4] == "Terminating"
    assert len(core_storage.persistent_volume_columns()) == 11


def test_claim_shows_capacity_and_modes_only_once_bound() -> None:
    pvc = {"metadata": {"name": "c", "creationTimestamp": CREATED},
           "spec": {"resources": {"requests": {"storage": "1Gi"}}, "storageClassName": "standard"},
           "status": {"phase": "Pending"}}
    assert _cells(core_storage.print_persistent_volume_claim(pvc, NOW)) == [
        "c", "Pending", "", "", "", "standard", "<unset>", "10m", "<unset>"]
    pvc["spec"]["volumeName"] = "pv1"
    pvc["status"] = {"phase": "Bound", "capacity": {"storage": "2Gi"}, "accessModes": ["ReadWriteOncePod"]}
    assert _cells(core_storage.print_persistent_volume_claim(pvc, NOW))[1:5] == ["Bound", "pv1", "2Gi", "RWOP"]


def test_resource_quota_splits_requests_and_limits() -> None:
    quota = {"metadata": {"name": "q", "creationTimestamp": CREATED},
             "status": {"hard": {"pods": "10", "limits.cpu": "2", "requests.memory": "1Gi"},
                        "used": {"pods": "3", "limits.cpu": "500m"}}}
    assert _cells(core_storage.print_resource_quota(quota, NOW)) == [
        "q", "pods: 3/10, requests.memory: 0/1Gi", "limits.cpu: 500m/2", "10m"]
    assert [c["name"] for c in core_storage.resource_quota_columns()] == ["Name", "Request", "Limit", "Age"]


def test_endpoints_show_three_pairs_then_more() -> None:
    ep = {"metadata": {"name": "e"}, "subsets": [
        {"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}], "ports": [{"port": 80}, {"port": 443}]},
        {"addresses": [{"ip": "fd00::1"}], "ports": [{"port": 8080}]}]}
    assert core_storage.format_endpoints(ep) == "10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 2 more..."
    assert core_storage.format_endpoints({"subsets": [{"addresses": [{"ip": "fd00::1"}], "ports": [{"port": 1}]}]}) \
        == "[fd00::1]:1"
    assert core_storage.format_endpoints({}) == "<none>"
    assert core_storage.format_endpoints({"subsets": [{"notReadyAddresses": [{"ip": "10.0.0.9"}]}]}) == ""


def test_limit_range_and_component_status() -> None:
    assert _cells(core_storage.print_limit_range({"metadata": {"name": "l", "creationTimestamp": CREATED}}, NOW)) \
        == ["l", CREATED]
    cs = {"metadata": {"name": "scheduler"}, "conditions": [{"type": "Healthy", "status": "False", "error": "boom"}]}
    assert _cells(core_storage.print_component_status(cs, NOW)) == ["scheduler", "Unhealthy", "", "boom"]
    assert _cells(core_storage.print_component_status({"metadata": {"name": "x"}}, NOW))[1] == "Unknown"


def test_endpoint_slice_row() -> None:
    eps = {"metadata": {"name": "s", "creationTimestamp": CREATED}, "addressType": "IPv4",
           "ports": [{"port": 80}, {"name": "named"}, {}],
           "endpoints": [{"addresses": ["10.0.0.1", "10.0.0.2"]}, {"addresses": ["10.0.0.3", "10.0.0.4"]}]}
    assert _cells(discovery.print_endpoint_slice(eps, NOW)) == [
        "s", "IPv4", "80,named,<unset>", "10.0.0.1,10.0.0.2,10.0.0.3 + 1 more...", "10m"]
    assert discovery.format_discovery_endpoints([]) == "<unset>"


def test_storage_rows() -> None:
    sc = {"metadata": {"name": "fast", "creationTimestamp": CREATED,
                       "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
          "provisioner": "example.com/p", "allowVolumeExpansion": True}
    assert _cells(storage.print_storage_class(sc, NOW)) == [
        "fast (default)", "example.com/p", "Delete", "Immediate", True, "10m"]
    driver = {"metadata": {"name": "d", "creationTimestamp": CREATED},
              "spec": {"tokenRequests": [{"audience": "a"}, {"audience": "b"}], "volumeLifecycleModes": []}}
    assert _cells(storage.print_csi_driver(driver, NOW)) == ["d", True, False, False, "a,b", False, "<none>", "10m"]
    va = {"metadata": {"name": "va", "creationTimestamp": CREATED},
          "spec": {"attacher": "a", "nodeName": "n", "source": {"persistentVolumeName": "pv"}}}
    assert _cells(storage.print_volume_attachment(va, NOW)) == ["va", "a", "pv", "n", False, "10m"]
    assert _cells(storage.print_csi_node({"metadata": {"name": "n"}, "spec": {"drivers": [{}, {}]}}, NOW))[1] == 2
    assert _cells(storage.print_csi_storage_capacity({"metadata": {"name": "c"}, "storageClassName": "sc"}, NOW)) \
        == ["c", "sc", "<unset>"]


def test_default_volume_attributes_class_is_marked() -> None:
    vac = {"metadata": {"name": "gold", "creationTimestamp": CREATED,
                        "annotations": {"volumeattributesclass.alpha.kubernetes.io/is-default-class": "true"}},
           "driverName": "csi.example.com"}
    assert _cells(storage.print_volume_attributes_class(vac, NOW)) == ["gold (default)", "csi.example.com", "10m"]
