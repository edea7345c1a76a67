"""The tokens controller: fills in the legacy token Secrets people create (type
kubernetes.io/service-account-token, annotation kubernetes.io/service-account.name): a JWT of
issuer kubernetes/serviceaccount signed with the service account key (`token`), the cluster CA
(`ca.crt`) and the namespace (`namespace`), plus the account's uid annotation. A token Secret
whose ServiceAccount is gone (or has another uid) is deleted, and so are an account's token
Secrets when the account is deleted. Since 1.24 no token Secret is made by itself.

    tc = TokensController(clientset, factory.core_v1().serviceaccounts(), factory.core_v1().secrets(),
                          TokenGenerator(LEGACY_ISSUER, key), root_ca=ca_pem)

Upstream: pkg/controller/serviceaccount/tokens_controller.go (NewTokensController,
syncServiceAccount, syncSecret, deleteTokens, deleteToken, generateTokenIfNeeded,
secretUpdateNeeded, getServiceAccount) and pkg/serviceaccount/util.go (IsServiceAccountToken).
kube-controller-manager runs it only with --service-account-private-key-file.
"""
from __future__ import annotations

import base64
import logging
from dataclasses import dataclass
from typing import Any

from ...api import errors
from ...api.types import core_v1, meta_v1
from ...serviceaccount.legacy import SECRET_TYPE, legacy_claims
from ...client.clientset import Clientset
from ...client.informers import ResourceInformer
from ...client.listers import SecretLister, ServiceAccountLister
from ...client.tools.cache import DeletedFinalStateUnknown, ResourceEventHandlerFuncs
from ...client.util.workqueue import RateLimitingQueue, RateLimitingQueueOptions
from ...client.util.workqueue.worker import process_next_work_item, run_workers
from ...utils.clock import REAL_CLOCK, Clock

log = logging.getLogger(__name__)

SERVICE_ACCOUNT_NAME_KEY = "kubernetes.io/service-account.name"
SERVICE_ACCOUNT_UID_KEY = "kubernetes.io/service-account.uid"
MAX_RETRIES = 10              # upstream: TokensControllerOptions.MaxRetries' default


@dataclass(frozen=True)
class ServiceAccountKey:
    namespace: str
    name: str
    uid: str


@dataclass(frozen=True)
class SecretKey:
    namespace: str
    name: str
    uid: str
    sa_name: str
    sa_uid: str


def _annotations(obj: Any) -> dict[str, str]:
    return dict(obj.metadata.annotations or {})


def is_service_account_token(secret: Any, sa: Any) -> bool:
    """Upstream: IsServiceAccountToken"""
    if secret.type != SECRET_TYPE:
        return False
    ann = _annotations(secret)
    if ann.get(SERVICE_ACCOUNT_NAME_KEY) != sa.metadata.name:
        return False
    uid = ann.get(SERVICE_ACCOUNT_UID_KEY, "")
    return not uid or uid == sa.metadata.uid


