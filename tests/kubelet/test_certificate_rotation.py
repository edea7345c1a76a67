"""Client certificate rotation (the kubelet's --rotate-certificates): the deadline at 70-90 %
of a certificate's life (client-go's nextRotationDeadline), the rotation loop on a fake clock
with its retries, and an HTTPS transport presenting the rotated certificate to a real API
server (kubeplane.testing's ControlPlane), which then sees another user."""
from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from kubeplane.client.transport import HTTPTransport
from kubeplane.kubelet.certificate.manager import RETRY_DELAYS, rotate_forever, rotation_deadline
from kubeplane.utils.clock import FakeClock

START = 1_700_000_000.0
KEY = ec.generate_private_key(ec.SECP256R1())


def cert(not_before: float, lifetime: float) -> bytes:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "system:node:n")])
    at = dt.datetime.fromtimestamp(not_before, dt.UTC)
    return (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(KEY.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(at)
            .not_valid_after(at + dt.timedelta(seconds=lifetime)).sign(KEY, hashes.SHA256())
            .public_bytes(serialization.Encoding.PEM))


def test_the_deadline_is_70_to_90_percent_of_the_life() -> None:
    pem = cert(START, 1000)
    assert rotation_deadline(pem, lambda: 0.0) == START + 700
    assert rotation_deadline(pem, lambda: 1.0) == START + 900
    assert rotation_deadline(pem, lambda: 0.5) == START + 800


async def settle(clock: FakeClock) -> None:
    """Let the rotation task run until it parks on the clock."""
    for _ in range(100):
        await asyncio.sleep(0)
        if clock.has_waiters():
            return


async def test_rotation_renews_at_the_deadline_and_retries_failures() -> None:
    clock = FakeClock(START)
    applied: list[tuple[bytes, bytes]] = []
    renewed = cert(START + 806, 1000)
    outcomes: list[Any] = [RuntimeError("the server is away"), RuntimeError("still away"), (renewed, b"key2")]
    asked: list[float] = []

    async def renew() -> tuple[bytes, bytes]:
        asked.append(clock.now())
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    task = asyncio.ensure_future(rotate_forever("n", (cert(START, 1000), b"key1"), renew,
                                                lambda c, k: applied.append((c, k)), clock=clock, rand=lambda: 0.5))
    try:
        await settle(clock)
        clock.step(799)
        await settle(clock)
        assert asked == []                                 # not before 80 % of the life
        clock.step(1)
        await settle(clock)
        assert asked == [START + 800]                      # failed: retried after 2 s, then 4 s
        clock.step(RETRY_DELAYS[0])
        await settle(clock)
        clock.step(RETRY_DELAYS[1])
        await settle(clock)
        assert asked == [START + 800, START + 802, START + 806] and applied == [(renewed, b"key2")]
        clock.step(799)                                    # the next deadline: 80 % of the new one's life
        await settle(clock)
        assert len(asked) == 3
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


@pytest.fixture(scope="module")
def control_plane() -> Iterator[Any]:
    from kubeplane.testing import ControlPlane
    with ControlPlane(nodes=0, controllers=False) as cp:
        yield cp


def user_cert(cp: Any, name: str) -> tuple[bytes, bytes]:
    from kubeplane.utils.pki import client_cert
    pki = cp.data_dir / "pki"
    ca = x509.load_pem_x509_certificate((pki / "ca.crt").read_bytes())
    ca_key = serialization.load_pem_private_key((pki / "ca.key").read_bytes(), password=None)
    assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
    return client_cert(name, ["system:masters"], ca, ca_key)


def test_a_transport_presents_the_rotated_certificate(control_plane: Any) -> None:
    cp = control_plane
    ca = (cp.data_dir / "pki" / "ca.crt").read_bytes()
    review = b'{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}'

    async def whoami(t: HTTPTransport) -> str:
        import orjson
        r = await t.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", body=review)
        return str(orjson.loads(r.body)["status"]["userInfo"]["username"])

    async def scenario() -> list[str]:
        t = HTTPTransport(cp.server, ca_data=ca, client_cert=user_cert(cp, "node-old"))
        try:
            seen = [await whoami(t)]
            t.set_client_cert(*user_cert(cp, "node-new"))
            seen.append(await whoami(t))
            return seen
        finally:
            await t.close()
    assert asyncio.run(scenario()) == ["node-old", "node-new"]
