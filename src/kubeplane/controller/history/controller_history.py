"""ControllerRevisions: the recorded history of a StatefulSet's or DaemonSet's template.

A revision's name is `<parent name>-<hash>`, the hash an FNV-32 of the revision's data (plus
the parent's collisionCount once a name collided), safe-encoded like the pod-template-hash.
The label `controller.kubernetes.io/hash` carries the hash, so two revisions with different
hashes are known to differ without comparing their data.

`Interface` is what a controller uses: list the revisions it owns (or orphans it may adopt),
create one (renaming on a collision), bump a revision number (a rollback to an older
template), adopt, release, delete. `RealHistory` writes through a clientset and reads a
lister; `FakeHistory` keeps everything in an informer's indexer, for tests.

Data: upstream keeps a revision's data as raw JSON bytes (a strategic merge patch that
restores the template). Here `data` is the decoded JSON (RawExtension is Any), and
`raw_data` gives the bytes Go's json.Marshal would write for it (sorted keys, compact,
HTML-escaped), so hashes are reproducible and do not depend on how the server ordered keys.

Upstream: pkg/controller/history/controller_history.go
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Protocol, Sequence

import orjson

from ...api import errors, labels
from ...api.types import apps_v1, meta_v1
from ...utils.clock import parse_rfc3339
from ..controller_utils import GroupVersionKind, get_controller_of, new_controller_ref
from ..deployment.util.hash import safe_encode_string

if TYPE_CHECKING:
    from ...client.clientset import Clientset
    from ...client.listers import ControllerRevisionLister
    from ...client.informers import ResourceInformer

# The label holding the hash of a ControllerRevision's data. Upstream: ControllerRevisionHashLabel
CONTROLLER_REVISION_HASH_LABEL = "controller.kubernetes.io/hash"

FNV32_OFFSET_BASIS = 2166136261
FNV32_PRIME = 16777619

# Go's json.Marshal escapes these inside strings (HTML safety); orjson writes them as they are.
_GO_ESCAPES = ((b"<", b"\\u003c"), (b">", b"\\u003e"), (b"&", b"\\u0026"),
               ("\u2028".encode(), b"\\u2028"), ("\u2029".encode(), b"\\u2029"))


def fnv32(data: bytes, h: int = FNV32_OFFSET_BASIS) -> int:
    """32-bit FNV-1 (multiply, then xor) of data. Upstream: hash/fnv New32 + Write + Sum32."""
    for b in data:
        h = ((h * FNV32_PRIME) & 0xFFFFFFFF) ^ b
    return h


def raw_data(data: Any) -> bytes:
    """The bytes Go's json.Marshal writes for decoded JSON: sorted keys, no spaces, <>& escaped."""
    out = orjson.dumps(data, option=orjson.OPT_SORT_KEYS)
    for raw, escaped in _GO_ESCAPES:
        if raw in out:
            out = out.replace(raw, escaped)
    return out


def template_patch(template: dict[str, Any]) -> dict[str, Any]:
    """{"spec": {"template": {"$patch": "replace", ...}}}, the data of a DaemonSet's or
    StatefulSet's revision, in the key order Go writes it (the typed object marshalled,
    unmarshalled into a map, marshalled again: keys sorted at every level, "$patch" first).

    kubectl's rollback compares these bytes with its own patch of the live object and skips a
    rollback to the revision already running ("skipped rollback (current template already
    matches revision N)") only when they are equal. Upstream: the controllers' getPatch and
    kubectl's getDaemonSetPatch / getStatefulSetPatch.
    """
    template = dict(template)
    template.setdefault("metadata", {})          # a struct in Go: never omitted
    template["$patch"] = "replace"
    return _sorted_keys({"spec": {"template": template}})


def _sorted_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted_keys(v) for v in value]
    return value


def controller_revision_name(prefix: str, hash_: str) -> str:
    """`prefix-hash`, the prefix cut to 223 bytes so the name stays within 253. Upstream: ControllerRevisionName"""
    if len(prefix) > 223:
        prefix = prefix[:223]
    return f"{prefix}-{hash_}"


