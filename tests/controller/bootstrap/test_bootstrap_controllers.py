"""The token cleaner and the bootstrap signer on the fake clientset and clock: upstream's
tokencleaner_test.go and bootstrapsigner_test.go cases (pkg/controller/bootstrap), and both
controllers running from their informers."""
from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from kubeplane.api import bootstraptoken as bt
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.controller.bootstrap import Signer, TokenCleaner
from kubeplane.testing.fake import FakeClientset
from kubeplane.utils.clock import FakeClock, rfc3339

TOKEN_ID = "abc123"
# Upstream's TestSimpleSign: "payload" signed with token abc123.tokenSecret
SIGNATURE = "eyJhbGciOiJIUzI1NiIsImtpZCI6ImFiYzEyMyJ9..QSxpUG7Q542CirTI2ECPSZjvBOJURUW5a7XqFpNI958"


def token_secret(token_id: str = TOKEN_ID, secret: str = "tokenSecret", **data: str) -> dict[str, Any]:
    """Upstream: newTokenSecret (common_test.go), plus data (addSecretExpiration, addSecretSigningUsage)."""
    values = {"token-id": token_id, "token-secret": secret, **{k.replace("_", "-"): v for k, v in data.items()}}
    return {"apiVersion": "v1", "kind": "Secret", "type": bt.SECRET_TYPE,
            "metadata": {"name": bt.SECRET_PREFIX + token_id, "namespace": "kube-system"},
            "data": {k: base64.b64encode(v.encode()).decode() for k, v in values.items()}}


def cluster_info(token_id: str = "", signature: str = "") -> dict[str, Any]:
    """Upstream: newConfigMap"""
    data = {"kubeconfig": "payload"}
    if token_id:
        data[bt.JWS_SIGNATURE_KEY_PREFIX + token_id] = signature
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cluster-info", "namespace": "kube-public"},
            "data": data}


async def eventually(check: Callable[[], Any], what: str, timeout: float = 5.0) -> Any:
    end = time.monotonic() + timeout
    while not (result := await check()):
        if time.monotonic() > end:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)
    return result


class Env:
    def __init__(self, cs: FakeClientset, clock: FakeClock, factory: SharedInformerFactory) -> None:
        self.cs, self.clock, self.factory = cs, clock, factory
        self.cleaner = TokenCleaner(cs, factory.core_v1().secrets(), clock=clock)
        self.signer = Signer(cs, factory.core_v1().secrets(), factory.core_v1().configmaps(), clock=clock)

    async def seed(self, *objs: dict[str, Any]) -> None:
        """Store objects (not recorded) and wait until the listers have them."""
        await self.cs.seed(*objs)

        async def seen() -> bool:
            return all(self._cached(o) for o in objs)
        await eventually(seen, "the objects in the listers")
        self.cs.clear_actions()
        for queue in (self.cleaner.queue, self.signer.queue):      # what the handlers added: the tests sync by hand
            while queue.len():
                key, _ = await queue.get()
                queue.done(key)

    def _cached(self, obj: dict[str, Any]) -> bool:
        lister = self.signer.secret_lister if obj["kind"] == "Secret" else self.signer.cm_lister
        return any(o.metadata.name == obj["metadata"]["name"]
                   for o in lister.list() if o.metadata.namespace == obj["metadata"]["namespace"])

    def writes(self) -> list[tuple[str, str]]:
        return [(a.verb, a.resource) for a in self.cs.actions if a.verb not in ("get", "list", "watch")]

    async def config_map_data(self) -> dict[str, str]:
        return dict((await self.cs.core_v1().configmaps("kube-public").get("cluster-info")).data or {})


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    clock = FakeClock()
    cs = await FakeClientset.new(clock=clock)
    factory = SharedInformerFactory(cs, clock=clock)
    e = Env(cs, clock, factory)
    factory.start()
    await factory.wait_for_cache_sync()
    try:
        yield e
    finally:
        await factory.shutdown()


# --- the token cleaner ----------------------------------------------------------------------

async def test_cleaner_no_expiration(env: Env) -> None:
    """Upstream: TestCleanerNoExpiration"""
    await env.seed(token_secret())
    await env.cleaner.eval_secret(env.cleaner.lister.secrets("kube-system").get("bootstrap-token-abc123"))
    assert env.writes() == [] and env.cleaner.queue.len() == 0


async def test_cleaner_expired(env: Env) -> None:
    """Upstream: TestCleanerExpired — deleted with a uid precondition."""
    await env.seed(token_secret(expiration=rfc3339(env.clock.now() - 3600)))
    secret = env.cleaner.lister.secrets("kube-system").get("bootstrap-token-abc123")
    await env.cleaner.eval_secret(secret)
    assert env.writes() == [("delete", "secrets")]
    assert env.cs.actions[-1].body["preconditions"] == {"uid": secret.metadata.uid}
    assert not (await env.cs.core_v1().secrets("kube-system").list()).items


