"""The workload kinds of issue 11 through the in-process API server: the strategies (status
reset, generation, Job's generated selector, DaemonSet templateGeneration, PodTemplate
generation), /status and /scale, field selectors, and the printers' rows.

Upstream: pkg/registry/{apps,batch,core}/<kind>/strategy.go, printers.go (printJob, printCronJob,
printStatefulSet, printDaemonSet, printReplicationController, printPodTemplate,
printControllerRevision).
"""
from __future__ import annotations

from typing import Any

from kubeplane.apiserver.tables import apps as apps_tables
from kubeplane.apiserver.tables import batch as batch_tables
from kubeplane.apiserver.tables import core_controllers as core_tables

NS = "/namespaces/default"
JOBS = f"/apis/batch/v1{NS}/jobs"
CRONJOBS = f"/apis/batch/v1{NS}/cronjobs"
STS = f"/apis/apps/v1{NS}/statefulsets"
DS = f"/apis/apps/v1{NS}/daemonsets"
RCS = f"/api/v1{NS}/replicationcontrollers"
PTS = f"/api/v1{NS}/podtemplates"
MERGE = {"content-type": "application/merge-patch+json"}
NOW = 1_700_000_000.0
CREATED = "2023-11-14T19:12:20Z"               # 3h1m before NOW


def _pod_spec(restart: str = "Always") -> dict[str, Any]:
    return {"containers": [{"name": "pi", "image": "perl:5.34.0"}], "restartPolicy": restart}


def _job(name: str = "pi", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"template": {"spec": _pod_spec("Never")}, **spec}}


async def test_job_create_generates_selector_labels_and_resets_status(api: Any) -> None:
    body = _job()
    body["status"] = {"succeeded": 3}
    r = await api.create(JOBS, body)
    assert r.status == 201, r.json
    job = r.json
    uid = job["metadata"]["uid"]
    want = {"controller-uid": uid, "batch.kubernetes.io/controller-uid": uid,
            "job-name": "pi", "batch.kubernetes.io/job-name": "pi"}
    assert job["spec"]["template"]["metadata"]["labels"] == want
    assert job["metadata"]["labels"] == want
    assert job["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert job["spec"]["manualSelector"] is False and job["spec"]["backoffLimit"] == 6
    assert "status" not in job
    assert job["metadata"]["generation"] == 1


async def test_job_update_and_status(api: Any) -> None:
    await api.create(JOBS, _job())
    r = await api.call("PATCH", f"{JOBS}/pi", body={"spec": {"parallelism": 2}, "status": {"active": 2}}, headers=MERGE)
    assert r.status == 200, r.json
    assert r.json["metadata"]["generation"] == 2 and "active" not in (r.json.get("status") or {})
    r = await api.call("PATCH", f"{JOBS}/pi/status", body={"status": {"succeeded": 1}, "spec": {"parallelism": 9}},
                       headers=MERGE)
    assert r.status == 200, r.json
    assert r.json["status"]["succeeded"] == 1 and r.json["spec"]["parallelism"] == 2
    r = await api.call("PATCH", f"{JOBS}/pi", body={"spec": {"completions": 4}}, headers=MERGE)
    assert r.status == 422 and "spec.completions: Invalid value: 4: field is immutable" in r.json["message"]


async def test_job_field_selector_status_successful(api: Any) -> None:
    await api.create(JOBS, _job("a"))
    await api.create(JOBS, _job("b"))
    await api.call("PATCH", f"{JOBS}/b/status", body={"status": {"succeeded": 1}}, headers=MERGE)
    names = lambda r: [o["metadata"]["name"] for o in r.json["items"]]  # noqa: E731
    assert names(await api.get(JOBS, {"fieldSelector": "status.successful=1"})) == ["b"]
    assert names(await api.get(JOBS, {"fieldSelector": "status.successful=0"})) == ["a"]
    r = await api.get(JOBS, {"fieldSelector": "spec.parallelism=1"})
    assert r.status == 400, r.json


async def test_job_restart_policy_refused_with_upstream_s_message(api: Any) -> None:
    body = _job()
    body["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    r = await api.create(JOBS, body)
    assert r.status == 422
    assert r.json["message"] == 'Job.batch "pi" is invalid: spec.template.spec.restartPolicy: Required value: ' \
                                'valid values: "OnFailure", "Never"'


async def test_cron_job_schedule_refused(api: Any) -> None:
    body = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "hello"},
            "spec": {"schedule": "61 * * * *", "jobTemplate": {"spec": {"template": {"spec": _pod_spec("OnFailure")}}}}}
    r = await api.create(CRONJOBS, body)
    assert r.status == 422
    assert r.json["message"] == 'CronJob.batch "hello" is invalid: spec.schedule: Invalid value: "61 * * * *": ' \
                                'end of range (61) above maximum (59): 61'
    body["spec"]["schedule"] = "*/5 * * * *"
    r = await api.create(CRONJOBS, body)
    assert r.status == 201 and r.json["spec"]["concurrencyPolicy"] == "Allow"


