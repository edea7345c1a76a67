"""CronJobs. Upstream: pkg/registry/batch/cronjob (strategy.go)."""
from __future__ import annotations

from ....api.defaulting import batch as defaults
from ....api.resources import STATUS
from ....api.validation import batch as validation
from ...tables import batch as tables
from ..definition import ResourceDefinition
from ..registry import register
from ..strategy import Strategy


class CronJobStrategy(Strategy):
    has_status = True
    sets_generation = True


CRONJOBS = register(ResourceDefinition(
    "batch", "v1", "CronJob", "cronjobs", "cronjob", True, "io.k8s.api.batch.v1.CronJob",
    short_names=("cj",), categories=("all",), subresources=(STATUS("CronJob"),),
    strategy=CronJobStrategy(),
    defaulter=defaults.set_defaults_cron_job,
    validate=validation.validate_cron_job, validate_update=validation.validate_cron_job_update,
    validate_status_update=validation.validate_cron_job_status_update,
    warnings=validation.cron_job_warnings,
    columns=tables.cron_job_columns, printer=tables.print_cron_job,
))