async def test_cleaner_not_expired_comes_back_when_it_expires(env: Env) -> None:
    """Upstream: TestCleanerNotExpired and TestCleanerExpiredAt — nothing now, the key back in
    the queue at the expiration, then the delete."""
    await env.seed(token_secret(expiration=rfc3339(env.clock.now() + 2)))
    await env.cleaner.sync_func("kube-system/bootstrap-token-abc123")
    assert env.writes() == [] and env.cleaner.queue.len() == 0
    env.clock.step(2.5)
    await eventually(lambda: _true(env.cleaner.queue.len() == 1), "the secret back in the queue")
    key, _ = await env.cleaner.queue.get()
    await env.cleaner.sync_func(key)
    assert env.writes() == [("delete", "secrets")]


async def test_cleaner_leaves_other_secrets(env: Env) -> None:
    await env.seed({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                    "metadata": {"name": "bootstrap-token-abc123", "namespace": "kube-system"},
                    "data": {"expiration": base64.b64encode(b"2000-01-01T00:00:00Z").decode()}})
    await env.cleaner.sync_func("kube-system/bootstrap-token-abc123")
    assert env.writes() == [] and env.cleaner.queue.len() == 0


async def _true(value: bool) -> bool:
    return value


# --- the bootstrap signer -------------------------------------------------------------------

async def test_no_config_map(env: Env) -> None:
    """Upstream: TestNoConfigMap"""
    await env.signer.sign_config_map()
    assert env.writes() == []


async def test_simple_sign(env: Env) -> None:
    """Upstream: TestSimpleSign"""
    await env.seed(cluster_info(), token_secret(usage_bootstrap_signing="true"))
    await env.signer.sign_config_map()
    assert env.writes() == [("update", "configmaps")]
    assert await env.config_map_data() == cluster_info(TOKEN_ID, SIGNATURE)["data"]


async def test_no_sign_needed(env: Env) -> None:
    """Upstream: TestNoSignNeeded"""
    await env.seed(cluster_info(TOKEN_ID, SIGNATURE), token_secret(usage_bootstrap_signing="true"))
    await env.signer.sign_config_map()
    assert env.writes() == []


async def test_update_signature(env: Env) -> None:
    """Upstream: TestUpdateSignature"""
    await env.seed(cluster_info(TOKEN_ID, "old signature"), token_secret(usage_bootstrap_signing="true"))
    await env.signer.sign_config_map()
    assert await env.config_map_data() == cluster_info(TOKEN_ID, SIGNATURE)["data"]


async def test_remove_signature(env: Env) -> None:
    """Upstream: TestRemoveSignature"""
    await env.seed(cluster_info(TOKEN_ID, "old signature"))
    await env.signer.sign_config_map()
    assert await env.config_map_data() == {"kubeconfig": "payload"}


@pytest.mark.parametrize("secret", [
    token_secret(),                                                   # not for signing
    token_secret(usage_bootstrap_signing="yes"),
    token_secret(usage_bootstrap_signing="true", expiration="2000-01-01T00:00:00Z"),
    {**token_secret(usage_bootstrap_signing="true", token_id="abc124"),   # the id is not the name's
     "metadata": {"name": "bootstrap-token-abc123", "namespace": "kube-system"}},
    token_secret(usage_bootstrap_signing="true", secret=""),
], ids=["no usage", "usage not true", "expired", "id differs from name", "no secret"])
async def test_tokens_not_for_signing(env: Env, secret: dict[str, Any]) -> None:
    """Upstream: validateSecretForSigning"""
    await env.seed(cluster_info(TOKEN_ID, "old signature"), secret)
    await env.signer.sign_config_map()
    assert await env.config_map_data() == {"kubeconfig": "payload"}


async def test_both_run_from_their_informers(env: Env) -> None:
    """A signing token signs cluster-info when either appears; when the token expires the
    cleaner deletes it and the signer takes its signature away."""
    tasks = [asyncio.create_task(env.cleaner.run()), asyncio.create_task(env.signer.run())]
    try:
        await env.cs.seed(cluster_info(), token_secret(usage_bootstrap_signing="true",
                                                       expiration=rfc3339(env.clock.now() + 60)))

        async def signed() -> bool:
            return (await env.config_map_data()).get("jws-kubeconfig-abc123") == SIGNATURE
        await eventually(signed, "cluster-info signed")
        env.clock.step(61)

        async def unsigned() -> bool:
            return await env.config_map_data() == {"kubeconfig": "payload"}
        await eventually(unsigned, "the signature removed")
        assert not (await env.cs.core_v1().secrets("kube-system").list()).items
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
