"""Job and CronJob validation with upstream's messages and field paths
(pkg/apis/batch/validation/validation_test.go cases), and robfig/cron's schedule errors."""
from __future__ import annotations

import copy
from typing import Any

import pytest

from kubeplane.api.defaulting import batch as defaults
from kubeplane.api.validation import batch as v
from kubeplane.api.validation.cron import CronError, parse_standard
from kubeplane.apiserver.registry.batch.job import generate_selector

UID = "1a2b3c"


def _job(**spec: Any) -> dict[str, Any]:
    job = {"metadata": {"name": "pi", "namespace": "default", "uid": UID, "resourceVersion": "1"},
           "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "perl:5"}],
                                          "restartPolicy": "Never"}}, **spec}}
    defaults.set_defaults_job(job)
    if not job["spec"].get("manualSelector"):
        generate_selector(job)
    from kubeplane.api import defaults as pod_defaults
    pod_defaults.set_defaults_pod_template(job["spec"])
    return job


def _msgs(errs: list[Any]) -> list[str]:
    return [str(e) for e in errs]


def test_a_defaulted_job_is_valid_and_carries_the_generated_labels() -> None:
    job = _job()
    assert v.validate_job(job) == []
    labels = job["spec"]["template"]["metadata"]["labels"]
    assert labels == {"controller-uid": UID, "batch.kubernetes.io/controller-uid": UID,
                      "job-name": "pi", "batch.kubernetes.io/job-name": "pi"}
    assert job["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": UID}}


@pytest.mark.parametrize("restart,msg", [
    ("Always", 'spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"'),
    ("Sometimes", 'spec.template.spec.restartPolicy: Unsupported value: "Sometimes": '
                  'supported values: "OnFailure", "Never"'),
])
def test_restart_policy(restart: str, msg: str) -> None:
    job = _job()
    job["spec"]["template"]["spec"]["restartPolicy"] = restart
    assert msg in _msgs(v.validate_job(job))


def test_negative_counts() -> None:
    job = _job(parallelism=-1, completions=-1, backoffLimit=-1, activeDeadlineSeconds=-1)
    msgs = _msgs(v.validate_job(job))
    for key in ("parallelism", "completions", "backoffLimit", "activeDeadlineSeconds"):
        assert f"spec.{key}: Invalid value: -1: must be greater than or equal to 0" in msgs


def test_manual_selector_must_match_the_template() -> None:
    job = _job(manualSelector=True, selector={"matchLabels": {"a": "b"}})
    assert "spec.template.metadata.labels: Invalid value: null: `selector` does not match template `labels`" \
        in _msgs(v.validate_job(job)) or any("`selector` does not match template `labels`" in m
                                             for m in _msgs(v.validate_job(job)))
    job["spec"]["template"]["metadata"] = {"labels": {"a": "b"}}
    assert v.validate_job(job) == []


def test_a_user_selector_without_manual_selector_is_not_auto_generated() -> None:
    job = _job(selector={"matchLabels": {"batch.kubernetes.io/controller-uid": "other"}})
    msgs = _msgs(v.validate_job(job))
    assert any(m.startswith("spec.selector: Invalid value") and m.endswith("`selector` not auto-generated") for m in msgs)


def test_conflicting_generated_label() -> None:
    job = _job()
    job["spec"]["template"]["metadata"]["labels"]["job-name"] = "other"
    assert any(m.startswith("spec.template.metadata.labels[job-name]: Invalid value") and m.endswith("must be 'pi'")
               for m in _msgs(v.validate_job(job)))


def test_indexed_needs_completions_and_a_dns_label_hostname() -> None:
    job = _job(completionMode="Indexed", parallelism=2)
    assert "spec.completions: Required value: when completion mode is Indexed" in _msgs(v.validate_job(job))
    long = _job(completionMode="Indexed", completions=10)
    long["metadata"]["name"] = "a" * 62
    assert f'metadata.name: Invalid value: "{"a" * 62}": will not able to create pod with invalid DNS label: ' \
           f'{"a" * 62}-9' in _msgs(v.validate_job(long))


def test_backoff_limit_per_index_requires_indexed() -> None:
    job = _job(backoffLimitPerIndex=1, maxFailedIndexes=1)
    msgs = _msgs(v.validate_job(job))
    assert "spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode" in msgs
    assert "spec.maxFailedIndexes: Invalid value: 1: requires indexed completion mode" in msgs
    alone = _job(completionMode="Indexed", completions=2, maxFailedIndexes=1)
    assert "spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified" in _msgs(v.validate_job(alone))


