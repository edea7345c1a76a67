"""StatefulSets with claims under the real kubectl: ordered scaling and rolling, the default
StorageClass and its provisioner, and `kubectl rollout status/history/undo/restart/pause`.

Two simulated nodes make pods Running and Ready by themselves; the scheduler's VolumeBinding
picks a node for each WaitForFirstConsumer claim, the simulated local-path provisioner makes its
volume there, and the PV binder binds it.
"""
from __future__ import annotations

import json
from typing import Any, Iterator

import pytest

from .cluster import Cluster, eventually, running

MANIFEST = """
apiVersion: v1
kind: Service
metadata: {name: nginx}
spec:
  clusterIP: None
  selector: {app: web}
  ports: [{port: 80, name: web}]
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: web}
spec:
  serviceName: nginx
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: "nginx:1"}]
  volumeClaimTemplates:
  - metadata: {name: www}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
"""


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    yield from running(nodes=2)


def _ns(cluster: Cluster, name: str) -> str:
    cluster.kubectl("create", "namespace", name)
    return name


def _items(cluster: Cluster, kind: str, ns: str) -> list[dict[str, Any]]:
    return cluster.get_json(kind, "-n", ns)["items"]


def _sts_events(cluster: Cluster, ns: str) -> list[str]:
    """The StatefulSet's event messages, in the order they were last written (a repeated
    message updates its event: only first occurrences keep their order)."""
    events = _items(cluster, "events", ns)
    events = [e for e in events if e["involvedObject"]["kind"] == "StatefulSet"]
    events.sort(key=lambda e: int(e["metadata"]["resourceVersion"]))
    return [e["message"] for e in events]


def _images(cluster: Cluster, ns: str) -> dict[str, str]:
    return {p["metadata"]["name"]: p["spec"]["containers"][0]["image"] for p in _items(cluster, "pods", ns)}


def _rollout_status(cluster: Cluster, ns: str) -> str:
    out = cluster.kubectl("rollout", "status", "statefulset/web", "-n", ns, "--timeout=60s").stdout
    assert out.strip().splitlines()[-1] == "partitioned roll out complete: 3 new pods have been updated...", out
    return out


