"""The service account controller against a real in-process API server: upstream's
TestServiceAccountCreation cases (pkg/controller/serviceaccount/serviceaccounts_controller_test.go)
run through sync_namespace, and the event handlers through run()."""
from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from kubeplane.api import errors
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.controller.serviceaccount import ServiceAccountsController
from kubeplane.testing.fake import FakeClientset
from kubeplane.utils.clock import FakeClock

NS = "ns"


async def eventually(check: Callable[[], Any], what: str, timeout: float = 5.0) -> Any:
    end = time.monotonic() + timeout
    while True:
        result = await check()
        if result:
            return result
        if time.monotonic() > end:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)


class Env:
    def __init__(self, cs: FakeClientset, sac: ServiceAccountsController, factory: SharedInformerFactory) -> None:
        self.cs, self.sac, self.factory = cs, sac, factory

    async def namespace(self, name: str = NS, terminating: bool = False) -> None:
        await self.cs.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        if terminating:            # no namespace controller here: it stays Terminating
            await self.cs.core_v1().namespaces().delete(name)
        want = "Terminating" if terminating else "Active"

        async def seen() -> bool:
            try:
                return self.sac.ns_lister.get(name).status.phase == want
            except errors.NotFound:
                return False
        await eventually(seen, f"namespace {name} {want} in the lister")

    async def service_account(self, name: str, ns: str = NS) -> None:
        await self.cs.seed({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": ns}})

        async def seen() -> bool:
            try:
                self.sac.sa_lister.serviceaccounts(ns).get(name)
                return True
            except errors.NotFound:
                return False
        await eventually(seen, f"service account {ns}/{name} in the lister")

    def creates(self) -> list[str]:
        return [f"{a.namespace}/{a.body['metadata']['name']}" for a in self.cs.actions
                if a.verb == "create" and a.resource == "serviceaccounts"]


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    clock = FakeClock()
    cs = await FakeClientset.new(clock=clock)
    factory = SharedInformerFactory(cs, clock=clock)
    sac = ServiceAccountsController(cs, factory.core_v1().serviceaccounts(), factory.core_v1().namespaces(),
                                    clock=clock)
    factory.start()
    await factory.wait_for_cache_sync()
    try:
        yield Env(cs, sac, factory)
    finally:
        await factory.shutdown()


async def test_active_namespace_missing_service_accounts(env: Env) -> None:
    await env.namespace()
    env.cs.clear_actions()
    await env.sac.sync_namespace(NS)
    assert env.creates() == [f"{NS}/default"]
    sa = await env.cs.core_v1().serviceaccounts(NS).get("default")
    assert sa.metadata.name == "default"


async def test_active_namespace_with_another_service_account(env: Env) -> None:
    await env.namespace()
    await env.service_account("other")
    env.cs.clear_actions()
    await env.sac.sync_namespace(NS)
    assert env.creates() == [f"{NS}/default"]


async def test_active_namespace_with_service_accounts(env: Env) -> None:
    await env.namespace()
    await env.service_account("default")
    env.cs.clear_actions()
    await env.sac.sync_namespace(NS)
    assert env.creates() == []


async def test_terminating_namespace_gets_nothing(env: Env) -> None:
    await env.namespace(terminating=True)
    env.cs.clear_actions()
    await env.sac.sync_namespace(NS)
    assert env.creates() == []


async def test_missing_namespace_gets_nothing(env: Env) -> None:
    env.cs.clear_actions()
    await env.sac.sync_namespace("gone")
    assert env.cs.verbs() == []


async def test_an_existing_account_is_no_failure(env: Env) -> None:
    """The lister may lag behind the store: AlreadyExists counts as done."""
    await env.namespace()
    await env.cs.core_v1().serviceaccounts(NS).create(
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": NS}})
    await env.sac.sync_namespace(NS)            # the lister may or may not have it yet: no raise


async def test_failures_are_raised_for_a_retry(env: Env) -> None:
    await env.namespace()
    env.cs.fail_on("create", "serviceaccounts", errors.StatusError(500, "InternalError", "boom"), times=1)
    with pytest.raises(errors.StatusError, match="boom"):
        await env.sac.sync_namespace(NS)


async def test_run_creates_default_in_new_namespaces_and_recreates_it(env: Env) -> None:
    task = asyncio.create_task(env.sac.run())
    try:
        async def default_sa() -> Any:
            try:
                return await env.cs.core_v1().serviceaccounts(NS).get("default")
            except errors.NotFound:
                return None
        await env.cs.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        first = await eventually(default_sa, "the default service account")
        await env.cs.core_v1().serviceaccounts(NS).delete("default")
        second = await eventually(default_sa, "the default service account again")
        assert second.metadata.uid != first.metadata.uid
        # the system namespaces present at start were synced too
        assert await env.cs.core_v1().serviceaccounts("kube-system").get("default")
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
