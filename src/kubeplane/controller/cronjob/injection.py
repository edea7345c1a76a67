"""The CronJob controller's writes, behind small interfaces the tests replace.

Upstream: pkg/controller/cronjob/injection.go (cjControlInterface, jobControlInterface and
their real and fake implementations).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ...api import errors
from ...api.types import batch_v1

if TYPE_CHECKING:
    from ...client.clientset import Clientset


class CJControlInterface(Protocol):
    async def get_cron_job(self, namespace: str, name: str) -> batch_v1.CronJob: ...

    async def update_status(self, cj: batch_v1.CronJob) -> batch_v1.CronJob: ...


class JobControlInterface(Protocol):
    async def get_job(self, namespace: str, name: str) -> batch_v1.Job: ...

    async def create_job(self, namespace: str, job: batch_v1.Job) -> batch_v1.Job: ...

    async def delete_job(self, namespace: str, name: str) -> None: ...


class RealCJControl:
    def __init__(self, client: Clientset) -> None:
        self.client = client

    async def get_cron_job(self, namespace: str, name: str) -> batch_v1.CronJob:
        return await self.client.batch_v1().cronjobs(namespace).get(name)

    async def update_status(self, cj: batch_v1.CronJob) -> batch_v1.CronJob:
        return await self.client.batch_v1().cronjobs(cj.metadata.namespace or "").update_status(cj)


class RealJobControl:
    def __init__(self, client: Clientset) -> None:
        self.client = client

    async def get_job(self, namespace: str, name: str) -> batch_v1.Job:
        return await self.client.batch_v1().jobs(namespace).get(name)

    async def create_job(self, namespace: str, job: batch_v1.Job) -> batch_v1.Job:
        return await self.client.batch_v1().jobs(namespace).create(job)

    async def delete_job(self, namespace: str, name: str) -> None:
        """Background propagation: the garbage collector removes the Job's pods."""
        await self.client.batch_v1().jobs(namespace).delete(name, propagation_policy="Background")


class FakeCJControl:
    """Records status updates; get returns `cron_job`. Upstream: fakeCJControl"""

    def __init__(self, cron_job: batch_v1.CronJob | None = None) -> None:
        self.cron_job = cron_job
        self.updates: list[batch_v1.CronJob] = []

    async def get_cron_job(self, namespace: str, name: str) -> batch_v1.CronJob:
        if self.cron_job is None:
            raise errors.NotFound("batch", "cronjobs", name)
        return self.cron_job

    async def update_status(self, cj: batch_v1.CronJob) -> batch_v1.CronJob:
        self.updates.append(cj.deep_copy())
        return cj


class FakeJobControl:
    """Records creates and deletes; `create_err` fails creates, `err` gets and deletes; get
    returns `job`. Upstream: fakeJobControl"""

    def __init__(self, job: batch_v1.Job | None = None, *, create_err: Exception | None = None,
                 err: Exception | None = None) -> None:
        self.job = job
        self.create_err = create_err
        self.err = err
        self.jobs: list[batch_v1.Job] = []
        self.delete_job_name: list[str] = []

    async def get_job(self, namespace: str, name: str) -> batch_v1.Job:
        if self.err is not None:
            raise self.err
        if self.job is None:
            raise errors.NotFound("batch", "jobs", name)
        return self.job

    async def create_job(self, namespace: str, job: batch_v1.Job) -> batch_v1.Job:
        if self.create_err is not None:
            raise self.create_err
        self.jobs.append(job.deep_copy())
        job.metadata.uid = "test-uid"
        return job

    async def delete_job(self, namespace: str, name: str) -> None:
        if self.err is not None:
            raise self.err
        self.delete_job_name.append(name)
