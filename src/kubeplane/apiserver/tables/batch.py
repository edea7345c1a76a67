"""Table columns and rows of Jobs and CronJobs.

Upstream: AddHandlers, printJob, printCronJob (pkg/printers/internalversion/printers.go).
"""
from __future__ import annotations

from typing import Any

from kubeplane.utils.duration import human_duration

from .columns import CONTAINERS_DOC, IMAGES_DOC, Column, _age, _col, _doc, _name
from .printers import Row, _epoch, format_label_selector, layout_container_cells, translate_timestamp_since

Obj = dict[str, Any]
_BATCH = "io.k8s.api.batch.v1."


def job_columns() -> list[Column]:
    return [
        _name(),
        _col("Status", "string", "Status of the job."),
        _col("Completions", "string", _doc(_BATCH + "JobStatus", "succeeded")),
        _col("Duration", "string", "Time required to complete the job."),
        _age(),
        _col("Containers", "string", CONTAINERS_DOC, priority=1),
        _col("Images", "string", IMAGES_DOC, priority=1),
        _col("Selector", "string", _doc(_BATCH + "JobSpec", "selector"), priority=1),
    ]


def _has_condition(status: Obj, type_: str) -> bool:
    """Upstream: hasJobCondition (status True)."""
    return any(c.get("type") == type_ and c.get("status") == "True"
               for c in status.get("conditions") or [] if isinstance(c, dict))


def job_status(job: Obj) -> str:
    """The Status column: printJob's condition ladder."""
    status = job.get("status") or {}
    if _has_condition(status, "Complete"):
        return "Complete"
    if _has_condition(status, "Failed"):
        return "Failed"
    if (job.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    for type_ in ("Suspended", "FailureTarget", "SuccessCriteriaMet"):
        if _has_condition(status, type_):
            return type_
    return "Running"


def _completions(spec: Obj, succeeded: int) -> str:
    if spec.get("completions") is not None:
        return f"{succeeded}/{spec['completions']}"
    parallelism = spec.get("parallelism") or 0
    return f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"


def _duration(status: Obj, now: float) -> str:
    start = _epoch(status.get("startTime"))
    if start is None:
        return ""
    end = _epoch(status.get("completionTime"))
    return human_duration((now if end is None else end) - start)


def print_job(job: Obj, now: float) -> Row:
    """Upstream: printJob"""
    meta, spec, status = job.get("metadata") or {}, job.get("spec") or {}, job.get("status") or {}
    names, images = layout_container_cells(((spec.get("template") or {}).get("spec") or {}).get("containers"))
    return [meta.get("name", ""), job_status(job), _completions(spec, status.get("succeeded") or 0),
            _duration(status, now), translate_timestamp_since(meta.get("creationTimestamp"), now),
            names, images, format_label_selector(spec.get("selector"))], None


def cron_job_columns() -> list[Column]:
    spec, status = _BATCH + "CronJobSpec", _BATCH + "CronJobStatus"
    return [
        _name(),
        _col("Schedule", "string", _doc(spec, "schedule")),
        _col("Timezone", "string", _doc(spec, "timeZone")),
        _col("Suspend", "boolean", _doc(spec, "suspend")),
        _col("Active", "integer", _doc(status, "active")),
        _col("Last Schedule", "string", _doc(status, "lastScheduleTime")),
        _age(),
        _col("Containers", "string", CONTAINERS_DOC, priority=1),
        _col("Images", "string", IMAGES_DOC, priority=1),
        _col("Selector", "string", _doc(_BATCH + "JobSpec", "selector"), priority=1),
    ]


def print_cron_job(cj: Obj, now: float) -> Row:
    """Upstream: printCronJob (printBoolPtr: "True"/"False", "<unset>" for a nil suspend)."""
    meta, spec, status = cj.get("metadata") or {}, cj.get("spec") or {}, cj.get("status") or {}
    job_spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    names, images = layout_container_cells(((job_spec.get("template") or {}).get("spec") or {}).get("containers"))
    last = status.get("lastScheduleTime")
    suspend = spec.get("suspend")
    return [meta.get("name", ""), spec.get("schedule", ""),
            spec["timeZone"] if spec.get("timeZone") is not None else "<none>",
            "<unset>" if suspend is None else ("True" if suspend else "False"),
            len(status.get("active") or []),
            translate_timestamp_since(last, now) if last else "<none>",
            translate_timestamp_since(meta.get("creationTimestamp"), now),
            names, images, format_label_selector(job_spec.get("selector"))], None
