"""The token cleaner: a bootstrap token Secret in kube-system is deleted once its `expiration`
has passed (with a uid precondition, so a Secret made anew under the name survives), and looked
at again when it will have.

    cleaner = TokenCleaner(clientset, factory.core_v1().secrets(), clock=clock)
    factory.start()
    await cleaner.run()

Upstream: pkg/controller/bootstrap/tokencleaner.go (NewTokenCleaner, syncFunc, evalSecret).
"""
from __future__ import annotations

import logging
from typing import Any

from ...api import bootstraptoken as bt
from ...api import errors
from ...client.clientset import Clientset
from ...client.informers import ResourceInformer
from ...client.listers import SecretLister
from ...client.tools.cache import ResourceEventHandlerFuncs
from ...client.tools.cache.store import meta_namespace_key_func, split_meta_namespace_key
from ...client.util.workqueue import RateLimitingQueue, RateLimitingQueueOptions
from ...client.util.workqueue.worker import forget_or_retry, process_next_work_item, run_workers
from ...utils.clock import REAL_CLOCK, Clock

log = logging.getLogger(__name__)

TOKEN_SECRET_NAMESPACE = "kube-system"         # DefaultTokenCleanerOptions


def is_token_secret(obj: Any, namespace: str) -> bool:
    """The informers' filter: a bootstrap token Secret of the token namespace."""
    return obj.type == bt.SECRET_TYPE and obj.metadata.namespace == namespace


class TokenCleaner:
    def __init__(self, clientset: Clientset, secrets: ResourceInformer[SecretLister], *,
                 namespace: str = TOKEN_SECRET_NAMESPACE, clock: Clock = REAL_CLOCK) -> None:
        self.clientset = clientset
        self.namespace = namespace
        self.clock = clock
        self.lister = secrets.lister()
        self.informer = secrets.informer()
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(RateLimitingQueueOptions(name="token_cleaner",
                                                                                        clock=clock))
        self.informer.add_event_handler(ResourceEventHandlerFuncs(
            add_func=self.enqueue_secrets, update_func=lambda old, new: self.enqueue_secrets(new)))

    def enqueue_secrets(self, obj: Any) -> None:
        if is_token_secret(obj, self.namespace):
            self.queue.add(meta_namespace_key_func(obj))

    async def run(self, workers: int = 1) -> None:
        """Upstream: Run (one worker)."""
        await run_workers(self.queue, (self.informer,), self.worker, workers)

    async def worker(self) -> None:
        while await process_next_work_item(self.queue, self.sync_func, self.handle_err):
            pass

    def handle_err(self, err: Exception | None, key: str) -> None:
        forget_or_retry(self.queue, log, err, key)

    async def sync_func(self, key: str) -> None:
        """Upstream: syncFunc"""
        namespace, name = split_meta_namespace_key(key)
        try:
            secret = self.lister.secrets(namespace).get(name)
        except errors.NotFound:
            return
        if secret.type == bt.SECRET_TYPE:
            await self.eval_secret(secret)

    async def eval_secret(self, secret: Any) -> None:
        """Delete an expired token's Secret; come back when an unexpired one expires. Upstream: evalSecret"""
        left, expired = bt.expiration(secret.data, self.clock.now())
        meta = secret.metadata
        if expired:
            log.info("Deleting expired secret", extra={"secret": f"{meta.namespace}/{meta.name}"})
            try:
                await self.clientset.core_v1().secrets(meta.namespace).delete(
                    meta.name, preconditions={"uid": meta.uid} if meta.uid else None)
            except (errors.Conflict, errors.NotFound):
                pass                 # already gone, or the uid precondition failed: a new Secret
            except errors.StatusError as err:
                log.info("Error deleting secret: %s", err)
        elif left > 0:
            self.queue.add_after(meta_namespace_key_func(secret), left)