def hash_controller_revision(revision: apps_v1.ControllerRevision, probe: int | None) -> str:
    """FNV-32 of the data, then of probe's decimal digits (if any), safe-encoded.

    Example: a collisionCount of 1 appends b"1" to the hashed bytes, so the name changes.
    Upstream: HashControllerRevision
    """
    h = fnv32(raw_data(revision.data)) if revision.data is not None else FNV32_OFFSET_BASIS
    if probe is not None:
        h = fnv32(str(probe).encode(), h)
    return safe_encode_string(str(h))


def new_controller_revision(parent: Any, parent_kind: GroupVersionKind, template_labels: dict[str, str] | None,
                            data: Any, revision: int, collision_count: int | None) -> apps_v1.ControllerRevision:
    """A revision controlled by parent, labelled like the template plus the hash label, named
    `<parent>-<hash>`. Upstream: NewControllerRevision"""
    label_map = dict(template_labels or {})
    cr = apps_v1.ControllerRevision(
        metadata=meta_v1.ObjectMeta(labels=label_map, owner_references=[new_controller_ref(parent, parent_kind)]),
        data=data, revision=revision)
    hash_ = hash_controller_revision(cr, collision_count)
    cr.metadata.name = controller_revision_name(parent.metadata.name, hash_)
    label_map[CONTROLLER_REVISION_HASH_LABEL] = hash_
    return cr


def _creation(cr: apps_v1.ControllerRevision) -> float:
    ts = cr.metadata.creation_timestamp if cr.metadata is not None else None
    return parse_rfc3339(ts) if ts else 0.0


def _by_revision(a: apps_v1.ControllerRevision, b: apps_v1.ControllerRevision) -> int:
    """Revision, then creation time, then name. Upstream: byRevision.Less"""
    ka = (a.revision or 0, _creation(a), a.metadata.name or "")
    kb = (b.revision or 0, _creation(b), b.metadata.name or "")
    return (ka > kb) - (ka < kb)


def sort_controller_revisions(revisions: list[apps_v1.ControllerRevision]) -> list[apps_v1.ControllerRevision]:
    """Sort revisions in place by Revision (stable) and return them. Upstream: SortControllerRevisions"""
    revisions.sort(key=functools.cmp_to_key(_by_revision))
    return revisions


def _hash_label(cr: apps_v1.ControllerRevision) -> int | None:
    hs = (cr.metadata.labels or {}).get(CONTROLLER_REVISION_HASH_LABEL) if cr.metadata else None
    if hs is None:
        return None
    try:
        value = int(hs, 10)          # upstream: strconv.ParseInt(hs, 10, 32); safe-encoded hashes never parse
    except ValueError:
        return None
    return value if -2**31 <= value < 2**31 else None


def equal_revision(lhs: apps_v1.ControllerRevision | None, rhs: apps_v1.ControllerRevision | None) -> bool:
    """Both None, or both with semantically equal data (differing hash labels: unequal).

    Upstream: EqualRevision
    """
    if lhs is None or rhs is None:
        return lhs is rhs
    lh, rh = _hash_label(lhs), _hash_label(rhs)
    if lh is not None and rh is not None and lh != rh:
        return False
    return bool(lhs.data == rhs.data)


def find_equal_revisions(revisions: Sequence[apps_v1.ControllerRevision],
                         needle: apps_v1.ControllerRevision) -> list[apps_v1.ControllerRevision]:
    """The revisions equal to needle, in their order. Upstream: FindEqualRevisions"""
    return [r for r in revisions if equal_revision(r, needle)]


def next_revision(revisions: Sequence[apps_v1.ControllerRevision]) -> int:
    """1 more than the last (sorted) revision's number; 1 for none. Upstream: nextRevision (statefulset)"""
    return (revisions[-1].revision or 0) + 1 if revisions else 1


