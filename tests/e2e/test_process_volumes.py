"""`kubeplane up --runtime process` with real kubectl: volumes are real files at their mountPath.

A pod reads its ConfigMap, Secret and downward-API files (its logs show them), sees an updated
ConfigMap value (but not in its subPath mount, as upstream), shares an emptyDir between two
containers; another calls the API server over HTTPS with its projected ServiceAccount token and
ca.crt (at the host's 127.0.0.1: --pod-network host; test_pod_network.py calls it as
kubernetes.default from a network namespace); a pod whose ConfigMap is missing stays ContainerCreating with upstream's FailedMount
event until the ConfigMap is created. Skipped where mount namespaces cannot be made.
"""
from __future__ import annotations

import json
import os
import pathlib
import signal
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from kubeplane.kubelet.runtime.process.records import kill_recorded
from kubeplane.kubelet.volumemanager import mountns
from kubeplane.kubelet.volumemanager.manager import mounts_under

from .cluster import Cluster, eventually

PY = sys.executable
pytestmark = pytest.mark.skipif(not (os.geteuid() == 0 and mountns.supported()),
                                reason="mount namespaces cannot be created here (needs root and unshare(CLONE_NEWNS))")


@pytest.fixture(scope="module")
def vcluster() -> Iterator[Cluster]:
    c = Cluster(nodes=1, extra_args=("--runtime", "process", "--pod-network", "host")).start()
    try:
        yield c
    finally:
        c.stop(signal.SIGTERM)
        kill_recorded(c.data_dir / "kubelet")      # containers (and their volumes) outlive `up` on purpose
        assert mounts_under(c.data_dir) == []
        c.cleanup()


def pod(name: str, containers: list[dict[str, Any]], volumes: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default",
                                                            "labels": {"app": name}},
            "spec": {"terminationGracePeriodSeconds": 1, "containers": containers, "volumes": volumes, **spec}}


def logs(c: Cluster, name: str, container: str) -> str:
    res = c.kubectl("logs", name, "-c", container, check=False)
    return res.stdout if res.returncode == 0 else ""


def test_pod_reads_config_map_secret_and_downward_api_files_and_sees_updates(vcluster: Cluster) -> None:
    c = vcluster
    c.kubectl("create", "configmap", "app-config", "--from-literal=color=blue", "--from-literal=app.conf=mode=1")
    c.kubectl("create", "secret", "generic", "app-secret", "--from-literal=password=s3cret")
    reader = ("import os, time\n"
              "while not os.path.exists('/shared/hello'): time.sleep(0.05)\n"
              "print('secret=' + open('/etc/secret/password').read())\n"
              "print('podname=' + open('/etc/podinfo/name').read())\n"
              "print('shared=' + open('/shared/hello').read())\n"
              "print('mode=' + oct(os.stat('/etc/secret/password').st_mode & 0o777))\n"
              "while True:\n"
              "    print('color=' + open('/etc/config/color').read() + ' sub=' + open('/app.conf').read(), flush=True)\n"
              "    time.sleep(0.2)\n")
    writer = "import pathlib, time; pathlib.Path('/shared/hello').write_text('from-writer'); time.sleep(3600)"
    c.apply_yaml(pod("vol-reader", [
        {"name": "writer", "image": "python:3", "command": [PY, "-c", writer],
         "volumeMounts": [{"name": "shared", "mountPath": "/shared"}]},
        {"name": "reader", "image": "python:3", "command": [PY, "-u", "-c", reader],
         "volumeMounts": [{"name": "config", "mountPath": "/etc/config"},
                          {"name": "config", "mountPath": "/app.conf", "subPath": "app.conf"},
                          {"name": "secret", "mountPath": "/etc/secret", "readOnly": True},
                          {"name": "podinfo", "mountPath": "/etc/podinfo"},
                          {"name": "shared", "mountPath": "/shared"}]}], [
        {"name": "config", "configMap": {"name": "app-config"}},
        {"name": "secret", "secret": {"secretName": "app-secret", "defaultMode": 0o400}},
        {"name": "podinfo", "downwardAPI": {"items": [{"path": "name", "fieldRef": {"fieldPath": "metadata.name"}}]}},
        {"name": "shared", "emptyDir": {}}]))
    out = eventually(lambda: (t := logs(c, "vol-reader", "reader")) and "color=blue" in t and t, "the files' contents")
    assert "secret=s3cret" in out and "podname=vol-reader" in out and "shared=from-writer" in out
    assert "mode=0o400" in out and "sub=mode=1" in out
    c.kubectl("patch", "configmap", "app-config", "-p", json.dumps({"data": {"color": "green", "app.conf": "mode=2"}}))
    out = eventually(lambda: (t := logs(c, "vol-reader", "reader")) and "color=green" in t and t, "the updated value",
                     timeout=30)
    assert "sub=mode=2" not in out                      # a subPath mount keeps what it started with
    c.kubectl("delete", "pod", "vol-reader", "--wait=true", timeout=60)
    uid_dirs = list((c.data_dir / "kubelet" / "pods").glob("*/volumes"))
    assert uid_dirs == [] and mounts_under(c.data_dir / "kubelet" / "pods") == []