def test_statefulset_with_claims_scales_and_rolls_in_order(cluster: Cluster) -> None:
    ns = _ns(cluster, "sts-order")
    sc = cluster.get_json("storageclass", "standard")
    assert sc["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"] == "true"
    assert (sc["provisioner"], sc["volumeBindingMode"], sc["reclaimPolicy"]) == \
        ("rancher.io/local-path", "WaitForFirstConsumer", "Delete")
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=MANIFEST)
    _rollout_status(cluster, ns)

    # Created in ordinal order, each with its claim first; every claim Bound on its pod's node.
    assert _sts_events(cluster, ns) == [m for i in range(3) for m in (
        f"create Claim www-web-{i} Pod web-{i} in StatefulSet web success",
        f"create Pod web-{i} in StatefulSet web successful")]
    pods = {p["metadata"]["name"]: p for p in _items(cluster, "pods", ns)}
    assert sorted(pods) == ["web-0", "web-1", "web-2"]
    for i in range(3):
        p = pods[f"web-{i}"]
        assert (p["spec"]["hostname"], p["spec"]["subdomain"]) == (f"web-{i}", "nginx")
        assert p["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"] == f"web-{i}"
        assert p["metadata"]["labels"]["apps.kubernetes.io/pod-index"] == str(i)
    claims = {c["metadata"]["name"]: c for c in _items(cluster, "pvc", ns)}
    assert sorted(claims) == ["www-web-0", "www-web-1", "www-web-2"]
    for i in range(3):
        c = claims[f"www-web-{i}"]
        assert c["status"]["phase"] == "Bound" and c["spec"]["storageClassName"] == "standard"
        assert c["spec"]["volumeName"] == f"pvc-{c['metadata']['uid']}"
        assert c["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == pods[f"web-{i}"]["spec"]["nodeName"]
        pv = cluster.get_json("pv", c["spec"]["volumeName"])
        assert pv["status"]["phase"] == "Bound" and pv["spec"]["claimRef"]["name"] == f"www-web-{i}"
        assert pv["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] == "rancher.io/local-path"

    # A rolling update replaces pods from the highest ordinal down.
    cluster.kubectl("set", "image", "statefulset/web", "c=nginx:2", "-n", ns)
    _rollout_status(cluster, ns)
    assert _images(cluster, ns) == {f"web-{i}": "nginx:2" for i in range(3)}
    deletes = [m for m in _sts_events(cluster, ns) if m.startswith("delete Pod")]
    assert deletes == [f"delete Pod web-{i} in StatefulSet web successful" for i in (2, 1, 0)]
    st = cluster.get_json("statefulset", "web", "-n", ns)["status"]
    assert st["currentRevision"] == st["updateRevision"] and st["updatedReplicas"] == st["readyReplicas"] == 3

    # rollout history reads the ControllerRevisions; undo goes back to revision 1's template.
    history = cluster.kubectl("rollout", "history", "statefulset/web", "-n", ns).stdout
    assert history.split() == ["statefulset.apps/web", "REVISION", "CHANGE-CAUSE", "1", "<none>", "2", "<none>"]
    rev1 = cluster.kubectl("rollout", "history", "statefulset/web", "-n", ns, "--revision=1").stdout
    assert rev1.startswith("statefulset.apps/web with revision #1") and "Image:\tnginx:1" in rev1
    undo = cluster.kubectl("rollout", "undo", "statefulset/web", "-n", ns)
    assert undo.stdout == "statefulset.apps/web rolled back\n"
    _rollout_status(cluster, ns)
    assert _images(cluster, ns) == {f"web-{i}": "nginx:1" for i in range(3)}
    history = cluster.kubectl("rollout", "history", "statefulset/web", "-n", ns).stdout
    assert history.split()[3::2] == ["2", "3"]             # revision 1 renumbered, not copied
    revisions = _items(cluster, "controllerrevisions", ns)
    assert sorted(r["revision"] for r in revisions) == [2, 3]
    # undo to the revision already running: kubectl compares the revision's bytes with its own
    # patch of the live template and writes nothing
    same = cluster.kubectl("rollout", "undo", "statefulset/web", "-n", ns, "--to-revision=3")
    assert same.stdout == "statefulset.apps/web skipped rollback (current template already matches revision 3)\n"
    assert sorted(r["revision"] for r in _items(cluster, "controllerrevisions", ns)) == [2, 3]

    # pause is refused by kubectl; restart rolls every pod again.
    pause = cluster.kubectl("rollout", "pause", "statefulset/web", "-n", ns, check=False)
    assert pause.returncode == 1 and pause.stderr == 'error: statefulsets.apps "web" pausing is not supported\n'
    restart = cluster.kubectl("rollout", "restart", "statefulset/web", "-n", ns)
    assert restart.stdout == "statefulset.apps/web restarted\n"
    _rollout_status(cluster, ns)
    pods = {p["metadata"]["name"]: p for p in _items(cluster, "pods", ns)}
    assert all("kubectl.kubernetes.io/restartedAt" in p["metadata"]["annotations"] for p in pods.values())

    # Scale down: highest ordinals go; the claims stay (Retain).
    cluster.kubectl("scale", "statefulset/web", "--replicas=1", "-n", ns)
    eventually(lambda: sorted(_images(cluster, ns)) == ["web-0"], "scale down to web-0")
    assert sorted(c["status"]["phase"] for c in _items(cluster, "pvc", ns)) == ["Bound"] * 3


def test_retention_policy_delete_removes_claims_and_volumes(cluster: Cluster) -> None:
    ns = _ns(cluster, "sts-retention")
    doc = MANIFEST.replace("  serviceName: nginx\n", "  serviceName: nginx\n  persistentVolumeClaimRetentionPolicy: "
                           "{whenDeleted: Delete, whenScaled: Delete}\n  podManagementPolicy: Parallel\n")
    cluster.kubectl("apply", "-n", ns, "-f", "-", input=doc)
    _rollout_status(cluster, ns)
    claims = {c["metadata"]["name"]: c for c in _items(cluster, "pvc", ns)}
    assert all(c["metadata"]["ownerReferences"][0]["kind"] == "StatefulSet" for c in claims.values())
    volume = claims["www-web-2"]["spec"]["volumeName"]
    cluster.kubectl("scale", "statefulset/web", "--replicas=2", "-n", ns)
    # The condemned pod's claim is handed to the pod, collected with it; its volume goes too.
    eventually(lambda: sorted(c["metadata"]["name"] for c in _items(cluster, "pvc", ns)) == ["www-web-0", "www-web-1"],
               "www-web-2 collected")
    eventually(lambda: cluster.kubectl("get", "pv", volume, check=False).returncode == 1, "its volume deleted")
    cluster.kubectl("delete", "statefulset", "web", "-n", ns)
    eventually(lambda: _items(cluster, "pvc", ns) == [], "the claims collected with the set")


def test_pod_with_missing_claim_waits_for_it(cluster: Cluster) -> None:
    ns = _ns(cluster, "sts-missing-claim")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": ns},
           "spec": {"containers": [{"name": "c", "image": "x"}],
                    "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(pod))

    def unschedulable() -> str:
        conds = (cluster.get_json("pod", "p", "-n", ns).get("status") or {}).get("conditions") or []
        return next((c.get("message", "") for c in conds if c["type"] == "PodScheduled"), "")
    assert "persistentvolumeclaim \"data\" not found" in eventually(unschedulable, "FailedScheduling")
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": ns},
             "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(claim))
    eventually(lambda: (cluster.get_json("pvc", "data", "-n", ns).get("status") or {}).get("phase") == "Bound",
               "the claim bound once the pod is scheduled")
    eventually(lambda: cluster.get_json("pod", "p", "-n", ns)["spec"].get("nodeName"), "the pod scheduled")