class Interface(Protocol):
    """A controller's history as ControllerRevisions. Arguments are never modified.

    Upstream: history.Interface
    """

    async def list_controller_revisions(self, parent: Any,
                                        selector: labels.Selector | None) -> list[apps_v1.ControllerRevision]:
        """Revisions matching selector owned by parent or by no controller."""

    async def create_controller_revision(self, parent: Any, revision: apps_v1.ControllerRevision,
                                         collision_count: int) -> tuple[apps_v1.ControllerRevision, int]:
        """Create revision owned by parent; on a name collision with different data bump the
        count, rename, retry. Returns (created, the collision count after)."""

    async def delete_controller_revision(self, revision: apps_v1.ControllerRevision) -> None:
        """Delete revision."""

    async def update_controller_revision(self, revision: apps_v1.ControllerRevision,
                                         new_revision: int) -> apps_v1.ControllerRevision:
        """Set revision's number to new_revision (retrying on conflicts)."""

    async def adopt_controller_revision(self, parent: Any, parent_kind: GroupVersionKind,
                                        revision: apps_v1.ControllerRevision) -> apps_v1.ControllerRevision:
        """Add parent as controller of an orphan revision; an owned one is an error."""

    async def release_controller_revision(self, parent: Any,
                                          revision: apps_v1.ControllerRevision) -> apps_v1.ControllerRevision | None:
        """Remove parent's owner reference; None if the revision is gone or not parent's."""


def _owned(history: list[apps_v1.ControllerRevision], parent: Any) -> list[apps_v1.ControllerRevision]:
    out = []
    for cr in history:
        ref = get_controller_of(cr)
        if ref is None or ref.uid == parent.metadata.uid:
            out.append(cr)
    return out


class RealHistory:
    """Interface over a clientset (writes) and a lister (reads). Upstream: realHistory (NewHistory)"""

    def __init__(self, client: Clientset, lister: ControllerRevisionLister) -> None:
        self.client = client
        self.lister = lister

    def _revisions(self, namespace: str) -> Any:
        return self.client.apps_v1().controllerrevisions(namespace)

    async def list_controller_revisions(self, parent: Any,
                                        selector: labels.Selector | None) -> list[apps_v1.ControllerRevision]:
        return _owned(self.lister.controllerrevisions(parent.metadata.namespace or "").list(selector), parent)

    async def create_controller_revision(self, parent: Any, revision: apps_v1.ControllerRevision,
                                         collision_count: int) -> tuple[apps_v1.ControllerRevision, int]:
        clone = revision.deep_copy()
        ns = parent.metadata.namespace or ""
        while True:
            clone.metadata.name = controller_revision_name(parent.metadata.name,
                                                           hash_controller_revision(revision, collision_count))
            try:
                return await self._revisions(ns).create(clone), collision_count
            except errors.AlreadyExists:
                exists = await self._revisions(ns).get(clone.metadata.name)
                if exists.data == clone.data:
                    return exists, collision_count
                collision_count += 1

    async def update_controller_revision(self, revision: apps_v1.ControllerRevision,
                                         new_revision: int) -> apps_v1.ControllerRevision:
        clone = revision.deep_copy()
        for attempt in range(_RETRY_STEPS):
            if clone.revision == new_revision:
                return clone
            clone.revision = new_revision
            try:
                return await self._revisions(clone.metadata.namespace or "").update(clone)
            except errors.Conflict:
                if attempt == _RETRY_STEPS - 1:
                    raise
                try:
                    clone = self.lister.controllerrevisions(clone.metadata.namespace or "").get(
                        clone.metadata.name).deep_copy()
                except errors.NotFound:
                    pass
        return clone

    async def delete_controller_revision(self, revision: apps_v1.ControllerRevision) -> None:
        await self._revisions(revision.metadata.namespace or "").delete(revision.metadata.name)

    async def adopt_controller_revision(self, parent: Any, parent_kind: GroupVersionKind,
                                        revision: apps_v1.ControllerRevision) -> apps_v1.ControllerRevision:
        if (owner := get_controller_of(revision)) is not None:
            raise ValueError(f"attempt to adopt revision owned by {owner}")
        patch = {"metadata": {"ownerReferences": [{
            "apiVersion": parent_kind.group_version(), "kind": parent_kind.kind, "name": parent.metadata.name,
            "uid": parent.metadata.uid, "controller": True, "blockOwnerDeletion": True}],
            "uid": revision.metadata.uid}}
        return await self._revisions(parent.metadata.namespace or "").patch(revision.metadata.name, patch, "strategic")

    async def release_controller_revision(self, parent: Any,
                                          revision: apps_v1.ControllerRevision) -> apps_v1.ControllerRevision | None:
        patch = {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": parent.metadata.uid}],
                              "uid": revision.metadata.uid}}
        try:
            return await self._revisions(revision.metadata.namespace or "").patch(revision.metadata.name, patch,
                                                                                  "strategic")
        except (errors.NotFound, errors.Invalid):
            return None          # gone, or no longer (or never) owned by parent


