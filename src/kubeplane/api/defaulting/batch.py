"""batch/v1 Job and CronJob defaulting.

Upstream: SetDefaults_Job, SetDefaults_CronJob (pkg/apis/batch/v1/defaults.go) and the generated
walk into the pod templates. A CronJob's jobTemplate gets only its pod template's defaults (the
generated defaulter does not call SetDefaults_Job on a JobTemplateSpec).
"""
from __future__ import annotations

from typing import Any

from .. import defaults
from ..defaults import _items, _sub

Obj = dict[str, Any]
MAX_INT32 = 2**31 - 1


def set_defaults_job(job: Obj) -> None:
    """Upstream: SetDefaults_Job"""
    spec = _sub(job, "spec")
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    if spec.get("parallelism") is None:
        spec["parallelism"] = 1
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = MAX_INT32 if spec.get("backoffLimitPerIndex") is not None else 6
    template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
    meta = _sub(job, "metadata")
    if template_labels and not meta.get("labels"):
        meta["labels"] = dict(template_labels)
    if spec.get("completionMode") is None:
        spec["completionMode"] = "NonIndexed"
    if spec.get("suspend") is None:
        spec["suspend"] = False
    policy = spec.get("podFailurePolicy")
    if isinstance(policy, dict):
        for rule in _items(policy, "rules"):
            for pattern in _items(rule, "onPodConditions"):
                if not pattern.get("status"):
                    pattern["status"] = "True"
    if spec.get("podReplacementPolicy") is None:
        spec["podReplacementPolicy"] = "Failed" if policy is not None else "TerminatingOrFailed"
    if spec.get("manualSelector") is None:
        spec["manualSelector"] = False
    defaults.set_defaults_pod_template(spec)


def set_defaults_cron_job(cj: Obj) -> None:
    """Upstream: SetDefaults_CronJob"""
    spec = _sub(cj, "spec")
    if not spec.get("concurrencyPolicy"):
        spec["concurrencyPolicy"] = "Allow"
    if spec.get("suspend") is None:
        spec["suspend"] = False
    if spec.get("successfulJobsHistoryLimit") is None:
        spec["successfulJobsHistoryLimit"] = 3
    if spec.get("failedJobsHistoryLimit") is None:
        spec["failedJobsHistoryLimit"] = 1
    defaults.set_defaults_pod_template(_sub(_sub(spec, "jobTemplate"), "spec"))
