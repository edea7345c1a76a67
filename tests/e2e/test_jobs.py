"""Jobs under real kubectl on simulated nodes (`kubeplane up --nodes 2`): pods run to
completion (the sim stages' default: exit 0 after 1 s), the Job controller counts them and
finishes the Job; TTL-after-finished deletes it.
"""
from __future__ import annotations

from typing import Any, Iterator

import pytest

from .cluster import Cluster, eventually, namespace_for_test, running


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    yield from running(nodes=2)


@pytest.fixture
def ns(cluster: Cluster, request: pytest.FixtureRequest) -> str:
    return namespace_for_test(cluster, request.node.name)


def job(name: str, ns: str, *, completions: int, parallelism: int, annotations: dict[str, str] | None = None,
        **spec: Any) -> dict[str, Any]:
    template: dict[str, Any] = {"spec": {"restartPolicy": "Never",
                                         "containers": [{"name": "main", "image": "busybox"}]}}
    if annotations:
        template["metadata"] = {"annotations": annotations}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": ns},
            "spec": {"completions": completions, "parallelism": parallelism, "template": template, **spec}}


def conditions(j: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    return {c["type"]: (c["status"], c.get("reason")) for c in j.get("status", {}).get("conditions") or ()}


def test_job_of_10_completions_with_parallelism_3_completes(cluster: Cluster, ns: str) -> None:
    cluster.apply_yaml(job("ten", ns, completions=10, parallelism=3,
                           annotations={"sim.kubeplane.io/run-duration": "300ms"}))
    peak = 0

    def active() -> int:
        nonlocal peak
        j = cluster.get_json("job", "ten", "-n", ns)
        peak = max(peak, j.get("status", {}).get("active") or 0)
        return conditions(j).get("Complete") == ("True", "CompletionsReached")
    eventually(active, "the job completes", timeout=90, interval=0.2)
    r = cluster.kubectl("wait", "--for=condition=complete", "job/ten", "-n", ns, "--timeout=30s")
    assert "job.batch/ten condition met" in r.stdout
    j = cluster.get_json("job", "ten", "-n", ns)
    st = j["status"]
    assert st["succeeded"] == 10 and st.get("failed", 0) == 0 and st["active"] == 0 and peak <= 3
    assert st["ready"] == 0 and st["terminating"] == 0 and st["completionTime"] and st["startTime"]
    assert st["uncountedTerminatedPods"] == {}
    assert conditions(j)["SuccessCriteriaMet"] == ("True", "CompletionsReached")
    pods = cluster.get_json("pods", "-n", ns, "-l", "batch.kubernetes.io/job-name=ten")["items"]
    assert len(pods) == 10 and all(p["status"]["phase"] == "Succeeded" for p in pods)
    assert all("batch.kubernetes.io/job-tracking" not in (p["metadata"].get("finalizers") or ()) for p in pods)
    assert all(p["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] == "Completed" for p in pods)
    events = cluster.kubectl("get", "events", "-n", ns, "--field-selector", "involvedObject.name=ten").stdout
    assert "Completed" in events and "Job completed" in events and "SuccessfulCreate" in events
    out = cluster.kubectl("get", "job", "ten", "-n", ns).stdout
    assert "Complete" in out and "10/10" in out


def test_indexed_job_with_a_failing_index_under_backoff_limit_per_index(cluster: Cluster, ns: str) -> None:
    # Index 1's pods exit with code 3 (the sim annotations), the others with 0: index 1 gets
    # backoffLimitPerIndex + 1 = 2 tries, then the Job fails with upstream's status.
    cluster.apply_yaml(job("idx", ns, completions=3, parallelism=3, completionMode="Indexed", backoffLimitPerIndex=1,
                           annotations={"sim.kubeplane.io/run-duration": "200ms", "sim.kubeplane.io/exit-code": "3",
                                        "sim.kubeplane.io/exit-code-indexes": "1"}))
    j = eventually(lambda: conditions(j := cluster.get_json("job", "idx", "-n", ns)).get("Failed") and j,
                   "the job fails", timeout=90, interval=0.2)
    st = j["status"]
    assert conditions(j)["Failed"] == ("True", "FailedIndexes")
    assert conditions(j)["FailureTarget"] == ("True", "FailedIndexes")
    failed = next(c for c in st["conditions"] if c["type"] == "Failed")
    assert failed["message"] == "Job has failed indexes"
    assert st["failedIndexes"] == "1" and st["completedIndexes"] == "0,2"
    assert st["succeeded"] == 2 and st["failed"] == 2 and st["active"] == 0 and "completionTime" not in st
    pods = cluster.get_json("pods", "-n", ns, "-l", "batch.kubernetes.io/job-name=idx")["items"]
    assert {p["spec"]["hostname"] for p in pods} == {"idx-0", "idx-1", "idx-2"}
    retried = [p for p in pods if p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] == "1"]
    assert sorted(p["metadata"]["annotations"]["batch.kubernetes.io/job-index-failure-count"] for p in retried) \
        == ["0", "1"]
    assert all(p["metadata"]["name"].startswith("idx-1-") for p in retried)
    assert all(p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3 for p in retried)
    env = pods[0]["spec"]["containers"][0]["env"]
    assert {"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
        "apiVersion": "v1", "fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']"}}} in env
    events = cluster.kubectl("get", "events", "-n", ns, "--field-selector", "involvedObject.name=idx").stdout
    assert "FailedIndexes" in events


