"""The legacy service account token cleaner: upstream's TestLegacyServiceAccountTokenCleanUp
table (pkg/controller/serviceaccount/legacy_serviceaccount_token_cleaner_test.go), with the
objects put straight into the informers' stores as upstream's test does, and the API server's
tracking ConfigMap."""
from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from kubeplane.api import types
from kubeplane.api.types import core_v1
from kubeplane.apiserver.controlplane import legacytokentracking
from kubeplane.apiserver.server import APIServer
from kubeplane.client.informers import SharedInformerFactory
from kubeplane.controller.serviceaccount.legacy_serviceaccount_token_cleaner import (
    TRACKING_CONFIG_MAP, LegacySATokenCleaner,
)
from kubeplane.serviceaccount.legacy import INVALID_SINCE_LABEL, LAST_USED_LABEL, SECRET_TYPE
from kubeplane.storage import new_storage
from kubeplane.testing.fake import WITHOUT_CONTROLLER_MANAGER, FakeClientset
from kubeplane.utils.clock import FakeClock, parse_rfc3339

NOW = parse_rfc3339("2023-06-01T12:00:00Z")
TODAY = "2023-06-01"


def at(date: str) -> float:
    return parse_rfc3339(f"{date}T00:00:00Z")


def token_secret(last_used: str, invalid_since: str, created: str, sa_name: str = "default",
                 sa_uid: str = "12345", deleted: bool = False) -> Any:
    """Upstream: configuredServiceAccountTokenSecret"""
    labels = {k: v for k, v in ((LAST_USED_LABEL, last_used), (INVALID_SINCE_LABEL, invalid_since)) if v}
    meta: dict[str, Any] = {"name": "token-secret-1", "namespace": "default", "uid": "23456", "resourceVersion": "1",
                            "labels": labels, "creationTimestamp": f"{created}T00:00:00Z",
                            "annotations": {"kubernetes.io/service-account.name": sa_name,
                                            "kubernetes.io/service-account.uid": sa_uid}}
    if deleted:
        meta["deletionTimestamp"] = "2023-06-01T00:00:00Z"
    return types.from_dict({"apiVersion": "v1", "kind": "Secret", "metadata": meta, "type": SECRET_TYPE,
                            "data": {"token": "QUJD"}}, core_v1.Secret)


def opaque_secret() -> Any:
    return types.from_dict({"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": {
        "name": "token-secret-1", "namespace": "default", "creationTimestamp": "2022-12-27T00:00:00Z"}}, core_v1.Secret)


def service_account(references: bool = True) -> Any:
    """Upstream: serviceAccount(tokenSecretReferences()) / (emptySecretReferences())"""
    return types.from_dict({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {
        "name": "default", "namespace": "default", "uid": "12345"},
        "secrets": [{"name": "token-secret-1"}] if references else []}, core_v1.ServiceAccount)


def pod(mounts: bool) -> Any:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    if mounts:
        spec["volumes"] = [{"name": "foo", "secret": {"secretName": "token-secret-1"}}]
    return types.from_dict({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pod-1", "namespace": "default"},
                            "spec": spec}, core_v1.Pod)


GET = ("get", "configmaps")
PATCH = ("patch", "secrets")
DELETE = ("delete", "secrets")

