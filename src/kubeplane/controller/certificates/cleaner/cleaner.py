"""The CSR cleaner: every hour, CertificateSigningRequests that are done with are deleted —
issued an hour after approval, denied or failed an hour after that condition, pending (no
condition) a day after creation, and any whose issued certificate has expired.

    cleaner = CSRCleanerController(clientset, factory.certificates_v1().certificatesigningrequests(), clock=clock)
    factory.start()
    await cleaner.run()

Upstream: pkg/controller/certificates/cleaner/cleaner.go (CSRCleanerController, handle and its
is*PastDeadline checks, isIssuedExpired).
"""
from __future__ import annotations

import base64
import binascii
import logging
from typing import Any

from cryptography import x509

from ....api import errors
from ....client.clientset import Clientset
from ....client.informers import ResourceInformer
from ....client.listers import CertificateSigningRequestLister
from ....utils.clock import REAL_CLOCK, Clock, parse_rfc3339

log = logging.getLogger(__name__)

POLLING_INTERVAL = 3600.0            # pollingInterval
APPROVED_EXPIRATION = 3600.0         # approvedExpiration
DENIED_EXPIRATION = 3600.0           # deniedExpiration (also for Failed)
PENDING_EXPIRATION = 24 * 3600.0     # pendingExpiration


class CSRCleanerController:
    def __init__(self, clientset: Clientset, csrs: ResourceInformer[CertificateSigningRequestLister], *,
                 clock: Clock = REAL_CLOCK) -> None:
        self.clientset = clientset
        self.clock = clock
        self.lister = csrs.lister()
        self.informer = csrs.informer()

    async def run(self) -> None:
        """Upstream: Run (one worker, every pollingInterval)."""
        await self.informer.wait_synced()
        while True:
            await self.worker()
            await self.clock.sleep(POLLING_INTERVAL)

    async def worker(self) -> None:
        for csr in self.lister.list():
            try:
                await self.handle(csr)
            except errors.StatusError as err:
                log.error("Error while attempting to clean CSR %s: %s", csr.metadata.name, err)

    async def handle(self, csr: Any) -> None:
        """Upstream: handle"""
        now = self.clock.now()
        if (self._condition_past(csr, "Approved", APPROVED_EXPIRATION, now, issued=True)
                or self._condition_past(csr, "Denied", DENIED_EXPIRATION, now)
                or self._condition_past(csr, "Failed", DENIED_EXPIRATION, now)
                or self._pending_past_deadline(csr, now) or self._issued_expired(csr, now)):
            await self.clientset.certificates_v1().certificatesigningrequests().delete(csr.metadata.name)

    def _condition_past(self, csr: Any, kind: str, age: float, now: float, issued: bool = False) -> bool:
        """Upstream: isIssuedPastDeadline (issued=True), isDeniedPastDeadline, isFailedPastDeadline"""
        for c in _conditions(csr):
            if c.type == kind and (not issued or _certificate(csr)) and _older_than(c.last_update_time, age, now):
                log.info("Cleaning CSR as it is more than %s s old and %s.", int(age), kind.lower(),
                         extra={"csr": csr.metadata.name})
                return True
        return False

    def _pending_past_deadline(self, csr: Any, now: float) -> bool:
        """No condition: kubectl shows it Pending. Upstream: isPendingPastDeadline"""
        if not _conditions(csr) and _older_than(csr.metadata.creation_timestamp, PENDING_EXPIRATION, now):
            log.info("Cleaning CSR as it is more than pendingExpiration old and unhandled.",
                     extra={"csr": csr.metadata.name})
            return True
        return False

    def _issued_expired(self, csr: Any, now: float) -> bool:
        """Upstream: isIssuedExpired, isExpired (an unparseable certificate has not expired)"""
        pem = _certificate(csr)
        if not pem or not any(c.type == "Approved" for c in _conditions(csr)):
            return False
        try:
            cert = x509.load_pem_x509_certificate(pem)
        except ValueError:
            return False
        if now > cert.not_valid_after_utc.timestamp():
            log.info("Cleaning CSR as the associated certificate is expired.", extra={"csr": csr.metadata.name})
            return True
        return False


def _conditions(csr: Any) -> list[Any]:
    return list(csr.status.conditions or []) if csr.status is not None else []


def _certificate(csr: Any) -> bytes:
    if csr.status is None or not csr.status.certificate:
        return b""
    try:
        return base64.b64decode(csr.status.certificate)
    except (binascii.Error, ValueError):
        return b""


def _older_than(ts: str | None, age: float, now: float) -> bool:
    """Upstream: isOlderThan — a zero time is never old."""
    return bool(ts) and now - parse_rfc3339(str(ts)) > age
