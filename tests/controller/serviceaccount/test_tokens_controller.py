"""The tokens controller against the fake clientset: upstream's TestTokenCreation cases
(pkg/controller/serviceaccount/tokens_controller_test.go) through sync_secret and
sync_service_account, and the event handlers through run()."""
from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from kubeplane.api import errors
from kubeplane.serviceaccount.legacy import LEGACY_ISSUER
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.controller.serviceaccount.tokens_controller import SecretKey, ServiceAccountKey, TokensController
from kubeplane.serviceaccount.jwt import TokenGenerator
from kubeplane.testing.fake import FakeClientset

CA = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
KEY = ec.generate_private_key(ec.SECP256R1())
TOKEN_TYPE = "kubernetes.io/service-account-token"


def b64(data: str | bytes) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def secret(name: str = "token-secret-1", sa: str = "default", sa_uid: str = "", data: dict[str, str] | None = None,
           type_: str = TOKEN_TYPE) -> dict[str, Any]:
    ann = {"kubernetes.io/service-account.name": sa}
    if sa_uid:
        ann["kubernetes.io/service-account.uid"] = sa_uid
    return {"apiVersion": "v1", "kind": "Secret", "type": type_,
            "metadata": {"name": name, "namespace": "default", "annotations": ann}, "data": data or {}}


def service_account(name: str = "default") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": "default"}}


class Env:
    def __init__(self, cs: FakeClientset, tc: TokensController, factory: SharedInformerFactory) -> None:
        self.cs, self.tc, self.factory = cs, tc, factory

    async def seed(self, *objs: dict[str, Any]) -> list[Any]:
        out = await self.cs.seed(*objs)
        for _ in range(200):                    # the informers' caches catch up
            if all(self._cached(o) for o in out):
                break
            await asyncio.sleep(0.005)
        return out

    def _cached(self, obj: Any) -> bool:
        lister = self.tc.secret_lister.secrets if obj.kind == "Secret" else self.tc.sa_lister.serviceaccounts
        try:
            return lister(obj.metadata.namespace).get(obj.metadata.name).metadata.resource_version == \
                obj.metadata.resource_version
        except errors.NotFound:
            return False

    def key(self, s: Any) -> SecretKey:
        ann = s.metadata.annotations or {}
        return SecretKey(s.metadata.namespace, s.metadata.name, s.metadata.uid,
                         ann.get("kubernetes.io/service-account.name", ""), ann.get("kubernetes.io/service-account.uid", ""))


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    cs = await FakeClientset.new()
    factory = SharedInformerFactory(cs)
    tc = TokensController(cs, factory.core_v1().serviceaccounts(), factory.core_v1().secrets(),
                          TokenGenerator(LEGACY_ISSUER, KEY), root_ca=CA)
    factory.start()
    await factory.wait_for_cache_sync()
    try:
        yield Env(cs, tc, factory)
    finally:
        await factory.shutdown()


def claims(token_b64: str) -> dict[str, Any]:
    payload = base64.b64decode(token_b64).decode().split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))


async def test_a_new_token_secret_is_populated(env: Env) -> None:
    sa, s = await env.seed(service_account(), secret())
    env.cs.clear_actions()
    await env.tc.sync_secret(env.key(s))
    assert env.cs.verbs() == [("update", "secrets", "")]
    got = await env.cs.core_v1().secrets("default").get("token-secret-1")
    assert base64.b64decode(got.data["ca.crt"]) == CA and base64.b64decode(got.data["namespace"]) == b"default"
    assert claims(got.data["token"]) == {
        "iss": "kubernetes/serviceaccount", "sub": "system:serviceaccount:default:default",
        "kubernetes.io/serviceaccount/namespace": "default",
        "kubernetes.io/serviceaccount/secret.name": "token-secret-1",
        "kubernetes.io/serviceaccount/service-account.name": "default",
        "kubernetes.io/serviceaccount/service-account.uid": sa.metadata.uid}
    assert got.metadata.annotations["kubernetes.io/service-account.uid"] == sa.metadata.uid


async def test_a_populated_secret_is_left_alone_and_a_partial_one_completed(env: Env) -> None:
    full = {"token": b64("ABC"), "ca.crt": b64(CA), "namespace": b64("default")}
    _, s1, s2 = await env.seed(service_account(), secret("full", data=full),
                               secret("partial", data={"token": b64("ABC")}))
    env.cs.clear_actions()
    await env.tc.sync_secret(env.key(s1))
    assert env.cs.verbs(include_reads=True) == []
    await env.tc.sync_secret(env.key(s2))
    got = await env.cs.core_v1().secrets("default").get("partial")
    assert base64.b64decode(got.data["token"]) == b"ABC"                     # the token is kept
    assert base64.b64decode(got.data["ca.crt"]) == CA and got.data["namespace"] == b64("default")


@pytest.mark.parametrize("sa_uid", ["", "another-uid"])
async def test_a_token_secret_of_a_missing_account_is_deleted(env: Env, sa_uid: str) -> None:
    objs = await env.seed(*([service_account()] if sa_uid else []), secret(sa_uid=sa_uid))
    s = objs[-1]
    env.cs.clear_actions()
    await env.tc.sync_secret(env.key(s))
    assert env.cs.verbs() == [("delete", "secrets", "")]
    delete = [a for a in env.cs.actions if a.verb == "delete"][0]
    assert delete.body["preconditions"] == {"uid": s.metadata.uid}


async def test_a_deleted_account_takes_its_token_secrets(env: Env) -> None:
    sa, mine, other, opaque = await env.seed(service_account(), secret("mine"), secret("other", sa="someone"),
                                             secret("opaque", type_="Opaque"))
    await env.cs.core_v1().serviceaccounts("default").delete("default")
    for _ in range(200):
        try:
            env.tc.sa_lister.serviceaccounts("default").get("default")
        except errors.NotFound:
            break
        await asyncio.sleep(0.005)
    env.cs.clear_actions()
    await env.tc.sync_service_account(ServiceAccountKey("default", "default", sa.metadata.uid))
    assert [(a.verb, a.name) for a in env.cs.actions if a.verb != "get"] == [("delete", "mine")]


async def test_run_populates_a_token_secret_created_later(env: Env) -> None:
    task = asyncio.create_task(env.tc.run())
    try:
        await env.seed(service_account())
        await env.cs.seed(secret())
        for _ in range(400):
            got = await env.cs.core_v1().secrets("default").get("token-secret-1")
            if got.data and got.data.get("token"):
                break
            await asyncio.sleep(0.01)
        assert claims(got.data["token"])["sub"] == "system:serviceaccount:default:default"
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
