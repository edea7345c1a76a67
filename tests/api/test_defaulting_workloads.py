"""SetDefaults_StatefulSet/DaemonSet/Job/CronJob/ReplicationController and the pod-template walks,
as upstream's defaults_test.go tables expect (pkg/apis/{apps,batch,core}/v1/defaults_test.go)."""
from __future__ import annotations

from typing import Any

from kubeplane.api.defaulting import apps, batch, core_controllers

TEMPLATE = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}


def _template() -> dict[str, Any]:
    return {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}


def test_stateful_set_defaults() -> None:
    sts: dict[str, Any] = {"spec": {"template": _template(),
                                    "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {}}]}}
    apps.set_defaults_stateful_set(sts)
    spec = sts["spec"]
    assert spec["podManagementPolicy"] == "OrderedReady"
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    assert (spec["replicas"], spec["revisionHistoryLimit"]) == (1, 10)
    assert spec["template"]["spec"]["restartPolicy"] == "Always"
    assert spec["template"]["spec"]["containers"][0]["imagePullPolicy"] == "Always"   # untagged: latest
    claim = spec["volumeClaimTemplates"][0]
    assert claim["spec"]["volumeMode"] == "Filesystem" and claim["status"] == {"phase": "Pending"}


def test_stateful_set_on_delete_gets_no_rolling_update_and_values_are_kept() -> None:
    sts: dict[str, Any] = {"spec": {"updateStrategy": {"type": "OnDelete"}, "replicas": 0,
                                    "podManagementPolicy": "Parallel", "template": _template()}}
    apps.set_defaults_stateful_set(sts)
    assert sts["spec"]["updateStrategy"] == {"type": "OnDelete"}
    assert (sts["spec"]["replicas"], sts["spec"]["podManagementPolicy"]) == (0, "Parallel")


def test_stateful_set_partition_is_defaulted_in_a_given_rolling_update() -> None:
    sts: dict[str, Any] = {"spec": {"updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {}}}}
    apps.set_defaults_stateful_set(sts)
    assert sts["spec"]["updateStrategy"]["rollingUpdate"] == {"partition": 0}


def test_daemon_set_defaults() -> None:
    ds: dict[str, Any] = {"spec": {"template": _template()}}
    apps.set_defaults_daemon_set(ds)
    assert ds["spec"]["updateStrategy"] == {"type": "RollingUpdate",
                                            "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}
    assert ds["spec"]["revisionHistoryLimit"] == 10
    ondelete: dict[str, Any] = {"spec": {"updateStrategy": {"type": "OnDelete"}}}
    apps.set_defaults_daemon_set(ondelete)
    assert ondelete["spec"]["updateStrategy"] == {"type": "OnDelete"}


def test_job_defaults_non_parallel() -> None:
    job: dict[str, Any] = {"metadata": {}, "spec": {"template": _template()}}
    batch.set_defaults_job(job)
    spec = job["spec"]
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 6)
    assert (spec["completionMode"], spec["suspend"], spec["manualSelector"]) == ("NonIndexed", False, False)
    assert spec["podReplacementPolicy"] == "TerminatingOrFailed"
    assert job["metadata"]["labels"] == {"app": "x"}          # from the template


def test_job_defaults_parallel_and_per_index() -> None:
    job: dict[str, Any] = {"metadata": {"labels": {"own": "1"}},
                           "spec": {"parallelism": 3, "backoffLimitPerIndex": 1,
                                    "podFailurePolicy": {"rules": [{"action": "Ignore",
                                                                    "onPodConditions": [{"type": "DisruptionTarget"}]}]},
                                    "template": _template()}}
    batch.set_defaults_job(job)
    spec = job["spec"]
    assert "completions" not in spec and spec["parallelism"] == 3
    assert spec["backoffLimit"] == 2**31 - 1
    assert spec["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"] == "True"
    assert spec["podReplacementPolicy"] == "Failed"
    assert job["metadata"]["labels"] == {"own": "1"}


def test_cron_job_defaults_leave_the_job_template_spec_alone() -> None:
    cj: dict[str, Any] = {"spec": {"schedule": "* * * * *", "jobTemplate": {"spec": {"template": _template()}}}}
    batch.set_defaults_cron_job(cj)
    spec = cj["spec"]
    assert (spec["concurrencyPolicy"], spec["suspend"]) == ("Allow", False)
    assert (spec["successfulJobsHistoryLimit"], spec["failedJobsHistoryLimit"]) == (3, 1)
    job_spec = spec["jobTemplate"]["spec"]
    assert "backoffLimit" not in job_spec and "completions" not in job_spec
    assert job_spec["template"]["spec"]["dnsPolicy"] == "ClusterFirst"


def test_replication_controller_selector_and_labels_from_the_template() -> None:
    rc: dict[str, Any] = {"metadata": {}, "spec": {"template": _template()}}
    core_controllers.set_defaults_replication_controller(rc)
    assert rc["spec"]["selector"] == {"app": "x"} and rc["metadata"]["labels"] == {"app": "x"}
    assert rc["spec"]["replicas"] == 1
    own: dict[str, Any] = {"metadata": {"labels": {"a": "b"}}, "spec": {"selector": {"s": "t"}, "template": _template()}}
    core_controllers.set_defaults_replication_controller(own)
    assert own["spec"]["selector"] == {"s": "t"} and own["metadata"]["labels"] == {"a": "b"}


def test_replication_controller_without_template_stays_without() -> None:
    rc: dict[str, Any] = {"metadata": {}, "spec": {}}
    core_controllers.set_defaults_replication_controller(rc)
    assert rc == {"metadata": {}, "spec": {"replicas": 1}}


def test_pod_template_defaults_its_pod_spec() -> None:
    pt: dict[str, Any] = {"template": _template()}
    core_controllers.set_defaults_pod_template(pt)
    assert pt["template"]["spec"]["terminationGracePeriodSeconds"] == 30