def test_pod_failure_policy_rules() -> None:
    job = _job(podFailurePolicy={"rules": [
        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [0, 3, 2]}},
        {"action": "Ignore"},
        {"action": "Explode", "onPodConditions": [{"type": "DisruptionTarget", "status": "Maybe"}]},
        {"action": "FailIndex", "onExitCodes": {"containerName": "nope", "operator": "NotIn", "values": [1]}},
    ]})
    msgs = _msgs(v.validate_job(job))
    rules = "spec.podFailurePolicy.rules"
    assert f"{rules}[0].onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In operator" in msgs
    assert f"{rules}[0].onExitCodes.values: Invalid value: []int32{{0, 3, 2}}: must be ordered" in msgs or \
        any(m.startswith(f"{rules}[0].onExitCodes.values: Invalid value") and m.endswith("must be ordered") for m in msgs)
    assert f"{rules}[1]: Invalid value: specifying one of OnExitCodes and OnPodConditions is required" in msgs
    assert f'{rules}[2].action: Unsupported value: "Explode": supported values: "Count", "FailIndex", "FailJob", ' \
           '"Ignore"' in msgs
    assert f'{rules}[2].onPodConditions[0].status: Unsupported value: "Maybe": supported values: "False", "True", ' \
           '"Unknown"' in msgs
    assert f'{rules}[3].action: Invalid value: "FailIndex": requires the backoffLimitPerIndex to be set' in msgs
    assert f'{rules}[3].onExitCodes.containerName: Invalid value: "nope": must be one of the container or ' \
           'initContainer names in the pod template' in msgs


