"""The "default class" look-up DefaultStorageClass and DefaultIngressClass share: among the
cluster-scoped classes under a storage prefix annotated as the default, the newest (ties: the
first by name). One `count` of the prefix first, so a cluster without classes pays a bisect.

Upstream: GetDefaultClass (pkg/volume/util/storageclass.go) and getDefaultClass
(plugin/pkg/admission/network/defaultingressclass/admission.go): the same sort.
"""
from __future__ import annotations

from typing import Any

from ....storage.interface import Storage
from ....utils.clock import parse_rfc3339


async def newest_default_class(storage: Storage, prefix: str, annotations: tuple[str, ...]) -> dict[str, Any] | None:
    if not await storage.count(prefix):
        return None
    kvs, _ = await storage.list(prefix)
    defaults = [kv.obj for kv in kvs
                if any(((kv.obj.get("metadata") or {}).get("annotations") or {}).get(a) == "true" for a in annotations)]
    if not defaults:
        return None

    def key(c: dict[str, Any]) -> tuple[float, str]:
        meta = c.get("metadata") or {}
        try:
            created = parse_rfc3339(meta["creationTimestamp"])
        except (KeyError, TypeError, ValueError):
            created = 0.0
        return (-created, meta.get("name", ""))
    return min(defaults, key=key)
