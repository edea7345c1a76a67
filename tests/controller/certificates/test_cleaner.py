"""The CSR cleaner: upstream's TestCleanerWithApprovedExpiredCSR table
(pkg/controller/certificates/cleaner/cleaner_test.go) on the fake clientset and clock, and the
hourly sweep from the informer."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubeplane.api import types
from kubeplane.api.types import certificates_v1
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.controller.certificates.cleaner import CSRCleanerController
from kubeplane.controller.certificates.cleaner.cleaner import POLLING_INTERVAL
from kubeplane.testing.fake import FakeClientset
from kubeplane.utils.clock import FakeClock, rfc3339

from .csrs import CSRBuilder, make_csr

# upstream's test certificates: one expired in 2017, one valid until 2117
EXPIRED_CERT = b"""-----BEGIN CERTIFICATE-----
MIICIzCCAc2gAwIBAgIJAOApTlMFDOUnMA0GCSqGSIb3DQEBCwUAMG0xCzAJBgNV
BAYTAkdCMQ8wDQYDVQQIDAZMb25kb24xDzANBgNVBAcMBkxvbmRvbjEYMBYGA1UE
CgwPR2xvYmFsIFNlY3VyaXR5MRYwFAYDVQQLDA1JVCBEZXBhcnRtZW50MQowCAYD
VQQDDAEqMB4XDTE3MTAwNDIwNDgzOFoXDTE3MTAwMzIwNDgzOFowbTELMAkGA1UE
BhMCR0IxDzANBgNVBAgMBkxvbmRvbjEPMA0GA1UEBwwGTG9uZG9uMRgwFgYDVQQK
DA9HbG9iYWwgU2VjdXJpdHkxFjAUBgNVBAsMDUlUIERlcGFydG1lbnQxCjAIBgNV
BAMMASowXDANBgkqhkiG9w0BAQEFAANLADBIAkEA3Gt0KmuRXDxvqZUiX/xqAn1t
nZZX98guZvPPyxnQtV3YpA274W0sX3jL+U71Ya+3kaUstXQa4YrWBUHiXoqJnwID
AQABo1AwTjAdBgNVHQ4EFgQUtDsIpzHoUiLsO88f9fm+G0tYSPowHwYDVR0jBBgw
FoAUtDsIpzHoUiLsO88f9fm+G0tYSPowDAYDVR0TBAUwAwEB/zANBgkqhkiG9w0B
AQsFAANBADfrlKof5CUkxGlX9Rifxv/mWOk8ZuTLWfMYQH2nycBHnmOxy6sR+87W
/Mb/uRz0TXVnGVcbu5E8Bz7e/Far1ZI=
-----END CERTIFICATE-----"""
UNEXPIRED_CERT = b"""-----BEGIN CERTIFICATE-----
MIICJTCCAc+gAwIBAgIJAIRjMToP+pPEMA0GCSqGSIb3DQEBCwUAMG0xCzAJBgNV
BAYTAkdCMQ8wDQYDVQQIDAZMb25kb24xDzANBgNVBAcMBkxvbmRvbjEYMBYGA1UE
CgwPR2xvYmFsIFNlY3VyaXR5MRYwFAYDVQQLDA1JVCBEZXBhcnRtZW50MQowCAYD
VQQDDAEqMCAXDTE3MTAwNDIwNDUyNFoYDzIxMTcwOTEwMjA0NTI0WjBtMQswCQYD
VQQGEwJHQjEPMA0GA1UECAwGTG9uZG9uMQ8wDQYDVQQHDAZMb25kb24xGDAWBgNV
BAoMD0dsb2JhbCBTZWN1cml0eTEWMBQGA1UECwwNSVQgRGVwYXJ0bWVudDEKMAgG
A1UEAwwBKjBcMA0GCSqGSIb3DQEBAQUAA0sAMEgCQQC7j9BAV5HqIJGi6r4G4YeI
ioHxH2loVu8IOKSK7xVs3v/EjR/eXbQzM+jZU7duyZqn6YjySZNLl0K0MfHCHBgX
AgMBAAGjUDBOMB0GA1UdDgQWBBTwxV40NFSNW7lpQ3eUWX7Mxs03yzAfBgNVHSME
GDAWgBTwxV40NFSNW7lpQ3eUWX7Mxs03yzAMBgNVHRMEBTADAQH/MA0GCSqGSIb3
DQEBCwUAA0EALDi9OidANHflx8q+w3p0rJo9gpA6cJcFpEtP2Lv4kvOtB1f6L0jY
MLd7MVm4cS/MNcx4L7l23UC3Hx4+nAxvIg==
-----END CERTIFICATE-----"""
MIN, HOUR = 60.0, 3600.0

# (name, created ago, certificate, [(condition, last updated ago)], deleted)
TABLE = [
    ("no delete approved not passed deadline", MIN, UNEXPIRED_CERT, [("Approved", 50 * MIN)], False),
    ("no delete approved passed deadline not issued", MIN, b"", [("Approved", 50 * MIN)], False),
    ("delete approved passed deadline", MIN, UNEXPIRED_CERT, [("Approved", 2 * HOUR)], True),
    ("no delete denied not passed deadline", MIN, b"", [("Denied", 50 * MIN)], False),
    ("delete denied passed deadline", MIN, b"", [("Denied", 2 * HOUR)], True),
    ("no delete failed not passed deadline", MIN, b"", [("Approved", 2 * HOUR), ("Failed", 50 * MIN)], False),
    ("delete failed passed deadline", MIN, b"", [("Approved", 2 * HOUR), ("Failed", 2 * HOUR)], True),
    ("no delete pending not passed deadline", 5 * HOUR, b"", [], False),
    ("delete pending passed deadline", 25 * HOUR, b"", [], True),
    ("no delete approved not passed deadline unexpired", MIN, UNEXPIRED_CERT, [("Approved", 50 * MIN)], False),
    ("delete approved not passed deadline expired", MIN, EXPIRED_CERT, [("Approved", 50 * MIN)], True),
    ("delete approved passed deadline unparseable", MIN, b"garbage", [("Approved", 2 * HOUR)], True),
]


def csr_at(now: float, created_ago: float, certificate: bytes, conditions: list[tuple[str, float]]) -> Any:
    obj = make_csr(CSRBuilder(), name="fake-csr", certificate=certificate,
                   conditions=[{"type": t, "status": "True", "lastUpdateTime": rfc3339(now - ago)}
                               for t, ago in conditions])
    d = types.to_dict(obj)
    d["metadata"]["creationTimestamp"] = rfc3339(now - created_ago)
    return types.from_dict(d, certificates_v1.CertificateSigningRequest)


def pending_csr(name: str) -> dict[str, Any]:
    return {"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": name},
            "spec": types.to_dict(make_csr(CSRBuilder()))["spec"]}


@pytest.fixture
async def env() -> AsyncIterator[tuple[FakeClientset, FakeClock, CSRCleanerController, SharedInformerFactory]]:
    clock = FakeClock()
    cs = await FakeClientset.new(clock=clock)
    factory = SharedInformerFactory(cs, clock=clock)
    cleaner = CSRCleanerController(cs, factory.certificates_v1().certificatesigningrequests(), clock=clock)
    try:
        yield cs, clock, cleaner, factory
    finally:
        await factory.shutdown()


@pytest.mark.parametrize("name, created_ago, certificate, conditions, deleted", TABLE, ids=[t[0] for t in TABLE])
async def test_cleaner_with_approved_expired_csr(env: Any, name: str, created_ago: float, certificate: bytes,
                                                 conditions: list[tuple[str, float]], deleted: bool) -> None:
    """Upstream: TestCleanerWithApprovedExpiredCSR — handle() deletes or leaves the CSR."""
    cs, clock, cleaner, _ = env
    await cs.seed(pending_csr("fake-csr"))
    await cleaner.handle(csr_at(clock.now(), created_ago, certificate, conditions))
    assert cs.verbs() == ([("delete", "certificatesigningrequests", "")] if deleted else [])


async def test_the_hourly_sweep(env: Any) -> None:
    """run(): a sweep at start, the next an hour later, over what the informer holds."""
    cs, clock, cleaner, factory = env
    await cs.seed(pending_csr("pending"))
    factory.start()
    task = asyncio.create_task(cleaner.run())
    try:
        while not clock.has_waiters():
            await asyncio.sleep(0.005)
        assert cs.verbs() == []                              # a fresh pending CSR stays
        clock.step(25 * HOUR - POLLING_INTERVAL)             # the wait is for the sweep period, not 25 hours
        clock.step(POLLING_INTERVAL)
        while not cs.verbs():
            await asyncio.sleep(0.005)
        assert cs.verbs() == [("delete", "certificatesigningrequests", "")]
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
