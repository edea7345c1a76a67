"""The storage, endpoint and quota kinds with the real kubectl: apply of upstream's documentation
examples, get (upstream's columns, -o wide), describe, apply --server-side of a change, delete;
invalid objects refused with upstream's messages; componentstatuses and the deprecation warnings."""
from __future__ import annotations

import pathlib

from .cluster import Cluster, eventually

MANIFEST = str(pathlib.Path(__file__).parent / "manifests" / "corestorage-kinds.yaml")
KINDS = ("pv,pvc,limits,quota,ep,endpointslices,sc,csidrivers,csinodes,csistoragecapacities,"
         "volumeattachments,vac")
HEADERS = {
    "persistentvolume/": "NAME CAPACITY ACCESS MODES RECLAIM POLICY STATUS CLAIM STORAGECLASS VOLUMEATTRIBUTESCLASS "
                         "REASON AGE",
    "persistentvolumeclaim/": "NAME STATUS VOLUME CAPACITY ACCESS MODES STORAGECLASS VOLUMEATTRIBUTESCLASS AGE",
    "limitrange/": "NAME CREATED AT",
    "resourcequota/": "NAME REQUEST LIMIT AGE",
    "endpoints/": "NAME ENDPOINTS AGE",
    "endpointslice.discovery.k8s.io/": "NAME ADDRESSTYPE PORTS ENDPOINTS AGE",
    "storageclass.storage.k8s.io/": "NAME PROVISIONER RECLAIMPOLICY VOLUMEBINDINGMODE ALLOWVOLUMEEXPANSION AGE",
    "csidriver.storage.k8s.io/": "NAME ATTACHREQUIRED PODINFOONMOUNT STORAGECAPACITY TOKENREQUESTS REQUIRESREPUBLISH "
                                 "MODES AGE",
    "csinode.storage.k8s.io/": "NAME DRIVERS AGE",
    "csistoragecapacity.storage.k8s.io/": "NAME STORAGECLASSNAME CAPACITY",
    "volumeattachment.storage.k8s.io/": "NAME ATTACHER PV NODE ATTACHED AGE",
    "volumeattributesclass.storage.k8s.io/": "NAME DRIVERNAME AGE",
}


def _tables(out: str) -> dict[str, tuple[str, list[str]]]:
    """kubectl's multi-kind output: header (single-spaced) and rows, by the rows' kind prefix."""
    tables = {}
    for block in out.strip().split("\n\n"):
        header, *rows = block.splitlines()
        prefix = rows[0].split()[0].split("/")[0] + "/"
        tables[prefix] = (" ".join(header.split()), [" ".join(r.split()) for r in rows])
    return tables


def test_every_kind_applies_lists_describes_changes_and_deletes(cluster: Cluster) -> None:
    out = cluster.kubectl("apply", "-f", MANIFEST).stdout
    assert "persistentvolume/task-pv-volume created" in out
    assert "volumeattributesclass.storage.k8s.io/silver created" in out
    assert out.count(" created") == 12

    # The PV binder binds the documentation's claim to its volume (issue 14), as in a real cluster.
    eventually(lambda: cluster.get_json("pvc", "task-pv-claim").get("status", {}).get("phase") == "Bound",
               "task-pv-claim bound")
    tables = _tables(cluster.kubectl("get", KINDS).stdout)
    assert {k: h for k, (h, _) in tables.items()} == HEADERS
    rows = {k: r[0] for k, (_, r) in tables.items()}
    assert rows["persistentvolume/"].startswith("persistentvolume/task-pv-volume 10Gi RWO Retain Bound "
                                                "default/task-pv-claim manual <unset>")
    assert rows["persistentvolumeclaim/"].startswith("persistentvolumeclaim/task-pv-claim Bound task-pv-volume 10Gi "
                                                     "RWO manual <unset>")
    # default/kubernetes (the API server's own Endpoints) is listed too
    assert any(r.startswith("endpoints/my-service 192.0.2.42:9376 ") for r in tables["endpoints/"][1])
    assert any(r.startswith("endpointslice.discovery.k8s.io/my-service-1 IPv4 9376 10.4.5.6,10.1.2.3 ")
               for r in tables["endpointslice.discovery.k8s.io/"][1])
    assert rows["storageclass.storage.k8s.io/"].startswith(
        "storageclass.storage.k8s.io/low-latency csi-driver.example-vendor.example Retain WaitForFirstConsumer true ")
    assert rows["csidriver.storage.k8s.io/"].startswith(
        "csidriver.storage.k8s.io/mycsidriver.example.com true true false gcp, true Persistent,Ephemeral ")
    assert rows["volumeattachment.storage.k8s.io/"].startswith(
        "volumeattachment.storage.k8s.io/csi-123 mycsidriver.example.com task-pv-volume node1 false ")

    wide = _tables(cluster.kubectl("get", "pv,pvc", "-o", "wide").stdout)
    assert wide["persistentvolume/"][0].endswith("AGE VOLUMEMODE")
    assert wide["persistentvolumeclaim/"][1][0].endswith("Filesystem")

    # Defaulting as upstream's SetDefaults_*.
    pv = cluster.get_json("pv", "task-pv-volume")
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain" and pv["spec"]["volumeMode"] == "Filesystem"
    assert pv["status"]["phase"] == "Bound" and pv["status"]["lastPhaseTransitionTime"]
    lr = cluster.get_json("limits", "cpu-limit-range")
    # Quantities are kept as sent (0.5); upstream stores them canonical ("500m"): see describe below.
    assert set(lr["spec"]["limits"][0]["defaultRequest"]) == {"cpu"}
    driver = cluster.get_json("csidriver", "mycsidriver.example.com")
    assert driver["spec"]["storageCapacity"] is False and driver["metadata"]["generation"] == 1
    assert cluster.get_json("ep", "my-service")["subsets"][0]["ports"][0]["protocol"] == "TCP"

    described = cluster.kubectl("describe", "pv,pvc,limits,quota,sc,ep,endpointslices").stdout
    for line in ("Reclaim Policy:  Retain", "Type:          HostPath (bare host directory volume)",
                 "Container   cpu       -    -    500m             1              -",
                 "Provisioner:           csi-driver.example-vendor.example", "AddressType:  IPv4"):
        assert line in described, line

    change = ("apiVersion: storage.k8s.io/v1\nkind: CSIDriver\nmetadata:\n  name: mycsidriver.example.com\n"
              "spec:\n  podInfoOnMount: false\n---\napiVersion: v1\nkind: PersistentVolume\nmetadata:\n"
              "  name: task-pv-volume\nspec:\n  capacity:\n    storage: 20Gi\n")
    out = cluster.kubectl("apply", "--server-side", "--force-conflicts", "-f", "-", input=change).stdout
    assert "csidriver.storage.k8s.io/mycsidriver.example.com serverside-applied" in out
    driver = cluster.get_json("csidriver", "mycsidriver.example.com")
    assert driver["spec"]["podInfoOnMount"] is False and driver["metadata"]["generation"] == 2
    assert cluster.get_json("pv", "task-pv-volume")["spec"]["capacity"] == {"storage": "20Gi"}

    out = cluster.kubectl("delete", "-f", MANIFEST).stdout
    assert out.count(" deleted") == 12
    left = cluster.kubectl("get", KINDS, "-o", "name").stdout.split()    # the API server's own remain
    assert set(left) <= {"endpoints/kubernetes", "endpointslice.discovery.k8s.io/kubernetes",
                         "storageclass.storage.k8s.io/standard"}          # and kind's default class