# (name, secret, service account, pod mounts the secret, tracking ConfigMap `since` (None: no
#  ConfigMap, "": no key), the clean-up period's start (period = NOW - start), actions)
TABLE = [
    ("configmap does not exist", token_secret("2022-12-27", "", "2022-12-27"), service_account(), False, None,
     "2022-12-28", [GET]),
    ("configmap without tracked-since", token_secret("2022-12-27", "", "2022-12-27"), service_account(), False, "",
     "2022-12-28", [GET]),
    ("tracked for less than the period", token_secret("2022-12-27", "", "2022-12-27"), service_account(), False,
     "2022-12-29", "2022-12-29", [GET]),
    ("tracked-since cannot be parsed", token_secret("2022-12-27", "", "2022-12-27"), service_account(), False,
     "2022-12-27-1", "2022-12-29", [GET]),
    ("not a service account token", opaque_secret(), service_account(), False, "2022-12-28", "2022-12-29", [GET]),
    ("not referenced by its service account", token_secret("2022-12-27", "", "2022-12-27"), service_account(False),
     False, "2022-12-27", "2022-12-29", [GET]),
    ("created late", token_secret("2022-12-27", "", "2022-12-30"), service_account(), False, "2022-12-27",
     "2022-12-29", [GET]),
    ("being deleted", token_secret("2022-12-27", "", "2022-12-27", deleted=True), service_account(), False,
     "2022-12-27", "2022-12-30", [GET]),
    ("used late", token_secret("2022-12-30", "", "2022-12-27"), service_account(), False, "2022-12-27",
     "2022-12-29", [GET]),
    ("last-used cannot be parsed", token_secret("2022-12-27-1", "", "2022-12-27"), service_account(), False,
     "2022-12-27", "2022-12-29", [GET]),
    ("service account does not exist", token_secret("2022-12-27", "", "2022-12-27"), None, False, "2022-12-27",
     "2022-12-29", [GET]),
    ("service account uid does not match", token_secret("2022-12-27", "", "2022-12-27", sa_uid="123456"),
     service_account(), False, "2022-12-27", "2022-12-29", [GET]),
    ("service account name is empty", token_secret("2022-12-27", "", "2022-12-27", sa_name=""), service_account(),
     False, "2022-12-27", "2022-12-29", [GET]),
    ("never used, not marked invalid", token_secret("", "", "2022-12-27"), service_account(), False, "2022-12-28",
     "2022-12-30", [GET, PATCH]),
    ("never used, invalid-since cannot be parsed", token_secret("", "2022-12-29-1", "2022-12-27"), service_account(),
     False, "2022-12-28", "2022-12-30", [GET, PATCH]),
    ("never used, invalid for less than the period", token_secret("", "2023-01-01", "2022-12-27"), service_account(),
     False, "2022-12-28", "2022-12-29", [GET]),
    ("never used, invalid for more than the period", token_secret("", "2022-12-29", "2022-12-27"), service_account(),
     False, "2022-12-28", "2023-01-01", [GET, DELETE]),
    ("mounted by a pod", token_secret("2022-12-27", "", "2022-12-27"), service_account(), True, "2022-12-28",
     "2022-12-29", [GET]),
    ("used before the period, not marked invalid", token_secret("2022-12-27", "", "2022-12-27"), service_account(),
     False, "2022-12-28", "2022-12-30", [GET, PATCH]),
    ("used before the period, invalid for less than it", token_secret("2022-12-27", "2023-05-01", "2022-12-27"),
     service_account(), False, "2022-12-28", "2022-12-30", [GET]),
    ("used before the period, invalid for more than it", token_secret("2022-12-27", "2023-01-05", "2022-12-27"),
     service_account(), False, "2022-12-28", "2023-05-01", [GET, DELETE]),
]


@pytest.fixture
async def cs() -> FakeClientset:
    return await FakeClientset.new(clock=FakeClock(NOW))


@pytest.mark.parametrize("name, secret, sa, mounted, since, period_start, actions", TABLE, ids=[t[0] for t in TABLE])
async def test_legacy_service_account_token_clean_up(cs: FakeClientset, name: str, secret: Any, sa: Any,
                                                     mounted: bool, since: str | None, period_start: str,
                                                     actions: list[tuple[str, str]]) -> None:
    if since is not None:
        await cs.seed({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": TRACKING_CONFIG_MAP, "namespace": "kube-system"}, "data": {"since": since} if since else {}})
    factory = SharedInformerFactory(cs, clock=FakeClock(NOW))
    cleaner = LegacySATokenCleaner(factory.core_v1().serviceaccounts(), factory.core_v1().secrets(),
                                   factory.core_v1().pods(), cs, clock=FakeClock(NOW),
                                   clean_up_period=NOW - at(period_start), sync_interval=30)
    sa_store, secret_store, pod_store = (i.indexer for i in cleaner.informers)     # upstream: the informers' stores
    if sa is not None:
        sa_store.add(sa)
    pod_store.add(pod(mounted))
    secret_store.add(secret)
    await cleaner.evaluate_sa_tokens()
    assert [(a.verb, a.resource) for a in cs.actions] == actions
    if PATCH in actions:
        assert cs.actions[-1].body["metadata"] == {"name": "token-secret-1", "namespace": "default", "uid": "23456",
                                                   "labels": {INVALID_SINCE_LABEL: TODAY}}
    if DELETE in actions:
        assert cs.actions[-1].body["preconditions"] == {"resourceVersion": "1"}


async def test_the_tracking_config_map() -> None:
    """Upstream: legacytokentracking's syncConfigMap — created with today, a value that is not a
    date rewritten, a date kept."""
    clock = FakeClock(NOW)
    api = APIServer(new_storage("memory"), clock=clock, options=WITHOUT_CONTROLLER_MANAGER)
    await api.bootstrap()
    key = "/registry/configmaps/kube-system/" + legacytokentracking.CONFIG_MAP_NAME
    await legacytokentracking.sync_config_map(api)
    assert (await api.storage.get(key)).obj["data"] == {"since": TODAY}
    clock.step(3 * 24 * 3600)
    await legacytokentracking.sync_config_map(api)
    assert (await api.storage.get(key)).obj["data"] == {"since": TODAY}          # kept
    kv = await api.storage.get(key)
    await api.storage.update(key, {**kv.obj, "data": {"since": "2023-6-1"}}, kv.mod_revision)
    await legacytokentracking.sync_config_map(api)
    assert (await api.storage.get(key)).obj["data"] == {"since": dt.date(2023, 6, 4).isoformat()}
    await api.storage.close()
