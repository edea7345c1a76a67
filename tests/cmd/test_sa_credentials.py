"""--use-service-account-credentials' token source against the fake clientset: a TokenRequest
for the controller's kube-system service account (made if missing), reused until 80 % of its
life has passed, asked for again after a 401 (reset), and upstream's retries on failure."""
from __future__ import annotations

import asyncio
import base64
import json
import pathlib

import pytest

from kubeplane.api import errors
from kubeplane.cmd.sa_credentials import ServiceAccountTokenSource
from kubeplane.serviceaccount.jwt import ensure_signing_key
from kubeplane.testing.fake import FakeClientset
from kubeplane.utils.clock import FakeClock

START = 1_700_000_000.0


def claims(token: str) -> dict[str, object]:
    payload = token.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))


async def fake(tmp_path: pathlib.Path) -> tuple[FakeClientset, FakeClock]:
    clock = FakeClock(START)
    cs = await FakeClientset.new(clock=clock)
    key = ensure_signing_key(tmp_path)
    cs.api.service_account_key = lambda: key
    return cs, clock


def token_requests(cs: FakeClientset) -> int:
    return sum(1 for a in cs.actions if a.resource == "serviceaccounts" and a.subresource == "token")


async def test_a_token_of_the_controllers_service_account_renewed_at_80_percent(tmp_path: pathlib.Path) -> None:
    cs, clock = await fake(tmp_path)
    source = ServiceAccountTokenSource(cs, "replicaset-controller", clock=clock)
    token = await source.token()
    c = claims(token)
    assert c["sub"] == "system:serviceaccount:kube-system:replicaset-controller"
    assert c["exp"] == int(START) + 3600
    assert [(a.verb, a.resource, a.subresource) for a in cs.actions if a.verb != "get"] == [
        ("create", "serviceaccounts", ""), ("create", "serviceaccounts", "token")]    # the SA made first
    body = [a.body for a in cs.actions if a.subresource == "token"][0]
    assert body["spec"] == {"expirationSeconds": 3600}
    assert await source.token() == token and token_requests(cs) == 1

    clock.step(2879)
    assert await source.token() == token and token_requests(cs) == 1
    clock.step(2)                                         # 80 % of 3600 s gone
    renewed = await source.token()
    assert renewed != token and token_requests(cs) == 2

    source.reset()                                        # the server said 401
    assert await source.token() != renewed and token_requests(cs) == 3


async def test_concurrent_requests_share_one_token_request(tmp_path: pathlib.Path) -> None:
    cs, clock = await fake(tmp_path)
    source = ServiceAccountTokenSource(cs, "deployment-controller", clock=clock)
    tokens = await asyncio.gather(*(source.token() for _ in range(5)))
    assert len(set(tokens)) == 1 and token_requests(cs) == 1


async def test_failures_are_retried_then_reported(tmp_path: pathlib.Path) -> None:
    cs, clock = await fake(tmp_path)
    cs.fail_on("create", "serviceaccounts", errors.StatusError.from_status(
        {"kind": "Status", "status": "Failure", "message": "nope", "reason": "Forbidden", "code": 403}))
    source = ServiceAccountTokenSource(cs, "x", clock=clock)
    task = asyncio.create_task(source.token())
    for _ in range(3):                                    # 0.5 s, 1 s, 2 s back-off
        for _ in range(50):
            await asyncio.sleep(0)
        clock.step(2)
    with pytest.raises(RuntimeError, match="failed to get token for kube-system/x: nope"):
        await asyncio.wait_for(task, 5)
    assert sum(1 for a in cs.actions if a.verb == "create") == 4      # upstream's 4 tries