class TokensController:
    def __init__(self, clientset: Clientset, sa_informer: ResourceInformer[ServiceAccountLister],
                 secret_informer: ResourceInformer[SecretLister], token_generator: Any, *, root_ca: bytes = b"",
                 clock: Clock = REAL_CLOCK, max_retries: int = MAX_RETRIES) -> None:
        self.client, self.token, self.root_ca, self.max_retries = clientset, token_generator, root_ca, max_retries
        self.sa_lister, self.sa_informer = sa_informer.lister(), sa_informer.informer()
        self.secret_lister, self.secret_informer = secret_informer.lister(), secret_informer.informer()
        self.sa_queue: RateLimitingQueue[ServiceAccountKey] = RateLimitingQueue(
            RateLimitingQueueOptions(name="serviceaccount_tokens_service", clock=clock))
        self.secret_queue: RateLimitingQueue[SecretKey] = RateLimitingQueue(
            RateLimitingQueueOptions(name="serviceaccount_tokens_secret", clock=clock))
        self.sa_informer.add_event_handler(ResourceEventHandlerFuncs(
            add_func=self.queue_service_account_sync, update_func=lambda old, new: self.queue_service_account_sync(new),
            delete_func=self.queue_service_account_sync))
        self.secret_informer.add_event_handler(ResourceEventHandlerFuncs(
            add_func=self.queue_secret_sync, update_func=lambda old, new: self.queue_secret_sync(new),
            delete_func=self.queue_secret_sync))

    # -- event handlers ------------------------------------------------------------------------

    def queue_service_account_sync(self, obj: Any) -> None:
        if isinstance(obj, DeletedFinalStateUnknown):
            obj = obj.obj
        self.sa_queue.add(ServiceAccountKey(obj.metadata.namespace or "", obj.metadata.name or "", obj.metadata.uid or ""))

    def queue_secret_sync(self, obj: Any) -> None:
        """Only token Secrets (upstream's FilteringResourceEventHandler)."""
        if isinstance(obj, DeletedFinalStateUnknown):
            obj = obj.obj
        if obj.type != SECRET_TYPE:
            return
        ann = _annotations(obj)
        self.secret_queue.add(SecretKey(obj.metadata.namespace or "", obj.metadata.name or "", obj.metadata.uid or "",
                                        ann.get(SERVICE_ACCOUNT_NAME_KEY, ""), ann.get(SERVICE_ACCOUNT_UID_KEY, "")))

    # -- workers -------------------------------------------------------------------------------

    async def run(self, workers: int = 1) -> None:
        """Upstream: Run (kube-controller-manager: --concurrent-serviceaccount-token-syncs, 5)."""
        import asyncio

        async def sa_worker() -> None:
            while await process_next_work_item(self.sa_queue, self.sync_service_account, self._done(self.sa_queue)):
                pass

        async def secret_worker() -> None:
            while await process_next_work_item(self.secret_queue, self.sync_secret, self._done(self.secret_queue)):
                pass
        await asyncio.gather(run_workers(self.sa_queue, (self.sa_informer, self.secret_informer), sa_worker, workers),
                             run_workers(self.secret_queue, (self.sa_informer, self.secret_informer), secret_worker,
                                         workers))

    def _done(self, queue: RateLimitingQueue[Any]) -> Any:
        """A retriable failure is retried up to max_retries times. Upstream: retryOrForget"""
        def handle(err: Exception | None, key: Any) -> None:
            if err is None or not getattr(err, "retriable", True):
                if err is not None:
                    log.warning("syncing %s failed: %s", key, err)
                queue.forget(key)
                return
            if queue.num_requeues(key) < self.max_retries:
                queue.add_rate_limited(key)
                return
            log.warning("dropping %s after %d retries: %s", key, self.max_retries, err)
            queue.forget(key)
        return handle

    async def sync_service_account(self, key: ServiceAccountKey) -> None:
        """A deleted account's token Secrets go. Upstream: syncServiceAccount"""
        sa = await self.get_service_account(key.namespace, key.name, key.uid, fetch_on_cache_miss=False)
        if sa is not None:
            return
        sa = core_v1.ServiceAccount(metadata=meta_v1.ObjectMeta(namespace=key.namespace, name=key.name, uid=key.uid))
        await self.delete_tokens(sa)

    async def sync_secret(self, key: SecretKey) -> None:
        """Upstream: syncSecret (the removal of a deleted secret from the account's legacy
        secrets list is not done: nothing adds to that list since 1.24)."""
        secret = self._cached_secret(key)
        if secret is None:
            return
        sa = await self.get_service_account(key.namespace, key.sa_name, key.sa_uid, fetch_on_cache_miss=True)
        if sa is None:
            log.info("Service account does not exist, deleting token", extra={"secret": f"{key.namespace}/{key.name}"})
            await self.delete_token(key.namespace, key.name, key.uid)
            return
        await self.generate_token_if_needed(sa, secret)

    def _cached_secret(self, key: SecretKey) -> Any:
        try:
            secret = self.secret_lister.secrets(key.namespace).get(key.name)
        except errors.NotFound:
            return None
        return secret if not key.uid or secret.metadata.uid == key.uid else None

    async def delete_tokens(self, sa: Any) -> None:
        """Upstream: deleteTokens"""
        for secret in self.secret_lister.secrets(sa.metadata.namespace).list():
            if is_service_account_token(secret, sa):
                await self.delete_token(secret.metadata.namespace, secret.metadata.name, secret.metadata.uid or "")

    async def delete_token(self, ns: str, name: str, uid: str) -> None:
        """Upstream: deleteToken — with the uid as precondition; gone or replaced is fine."""
        try:
            await self.client.core_v1().secrets(ns).delete(name, preconditions={"uid": uid} if uid else None)
        except (errors.NotFound, errors.Conflict):
            pass

    async def get_service_account(self, ns: str, name: str, uid: str, *, fetch_on_cache_miss: bool) -> Any:
        """The account if it exists with that uid (any, given none). Upstream: getServiceAccount"""
        try:
            sa = self.sa_lister.serviceaccounts(ns).get(name)
        except errors.NotFound:
            sa = None
        if sa is not None and (not uid or sa.metadata.uid == uid):
            return sa
        if not fetch_on_cache_miss:
            return None
        try:
            sa = await self.client.core_v1().serviceaccounts(ns).get(name)
        except errors.NotFound:
            return None
        return sa if not uid or sa.metadata.uid == uid else None

    def secret_update_needed(self, secret: Any) -> tuple[bool, bool, bool]:
        """(needs ca.crt, needs namespace, needs token). Upstream: secretUpdateNeeded"""
        data = dict(secret.data or {})
        ca = base64.b64decode(data.get("ca.crt") or "")
        return (bool(self.root_ca) and ca != self.root_ca, not data.get("namespace"), not data.get("token"))

    async def generate_token_if_needed(self, sa: Any, cached: Any) -> None:
        """Fill a copy freshly read (only if the cache is current), then update it; a conflict
        or a vanished Secret needs nothing (an event follows). Upstream: generateTokenIfNeeded"""
        if not any(self.secret_update_needed(cached)):
            return
        secrets = self.client.core_v1().secrets(cached.metadata.namespace)
        live = await secrets.get(cached.metadata.name)
        if live.metadata.resource_version != cached.metadata.resource_version:
            log.info("Secret is not up to date, skipping token population",
                     extra={"secret": f"{live.metadata.namespace}/{live.metadata.name}"})
            return
        needs_ca, needs_namespace, needs_token = self.secret_update_needed(live)
        if not (needs_ca or needs_namespace or needs_token):
            return
        data = dict(live.data or {})
        if needs_ca:
            data["ca.crt"] = base64.b64encode(self.root_ca).decode()
        if needs_namespace:
            data["namespace"] = base64.b64encode((live.metadata.namespace or "").encode()).decode()
        if needs_token:
            claims = legacy_claims(sa.metadata.namespace or "", sa.metadata.name or "", sa.metadata.uid or "",
                                   live.metadata.name or "")
            data["token"] = base64.b64encode(self.token.generate_token(claims).encode()).decode()
        live.data = data
        live.metadata.annotations = {**_annotations(live), SERVICE_ACCOUNT_NAME_KEY: sa.metadata.name or "",
                                     SERVICE_ACCOUNT_UID_KEY: sa.metadata.uid or ""}
        try:
            await secrets.update(live)
        except (errors.Conflict, errors.NotFound):
            pass