def test_pod_failure_policy_needs_restart_never() -> None:
    job = _job(podFailurePolicy={"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]})
    job["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    assert 'spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when ' \
           'podFailurePolicy is specified' in _msgs(v.validate_job(job))


def test_success_policy() -> None:
    job = _job(successPolicy={"rules": [{"succeededCount": 1}]})
    assert any(m.startswith("spec.successPolicy: Invalid value") and m.endswith("requires indexed completion mode")
               for m in _msgs(v.validate_job(job)))
    indexed = _job(completionMode="Indexed", completions=3,
                   successPolicy={"rules": [{}, {"succeededCount": 5}, {"succeededIndexes": "0-1", "succeededCount": 3}]})
    msgs = _msgs(v.validate_job(indexed))
    rules = "spec.successPolicy.rules"
    assert f"{rules}[0]: Required value: at least one of succeededCount or succeededIndexes must be specified" in msgs
    assert f"{rules}[1].succeededCount: Invalid value: 5: must be less than or equal to 3 (the number of " \
           "specified completions)" in msgs
    assert f"{rules}[2].succeededCount: Invalid value: 3: must be less than or equal to 2 (the number of indexes " \
           "in the specified succeededIndexes field)" in msgs


def test_update_rules() -> None:
    old = _job()
    new = copy.deepcopy(old)
    new["spec"]["completions"] = 5
    new["spec"]["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": UID, "x": "y"}}
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "perl:6"
    msgs = _msgs(v.validate_job_update(new, old))
    assert "spec.completions: Invalid value: 5: field is immutable" in msgs
    assert any(m.startswith("spec.selector: Invalid value") and m.endswith("field is immutable") for m in msgs)
    assert any(m.startswith("spec.template: Invalid value") and m.endswith("field is immutable") for m in msgs)
    new = copy.deepcopy(old)
    new["spec"]["parallelism"] = 4
    new["spec"]["suspend"] = True
    assert v.validate_job_update(new, old) == []


def test_a_suspended_job_may_change_its_scheduling_directives() -> None:
    old = _job(suspend=True)
    new = copy.deepcopy(old)
    new["spec"]["template"]["spec"]["nodeSelector"] = {"disk": "ssd"}
    new["spec"]["template"]["metadata"]["annotations"] = {"a": "b"}
    assert v.validate_job_update(new, old) == []
    started = copy.deepcopy(old)
    started["status"] = {"startTime": "2024-01-01T00:00:00Z"}
    assert v.validate_job_update(new, started) != []


def _cron(**spec: Any) -> dict[str, Any]:
    cj = {"metadata": {"name": "hello", "namespace": "default", "resourceVersion": "1"},
          "spec": {"schedule": "*/1 * * * *", "jobTemplate": {"spec": {"template": {"spec": {
              "containers": [{"name": "c", "image": "busybox:1.28"}], "restartPolicy": "OnFailure"}}}}, **spec}}
    defaults.set_defaults_cron_job(cj)
    return cj


def test_a_defaulted_cron_job_is_valid() -> None:
    assert v.validate_cron_job(_cron()) == []
    assert v.validate_cron_job(_cron(schedule="@hourly", timeZone="Europe/Berlin")) == []


@pytest.mark.parametrize("schedule,msg", [
    ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
    ("60 * * * *", "end of range (60) above maximum (59): 60"),
    ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
    ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
    ("x * * * *", 'failed to parse int from x: strconv.Atoi: parsing "x": invalid syntax'),
    ("*/0 * * * *", "step of range should be a positive number: */0"),
    ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
    ("1/2/3 * * * *", "too many slashes: 1/2/3"),
    ("@every 1x", 'failed to parse duration @every 1x: time: unknown unit "x" in duration "1x"'),
    ("@every 1", 'failed to parse duration @every 1: time: missing unit in duration "1"'),
    ("@every x", 'failed to parse duration @every x: time: invalid duration "x"'),
    ("@fortnightly", "unrecognized descriptor: @fortnightly"),
    ("99999999999999999999 * * * *", 'failed to parse int from 99999999999999999999: strconv.Atoi: parsing '
                                      '"99999999999999999999": value out of range'),
    ("TZ=Nowhere/Land 0 * * * *", "provided bad location Nowhere/Land: unknown time zone Nowhere/Land"),
])
def test_schedule_errors(schedule: str, msg: str) -> None:
    with pytest.raises(CronError) as e:
        parse_standard(schedule)
    assert str(e.value) == msg
    assert f'spec.schedule: Invalid value: "{schedule}": {msg}' in _msgs(v.validate_cron_job(_cron(schedule=schedule)))


@pytest.mark.parametrize("schedule", ["0 0 1 jan-mar mon-fri", "0,30 9-17 ? * SUN", "@every 1h30m", "15 */2 * * *"])
def test_valid_schedules(schedule: str) -> None:
    parse_standard(schedule)


def test_time_zones() -> None:
    msgs = _msgs(v.validate_cron_job(_cron(schedule="TZ=UTC 0 * * * *")))
    assert 'spec.schedule: Invalid value: "TZ=UTC 0 * * * *": cannot use TZ or CRON_TZ in schedule, use timeZone ' \
           'field instead' in msgs
    assert 'spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus' in \
        _msgs(v.validate_cron_job(_cron(timeZone="Mars/Olympus")))
    assert 'spec.timeZone: Invalid value: "": timeZone must be nil or non-empty string' in \
        _msgs(v.validate_cron_job(_cron(timeZone="")))
    assert 'spec.timeZone: Invalid value: "Local": timeZone must be an explicit time zone as defined in ' \
           'https://www.iana.org/time-zones' in _msgs(v.validate_cron_job(_cron(timeZone="Local")))
    old = _cron(schedule="TZ=UTC 0 * * * *")
    assert v.validate_cron_job_update(_cron(schedule="TZ=UTC 5 * * * *"), old) == []   # kept from before


def test_cron_job_name_and_template_rules() -> None:
    long = _cron()
    long["metadata"]["name"] = "a" * 53
    assert f'metadata.name: Invalid value: "{"a" * 53}": must be no more than 52 characters' in \
        _msgs(v.validate_cron_job(long))
    cj = _cron(concurrencyPolicy="Sometimes")
    cj["spec"]["jobTemplate"]["spec"]["selector"] = {"matchLabels": {"a": "b"}}
    cj["spec"]["jobTemplate"]["spec"]["manualSelector"] = True
    msgs = _msgs(v.validate_cron_job(cj))
    assert 'spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"' in msgs
    assert any(m.startswith("spec.jobTemplate.spec.selector: Invalid value") and
               m.endswith("`selector` will be auto-generated") for m in msgs)
    assert 'spec.jobTemplate.spec.manualSelector: Unsupported value: true: supported values: "nil", "false"' in msgs
    cj = _cron()
    cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    assert 'spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"' \
        in _msgs(v.validate_cron_job(cj))


def test_missing_generated_label_and_empty_enums() -> None:
    job = _job()
    del job["spec"]["template"]["metadata"]["labels"]["batch.kubernetes.io/controller-uid"]
    assert f"spec.template.metadata.labels[batch.kubernetes.io/controller-uid]: Required value: must be '{UID}'" \
        in _msgs(v.validate_job(job))
    job = _job(podFailurePolicy={"rules": [{"onExitCodes": {"values": [1]}},
                                           {"action": "Ignore", "onPodConditions": [{"type": "X"}]}]})
    assert job["spec"]["podFailurePolicy"]["rules"][1]["onPodConditions"][0]["status"] == "True"   # defaulted
    job["spec"]["podFailurePolicy"]["rules"][1]["onPodConditions"][0]["status"] = ""
    msgs = _msgs(v.validate_job(job))
    rules = "spec.podFailurePolicy.rules"
    assert f'{rules}[0].action: Required value: valid values: ["Count" "FailIndex" "FailJob" "Ignore"]' in msgs
    assert f'{rules}[0].onExitCodes.operator: Required value: valid values: ["In" "NotIn"]' in msgs
    assert f'{rules}[1].onPodConditions[0].status: Required value: valid values: ["False" "True" "Unknown"]' in msgs


def test_indexed_jobs_above_the_completions_soft_limit() -> None:
    job = _job(completionMode="Indexed", completions=200_000, parallelism=20_000, backoffLimitPerIndex=1)
    msgs = _msgs(v.validate_job(job))
    assert "spec.maxFailedIndexes: Required value: must be specified when completions is above 100000" in msgs
    assert "spec.parallelism: Invalid value: 20000: must be less than or equal to 10000 when completions are above " \
           "100000 and used with backoff limit per index" in msgs
