"""The CronJob controller's metric, registered once in prometheus_client's default REGISTRY.

    cronjob_controller_job_creation_skew_duration_seconds    scheduled time -> Job created, 1 s .. 512 s

Upstream: pkg/controller/cronjob/metrics/metrics.go (CronJobCreationSkew; name, help, buckets; STABLE).
"""
from __future__ import annotations

from prometheus_client import Histogram

CRON_JOB_CREATION_SKEW = Histogram(
    "cronjob_controller_job_creation_skew_duration_seconds",
    "[STABLE] Time between when a cronjob is scheduled to be run, and when the corresponding job is created",
    buckets=[2.0 ** i for i in range(10)])                # Upstream: ExponentialBuckets(1, 2, 10)