def test_failing_exit_code_annotation_fails_the_job_at_its_backoff_limit(cluster: Cluster, ns: str) -> None:
    cluster.apply_yaml(job("bad", ns, completions=1, parallelism=1, backoffLimit=0,
                           annotations={"sim.kubeplane.io/exit-code": "3", "sim.kubeplane.io/run-duration": "100ms"}))
    j = eventually(lambda: conditions(j := cluster.get_json("job", "bad", "-n", ns)).get("Failed") and j,
                   "the job fails", timeout=60, interval=0.2)
    assert conditions(j)["Failed"] == ("True", "BackoffLimitExceeded")
    failed = next(c for c in j["status"]["conditions"] if c["type"] == "Failed")
    assert failed["message"] == "Job has reached the specified backoff limit"
    assert j["status"]["failed"] == 1
    (p,) = cluster.get_json("pods", "-n", ns, "-l", "batch.kubernetes.io/job-name=bad")["items"]
    assert p["status"]["phase"] == "Failed"
    assert p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 3


def test_kubectl_run_restart_never_completes(cluster: Cluster, ns: str) -> None:
    cluster.kubectl("run", "once", "--image=busybox", "--restart=Never", "-n", ns)
    eventually(lambda: cluster.get_json("pod", "once", "-n", ns)["status"].get("phase") == "Succeeded",
               "the pod succeeds", timeout=30)
    out = cluster.kubectl("get", "pod", "once", "-n", ns).stdout
    assert "Completed" in out and "0/1" in out


def test_ttl_after_finished_deletes_the_job_and_its_pods(cluster: Cluster, ns: str) -> None:
    cluster.apply_yaml(job("short", ns, completions=1, parallelism=1, ttlSecondsAfterFinished=1,
                           annotations={"sim.kubeplane.io/run-duration": "100ms"}))
    cluster.kubectl("wait", "--for=condition=complete", "job/short", "-n", ns, "--timeout=60s")
    gone = cluster.kubectl("wait", "--for=delete", "job/short", "-n", ns, "--timeout=60s", check=False)
    assert gone.returncode == 0, gone.stderr
    eventually(lambda: not cluster.get_json("pods", "-n", ns, "-l", "batch.kubernetes.io/job-name=short")["items"],
               "its pod is collected with it (foreground deletion)", timeout=60)


def test_pod_failure_policy_fail_job_rule_on_the_simulated_exit_code(cluster: Cluster, ns: str) -> None:
    doc = job("pfp", ns, completions=2, parallelism=2, backoffLimit=6,
              annotations={"sim.kubeplane.io/exit-code": "42", "sim.kubeplane.io/run-duration": "100ms"})
    doc["spec"]["podFailurePolicy"] = {"rules": [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
        {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]}}]}
    cluster.apply_yaml(doc)
    j = eventually(lambda: conditions(j := cluster.get_json("job", "pfp", "-n", ns)).get("Failed") and j,
                   "the job fails", timeout=60, interval=0.2)
    failed = next(c for c in j["status"]["conditions"] if c["type"] == "Failed")
    assert failed["reason"] == "PodFailurePolicy"
    assert failed["message"].startswith("Container main for pod " + ns + "/pfp-")
    assert failed["message"].endswith(" failed with exit code 42 matching FailJob rule at index 1")
    assert conditions(j)["FailureTarget"] == ("True", "PodFailurePolicy")
    assert j["spec"]["podReplacementPolicy"] == "Failed"          # defaulted with a pod failure policy
