"""The controller every CertificateSigningRequest handler runs in: the CSR informer feeds a
rate-limited queue of names, and each worker hands a copy of a CSR that has no certificate yet
to the handler (the approver's or a signer's).

Upstream: pkg/controller/certificates/certificate_controller.go (NewCertificateController,
processNextWorkItem, syncFunc) and certificate_controller_utils.go (IsCertificateRequestApproved,
HasTrueCondition, GetCertApprovalCondition).
"""
from __future__ import annotations

import logging
from typing import Any, Awaitable, Callable

from ...api import errors
from ...api.types import certificates_v1
from ...client.clientset import Clientset
from ...client.informers import ResourceInformer
from ...client.listers import CertificateSigningRequestLister
from ...client.tools.cache import DeletedFinalStateUnknown, ResourceEventHandlerFuncs
from ...client.util.workqueue import RateLimitingQueue, RateLimitingQueueOptions
from ...client.util.workqueue.default_rate_limiters import (
    BucketRateLimiter, ItemExponentialFailureRateLimiter, MaxOfRateLimiter,
)
from ...client.util.workqueue.worker import process_next_work_item, run_workers
from ...utils.clock import REAL_CLOCK, Clock

log = logging.getLogger(__name__)

CSR = certificates_v1.CertificateSigningRequest
Handler = Callable[[CSR], Awaitable[None]]


class IgnorableError(Exception):
    """A failure retried with back-off but logged quietly (a CSR the approver recognised but
    may not approve). Upstream: ignorableError"""


class CertificateController:
    def __init__(self, name: str, client: Clientset, csr_informer: ResourceInformer[CertificateSigningRequestLister],
                 handler: Handler, *, clock: Clock = REAL_CLOCK) -> None:
        self.name, self.client, self.handler = name, client, handler
        # Upstream: 200 ms doubling to 1000 s per CSR, at most 10 retries a second overall.
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(RateLimitingQueueOptions(
            name="certificate", clock=clock,
            rate_limiter=MaxOfRateLimiter(ItemExponentialFailureRateLimiter(0.2, 1000.0),
                                          BucketRateLimiter(qps=10.0, burst=100, clock=clock))))
        self.csr_lister = csr_informer.lister()
        self.csr_informer = csr_informer.informer()
        self.csr_informer.add_event_handler(ResourceEventHandlerFuncs(
            add_func=self.enqueue, update_func=lambda old, new: self.enqueue(new), delete_func=self.enqueue))

    def enqueue(self, obj: Any) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            obj = obj.obj
        self.queue.add(obj.metadata.name)

    async def run(self, workers: int = 1) -> None:
        """Upstream: Run (kube-controller-manager starts the approver and each signer with 5 workers)."""
        log.info("Starting certificate controller", extra={"controller": self.name})
        await run_workers(self.queue, (self.csr_informer,), self.worker, workers)

    async def worker(self) -> None:
        while await process_next_work_item(self.queue, self.sync_func, self.handle_err):
            pass

    def handle_err(self, err: Exception | None, key: str) -> None:
        """Upstream: processNextWorkItem — an ignorable error is retried like any other, but only
        logged at debug level."""
        if err is None:
            self.queue.forget(key)
            return
        self.queue.add_rate_limited(key)
        if isinstance(err, IgnorableError):
            log.debug("Sync certificate request failed", extra={"csr": key, "err": str(err)})
        else:
            log.warning("Sync %s failed with : %s", key, err)

    async def sync_func(self, key: str) -> None:
        """Upstream: syncFunc — nothing to do for a deleted CSR or one that has its certificate;
        the handler gets a copy (the cache's object is never modified)."""
        try:
            csr = self.csr_lister.get(key)
        except errors.NotFound:
            return
        if csr.status is not None and csr.status.certificate:
            return
        await self.handler(csr.deep_copy())


def _conditions(csr: CSR) -> list[certificates_v1.CertificateSigningRequestCondition]:
    return list((csr.status.conditions if csr.status else None) or [])


def get_cert_approval_condition(csr: CSR) -> tuple[bool, bool]:
    """(approved, denied). Upstream: GetCertApprovalCondition"""
    approved = denied = False
    for c in _conditions(csr):
        if c.type == "Approved":
            approved = True
        if c.type == "Denied":
            denied = True
    return approved, denied


def is_certificate_request_approved(csr: CSR) -> bool:
    """Approved and not denied. Upstream: IsCertificateRequestApproved"""
    approved, denied = get_cert_approval_condition(csr)
    return approved and not denied


def has_true_condition(csr: CSR, condition_type: str) -> bool:
    """Upstream: HasTrueCondition"""
    return any(c.type == condition_type and (c.status or "True") == "True" for c in _conditions(csr))
