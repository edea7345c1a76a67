"""The bootstrap signer: kube-public/cluster-info's `kubeconfig` signed, as a detached JWS under
`jws-kubeconfig-<token id>`, with every bootstrap token allowed to sign (usage-bootstrap-signing
"true", not expired); signatures of tokens that went are removed. A joining node that knows a
token checks the cluster-info it read anonymously against that signature (kubeadm join's
discovery).

    signer = Signer(clientset, factory.core_v1().secrets(), factory.core_v1().configmaps(), clock=clock)
    factory.start()
    await signer.run()

Every change to the ConfigMap or a token Secret pokes one queue key; a sync rewrites the
ConfigMap only when a signature changed.

Upstream: pkg/controller/bootstrap/bootstrapsigner.go (NewSigner, signConfigMap, getTokens),
util.go (validateSecretForSigning).
"""
from __future__ import annotations

import logging
from typing import Any

from ...api import bootstraptoken as bt
from ...api import errors
from ...client.clientset import Clientset
from ...client.informers import ResourceInformer
from ...client.listers import ConfigMapLister, SecretLister
from ...client.tools.cache import DeletedFinalStateUnknown, ResourceEventHandlerFuncs
from ...client.util.workqueue import RateLimitingQueue, RateLimitingQueueOptions
from ...client.util.workqueue.worker import forget_or_retry, process_next_work_item, run_workers
from ...utils.clock import REAL_CLOCK, Clock
from .tokencleaner import TOKEN_SECRET_NAMESPACE, is_token_secret

log = logging.getLogger(__name__)

CONFIG_MAP_NAMESPACE = "kube-public"           # DefaultSignerOptions
SYNC_KEY = "cluster-info"


class Signer:
    def __init__(self, clientset: Clientset, secrets: ResourceInformer[SecretLister],
                 configmaps: ResourceInformer[ConfigMapLister], *, clock: Clock = REAL_CLOCK,
                 config_map_namespace: str = CONFIG_MAP_NAMESPACE, config_map_name: str = bt.CONFIG_MAP_CLUSTER_INFO,
                 secret_namespace: str = TOKEN_SECRET_NAMESPACE) -> None:
        self.clientset = clientset
        self.clock = clock
        self.cm_namespace, self.cm_name, self.secret_namespace = config_map_namespace, config_map_name, secret_namespace
        self.secret_lister, self.cm_lister = secrets.lister(), configmaps.lister()
        self.informers = (secrets.informer(), configmaps.informer())
        self.queue: RateLimitingQueue[str] = RateLimitingQueue(RateLimitingQueueOptions(name="bootstrap_signer_queue",
                                                                                        clock=clock))

        def poke_if(wanted: Any) -> ResourceEventHandlerFuncs:
            def poke(obj: Any) -> None:
                if wanted(obj):
                    self.queue.add(SYNC_KEY)
            return ResourceEventHandlerFuncs(add_func=poke, update_func=lambda old, new: poke(new), delete_func=poke)
        secrets.informer().add_event_handler(poke_if(lambda s: is_token_secret(_unwrap(s), secret_namespace)))
        configmaps.informer().add_event_handler(poke_if(
            lambda cm: _unwrap(cm).metadata.name == config_map_name and _unwrap(cm).metadata.namespace == config_map_namespace))

    async def run(self, workers: int = 1) -> None:
        """Upstream: Run (one worker)."""
        await run_workers(self.queue, self.informers, self.worker, workers)

    async def worker(self) -> None:
        while await process_next_work_item(self.queue, lambda key: self.sign_config_map(), self.handle_err):
            pass

    def handle_err(self, err: Exception | None, key: str) -> None:
        forget_or_retry(self.queue, log, err, key)

    async def sign_config_map(self) -> None:
        """Upstream: signConfigMap"""
        try:
            cm = self.cm_lister.configmaps(self.cm_namespace).get(self.cm_name)
        except errors.NotFound:
            return
        data = dict(cm.data or {})
        content = data.get(bt.KUBECONFIG_KEY)
        if content is None:
            log.debug("No %s key in %s/%s ConfigMap", bt.KUBECONFIG_KEY, self.cm_namespace, self.cm_name)
            return
        old = {key[len(bt.JWS_SIGNATURE_KEY_PREFIX):]: data.pop(key) for key in list(data)
               if key.startswith(bt.JWS_SIGNATURE_KEY_PREFIX)}
        changed = False
        for token_id, token_secret in self.get_tokens().items():
            sig = bt.compute_detached_signature(content, token_id, token_secret)
            changed |= old.pop(token_id, None) != sig
            data[bt.JWS_SIGNATURE_KEY_PREFIX + token_id] = sig
        if changed or old:                      # a new or changed signature, or one removed
            updated = cm.deep_copy()
            updated.data = data
            try:
                await self.clientset.core_v1().configmaps(self.cm_namespace).update(updated)
            except errors.Conflict:
                pass                            # the newer ConfigMap's event brings us back

    def get_tokens(self) -> dict[str, str]:
        """token id -> secret of every token valid for signing. Upstream: getTokens"""
        tokens: dict[str, str] = {}
        for secret in self.secret_lister.secrets(self.secret_namespace).list():
            if secret.type != bt.SECRET_TYPE:
                continue
            found = validate_secret_for_signing(secret, self.clock.now())
            if found is not None and found[0] not in tokens:      # a duplicate id: the first wins
                tokens[found[0]] = found[1]
        return tokens


def validate_secret_for_signing(secret: Any, now: float) -> tuple[str, str] | None:
    """(id, secret) of a Secret whose token may sign, else None. Upstream: validateSecretForSigning"""
    name_id = bt.parse_name(secret.metadata.name or "")
    token_id = bt.get_data(secret.data, bt.TOKEN_ID_KEY)
    token_secret = bt.get_data(secret.data, bt.TOKEN_SECRET_KEY)
    if name_id is None or not token_id or name_id != token_id or not token_secret:
        return None
    if bt.expiration(secret.data, now)[1] or bt.get_data(secret.data, bt.USAGE_SIGNING_KEY) != "true":
        return None
    return token_id, token_secret


def _unwrap(obj: Any) -> Any:
    """A deleted object's last state (the informer's tombstone holds it)."""
    return obj.obj if isinstance(obj, DeletedFinalStateUnknown) else obj
