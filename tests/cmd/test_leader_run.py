"""A standalone component whose leading run fails exits (upstream: klog.Fatalf in the
components' run) instead of holding its lease idle; the controller-manager's service accounts
are created again after a failure (upstream: SAControllerClientBuilder polls)."""
from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kubeplane.api import errors
from kubeplane.apiserver.inprocess import InProcessTransport
from kubeplane.apiserver.server import APIServer
from kubeplane.client.clientset import Clientset
from kubeplane.cmd import identities
from kubeplane.cmd.errors import Fatal
from kubeplane.cmd.standalone import run_with_leader_election
from kubeplane.storage import new_storage


async def clientset() -> Clientset:
    storage = new_storage("memory")
    await storage.start()
    api = APIServer(storage)
    await api.bootstrap()
    return Clientset(InProcessTransport(api, user="admin"))


async def test_a_failed_run_ends_the_process_and_gives_the_lease_back() -> None:
    cs = await clientset()

    async def run(_: Any) -> None:
        raise errors.InternalError("etcd: Stream removed")

    with pytest.raises(Fatal, match="Stream removed"):
        await asyncio.wait_for(run_with_leader_election(cs, "kube-controller-manager", "me", run), 10)
    lease = await cs.coordination_v1().leases("kube-system").get("kube-controller-manager")
    assert not lease.spec.holder_identity         # released for the standby


async def test_service_accounts_are_created_through_transient_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    cs = await clientset()
    monkeypatch.setattr(identities, "SA_RETRY_INTERVAL", 0.0)
    sas = cs.core_v1().serviceaccounts("kube-system")
    create, failures = sas.create, [errors.InternalError("etcd: leader changed"), ConnectionResetError()]

    async def flaky(obj: Any) -> Any:
        if failures:
            raise failures.pop(0)
        return await create(obj)

    monkeypatch.setattr(type(sas), "create", lambda self, obj: flaky(obj))
    await identities.ensure_controller_service_accounts(cs)
    names = {sa.metadata.name for sa in (await create.__self__.list()).items}
    assert set(identities.CONTROLLER_SERVICE_ACCOUNTS) <= names


async def test_a_refusal_is_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    cs = await clientset()
    sas = cs.core_v1().serviceaccounts("kube-system")
    calls = []

    async def forbidden(obj: Any) -> Any:
        calls.append(obj)
        raise errors.Forbidden("no")

    monkeypatch.setattr(type(sas), "create", lambda self, obj: forbidden(obj))
    with pytest.raises(errors.Forbidden):
        await identities.ensure_controller_service_accounts(cs)
    assert len(calls) == 1