def test_pod_calls_the_api_server_with_its_service_account_token_and_ca(vcluster: Cluster) -> None:
    c = vcluster
    url = json.loads(c.kubectl("config", "view", "--minify", "-o", "json").stdout)["clusters"][0]["cluster"]["server"]
    call = ("import json, os, ssl, urllib.request\n"
            "d = '/var/run/secrets/kubernetes.io/serviceaccount'\n"
            "token = open(d + '/token').read()\n"
            "ctx = ssl.create_default_context(cafile=d + '/ca.crt')\n"
            "body = json.dumps({'apiVersion': 'authentication.k8s.io/v1', 'kind': 'SelfSubjectReview'}).encode()\n"
            "req = urllib.request.Request(os.environ['API'] + '/apis/authentication.k8s.io/v1/selfsubjectreviews',\n"
            "    data=body, headers={'Authorization': 'Bearer ' + token, 'Content-Type': 'application/json'})\n"
            "review = json.load(urllib.request.urlopen(req, context=ctx))\n"
            "print('user=' + review['status']['userInfo']['username'])\n"
            "print('namespace=' + open(d + '/namespace').read())\n")
    c.apply_yaml(pod("sa-caller", [{"name": "c", "image": "python:3", "command": [PY, "-c", call],
                                    "env": [{"name": "API", "value": url}]}], [], restartPolicy="Never"))
    phase = eventually(lambda: c.get_json("pod", "sa-caller")["status"].get("phase") in ("Succeeded", "Failed")
                       and c.get_json("pod", "sa-caller")["status"]["phase"], "sa-caller to finish", timeout=60)
    out = logs(c, "sa-caller", "c")
    assert phase == "Succeeded", out
    assert "user=system:serviceaccount:default:default" in out and "namespace=default" in out


def test_missing_config_map_is_failed_mount_until_created(vcluster: Cluster) -> None:
    c = vcluster
    c.apply_yaml(pod("late-cfg", [{"name": "c", "image": "python:3", "command": [PY, "-c", "print(open('/c/k').read())"],
                                   "volumeMounts": [{"name": "v", "mountPath": "/c"}]}],
                     [{"name": "v", "configMap": {"name": "late"}}], restartPolicy="Never"))
    want = 'MountVolume.SetUp failed for volume "v" : configmap "late" not found'
    eventually(lambda: any(e["reason"] == "FailedMount" and e["message"] == want for e in c.get_json(
        "events", "--field-selector", "involvedObject.name=late-cfg")["items"]), "the FailedMount event")
    st = c.get_json("pod", "late-cfg")["status"]
    assert st["containerStatuses"][0]["state"]["waiting"]["reason"] == "ContainerCreating"
    c.kubectl("create", "configmap", "late", "--from-literal=k=finally")
    eventually(lambda: c.get_json("pod", "late-cfg")["status"].get("phase") == "Succeeded", "the pod to run",
               timeout=60)
    assert logs(c, "late-cfg", "c").strip() == "finally"


def test_claim_from_the_local_path_provisioner_is_a_directory_under_the_kubelet_root(vcluster: Cluster) -> None:
    c = vcluster
    c.apply_yaml({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "default"},
                  "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    write = "import pathlib; pathlib.Path('/data/out.txt').write_text('persisted'); print('wrote')"
    c.apply_yaml(pod("pvc-writer", [{"name": "c", "image": "python:3", "command": [PY, "-c", write],
                                     "volumeMounts": [{"name": "d", "mountPath": "/data"}]}],
                     [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}], restartPolicy="Never"))
    eventually(lambda: c.get_json("pod", "pvc-writer")["status"].get("phase") == "Succeeded", "the writer to finish",
               timeout=60)
    pv = c.get_json("pvc", "data")["spec"]["volumeName"]
    files = list((c.data_dir / "kubelet" / "local-path-provisioner").glob(f"{pv}_default_data/out.txt"))
    assert [f.read_text() for f in files] == ["persisted"]
    assert not pathlib.Path("/var/local-path-provisioner", f"{pv}_default_data").exists()
