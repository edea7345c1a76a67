"""The root CA publisher against a real in-process API server: upstream's TestConfigMapCreation
cases (pkg/controller/certificates/rootcacertpublisher/publisher_test.go) through sync_namespace,
and the event handlers through run()."""
from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from kubeplane.api import errors
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.controller.certificates.rootcacertpublisher import (
    DESCRIPTION, DESCRIPTION_ANNOTATION, ROOT_CA_CERT_CONFIG_MAP_NAME, Publisher,
)
from kubeplane.testing.fake import FakeClientset
from kubeplane.utils.clock import FakeClock

NS = "ns"
CA = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


async def eventually(check: Callable[[], Any], what: str, timeout: float = 5.0) -> Any:
    end = time.monotonic() + timeout
    while True:
        result = await check()
        if result:
            return result
        if time.monotonic() > end:
            pytest.fail(f"timed out waiting for {what}")
        await asyncio.sleep(0.005)


def config_map(data: dict[str, str] | None = None, annotations: dict[str, str] | None = None,
               name: str = ROOT_CA_CERT_CONFIG_MAP_NAME) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": NS}
    if annotations is not None:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data or {}}


@pytest.fixture
async def env() -> AsyncIterator[tuple[FakeClientset, Publisher]]:
    clock = FakeClock()
    cs = await FakeClientset.new(clock=clock)
    factory = SharedInformerFactory(cs, clock=clock)
    pub = Publisher(cs, factory.core_v1().configmaps(), factory.core_v1().namespaces(), root_ca=CA, clock=clock)
    factory.start()
    await factory.wait_for_cache_sync()
    try:
        yield cs, pub
    finally:
        await factory.shutdown()


async def seed_and_wait(cs: FakeClientset, pub: Publisher, *objs: dict[str, Any]) -> None:
    await cs.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}, *objs)

    async def seen() -> bool:
        return len(pub.cm_lister.configmaps(NS).list()) == len(objs)
    await eventually(seen, "the config maps in the lister")


def writes(cs: FakeClientset) -> list[tuple[str, str]]:
    return [(a.verb, a.resource) for a in cs.actions if a.verb in ("create", "update")]


async def test_new_namespace_gets_the_config_map(env: tuple[FakeClientset, Publisher]) -> None:
    cs, pub = env
    await seed_and_wait(cs, pub)
    cs.clear_actions()
    await pub.sync_namespace(NS)
    assert writes(cs) == [("create", "configmaps")]
    cm = await cs.core_v1().configmaps(NS).get(ROOT_CA_CERT_CONFIG_MAP_NAME)
    assert cm.data == {"ca.crt": CA.decode()} and cm.metadata.annotations == {DESCRIPTION_ANNOTATION: DESCRIPTION}


@pytest.mark.parametrize("data, annotations, expected", [
    ({"ca.crt": CA.decode()}, {DESCRIPTION_ANNOTATION: DESCRIPTION}, []),
    ({"ca.crt": "stale"}, {DESCRIPTION_ANNOTATION: DESCRIPTION}, [("update", "configmaps")]),
    ({"ca.crt": CA.decode(), "other": "x"}, {DESCRIPTION_ANNOTATION: DESCRIPTION}, [("update", "configmaps")]),
    ({"ca.crt": CA.decode()}, None, [("update", "configmaps")]),
], ids=["up-to-date", "changed-data", "extra-data", "no-description"])
async def test_existing_config_map(env: tuple[FakeClientset, Publisher], data: dict[str, str],
                                   annotations: dict[str, str] | None, expected: list[tuple[str, str]]) -> None:
    cs, pub = env
    await seed_and_wait(cs, pub, config_map(data, annotations))
    cs.clear_actions()
    await pub.sync_namespace(NS)
    assert writes(cs) == expected
    cm = await cs.core_v1().configmaps(NS).get(ROOT_CA_CERT_CONFIG_MAP_NAME)
    assert cm.data == {"ca.crt": CA.decode()} and cm.metadata.annotations[DESCRIPTION_ANNOTATION] == DESCRIPTION


async def test_missing_namespace_is_not_retried(env: tuple[FakeClientset, Publisher]) -> None:
    cs, pub = env
    await pub.sync_namespace("gone")            # the create is refused with NotFound: done


async def test_other_failures_are_raised_for_a_retry(env: tuple[FakeClientset, Publisher]) -> None:
    cs, pub = env
    await seed_and_wait(cs, pub)
    cs.fail_on("create", "configmaps", errors.StatusError(500, "InternalError", "boom"), times=1)
    with pytest.raises(errors.StatusError, match="boom"):
        await pub.sync_namespace(NS)


def test_an_empty_root_ca_is_refused() -> None:
    with pytest.raises(ValueError, match="root CA certificate can not be empty"):
        Publisher(None, None, None, root_ca=b"")    # type: ignore[arg-type]


async def test_run_publishes_and_puts_it_back(env: tuple[FakeClientset, Publisher]) -> None:
    cs, pub = env
    task = asyncio.create_task(pub.run())
    try:
        async def published() -> Any:
            try:
                return await cs.core_v1().configmaps(NS).get(ROOT_CA_CERT_CONFIG_MAP_NAME)
            except errors.NotFound:
                return None
        await cs.seed({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        first = await eventually(published, "the config map")
        await cs.core_v1().configmaps(NS).delete(ROOT_CA_CERT_CONFIG_MAP_NAME)
        second = await eventually(published, "the config map again")
        assert second.metadata.uid != first.metadata.uid

        changed = second.deep_copy()
        changed.data = {"ca.crt": "tampered"}
        await cs.core_v1().configmaps(NS).update(changed)

        async def restored() -> bool:
            cm = await published()
            return cm is not None and cm.data == {"ca.crt": CA.decode()}
        await eventually(restored, "the CA put back")
        assert await cs.core_v1().configmaps("kube-system").get(ROOT_CA_CERT_CONFIG_MAP_NAME)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
