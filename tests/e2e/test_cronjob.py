"""The CronJob controller under real kubectl (`kubeplane up --nodes 0`).

No waiting for a minute to pass: a CronJob whose lastScheduleTime (written through /status, as
any client may) is two minutes old has missed a run, which the controller starts at once, as it
does after a restart. The minutes themselves pass on a fake clock in
tests/controller/cronjob. Jobs' pods are not awaited (the Job controller's business).
"""
from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest

from .cluster import Cluster, eventually, namespace_for_test


@pytest.fixture
def ns(cluster: Cluster, request: pytest.FixtureRequest) -> str:
    return namespace_for_test(cluster, request.node.originalname)


def _events(c: Cluster, ns: str, name: str) -> list[str]:
    items = c.get_json("events", "-n", ns, "--field-selector", f"involvedObject.name={name}")["items"]
    return [f"{e['type']} {e['reason']} {e['message']}" for e in items]


def _minutes_ago(n: int) -> str:
    t = dt.datetime.now(dt.timezone.utc).replace(second=0, microsecond=0) - dt.timedelta(minutes=n)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_kubectl_create_cronjob_and_a_missed_run_starts_at_once(cluster: Cluster, ns: str) -> None:
    out = cluster.kubectl("create", "cronjob", "x", "-n", ns, "--image=busybox", "--schedule=*/1 * * * *").stdout
    assert out.strip() == "cronjob.batch/x created"
    cj = cluster.get_json("cronjob", "x", "-n", ns)
    spec = cj["spec"]
    assert (spec["concurrencyPolicy"], spec["suspend"], spec["successfulJobsHistoryLimit"],
            spec["failedJobsHistoryLimit"]) == ("Allow", False, 3, 1)

    # Forbid: a minute passing during the test starts no second Job beside the unfinished first.
    cluster.kubectl("patch", "cronjob", "x", "-n", ns, "--type", "merge",
                    "-p", '{"spec":{"concurrencyPolicy":"Forbid"}}')
    last = _minutes_ago(2)
    cluster.kubectl("patch", "cronjob", "x", "-n", ns, "--subresource", "status", "--type", "merge",
                    "-p", json.dumps({"status": {"lastScheduleTime": last}}))

    def scheduled() -> dict[str, Any] | None:
        status = cluster.get_json("cronjob", "x", "-n", ns).get("status") or {}
        return status if status.get("active") and status.get("lastScheduleTime", "") > last else None
    status = eventually(scheduled, "the missed run's Job in status.active")
    [ref] = status["active"]
    when = dt.datetime.fromisoformat(status["lastScheduleTime"].replace("Z", "+00:00"))
    assert when.second == 0 and ref["name"] == f"x-{int(when.timestamp()) // 60}"
    assert (ref["kind"], ref["apiVersion"], ref["namespace"]) == ("Job", "batch/v1", ns)

    job = cluster.get_json("job", ref["name"], "-n", ns)
    assert job["metadata"]["uid"] == ref["uid"]
    assert job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"] == \
        status["lastScheduleTime"]
    [owner] = job["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"], owner["blockOwnerDeletion"]) == \
        ("CronJob", "x", cj["metadata"]["uid"], True, True)
    assert job["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox"
    eventually(lambda: f"Normal SuccessfulCreate Created job {ref['name']}" in _events(cluster, ns, "x"),
               "the SuccessfulCreate event")

    row = cluster.kubectl("get", "cronjobs", "x", "-n", ns, "--no-headers").stdout.split()
    assert row[:9] == ["x", "*/1", "*", "*", "*", "*", "<none>", "False", "1"]

    # `kubectl create job --from` makes a Job the CronJob controls but did not start: upstream's
    # controller reports it rather than adopting it into status.active.
    out = cluster.kubectl("create", "job", "manual", "-n", ns, "--from", "cronjob/x").stdout
    assert out.strip() == "job.batch/manual created"
    manual = cluster.get_json("job", "manual", "-n", ns)
    assert manual["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"] == "manual"
    assert manual["metadata"]["ownerReferences"][0]["name"] == "x"
    eventually(lambda: "Warning UnexpectedJob Saw a job that the controller did not create or forgot: manual"
               in _events(cluster, ns, "x"), "the UnexpectedJob warning")

    cluster.kubectl("patch", "cronjob", "x", "-n", ns, "--type", "merge", "-p", '{"spec":{"suspend":true}}')
    row = cluster.kubectl("get", "cronjobs", "x", "-n", ns, "--no-headers").stdout.split()
    assert row[7] == "True"

    # The Jobs it controls go with it (the garbage collector follows their ownerReferences).
    cluster.kubectl("delete", "cronjob", "x", "-n", ns)
    eventually(lambda: cluster.kubectl("get", "jobs", "-n", ns, "-o", "name").stdout.strip() == "",
               "the CronJob's Jobs deleted with it")


@pytest.fixture(scope="module")
def bad_ns(cluster: Cluster) -> str:
    return namespace_for_test(cluster, "bad-schedules")


@pytest.mark.parametrize("args,message", [
    (["--schedule=61 * * * *"], 'spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum '
                                '(59): 61'),
    (["--schedule=@every 1x"], 'spec.schedule: Invalid value: "@every 1x": failed to parse duration @every 1x: '
                               'time: unknown unit "x" in duration "1x"'),
    (["--schedule=TZ=UTC 0 * * * *"], 'spec.schedule: Invalid value: "TZ=UTC 0 * * * *": cannot use TZ or CRON_TZ in '
                                      'schedule, use timeZone field instead'),
])
def test_bad_schedules_are_refused_with_upstream_s_422(cluster: Cluster, bad_ns: str, args: list[str],
                                                       message: str) -> None:
    r = cluster.kubectl("create", "cronjob", "bad", "-n", bad_ns, "--image=busybox", *args, check=False)
    assert r.returncode == 1
    assert r.stderr == 'error: failed to create cronjob: CronJob.batch "bad" is invalid: ' + message + "\n"
    assert cluster.kubectl("get", "cronjobs", "-n", bad_ns, "-o", "name").stdout.strip() == ""


def test_server_dry_runs_store_nothing(cluster: Cluster, bad_ns: str) -> None:
    """`kubectl create cronjob/job --dry-run=server`: the defaulted object back, nothing stored."""
    out = cluster.kubectl("create", "cronjob", "dry", "-n", bad_ns, "--image=busybox", "--schedule=@hourly",
                          "--dry-run=server", "-o", "json").stdout
    cj = json.loads(out)
    assert (cj["spec"]["schedule"], cj["spec"]["concurrencyPolicy"], cj["spec"]["successfulJobsHistoryLimit"]) == \
        ("@hourly", "Allow", 3)
    assert cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"
    assert cluster.kubectl("get", "cronjobs", "-n", bad_ns, "-o", "name").stdout.strip() == ""


def test_bad_time_zone_is_refused(cluster: Cluster, ns: str) -> None:
    cj = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "tz", "namespace": ns},
          "spec": {"schedule": "0 * * * *", "timeZone": "Mars/Olympus_Mons",
                   "jobTemplate": {"spec": {"template": {"spec": {
                       "restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}}}}
    r = cluster.kubectl("apply", "-f", "-", input=json.dumps(cj), check=False)
    assert r.returncode == 1
    assert ('The CronJob "tz" is invalid: spec.timeZone: Invalid value: "Mars/Olympus_Mons": '
            'unknown time zone Mars/Olympus_Mons') in r.stderr, r.stderr
    cj["spec"]["timeZone"] = "Europe/Rome"
    assert cluster.kubectl("apply", "-f", "-", input=json.dumps(cj)).stdout.strip() == "cronjob.batch/tz created"
    row = cluster.kubectl("get", "cronjobs", "tz", "-n", ns, "--no-headers").stdout.split()
    assert row[:8] == ["tz", "0", "*", "*", "*", "*", "Europe/Rome", "False"]
