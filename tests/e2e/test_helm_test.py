"""What `helm test` does, against `kubeplane up --runtime process` with real kubectl.

No helm binary exists on this machine (no package registry here ships one), so the test follows
helm's calls instead (pkg/action/release_testing.go -> Configuration.execHook(rel, HookTest)):
for each test hook, by weight: delete a leftover of the same name when the hook's delete policy
has before-hook-creation (helm's default), create the hook's manifest (a Pod annotated
`helm.sh/hook: test`, restartPolicy Never), watch it by name until its phase is Succeeded
(done) or Failed (the error `pod <name> failed`), then `--logs` reads its log, and the pod is
deleted if its policy says hook-succeeded (or hook-failed). Here `kubectl wait
--for=jsonpath='{.status.phase}'=...` is that watch (a list and watch with the metadata.name
field selector, as helm's).

The chart is helm's default one (`helm create`): a web Deployment and Service, and its
templates/tests/test-connection.yaml, a pod that fetches the service. With the process runtime
on the host's network (--pod-network host) the containers are real processes sharing 127.0.0.1,
so the web server listens on a free port and the test pod fetches it there.
"""
from __future__ import annotations

import json
import socket
import sys
from collections.abc import Iterator
from typing import Any

import pytest


from .cluster import Cluster, running_process_on_host

PY = sys.executable
TEST_HOOK = "helm.sh/hook"
DELETE_POLICY = "helm.sh/hook-delete-policy"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    yield from running_process_on_host()


@pytest.fixture(scope="module")
def release(cluster: Cluster) -> int:
    """`helm install demo ./demo`: the chart's web Deployment (its port: a free one) and Service."""
    port = free_port()
    labels = {"app.kubernetes.io/name": "demo", "app.kubernetes.io/instance": "demo"}
    cluster.apply_yaml({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "demo", "labels": labels},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {"containers": [{
                     "name": "demo", "image": "nginx:1.16.0",
                     "command": [PY, "-m", "http.server", str(port), "--bind", "127.0.0.1"],
                     "ports": [{"name": "http", "containerPort": port}],
                     "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 1}}]}}}})
    cluster.apply_yaml({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "demo", "labels": labels},
                        "spec": {"selector": labels, "ports": [{"name": "http", "port": port, "targetPort": "http"}]}})
    cluster.kubectl("rollout", "status", "deployment/demo", "--timeout=60s", timeout=90)
    return port


def hook_pod(name: str, script: str, *, delete_policy: str | None = None) -> dict[str, Any]:
    """A chart's test hook: helm create's test-connection.yaml, the wget as a Python one-liner."""
    annotations = {TEST_HOOK: "test"}
    if delete_policy is not None:
        annotations[DELETE_POLICY] = delete_policy
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "annotations": annotations,
                         "labels": {"app.kubernetes.io/name": "demo", "app.kubernetes.io/instance": "demo"}},
            "spec": {"restartPolicy": "Never",
                     "containers": [{"name": "wget", "image": "busybox", "command": [PY, "-c", script]}]}}


def delete_policies(pod: dict[str, Any]) -> set[str]:
    """Upstream: hookSetDeletePolicy — none given means before-hook-creation."""
    text = pod["metadata"]["annotations"].get(DELETE_POLICY, "")
    return {p.strip() for p in text.split(",") if p.strip()} or {"before-hook-creation"}


def run_test_hook(c: Cluster, pod: dict[str, Any], *, expect: str) -> str:
    """One hook of `helm test demo --logs`: returns the pod's log. Upstream: execHook, then
    GetPodLogs."""
    name = pod["metadata"]["name"]
    if "before-hook-creation" in delete_policies(pod):
        c.kubectl("delete", "pod", name, "--ignore-not-found", "--wait=true", "--timeout=60s", timeout=90)
    created = c.kubectl("create", "-f", "-", input=json.dumps(pod))
    assert created.stdout == f"pod/{name} created\n"
    # WatchUntilReady: Succeeded ends the hook, Failed fails it ("pod <name> failed")
    r = c.kubectl("wait", f"--for=jsonpath={{.status.phase}}={expect}", f"pod/{name}", "--timeout=90s", timeout=120)
    assert r.stdout == f"pod/{name} condition met\n"
    logs = c.kubectl("logs", name).stdout
    outcome = "hook-succeeded" if expect == "Succeeded" else "hook-failed"
    if outcome in delete_policies(pod):
        c.kubectl("delete", "pod", name, "--wait=true", "--timeout=60s", timeout=90)
    return logs


def test_a_passing_test_hook_succeeds_shows_its_log_and_is_deleted_by_policy(cluster: Cluster, release: int) -> None:
    port = release
    script = (f"import urllib.request as u; r = u.urlopen('http://127.0.0.1:{port}/', timeout=10); "
              f"print('Connecting to demo:{port} status', r.status)")
    pod = hook_pod("demo-test-connection", script, delete_policy="before-hook-creation,hook-succeeded")
    logs = run_test_hook(cluster, pod, expect="Succeeded")
    assert logs == f"Connecting to demo:{port} status 200\n"
    assert cluster.kubectl("get", "pod", "demo-test-connection", check=False).stderr == (
        'Error from server (NotFound): pods "demo-test-connection" not found\n')
    # helm test again: the same hook runs anew (before-hook-creation finds nothing to delete)
    assert run_test_hook(cluster, pod, expect="Succeeded") == f"Connecting to demo:{port} status 200\n"


def test_a_failing_test_hook_fails_with_its_exit_code_and_stays_for_inspection(cluster: Cluster,
                                                                               release: int) -> None:
    port = free_port()              # nothing listens there: the test cannot connect
    script = (f"import sys, urllib.request as u\ntry:\n    u.urlopen('http://127.0.0.1:{port}/', timeout=5)\n"
              f"except OSError as e:\n    print('wget: can\\'t connect to remote host:', type(e).__name__, "
              f"file=sys.stderr)\n    raise SystemExit(3)")
    pod = hook_pod("demo-test-broken", script)          # helm's default policy: before-hook-creation
    logs = run_test_hook(cluster, pod, expect="Failed")
    assert logs.startswith("wget: can't connect to remote host:")
    got = cluster.get_json("pod", "demo-test-broken")
    assert got["status"]["phase"] == "Failed"
    [status] = got["status"]["containerStatuses"]
    terminated = status["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (3, "Error")
    assert status["restartCount"] == 0                 # restartPolicy Never: not run again
    # the next `helm test` deletes the failed pod first, then runs it again
    logs = run_test_hook(cluster, pod, expect="Failed")
    assert logs.startswith("wget: can't connect to remote host:")
    again = cluster.get_json("pod", "demo-test-broken")
    assert again["metadata"]["uid"] != got["metadata"]["uid"]
