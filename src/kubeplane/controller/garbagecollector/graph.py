"""The garbage collector's owner graph: one node per object (or per owner not yet seen).

Upstream: graph.go. A node knows its owners (the ownerReferences of its object) and its
dependents (nodes whose ownerReferences name it). The graph is mutated only by the graph
builder, synchronously on the event loop, so it needs none of upstream's locks.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

ORPHAN_FINALIZER = "orphan"                     # metav1.FinalizerOrphanDependents
FOREGROUND_FINALIZER = "foregroundDeletion"     # metav1.FinalizerDeleteDependents


@dataclass(frozen=True, slots=True)
class ObjectReference:
    """An object's coordinates: an owner reference plus the namespace it lives in.

    Upstream: objectReference (graph.go)
    """

    api_version: str
    kind: str
    name: str
    uid: str
    namespace: str = ""

    def __str__(self) -> str:
        return (f"[{self.api_version}/{self.kind}, namespace: {self.namespace}, "
                f"name: {self.name}, uid: {self.uid}]")


def owner_reference_coordinates(ref: Any, namespace: str = "") -> ObjectReference:
    """The identity an ownerReference names (in the dependent's namespace when namespaced).

    Upstream: ownerReferenceCoordinates (graph.go)
    """
    return ObjectReference(ref.api_version or "", ref.kind or "", ref.name or "", ref.uid or "", namespace)


class Node:
    """One object of the graph.

    owners: the object's ownerReferences as last observed ([] for a virtual node).
    dependents: nodes whose owners include this node's uid.
    virtual: the node was created for an owner named by a dependent and not yet observed
    through an informer; attempt_to_delete checks with the API server whether it exists.
    being_deleted / deleting_dependents: deletionTimestamp set / plus the foreground finalizer.

    Upstream: node (graph.go). Nodes hash by identity of the Python object, as upstream's
    queues hold *node pointers.
    """

    __slots__ = ("identity", "owners", "dependents", "virtual", "being_deleted", "deleting_dependents")

    def __init__(self, identity: ObjectReference, owners: list[Any] | None = None, *, virtual: bool = False,
                 being_deleted: bool = False, deleting_dependents: bool = False) -> None:
        self.identity = identity
        self.owners: list[Any] = list(owners or [])
        self.dependents: set[Node] = set()
        self.virtual = virtual
        self.being_deleted = being_deleted
        self.deleting_dependents = deleting_dependents

    def __repr__(self) -> str:
        return f"<node {self.identity}{' virtual' if self.virtual else ''}>"

    def clone(self) -> Node:
        n = Node(self.identity, self.owners, virtual=self.virtual, being_deleted=self.being_deleted,
                 deleting_dependents=self.deleting_dependents)
        n.dependents = set(self.dependents)
        return n

    def is_observed(self) -> bool:
        return not self.virtual

    def mark_observed(self) -> None:
        self.virtual = False

    def is_being_deleted(self) -> bool:
        return self.being_deleted

    def mark_being_deleted(self) -> None:
        self.being_deleted = True

    def is_deleting_dependents(self) -> bool:
        return self.deleting_dependents

    def mark_deleting_dependents(self) -> None:
        self.deleting_dependents = True

    def add_dependent(self, dependent: Node) -> None:
        self.dependents.add(dependent)

    def delete_dependent(self, dependent: Node) -> None:
        self.dependents.discard(dependent)

    def dependents_length(self) -> int:
        return len(self.dependents)

    def get_dependents(self) -> list[Node]:
        return list(self.dependents)

    def blocking_dependents(self) -> list[Node]:
        """Dependents whose reference to this node has blockOwnerDeletion=true.

        Upstream: blockingDependents (graph.go)
        """
        uid = self.identity.uid
        return [dep for dep in self.dependents
                if any(o.uid == uid and o.block_owner_deletion for o in dep.owners)]

    def unblock_owner_references_strategic_merge_patch(self) -> dict[str, Any]:
        """A patch turning every blocking ownerReference of this node non-blocking.

        Upstream: unblockOwnerReferencesStrategicMergePatch (patch.go)
        """
        refs = [owner_reference_dict(o, block_owner_deletion=False) for o in self.owners if o.block_owner_deletion]
        return {"metadata": {"uid": self.identity.uid, "ownerReferences": refs}}


def owner_reference_dict(ref: Any, **override: Any) -> dict[str, Any]:
    d = {"apiVersion": ref.api_version, "kind": ref.kind, "name": ref.name, "uid": ref.uid}
    if ref.controller is not None:
        d["controller"] = ref.controller
    if ref.block_owner_deletion is not None:
        d["blockOwnerDeletion"] = ref.block_owner_deletion
    d.update({"blockOwnerDeletion" if k == "block_owner_deletion" else k: v for k, v in override.items()})
    return d


class ReferenceCache:
    """An LRU set of identities known to be absent (upstream's absentOwnerCache, 500 entries).

    Upstream: ReferenceCache (uid_cache.go)
    """

    def __init__(self, max_size: int = 500) -> None:
        self.max_size = max_size
        self._items: OrderedDict[ObjectReference, None] = OrderedDict()

    def add(self, ref: ObjectReference) -> None:
        self._items[ref] = None
        self._items.move_to_end(ref)
        while len(self._items) > self.max_size:
            self._items.popitem(last=False)

    def has(self, ref: ObjectReference) -> bool:
        if ref in self._items:
            self._items.move_to_end(ref)
            return True
        return False

    def __len__(self) -> int:
        return len(self._items)
