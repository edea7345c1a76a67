"""Jobs. Upstream: pkg/registry/batch/job (strategy.go)."""
from __future__ import annotations

from ....api import labels
from ....api.defaulting import batch as defaults
from ....api.resources import STATUS
from ....api.validation import batch as validation
from ...tables import batch as tables
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import Obj, Strategy

# batch.LegacyJobNameLabel, JobNameLabel, LegacyControllerUidLabel, ControllerUidLabel.
JOB_NAME_LABELS = ("job-name", "batch.kubernetes.io/job-name")
CONTROLLER_UID_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid")
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"


def generate_selector(job: Obj) -> None:
    """Upstream: generateSelector — label the template with the job's name and uid (both the
    legacy and the batch.kubernetes.io keys, unless the user set them: validation then
    judges a conflict) and select the batch.kubernetes.io/controller-uid label."""
    meta, spec = job["metadata"], job.setdefault("spec", {})
    template = spec.get("template")
    if not isinstance(template, dict):
        template = spec["template"] = {}
    tmeta = template.get("metadata")
    if not isinstance(tmeta, dict):
        tmeta = template["metadata"] = {}
    tlabels = tmeta.get("labels")
    if not isinstance(tlabels, dict):
        tlabels = tmeta["labels"] = {}
    for key in JOB_NAME_LABELS:
        tlabels.setdefault(key, meta.get("name", ""))
    for key in CONTROLLER_UID_LABELS:
        tlabels.setdefault(key, meta.get("uid", ""))
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        selector = spec["selector"] = {}
    match = selector.get("matchLabels")
    if not isinstance(match, dict):
        match = selector["matchLabels"] = {}
    match.setdefault(CONTROLLER_UID_LABEL, meta.get("uid", ""))


class JobStrategy(Strategy):
    has_status = True
    sets_generation = True

    def prepare_for_create(self, obj: Obj) -> None:
        """Upstream: jobStrategy.PrepareForCreate (generateSelectorIfNeeded, status reset,
        generation 1)."""
        if not (obj.get("spec") or {}).get("manualSelector"):
            generate_selector(obj)
            # Upstream decodes every read from etcd with SetDefaults_Job, which copies the
            # now generated template labels into empty object labels: what clients see.
            tlabels = obj["spec"]["template"]["metadata"]["labels"]
            if not obj["metadata"].get("labels"):
                obj["metadata"]["labels"] = dict(tlabels)
        super().prepare_for_create(obj)


# Upstream: the batch/v1 Job field label conversion and JobToSelectableFields.
JOB_FIELDS = {**labels.META_FIELDS,
              "status.successful": lambda o: str((o.get("status") or {}).get("succeeded") or 0)}

JOBS = register(ResourceDefinition(
    "batch", "v1", "Job", "jobs", "job", True, "io.k8s.api.batch.v1.Job",
    categories=("all",), subresources=(STATUS("Job"),),
    strategy=JobStrategy(),
    defaulter=defaults.set_defaults_job, defaults_outside_spec=True,
    validate=validation.validate_job, validate_update=validation.validate_job_update,
    validate_status_update=validation.validate_job_status_update,
    warnings=validation.job_warnings,
    columns=tables.job_columns, printer=tables.print_job,
    field_selectors=JOB_FIELDS,
))