def _refused(cluster: Cluster, manifest: str, *args: str) -> str:
    res = cluster.kubectl(*(args or ("apply", "-f", "-")), input=manifest, check=False)
    assert res.returncode != 0, res.stdout
    return res.stderr


def test_invalid_objects_are_refused_with_upstream_messages(cluster: Cluster) -> None:
    pvc = ("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: bad-claim\nspec:\n"
           "  accessModes: [ReadWriteOnce]\n")
    assert 'The PersistentVolumeClaim "bad-claim" is invalid: spec.resources[storage]: Required value' \
        in _refused(cluster, pvc)

    pv = ("apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: bad-pv\nspec:\n  capacity:\n"
          "    storage: 1Gi\n  accessModes: [ReadWriteOncePod, ReadWriteMany]\n")
    err = _refused(cluster, pv)
    assert 'The PersistentVolume "bad-pv" is invalid: ' in err
    assert "spec: Required value: must specify a volume type" in err
    assert "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes" in err

    claim = pvc + "  resources:\n    requests:\n      storage: 1Gi\n"
    cluster.kubectl("apply", "-f", "-", input=claim)
    err = _refused(cluster, claim.replace("1Gi", "2Gi"))
    assert "spec: Forbidden: spec is immutable after creation except resources.requests and " \
           "volumeAttributesClassName for bound claims" in err

    lr = ("apiVersion: v1\nkind: LimitRange\nmetadata:\n  name: bad-limits\nspec:\n  limits:\n"
          "  - type: Container\n    min: {memory: 2Gi}\n    max: {memory: 1Gi}\n")
    assert 'spec.limits[0].min[memory]: Invalid value: "2Gi": min value 2Gi is greater than max value 1Gi' \
        in _refused(cluster, lr)

    quota = ("apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: bad-quota\nspec:\n  hard: {cpu: '1'}\n"
             "  scopes: [BestEffort]\n")
    assert 'spec.scopes: Invalid value: ["BestEffort"]: unsupported scope applied to resource' \
        in _refused(cluster, quota)

    sc = "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: slow\nprovisioner: a.example/x\n"
    cluster.kubectl("apply", "-f", "-", input=sc)
    assert "provisioner: Forbidden: updates to provisioner are forbidden." \
        in _refused(cluster, sc.replace("a.example/x", "b.example/y"))

    eps = ("apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: bad-slice\n"
           "addressType: IPv4\nendpoints:\n- addresses: ['2001:db8::1']\n")
    assert 'endpoints[0].addresses[0]: Invalid value: "2001:db8::1": must be an IPv4 address' \
        in _refused(cluster, eps)

    ep = ("apiVersion: v1\nkind: Endpoints\nmetadata:\n  name: bad-ep\nsubsets:\n"
          "- addresses: [{ip: 127.0.0.1}]\n")
    assert 'subsets[0].addresses[0].ip: Invalid value: "127.0.0.1": may not be in the loopback range ' \
           "(127.0.0.0/8, ::1/128)" in _refused(cluster, ep)
    cluster.kubectl("delete", "pvc/bad-claim", "sc/slow")


def test_componentstatuses_and_deprecation_warnings(cluster: Cluster) -> None:
    res = cluster.kubectl("get", "componentstatuses")
    assert "Warning: v1 ComponentStatus is deprecated in v1.19+" in res.stderr
    rows = [" ".join(line.split()) for line in res.stdout.splitlines()]
    assert rows[0] == "NAME STATUS MESSAGE ERROR"
    assert sorted(rows[1:]) == ["controller-manager Healthy ok", "etcd-0 Healthy ok", "scheduler Healthy ok"]
    res = cluster.kubectl("get", "endpoints", "-A")
    assert "Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice" in res.stderr
    assert "(MethodNotAllowed)" in cluster.kubectl("delete", "cs", "scheduler", check=False).stderr
