"""Deleting everything in a namespace that is being deleted, then finalizing it.

Upstream: pkg/controller/namespace/deletion/namespaced_resources_deleter.go. Upstream
discovers every namespaced resource that supports delete, on every sync; the built-in kinds are
a fixed table (its namespaced rows), and the custom resources are read from discovery each time
(client/metadata.py), so a namespace deleted just after a CRD was created still loses its
custom objects.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import orjson

from ....api import errors, types
from ....api.resources import ResourceInfo, lookup, served_resources
from ....client.clientset import Clientset, GroupClient
from ....client.metadata import MetadataClient, custom_resources
from ....client.rest import ResourceClient, raise_for_status
from ....utils.clock import REAL_CLOCK, Clock, parse_rfc3339, rfc3339
from .status_condition_utils import AllGVRDeletionMetadata, NamespaceConditionUpdater

log = logging.getLogger(__name__)

FINALIZER_KUBERNETES = "kubernetes"           # v1.FinalizerKubernetes
# How long to wait for content that carries finalizers (for example the garbage collector's).
FINALIZER_ESTIMATE_SECONDS = 15


class ResourcesRemainingError(Exception):
    """Content remains that will go by itself; estimate: seconds until it should be gone.

    Upstream: ResourcesRemainingError
    """

    def __init__(self, estimate: int) -> None:
        super().__init__(f"some content remains in the namespace, estimate {estimate} seconds before it is removed")
        self.estimate = estimate


@dataclass
class GVRDeletionMetadata:
    """Upstream: gvrDeletionMetadata"""

    finalizer_estimate_seconds: int = 0
    num_remaining: int = 0
    finalizers_to_num_remaining: dict[str, int] | None = None


def deletable_resources() -> list[ResourceInfo]:
    """Upstream: discovery.FilteredBy(SupportsAllVerbs{"delete"}) over the namespaced resources."""
    return [ri for ri in served_resources() if ri.namespaced and "delete" in ri.verbs]


class NamespacedResourcesDeleter:
    def __init__(self, clientset: Clientset, *, clock: Clock = REAL_CLOCK, finalizer_token: str = FINALIZER_KUBERNETES,
                 resources: Callable[[], Iterable[ResourceInfo]] = deletable_resources,
                 discover_custom: bool = True) -> None:
        self.clientset = clientset
        self.clock = clock
        self.finalizer_token = finalizer_token
        self.discover_resources_fn = resources
        self.discover_custom = discover_custom
        self.ns_client = clientset.core_v1().resource("namespaces")
        # operations a resource answered with MethodNotSupported/NotFound (upstream's opCache)
        self.not_supported: set[tuple[str, str, str]] = set()

    async def delete(self, ns_name: str) -> None:
        """Delete the namespace's content and finalize it; ResourcesRemainingError when some
        content is still going away.

        Upstream: namespacedResourcesDeleter.Delete
        """
        try:
            namespace = await self.ns_client.get(ns_name)
        except errors.NotFound:
            return
        if namespace.metadata.deletion_timestamp is None:
            return
        try:
            namespace = await self.retry_on_conflict_error(namespace, self.update_namespace_status_func)
        except errors.NotFound:
            return
        if namespace.metadata.deletion_timestamp is None or finalized(namespace, self.finalizer_token):
            return
        estimate = await self.delete_all_content(namespace)
        if estimate > 0:
            raise ResourcesRemainingError(estimate)
        try:
            await self.retry_on_conflict_error(namespace, self.finalize_namespace)
        except errors.NotFound:
            return      # another controller sharing the token finished the delete

    async def retry_on_conflict_error(self, namespace: Any, fn: Callable[[Any], Any]) -> Any:
        """Run fn on the latest namespace until it does not conflict (the uid must not change).

        Upstream: retryOnConflictError
        """
        latest = namespace
        while True:
            try:
                return await fn(latest)
            except errors.Conflict:
                prev = latest
                latest = await self.ns_client.get(latest.metadata.name)
                if prev.metadata.uid != latest.metadata.uid:
                    raise RuntimeError("namespace uid has changed across retries") from None

    async def update_namespace_status_func(self, namespace: Any) -> Any:
        """Make sure status.phase says Terminating. Upstream: updateNamespaceStatusFunc"""
        if namespace.metadata.deletion_timestamp is None or (namespace.status and namespace.status.phase == "Terminating"):
            return namespace
        new = namespace.deep_copy()
        new.status = new.status or types.core_v1.NamespaceStatus()
        new.status.phase = "Terminating"
        return await self.ns_client.update_status(new)

    async def finalize_namespace(self, namespace: Any) -> Any:
        """PUT /finalize with our token removed from spec.finalizers (sorted, as upstream's set).

        Upstream: finalizeNamespace
        """
        d = types.to_dict(namespace)
        remaining = sorted({f for f in (namespace.spec.finalizers if namespace.spec else None) or []
                            if f != self.finalizer_token})
        d.setdefault("spec", {})["finalizers"] = remaining
        d.pop("status", None)
        path = f"/api/v1/namespaces/{namespace.metadata.name}/finalize"
        resp = await self.clientset.transport.request("PUT", path, None, orjson.dumps(d))
        try:
            raise_for_status(resp)
        except errors.NotFound:
            return namespace
        return types.decode(resp.body, types.core_v1.Namespace)

    # --- content ------------------------------------------------------------------------------

    async def delete_all_content(self, ns: Any) -> int:
        """Delete every resource's content; return the longest estimate of what remains.

        Upstream: deleteAllContent
        """
        namespace = ns.metadata.name
        deleted_at = parse_rfc3339(ns.metadata.deletion_timestamp)
        updater = NamespaceConditionUpdater(rfc3339(self.clock.now()))
        totals = AllGVRDeletionMetadata()
        estimate = 0
        errs: list[BaseException] = []
        resources = list(self.discover_resources_fn())
        if self.discover_custom:
            try:
                resources += [ri for ri in await custom_resources(self.clientset.transport)
                              if ri.namespaced and "delete" in ri.verbs]
            except errors.StatusError as e:
                # upstream: the discovery failure becomes a condition, and the sync is retried.
                updater.process_discover_resources_err(e)
                errs.append(e)
        for ri in resources:
            try:
                meta = await self.delete_all_content_for_group_version_resource(ri, namespace, deleted_at)
            except errors.StatusError as e:
                # keep going with the other resources; the sync fails (and retries) at the end.
                errs.append(e)
                updater.process_delete_content_err(e)
                continue
            except UnexpectedItemsRemain as e:
                errs.append(e)
                updater.process_delete_content_err(e)
                meta = e.metadata
            estimate = max(estimate, meta.finalizer_estimate_seconds)
            if meta.num_remaining > 0:
                totals.gvr_to_num_remaining[(ri.group, ri.plural)] = meta.num_remaining
                for fin, n in (meta.finalizers_to_num_remaining or {}).items():
                    totals.finalizers_to_num_remaining[fin] = totals.finalizers_to_num_remaining.get(fin, 0) + n
        updater.process_content_totals(totals)
        await self._update_conditions(ns, updater)
        if errs:
            raise ContentDeletionError(errs)
        return estimate

    async def _update_conditions(self, ns: Any, updater: NamespaceConditionUpdater) -> None:
        """Conditions are informative: a failure to write them does not fail the sync."""
        new = ns.deep_copy()
        new.status = new.status or types.core_v1.NamespaceStatus()
        if not updater.update(new.status):
            return
        try:
            await self.ns_client.update_status(new)
        except errors.StatusError as e:
            log.warning("namespace controller: failed to update status of %s: %s", ns.metadata.name, e)

    async def delete_all_content_for_group_version_resource(self, ri: ResourceInfo, namespace: str,
                                                            deleted_at: float) -> GVRDeletionMetadata:
        """Delete one resource's content and report what remains.

        Upstream: deleteAllContentForGroupVersionResource
        """
        estimate = await self.estimate_graceful_termination(ri, namespace, deleted_at)
        if not await self.delete_collection(ri, namespace):
            await self.delete_each_item(ri, namespace)
        items = await self.list_collection(ri, namespace)
        if items is None:
            return GVRDeletionMetadata(estimate)
        finalizers: dict[str, int] = {}
        for item in items:
            for fin in item.metadata.finalizers or ():
                finalizers[fin] = finalizers.get(fin, 0) + 1
        meta = GVRDeletionMetadata(estimate, len(items), finalizers)
        if items and estimate == 0:
            if finalizers:
                # finalizers are a normal reason to wait (the garbage collector's, for example).
                meta.finalizer_estimate_seconds = FINALIZER_ESTIMATE_SECONDS
                return meta
            raise UnexpectedItemsRemain(namespace, ri, meta)
        return meta

    def _client(self, ri: ResourceInfo, namespace: str) -> ResourceClient[Any]:
        if lookup(ri.group, ri.version, ri.plural) is None:          # a custom resource
            return MetadataClient(self.clientset.transport, ri, namespace)
        return GroupClient(self.clientset.transport, ri.group, ri.version).resource(ri.plural, namespace)

    async def delete_collection(self, ri: ResourceInfo, namespace: str) -> bool:
        """DELETE the whole collection (propagation Background: the namespace controller purges
        everything itself, so no orphan finalizer); False if the resource cannot.

        Upstream: deleteCollection
        """
        key = ("deletecollection", ri.group, ri.plural)
        if key in self.not_supported or "deletecollection" not in ri.verbs:
            return False
        body = orjson.dumps({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"})
        resp = await self.clientset.transport.request("DELETE", self._client(ri, namespace).path, None, body)
        try:
            raise_for_status(resp)
        except (errors.MethodNotSupported, errors.NotFound):
            self.not_supported.add(key)
            return False
        return True

    async def list_collection(self, ri: ResourceInfo, namespace: str) -> list[Any] | None:
        """The resource's items in the namespace, or None if it cannot be listed.

        Upstream: listCollection
        """
        key = ("list", ri.group, ri.plural)
        if key in self.not_supported:
            return None
        try:
            return (await self._client(ri, namespace).list()).items
        except (errors.MethodNotSupported, errors.NotFound):
            self.not_supported.add(key)
            return None

    async def delete_each_item(self, ri: ResourceInfo, namespace: str) -> None:
        """Upstream: deleteEachItem"""
        items = await self.list_collection(ri, namespace)
        client = self._client(ri, namespace)
        for item in items or ():
            try:
                await client.delete(item.metadata.name, propagation_policy="Background")
            except (errors.NotFound, errors.MethodNotSupported):
                pass

    async def estimate_graceful_termination(self, ri: ResourceInfo, namespace: str, deleted_at: float) -> int:
        """Seconds pods may still take to terminate, measured from the namespace's deletion.

        E.g. pods with terminationGracePeriodSeconds 30, namespace deleted 10 s ago: 30 (the
        caller waits 30/2 + 1 = 16 s); deleted 30 s or more ago: 0.
        Upstream: estimateGracefulTermination
        """
        estimate = 0
        if (ri.group, ri.plural) == ("", "pods"):
            estimate = await self.estimate_graceful_termination_for_pods(namespace)
        if self.clock.now() - deleted_at >= estimate:
            return 0
        return estimate

    async def estimate_graceful_termination_for_pods(self, namespace: str) -> int:
        """The longest grace period among the namespace's non-terminal pods.

        Upstream: estimateGracefulTerminationForPods
        """
        estimate = 0
        for pod in (await self.clientset.core_v1().pods(namespace).list()).items:
            if pod.status is not None and pod.status.phase in ("Succeeded", "Failed"):
                continue
            grace = pod.spec.termination_grace_period_seconds if pod.spec else None
            if grace is not None and grace > estimate:
                estimate = grace
        return estimate


class UnexpectedItemsRemain(Exception):
    def __init__(self, namespace: str, ri: ResourceInfo, metadata: GVRDeletionMetadata) -> None:
        super().__init__(f"unexpected items still remain in namespace: {namespace} for gvr: "
                         f"{ri.group}/{ri.version}, Resource={ri.plural}")
        self.metadata = metadata


class ContentDeletionError(Exception):
    """Some resources could not be emptied (upstream: the aggregate of their errors)."""

    def __init__(self, errs: list[BaseException]) -> None:
        super().__init__("[" + ", ".join(str(e) for e in errs) + "]")
        self.errors = errs


def finalized(namespace: Any, token: str = FINALIZER_KUBERNETES) -> bool:
    """Our token is gone from spec.finalizers. Upstream: finalized"""
    return token not in ((namespace.spec.finalizers if namespace.spec else None) or ())