def _sts() -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"},
            "spec": {"selector": {"matchLabels": {"app": "nginx"}}, "serviceName": "nginx", "replicas": 2,
                     "template": {"metadata": {"labels": {"app": "nginx"}}, "spec": _pod_spec()}}}


async def test_stateful_set_scale_and_generation(api: Any) -> None:
    body = _sts()
    body["status"] = {"replicas": 7}
    r = await api.create(STS, body)
    assert r.status == 201, r.json
    assert r.json["metadata"]["generation"] == 1
    assert r.json["status"] == {"availableReplicas": 0, "replicas": 0}        # StatefulSetStatus{} as Go writes it
    scale = (await api.get(f"{STS}/web/scale")).json
    assert scale["spec"]["replicas"] == 2 and scale["status"]["selector"] == "app=nginx"
    r = await api.call("PATCH", f"{STS}/web/scale", body={"spec": {"replicas": 5}}, headers=MERGE)
    assert r.status == 200 and r.json["spec"]["replicas"] == 5
    sts = (await api.get(f"{STS}/web")).json
    assert sts["spec"]["replicas"] == 5 and sts["metadata"]["generation"] == 2
    r = await api.call("PATCH", f"{STS}/web", body={"spec": {"serviceName": "other"}}, headers=MERGE)
    assert r.status == 422 and "updates to statefulset spec for fields other than" in r.json["message"]


async def test_daemon_set_template_generation_annotation(api: Any) -> None:
    body = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "fluentd"},
            "spec": {"selector": {"matchLabels": {"app": "f"}},
                     "template": {"metadata": {"labels": {"app": "f"}}, "spec": _pod_spec()}}}
    r = await api.create(DS, body)
    assert r.status == 201, r.json
    assert r.json["metadata"]["annotations"] == {"deprecated.daemonset.template.generation": "1"}
    assert r.json["status"] == {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0,
                                "numberReady": 0}
    r = await api.call("PATCH", f"{DS}/fluentd", body={"spec": {"minReadySeconds": 3}}, headers=MERGE)
    assert r.json["metadata"]["annotations"]["deprecated.daemonset.template.generation"] == "1"
    assert r.json["metadata"]["generation"] == 2
    r = await api.call("PATCH", f"{DS}/fluentd", body={"spec": {"template": {"metadata": {"labels": {"v": "2"}}}}},
                       headers=MERGE)
    assert r.status == 200, r.json
    assert r.json["metadata"]["annotations"]["deprecated.daemonset.template.generation"] == "2"
    assert r.json["metadata"]["generation"] == 3


async def test_replication_controller_defaults_scale_and_field_selector(api: Any) -> None:
    body = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "nginx"},
            "spec": {"replicas": 3, "template": {"metadata": {"labels": {"app": "nginx"}}, "spec": _pod_spec()}}}
    r = await api.create(RCS, body)
    assert r.status == 201, r.json
    assert r.json["spec"]["selector"] == {"app": "nginx"} and r.json["metadata"]["labels"] == {"app": "nginx"}
    assert r.json["status"] == {"replicas": 0}
    scale = (await api.get(f"{RCS}/nginx/scale")).json
    assert scale["status"]["selector"] == "app=nginx" and scale["spec"]["replicas"] == 3
    await api.call("PATCH", f"{RCS}/nginx/status", body={"status": {"replicas": 3}}, headers=MERGE)
    r = await api.get(RCS, {"fieldSelector": "status.replicas=3"})
    assert [o["metadata"]["name"] for o in r.json["items"]] == ["nginx"]
    r = await api.get(RCS, {"fieldSelector": "status.replicas=1"})
    assert r.json["items"] == []


async def test_pod_template_generation_follows_the_template(api: Any) -> None:
    body = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "pt"}, "template": {"spec": _pod_spec()}}
    r = await api.create(PTS, body)
    assert r.status == 201 and r.json["metadata"]["generation"] == 1
    assert r.json["template"]["spec"]["dnsPolicy"] == "ClusterFirst"
    r = await api.call("PATCH", f"{PTS}/pt", body={"metadata": {"labels": {"a": "b"}}}, headers=MERGE)
    assert r.json["metadata"]["generation"] == 1
    r = await api.call("PATCH", f"{PTS}/pt", body={"template": {"metadata": {"labels": {"a": "b"}}}}, headers=MERGE)
    assert r.json["metadata"]["generation"] == 2


