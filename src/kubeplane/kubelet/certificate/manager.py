"""Client certificate rotation (the kubelet's --rotate-certificates, kubeadm's default): each
node renews its client certificate at a random point between 70 % and 90 % of its life, with
a CSR made with its current certificate (a node may ask for its own: selfnodeclient), keeps the
new pair in its cert dir and switches its connections' TLS context to it. A failed request is
retried after 2, 4, 8 and 16 s, then every 32 s, while the old certificate serves.

    task = asyncio.ensure_future(rotate_forever(node, pair, renew, transport.set_client_cert, clock=clock))

Upstream: k8s.io/client-go/util/certificate/certificate_manager.go (Manager.Start,
nextRotationDeadline, jitteryDuration, rotateCerts and its backoff).
"""
from __future__ import annotations

import datetime as dt
import logging
import random
from collections.abc import Awaitable, Callable

from cryptography import x509

from ...utils.clock import REAL_CLOCK, Clock

log = logging.getLogger(__name__)

RETRY_DELAYS = (2.0, 4.0, 8.0, 16.0)     # wait.Backoff{Duration: 2s, Factor: 2, Steps: 5}
RETRY_FOREVER = 32.0                      # then wait.PollInfinite(32 s)

Pair = tuple[bytes, bytes]


def rotation_deadline(cert_pem: bytes, rand: Callable[[], float] = random.random) -> float:
    """notBefore + (70-90 %) of the lifetime, epoch seconds. Upstream: nextRotationDeadline"""
    cert = x509.load_pem_x509_certificate(cert_pem)
    not_before = cert.not_valid_before_utc.timestamp()
    total = cert.not_valid_after_utc.timestamp() - not_before
    return not_before + total * (0.7 + 0.2 * rand())


async def rotate_forever(node: str, pair: Pair, renew: Callable[[], Awaitable[Pair]],
                         apply: Callable[[bytes, bytes], None], *, clock: Clock = REAL_CLOCK,
                         rand: Callable[[], float] = random.random) -> None:
    """Renew pair at each deadline with renew() and hand the new one to apply(), until cancelled."""
    while True:
        deadline = rotation_deadline(pair[0], rand)
        log.info("Certificate rotation deadline determined", extra={
            "node": node, "deadline": dt.datetime.fromtimestamp(deadline, dt.UTC).isoformat()})
        if (wait := deadline - clock.now()) > 0:
            await clock.sleep(wait)
        pair = await _renew_with_retries(node, renew, clock)
        apply(*pair)
        log.info("Rotated client certificate", extra={"node": node})


async def _renew_with_retries(node: str, renew: Callable[[], Awaitable[Pair]], clock: Clock) -> Pair:
    for attempt in range(1 << 30):
        try:
            return await renew()
        except Exception as err:           # a refused CSR, the server away: the old certificate still serves
            log.error("Failed while requesting a signed certificate from the control plane: %s", err,
                      extra={"node": node})
        await clock.sleep(RETRY_DELAYS[attempt] if attempt < len(RETRY_DELAYS) else RETRY_FOREVER)
    raise AssertionError("unreachable")