# Upstream: retry.DefaultBackoff has 4 steps.
_RETRY_STEPS = 4


class FakeHistory:
    """Interface over an informer's indexer only (no API calls). Upstream: fakeHistory (NewFakeHistory)"""

    def __init__(self, informer: ResourceInformer[ControllerRevisionLister]) -> None:
        self.indexer = informer.informer().get_indexer()
        self.lister = informer.lister()

    async def list_controller_revisions(self, parent: Any,
                                        selector: labels.Selector | None) -> list[apps_v1.ControllerRevision]:
        return _owned(self.lister.controllerrevisions(parent.metadata.namespace or "").list(selector), parent)

    def _get(self, revision: apps_v1.ControllerRevision) -> apps_v1.ControllerRevision | None:
        try:
            return self.lister.controllerrevisions(revision.metadata.namespace or "").get(revision.metadata.name)
        except errors.NotFound:
            return None

    async def create_controller_revision(self, parent: Any, revision: apps_v1.ControllerRevision,
                                         collision_count: int) -> tuple[apps_v1.ControllerRevision, int]:
        clone = revision.deep_copy()
        clone.metadata.namespace = parent.metadata.namespace
        while True:
            clone.metadata.name = controller_revision_name(parent.metadata.name,
                                                           hash_controller_revision(revision, collision_count))
            if self._get(clone) is not None:
                collision_count += 1
                continue
            self.indexer.update(clone)
            return clone, collision_count

    async def delete_controller_revision(self, revision: apps_v1.ControllerRevision) -> None:
        found = self._get(revision)
        if found is None:
            raise errors.NotFound("apps", "controllerrevisions", revision.metadata.name)
        self.indexer.delete(found)

    async def update_controller_revision(self, revision: apps_v1.ControllerRevision,
                                         new_revision: int) -> apps_v1.ControllerRevision:
        clone = revision.deep_copy()
        clone.revision = new_revision
        self.indexer.update(clone)
        return clone

    async def adopt_controller_revision(self, parent: Any, parent_kind: GroupVersionKind,
                                        revision: apps_v1.ControllerRevision) -> apps_v1.ControllerRevision:
        if (owner := get_controller_of(revision)) is not None:
            raise ValueError(f"attempt to adopt revision owned by {owner}")
        if self._get(revision) is None:
            raise errors.NotFound("apps", "controllerrevisions", revision.metadata.name)
        clone = revision.deep_copy()
        clone.metadata.owner_references = [*(clone.metadata.owner_references or []),
                                           new_controller_ref(parent, parent_kind)]
        self.indexer.update(clone)
        return clone

    async def release_controller_revision(self, parent: Any,
                                          revision: apps_v1.ControllerRevision) -> apps_v1.ControllerRevision | None:
        if self._get(revision) is None:
            return None
        clone = revision.deep_copy()
        clone.metadata.owner_references = [r for r in clone.metadata.owner_references or []
                                           if r.uid != parent.metadata.uid] or None
        self.indexer.update(clone)
        return clone


if TYPE_CHECKING:
    def _conforms_real(x: RealHistory) -> Interface:
        return x

    def _conforms_fake(x: FakeHistory) -> Interface:
        return x