def test_print_job() -> None:
    job = {"metadata": {"name": "pi", "creationTimestamp": CREATED},
           "spec": {"completions": 3, "parallelism": 1, "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}},
                    "template": {"spec": {"containers": [{"name": "pi", "image": "perl"}]}}},
           "status": {"succeeded": 1, "startTime": CREATED}}
    row, _ = batch_tables.print_job(job, NOW)
    assert row == ["pi", "Running", "1/3", "3h1m", "3h1m", "pi", "perl", "batch.kubernetes.io/controller-uid=u"]
    job["status"].update(conditions=[{"type": "Complete", "status": "True"}], completionTime="2023-11-14T19:14:20Z")
    assert batch_tables.print_job(job, NOW)[0][1:4] == ["Complete", "1/3", "2m"]
    parallel = {"metadata": {"name": "p"}, "spec": {"parallelism": 4}, "status": {}}
    assert batch_tables.print_job(parallel, NOW)[0][1:4] == ["Running", "0/1 of 4", ""]
    suspended = {"metadata": {"name": "s"}, "spec": {"completions": 1},
                 "status": {"conditions": [{"type": "Suspended", "status": "True"}]}}
    assert batch_tables.print_job(suspended, NOW)[0][1] == "Suspended"


def test_print_cron_job() -> None:
    cj = {"metadata": {"name": "hello", "creationTimestamp": CREATED},
          "spec": {"schedule": "*/1 * * * *", "suspend": False,
                   "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "h", "image": "busybox"}]}}}}},
          "status": {"active": [{"name": "x"}], "lastScheduleTime": "2023-11-14T22:12:20Z"}}
    assert batch_tables.print_cron_job(cj, NOW)[0] == ["hello", "*/1 * * * *", "<none>", "False", 1, "60s", "3h1m",
                                                       "h", "busybox", "<none>"]
    cj["spec"]["timeZone"] = "Etc/UTC"
    del cj["status"]["lastScheduleTime"]
    assert batch_tables.print_cron_job(cj, NOW)[0][2:6] == ["Etc/UTC", "False", 1, "<none>"]


def test_print_apps_kinds() -> None:
    sts = {"metadata": {"name": "web", "creationTimestamp": CREATED}, "spec": {"replicas": 3, "template": {
        "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}]}}}, "status": {"readyReplicas": 2}}
    assert apps_tables.print_stateful_set(sts, NOW)[0] == ["web", "2/3", "3h1m", "nginx", "nginx:1.25"]
    ds = {"metadata": {"name": "f", "creationTimestamp": CREATED},
          "spec": {"selector": {"matchLabels": {"app": "f"}},
                   "template": {"spec": {"nodeSelector": {"os": "linux"}, "containers": [{"name": "f", "image": "fl"}]}}},
          "status": {"desiredNumberScheduled": 2, "currentNumberScheduled": 2, "numberReady": 1,
                     "updatedNumberScheduled": 2, "numberAvailable": 1}}
    assert apps_tables.print_daemon_set(ds, NOW)[0] == ["f", 2, 2, 1, 2, 1, "os=linux", "3h1m", "f", "fl", "app=f"]
    cr = {"metadata": {"name": "web-6d4", "creationTimestamp": CREATED,
                       "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web",
                                            "uid": "u", "controller": True}]}, "revision": 2}
    assert apps_tables.print_controller_revision(cr, NOW)[0] == ["web-6d4", "statefulset.apps/web", 2, "3h1m"]
    del cr["metadata"]["ownerReferences"]
    assert apps_tables.print_controller_revision(cr, NOW)[0][1] == "<none>"


def test_print_core_kinds() -> None:
    rc = {"metadata": {"name": "nginx", "creationTimestamp": CREATED},
          "spec": {"replicas": 3, "selector": {"app": "nginx"},
                   "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}},
          "status": {"replicas": 3, "readyReplicas": 1}}
    assert core_tables.print_replication_controller(rc, NOW)[0] == ["nginx", 3, 3, 1, "3h1m", "nginx", "nginx", "app=nginx"]
    pt = {"metadata": {"name": "pt"}, "template": {"metadata": {"labels": {"b": "2", "a": "1"}},
                                                   "spec": {"containers": [{"name": "c", "image": "i"}]}}}
    assert core_tables.print_pod_template(pt, NOW)[0] == ["pt", "c", "i", "a=1,b=2"]
    assert [c["name"] for c in core_tables.pod_template_columns()] == ["Name", "Containers", "Images", "Pod Labels"]
