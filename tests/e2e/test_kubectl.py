"""Real kubectl against `kubeplane up --nodes 0`: the commands a user types, with upstream's output."""
from __future__ import annotations

import json
import subprocess

import pytest

from .cluster import KUBECTL, Cluster


def deployment(name: str, image: str = "nginx:1.24", replicas: int = 2, **spec: object) -> dict:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": name, "image": image,
                                                       "ports": [{"containerPort": 80}]}]}},
                 **spec},
    }


def test_create_deployment_sends_protobuf_and_is_defaulted(cluster: Cluster) -> None:
    out = cluster.kubectl("create", "deployment", "nginx", "--image", "nginx").stdout
    assert out.strip() == "deployment.apps/nginx created"
    d = cluster.get_json("deployment", "nginx")
    spec = d["spec"]
    assert spec["replicas"] == 1
    assert spec["strategy"] == {"type": "RollingUpdate",
                                "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}
    assert spec["revisionHistoryLimit"] == 10 and spec["progressDeadlineSeconds"] == 600
    pod = spec["template"]["spec"]
    assert pod["restartPolicy"] == "Always" and pod["dnsPolicy"] == "ClusterFirst"
    assert pod["containers"][0]["imagePullPolicy"] == "Always"          # untagged image
    assert d["metadata"]["generation"] == 1 and d["metadata"]["uid"]


def test_create_namespace_configmap_secret_with_protobuf(cluster: Cluster) -> None:
    cluster.kubectl("create", "namespace", "pb")
    cluster.kubectl("create", "configmap", "cm", "-n", "pb", "--from-literal", "a=b")
    cluster.kubectl("create", "secret", "generic", "s", "-n", "pb", "--from-literal", "k=v")
    assert cluster.get_json("configmap", "cm", "-n", "pb")["data"] == {"a": "b"}
    secret = cluster.get_json("secret", "s", "-n", "pb")
    assert secret["data"] == {"k": "dg=="} and secret["type"] == "Opaque"
    assert cluster.get_json("namespace", "pb")["status"]["phase"] == "Active"


def test_apply_create_then_change_with_server_validation(cluster: Cluster) -> None:
    cluster.apply_yaml(deployment("web"))
    d = cluster.get_json("deployment", "web")
    assert d["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.24"
    assert "kubectl.kubernetes.io/last-applied-configuration" in d["metadata"]["annotations"]
    out = cluster.apply_yaml(deployment("web", image="nginx:1.25", replicas=3)).stdout
    assert out.strip() == "deployment.apps/web configured"
    d2 = cluster.get_json("deployment", "web")
    assert d2["spec"]["replicas"] == 3
    assert d2["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25"
    assert d2["spec"]["template"]["spec"]["containers"][0]["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert d2["metadata"]["generation"] == 2


def test_apply_rejects_unknown_field_on_the_server(cluster: Cluster) -> None:
    bad = deployment("strict")
    bad["spec"]["replicaz"] = 3
    res = cluster.kubectl("apply", "-f", "-", input=json.dumps(bad), check=False)
    assert res.returncode != 0
    assert 'unknown field "spec.replicaz"' in res.stderr
    assert cluster.kubectl("get", "deployment", "strict", check=False).returncode != 0


def test_get_deployments_prints_upstream_columns(cluster: Cluster) -> None:
    cluster.apply_yaml(deployment("cols"))
    lines = cluster.kubectl("get", "deploy", "cols").stdout.splitlines()
    assert lines[0].split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert lines[1].split()[:2] == ["cols", "0/2"]           # --nodes 0: no pod ever becomes ready
    assert lines[1].split()[3] == "0"
    wide = cluster.kubectl("get", "deploy", "cols", "-o", "wide").stdout.splitlines()
    assert wide[0].split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    assert wide[1].split()[5:] == ["cols", "nginx:1.24", "app=cols"]


def test_scale_set_image_label(cluster: Cluster) -> None:
    cluster.apply_yaml(deployment("ops"))
    assert cluster.kubectl("scale", "deployment", "ops", "--replicas", "5").stdout.strip() == \
        "deployment.apps/ops scaled"
    cluster.kubectl("set", "image", "deployment/ops", "ops=nginx:1.26")
    cluster.kubectl("label", "deployment", "ops", "tier=web")
    d = cluster.get_json("deployment", "ops")
    assert d["spec"]["replicas"] == 5
    assert d["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.26"
    assert d["metadata"]["labels"] == {"app": "ops", "tier": "web"}
    assert d["metadata"]["generation"] == 3          # scale and set image change spec; a label does not


def test_patch_all_three_types(cluster: Cluster) -> None:
    cluster.apply_yaml(deployment("pt"))
    cluster.kubectl("patch", "deployment", "pt", "-p", '{"spec":{"paused":true}}')
    assert cluster.get_json("deployment", "pt")["spec"]["paused"] is True
    cluster.kubectl("patch", "deployment", "pt", "--type", "merge", "-p", '{"spec":{"paused":null,"minReadySeconds":5}}')
    d = cluster.get_json("deployment", "pt")
    assert "paused" not in d["spec"] and d["spec"]["minReadySeconds"] == 5
    cluster.kubectl("patch", "deployment", "pt", "--type", "json",
                    "-p", '[{"op":"replace","path":"/spec/replicas","value":4}]')
    assert cluster.get_json("deployment", "pt")["spec"]["replicas"] == 4
    # strategic merge keeps the other containers (merge by name)
    cluster.kubectl("patch", "deployment", "pt", "-p",
                    '{"spec":{"template":{"spec":{"containers":[{"name":"side","image":"busybox"}]}}}}')
    names = [c["name"] for c in cluster.get_json("deployment", "pt")["spec"]["template"]["spec"]["containers"]]
    assert names == ["side", "pt"]


def test_invalid_patch_changes_nothing(cluster: Cluster) -> None:
    cluster.apply_yaml(deployment("inv"))
    before = cluster.get_json("deployment", "inv")
    res = cluster.kubectl("patch", "deployment", "inv", "--type", "merge", "-p", '{"spec":{"replicas":-1}}', check=False)
    assert res.returncode != 0
    assert "spec.replicas: Invalid value: -1: must be greater than or equal to 0" in res.stderr
    after = cluster.get_json("deployment", "inv")
    # The deployment controller may write status meanwhile (a new resourceVersion): what the
    # patch would have written is the spec, and a spec write bumps the generation.
    assert after["spec"] == before["spec"] and after["spec"]["replicas"] == 2
    assert after["metadata"]["generation"] == before["metadata"]["generation"]


def test_explain(cluster: Cluster) -> None:
    out = cluster.kubectl("explain", "deployment.spec.strategy").stdout
    assert "KIND:       Deployment" in out
    assert "rollingUpdate" in out and "type" in out


def test_delete_deployment(cluster: Cluster) -> None:
    cluster.apply_yaml(deployment("gone"))
    out = cluster.kubectl("delete", "deployment", "gone").stdout
    assert out.strip() == 'deployment.apps "gone" deleted from default namespace'
    res = cluster.kubectl("get", "deployment", "gone", check=False)
    assert res.returncode != 0 and 'deployments.apps "gone" not found' in res.stderr


def test_get_pods_watch_receives_an_update(cluster: Cluster) -> None:
    cluster.kubectl("create", "namespace", "w")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p1", "namespace": "w"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    cluster.apply_yaml(pod)
    proc = subprocess.Popen([KUBECTL, "--kubeconfig", str(cluster.kubeconfig), "--cache-dir", str(cluster.cache_dir),
                             "get", "pods", "-n", "w", "-w", "--output-watch-events"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        header = proc.stdout.readline()
        assert header.split()[:3] == ["EVENT", "NAME", "READY"]
        assert proc.stdout.readline().split()[:2] == ["ADDED", "p1"]
        cluster.kubectl("label", "pod", "p1", "-n", "w", "x=y")
        assert proc.stdout.readline().split()[:2] == ["MODIFIED", "p1"]
    finally:
        proc.kill()
        proc.wait()


def test_apply_server_side(cluster: Cluster) -> None:
    cluster.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(deployment("ssa")))
    d = cluster.get_json("deployment", "ssa", "--show-managed-fields")
    managers = {m["manager"]: m for m in d["metadata"]["managedFields"]}
    assert managers["kubectl"]["operation"] == "Apply"
    assert "f:replicas" in managers["kubectl"]["fieldsV1"]["f:spec"]
    cluster.kubectl("apply", "--server-side", "-f", "-", input=json.dumps(deployment("ssa", replicas=4)))
    assert cluster.get_json("deployment", "ssa")["spec"]["replicas"] == 4


def test_missing_namespace_is_not_found(cluster: Cluster) -> None:
    res = cluster.kubectl("create", "configmap", "x", "-n", "nope", "--from-literal", "a=b", check=False)
    assert res.returncode != 0
    assert 'namespaces "nope" not found' in res.stderr


def test_anonymous_requests_are_decided_by_rbac(cluster: Cluster) -> None:
    """No credentials: system:anonymous, whom upstream's RBAC refuses (403) all but the health
    and version endpoints (system:public-info-viewer)."""
    import ssl
    import urllib.error
    import urllib.request

    import yaml
    cfg = yaml.safe_load(cluster.kubeconfig.read_text())
    server = cfg["clusters"][0]["cluster"]["server"]
    ctx = ssl.create_default_context(cadata=__import__("base64").b64decode(
        cfg["clusters"][0]["cluster"]["certificate-authority-data"]).decode())
    with pytest.raises(urllib.error.HTTPError) as exc:
        urllib.request.urlopen(server + "/api/v1/namespaces", context=ctx, timeout=10)
    assert exc.value.code == 403
    body = json.loads(exc.value.read())
    assert body["kind"] == "Status" and body["reason"] == "Forbidden" and body["message"] == (
        'namespaces is forbidden: User "system:anonymous" cannot list resource "namespaces" in API group "" '
        'at the cluster scope')
    with urllib.request.urlopen(server + "/healthz", context=ctx, timeout=10) as resp:
        assert resp.read() == b"ok"


def test_deleting_kube_system_is_forbidden(cluster: Cluster) -> None:
    """NamespaceLifecycle's immortal namespaces: upstream's 403, and the namespace stays Active."""
    res = cluster.kubectl("delete", "namespace", "kube-system", check=False)
    assert res.returncode != 0
    assert ('Error from server (Forbidden): namespaces "kube-system" is forbidden: '
            "this namespace may not be deleted") in res.stderr
    assert cluster.get_json("namespace", "kube-system")["status"]["phase"] == "Active"


def test_logs_of_a_pod_not_yet_scheduled_print_nothing(cluster: Cluster) -> None:
    """No node (`--nodes 0`): upstream's pods/log answers 204 No Content, so `kubectl logs`
    prints nothing and exits 0 (LogLocation gives no location; issue kubernetes#44190)."""
    cluster.kubectl("run", "waiting", "--image", "nginx")
    for follow in ((), ("-f",)):
        r = cluster.kubectl("logs", "waiting", *follow, check=False)
        assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    r = cluster.kubectl("logs", "waiting", "-c", "nope", check=False)
    assert r.returncode == 1 and r.stderr.strip() == (
        "error: container nope is not valid for pod waiting out of: waiting")


def test_label_selectors_are_parsed_as_upstream(cluster: Cluster) -> None:
    """Upstream's labels.Parse: values and keys are validated, gt/lt exist, and only a
    requirement's own errors say "unable to parse requirement"."""
    cluster.kubectl("create", "namespace", "sel")
    cluster.kubectl("create", "configmap", "n5", "-n", "sel")
    cluster.kubectl("label", "configmap", "n5", "-n", "sel", "n=5")
    assert cluster.kubectl("get", "cm", "-n", "sel", "-l", "n>3", "-o", "name").stdout == "configmap/n5\n"
    r = cluster.kubectl("get", "cm", "-n", "sel", "-l", "app=web_", check=False)
    assert r.returncode == 1 and r.stderr.startswith(
        'Error from server (BadRequest): Unable to find "/v1, Resource=configmaps" that match label selector '
        '"app=web_", field selector "": unable to parse requirement: values[0][app]: Invalid value: "web_": '
        "a valid label must be an empty string"), r.stderr
    r = cluster.kubectl("get", "cm", "-n", "sel", "-l", "a,", check=False)
    assert r.returncode == 1 and r.stderr.endswith(
        "field selector \"\": found '', expected: identifier after ','\n"), r.stderr
