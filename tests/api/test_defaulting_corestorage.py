"""SetDefaults_* of PersistentVolumes/Claims, LimitRanges, Endpoints, the storage kinds and
EndpointSlices (upstream's defaults_test.go cases)."""
from __future__ import annotations

from kubeplane.api.defaulting import core, discovery, storage


def test_persistent_volume() -> None:
    pv: dict = {"spec": {"hostPath": {"path": "/x"}}}
    core.set_defaults_persistent_volume(pv)
    assert pv["status"] == {"phase": "Pending"}
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert pv["spec"]["volumeMode"] == "Filesystem"
    assert pv["spec"]["hostPath"]["type"] == ""
    kept = {"spec": {"persistentVolumeReclaimPolicy": "Delete", "volumeMode": "Block",
                     "rbd": {"monitors": ["m"], "image": "i", "pool": "mine"}}, "status": {"phase": "Bound"}}
    core.set_defaults_persistent_volume(kept)
    assert (kept["spec"]["persistentVolumeReclaimPolicy"], kept["spec"]["volumeMode"], kept["status"]["phase"]) == \
        ("Delete", "Block", "Bound")
    assert kept["spec"]["rbd"] == {"monitors": ["m"], "image": "i", "pool": "mine", "user": "admin",
                                   "keyring": "/etc/ceph/keyring"}


def test_persistent_volume_claim() -> None:
    pvc: dict = {"spec": {}}
    core.set_defaults_persistent_volume_claim(pvc)
    assert pvc == {"spec": {"volumeMode": "Filesystem"}, "status": {"phase": "Pending"}}


def test_limit_range_item_defaults_from_max_and_min() -> None:
    """Upstream: TestSetDefaultLimitRangeItem — default = max, defaultRequest = default, else min."""
    item = {"type": "Container", "max": {"cpu": "100m"}, "min": {"memory": "100Mi"}}
    core.set_defaults_limit_range({"spec": {"limits": [item]}})
    assert item["default"] == {"cpu": "100m"}
    assert item["defaultRequest"] == {"cpu": "100m", "memory": "100Mi"}
    pod_item = {"type": "Pod", "max": {"cpu": "1"}}
    core.set_defaults_limit_range_item(pod_item)
    assert "default" not in pod_item
    explicit = {"type": "Container", "max": {"cpu": "2"}, "default": {"cpu": "1"}, "defaultRequest": {"cpu": "500m"}}
    core.set_defaults_limit_range_item(explicit)
    assert (explicit["default"], explicit["defaultRequest"]) == ({"cpu": "1"}, {"cpu": "500m"})


def test_endpoints_port_protocol() -> None:
    ep = {"subsets": [{"ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}]}]}
    core.set_defaults_endpoints(ep)
    assert [p["protocol"] for p in ep["subsets"][0]["ports"]] == ["TCP", "UDP"]


def test_storage_class_and_csi_driver() -> None:
    sc: dict = {"provisioner": "p"}
    storage.set_defaults_storage_class(sc)
    assert (sc["reclaimPolicy"], sc["volumeBindingMode"]) == ("Delete", "Immediate")
    driver: dict = {}
    storage.set_defaults_csi_driver(driver)
    assert driver["spec"] == {"attachRequired": True, "podInfoOnMount": False, "storageCapacity": False,
                              "fsGroupPolicy": "ReadWriteOnceWithFSType", "requiresRepublish": False,
                              "seLinuxMount": False, "volumeLifecycleModes": ["Persistent"]}


def test_endpoint_slice_ports() -> None:
    eps = {"ports": [{"port": 80}, {"name": "x", "protocol": "SCTP"}]}
    discovery.set_defaults_endpoint_slice(eps)
    assert eps["ports"] == [{"port": 80, "name": "", "protocol": "TCP"}, {"name": "x", "protocol": "SCTP"}]
