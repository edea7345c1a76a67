"""The legacy service account token cleaner: once a day, a legacy token Secret (type
kubernetes.io/service-account-token) that its ServiceAccount lists, that no pod of its namespace
refers to, and that was neither created nor used within the clean-up period (default a year,
--legacy-service-account-token-clean-up-period) is labelled
kubernetes.io/legacy-token-invalid-since=<today> (the API server then refuses the token); one
labelled invalid for a whole period is deleted (with a resourceVersion precondition, so a
Secret changed since the look is left for the next day). Nothing happens until the cluster has
tracked last use for a whole period (the API server's tracking ConfigMap says since when).

    cleaner = LegacySATokenCleaner(factory.core_v1().serviceaccounts(), factory.core_v1().secrets(),
                                   factory.core_v1().pods(), clientset, clock=clock)
    factory.start()
    await cleaner.run()

Upstream: pkg/controller/serviceaccount/legacy_serviceaccount_token_cleaner.go
(LegacySATokenCleaner, evaluateSATokens, getMountedSecretNames, getServiceAccount,
latestPossibleTrackedSinceTime, hasSecretReference).
"""
from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from ...api import errors, types
from ...api.pod_visitors import pod_secret_names
from ...client.clientset import Clientset
from ...client.informers import ResourceInformer
from ...client.listers import PodLister, SecretLister, ServiceAccountLister
from ...serviceaccount.legacy import INVALID_SINCE_LABEL, LAST_USED_LABEL, SECRET_TYPE
from ...utils.clock import REAL_CLOCK, Clock, parse_rfc3339
from .tokens_controller import SERVICE_ACCOUNT_NAME_KEY, SERVICE_ACCOUNT_UID_KEY

log = logging.getLogger(__name__)

DATE_FORMAT = "%Y-%m-%d"                          # Go's "2006-01-02"
DEFAULT_CLEAN_UP_PERIOD = 365 * 24 * 3600.0       # --legacy-service-account-token-clean-up-period
DEFAULT_SYNC_INTERVAL = 24 * 3600.0               # DefaultCleanerSyncInterval
TRACKING_CONFIG_MAP = "kube-apiserver-legacy-service-account-token-tracking"   # legacytokentracking
TRACKING_DATA_KEY = "since"


def _date(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts, dt.UTC).strftime(DATE_FORMAT)


def _parse_date(value: str) -> float | None:
    """Go's time.Parse("2006-01-02", value) as UTC epoch seconds, None when not a date."""
    try:
        if len(value) != 10:
            return None
        return dt.datetime.strptime(value, DATE_FORMAT).replace(tzinfo=dt.UTC).timestamp()
    except ValueError:
        return None


class LegacySATokenCleaner:
    def __init__(self, sa_informer: ResourceInformer[ServiceAccountLister], secret_informer: ResourceInformer[SecretLister],
                 pod_informer: ResourceInformer[PodLister], clientset: Clientset, *, clock: Clock = REAL_CLOCK,
                 clean_up_period: float = DEFAULT_CLEAN_UP_PERIOD,
                 sync_interval: float = DEFAULT_SYNC_INTERVAL) -> None:
        if not clean_up_period > 0:
            raise ValueError(f"invalid CleanUpPeriod: {clean_up_period}")
        if not sync_interval > 0:
            raise ValueError(f"invalid SyncInterval: {sync_interval}")
        self.clientset = clientset
        self.clock = clock
        self.sa_lister, self.secret_lister, self.pod_lister = (
            sa_informer.lister(), secret_informer.lister(), pod_informer.lister())
        self.informers = (sa_informer.informer(), secret_informer.informer(), pod_informer.informer())
        self.minimum_since_last_used = clean_up_period
        self.sync_interval = sync_interval

    async def run(self) -> None:
        """Upstream: Run — evaluate now and every sync interval."""
        for informer in self.informers:
            await informer.wait_synced()
        while True:
            await self.evaluate_sa_tokens()
            await self.clock.sleep(self.sync_interval)

    async def evaluate_sa_tokens(self) -> None:
        """Upstream: evaluateSATokens"""
        now = self.clock.now()
        try:
            tracked_since = await self.latest_possible_tracked_since_time()
        except (errors.StatusError, ValueError) as err:
            log.error("Getting lastest possible tracked_since time: %s", err)
            return
        if now < tracked_since + self.minimum_since_last_used:
            return                                   # not tracked for long enough
        preserve_created_on_or_after = now - self.minimum_since_last_used
        preserve_used_on_or_after = _date(now - self.minimum_since_last_used)
        used_by_pods: dict[str, set[str]] = {}
        for secret in self.secret_lister.list():
            meta = secret.metadata
            if secret.type != SECRET_TYPE or meta.deletion_timestamp:
                continue
            if not meta.creation_timestamp or parse_rfc3339(meta.creation_timestamp) >= preserve_created_on_or_after:
                continue
            labels = meta.labels or {}
            last_used = labels.get(LAST_USED_LABEL)
            if last_used is not None:
                if _parse_date(last_used) is None:
                    log.error("Parsing lastUsed time", extra={"secret": f"{meta.namespace}/{meta.name}"})
                    continue
                if last_used >= preserve_used_on_or_after:
                    continue
            sa = self.get_service_account(secret)
            if sa is None or not any(ref.name == meta.name for ref in sa.secrets or ()):
                continue                             # cannot tell it is an auto-generated token
            if meta.name in self.mounted_secret_names(meta.namespace, used_by_pods):
                continue                             # still used by pods
            invalid_since = labels.get(INVALID_SINCE_LABEL, "")
            if _parse_date(invalid_since) is None:
                await self._mark_invalid(secret, _date(now))
                continue
            if invalid_since >= preserve_used_on_or_after:
                continue
            log.info("Delete auto-generated service account token", extra={
                "secret": f"{meta.namespace}/{meta.name}", "lastUsed": last_used, "invalidSince": invalid_since})
            try:
                await self.clientset.core_v1().secrets(meta.namespace).delete(
                    meta.name, preconditions={"resourceVersion": meta.resource_version})
            except (errors.Conflict, errors.NotFound):
                pass
            except errors.StatusError as err:
                log.error("Deleting legacy service account token: %s", err,
                          extra={"secret": f"{meta.namespace}/{meta.name}", "serviceaccount": sa.metadata.name})

    async def _mark_invalid(self, secret: Any, today: str) -> None:
        """A merge patch of the label, with the Secret's uid (upstream's apply configuration,
        sent as a merge patch)."""
        meta = secret.metadata
        log.info("Mark the auto-generated service account token as invalid",
                 extra={"invalidSince": today, "secret": f"{meta.namespace}/{meta.name}"})
        patch = {"kind": "Secret", "apiVersion": "v1", "metadata": {
            "name": meta.name, "namespace": meta.namespace, "uid": meta.uid, "labels": {INVALID_SINCE_LABEL: today}}}
        try:
            await self.clientset.core_v1().secrets(meta.namespace).patch(meta.name, patch, "merge")
        except errors.StatusError as err:
            log.error("Failed to label legacy service account token secret with invalid since date: %s", err)

    def mounted_secret_names(self, namespace: str, cache: dict[str, set[str]]) -> set[str]:
        """Every secret a pod of the namespace refers to. Upstream: getMountedSecretNames"""
        if namespace not in cache:
            cache[namespace] = {name for pod in self.pod_lister.pods(namespace).list() if pod.spec is not None
                                for name in pod_secret_names(types.to_dict(pod.spec))}
        return cache[namespace]

    def get_service_account(self, secret: Any) -> Any:
        """The Secret's ServiceAccount when it exists with the annotated uid (if any). Upstream: getServiceAccount"""
        annotations = secret.metadata.annotations or {}
        name = annotations.get(SERVICE_ACCOUNT_NAME_KEY, "")
        if not name:
            return None
        try:
            sa = self.sa_lister.serviceaccounts(secret.metadata.namespace).get(name)
        except errors.NotFound:
            return None
        uid = annotations.get(SERVICE_ACCOUNT_UID_KEY, "")
        return sa if not uid or uid == sa.metadata.uid else None

    async def latest_possible_tracked_since_time(self) -> float:
        """00:00 UTC of the day after the tracking ConfigMap's `since`. Upstream: latestPossibleTrackedSinceTime"""
        cm = await self.clientset.core_v1().configmaps("kube-system").get(TRACKING_CONFIG_MAP)
        since = (cm.data or {}).get(TRACKING_DATA_KEY)
        if since is None:
            raise ValueError("configMap does not have since label")
        at = _parse_date(since)
        if at is None:
            raise ValueError(f"error parsing trackedSince time: {since!r}")
        return at + 24 * 3600.0
