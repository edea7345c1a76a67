"""The graph builder's update handler skips updates that leave the graph as it is (an observed
node keeping its ownerReferences, not being deleted) without building an event. Differential
test: one builder fed through its pod informer (the fast path), one fed every event through
process_graph_changes (upstream's path, what the handler did before): after each event their
graphs and the nodes they queued are the same.
"""
from __future__ import annotations

from typing import Any

from kubeplane.api.resources import lookup
from kubeplane.api.types import core_v1, from_dict
from kubeplane.client.tools.cache import SharedIndexInformer
from kubeplane.controller.garbagecollector.graph import ObjectReference, ReferenceCache
from kubeplane.controller.garbagecollector.graph_builder import ADD, DELETE, UPDATE, Event, GraphBuilder

TS = "2026-01-01T00:00:00Z"


class LogQueue:
    """Records what the builder queues, by the node's identity and state at the time."""

    def __init__(self) -> None:
        self.log: list[tuple[Any, ...]] = []

    def add(self, n: Any) -> None:
        self.log.append(("add", n.identity, n.virtual))

    def add_rate_limited(self, n: Any) -> None:
        self.log.append(("rate_limited", n.identity, n.virtual))


class Factory:
    def __init__(self) -> None:
        self.shared = SharedIndexInformer(None, name="pods")  # type: ignore[arg-type]   # fed by hand

    def informer_for(self, group: str, version: str, plural: str) -> Any:
        shared = self.shared

        class RI:
            def informer(self) -> SharedIndexInformer:
                return shared
        return RI()


def builder() -> tuple[GraphBuilder, Factory, LogQueue, LogQueue]:
    f, d, o = Factory(), LogQueue(), LogQueue()
    ri = lookup("", "v1", "pods")
    assert ri is not None
    return GraphBuilder(f, d, o, ReferenceCache(), [ri]), f, d, o   # type: ignore[arg-type]


def pod(name: str, rv: int, owners: list[tuple[str, bool]], *, deleting: bool = False,
        finalizers: list[str] | None = None, phase: str = "Pending") -> core_v1.Pod:
    meta: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"uid-{name}", "resourceVersion": str(rv),
                            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": uid.removeprefix("uid-"),
                                                 "uid": uid, "controller": False, "blockOwnerDeletion": block}
                                                for uid, block in owners] or None}
    if deleting:
        meta["deletionTimestamp"] = TS
    if finalizers:
        meta["finalizers"] = finalizers
    return from_dict({"metadata": meta, "spec": {"containers": [{"name": "c", "image": "i"}]},
                      "status": {"phase": phase}}, core_v1.Pod)


def graph(gb: GraphBuilder) -> dict[str, Any]:
    return {uid: (n.identity, [(r.uid, r.block_owner_deletion) for r in n.owners],
                  sorted(d.identity.uid for d in n.dependents), n.virtual, n.being_deleted, n.deleting_dependents)
            for uid, n in gb.uid_to_node.items()}


def test_skipped_updates_leave_the_graph_and_queues_as_processing_them_would() -> None:
    fast, f, fast_del, fast_orph = builder()
    slow, _, slow_del, slow_orph = builder()
    seen: dict[str, core_v1.Pod] = {}
    skipped = [0]
    real = fast.process_graph_changes

    def counting(event: Event) -> None:
        skipped[0] -= 1
        real(event)
    fast.process_graph_changes = counting  # type: ignore[method-assign]

    def step(kind: str, p: core_v1.Pod) -> None:
        old = seen.get(p.metadata.name)
        skipped[0] += 1
        if kind == DELETE:
            f.shared.delete(p)
            seen.pop(p.metadata.name)
        else:
            f.shared.add(p)
            seen[p.metadata.name] = p
        slow.process_graph_changes(Event(False, kind, p.metadata, old.metadata if kind == UPDATE and old else None,
                                         "v1", "Pod"))
        assert graph(fast) == graph(slow), (kind, p.metadata.name, p.metadata.resource_version)
        assert fast_del.log == slow_del.log and fast_orph.log == slow_orph.log

    step(ADD, pod("a", 1, [("uid-rs", True)]))                       # a virtual owner, queued
    step(UPDATE, pod("a", 2, [("uid-rs", True)], phase="Running"))    # status only: skipped
    step(UPDATE, pod("a", 3, [("uid-rs", False)]))                   # stops blocking: the owner queued
    step(UPDATE, pod("a", 4, [("uid-rs", False), ("uid-b", True)]))  # a second owner
    step(ADD, pod("b", 5, []))                                       # the virtual owner observed
    step(UPDATE, pod("b", 6, [], phase="Running"))                   # skipped
    # b verified absent while a still names it: b's node goes, a later event revives it virtual
    fast.enqueue_virtual_delete_event(ObjectReference("v1", "Pod", "b", "uid-b", "ns"))
    slow.enqueue_virtual_delete_event(ObjectReference("v1", "Pod", "b", "uid-b", "ns"))
    skipped[0] += 1                           # that virtual event went through process_graph_changes
    step(ADD, pod("c", 7, [("uid-b", True)]))
    step(UPDATE, pod("b", 8, [], phase="Succeeded"))                 # virtual: processed, observed again
    step(UPDATE, pod("a", 9, [("uid-rs", False), ("uid-b", True)], deleting=True, finalizers=["orphan"]))
    step(UPDATE, pod("a", 10, [("uid-rs", False), ("uid-b", True)], deleting=True, finalizers=["orphan"],
                     phase="Succeeded"))                             # being deleted: processed
    step(UPDATE, pod("c", 11, [("uid-b", True)], deleting=True, finalizers=["foregroundDeletion"]))
    step(DELETE, pod("a", 12, [("uid-rs", False), ("uid-b", True)], deleting=True))
    step(DELETE, pod("b", 13, []))
    assert fast_orph.log and fast_del.log
    assert skipped[0] == 2                    # exactly the two status-only updates were skipped


def test_skipped_deleting_updates_leave_the_graph_and_queues_as_processing_them_would() -> None:
    """Updates of an observed node being deleted without the orphan or foreground finalizer
    (a pod's graceful deletion and its last status writes) only mark the node being deleted;
    one that gains such a finalizer, or changes its owners, is processed."""
    fast, f, fast_del, fast_orph = builder()
    slow, _, slow_del, slow_orph = builder()
    seen: dict[str, core_v1.Pod] = {}
    processed = [0]
    real = fast.process_graph_changes

    def counting(event: Event) -> None:
        processed[0] += 1
        real(event)
    fast.process_graph_changes = counting  # type: ignore[method-assign]

    def step(kind: str, p: core_v1.Pod) -> None:
        old = seen.get(p.metadata.name)
        if kind == DELETE:
            f.shared.delete(p)
            seen.pop(p.metadata.name)
        else:
            f.shared.add(p)
            seen[p.metadata.name] = p
        slow.process_graph_changes(Event(False, kind, p.metadata, old.metadata if kind == UPDATE and old else None,
                                         "v1", "Pod"))
        assert graph(fast) == graph(slow), (kind, p.metadata.name, p.metadata.resource_version)
        # the dependents of a node come in no particular order (a set, as upstream's map)
        assert sorted(map(repr, fast_del.log)) == sorted(map(repr, slow_del.log))
        assert fast_orph.log == slow_orph.log

    step(ADD, pod("o", 1, []))
    step(ADD, pod("a", 2, [("uid-o", True)]))
    step(ADD, pod("b", 3, [("uid-o", True)]))
    assert processed[0] == 3
    step(UPDATE, pod("a", 4, [("uid-o", True)], deleting=True))                       # skipped, marked
    assert graph(fast)["uid-a"][4] is True
    step(UPDATE, pod("a", 5, [("uid-o", True)], deleting=True, phase="Succeeded"))    # skipped
    step(UPDATE, pod("a", 6, [("uid-o", True)], deleting=True, finalizers=["example.com/x"]))    # skipped
    assert processed[0] == 3
    step(UPDATE, pod("a", 7, [("uid-o", True)], deleting=True, finalizers=["orphan"]))  # starts orphaning
    step(UPDATE, pod("a", 8, [("uid-o", True)], deleting=True, finalizers=["example.com/x", "foregroundDeletion"]))
    step(UPDATE, pod("b", 9, [("uid-o", False)], deleting=True))                      # owners changed
    assert processed[0] == 6
    step(UPDATE, pod("o", 10, [], deleting=True, finalizers=["foregroundDeletion"]))  # dependents queued
    step(UPDATE, pod("o", 11, [], deleting=True, finalizers=["foregroundDeletion"], phase="Succeeded"))
    step(DELETE, pod("a", 12, [("uid-o", True)], deleting=True))
    assert processed[0] == 9
    assert fast_orph.log and fast_del.log


def test_an_events_identity_is_the_object_reference_the_dataclass_makes() -> None:
    """identity_from_event fills its ObjectReference in without the frozen __setattr__: equal,
    of the same hash and type, and as frozen as one made by the dataclass."""
    import dataclasses

    import pytest

    from kubeplane.controller.garbagecollector.graph_builder import identity_from_event
    pod = from_dict({"metadata": {"name": "p", "namespace": "ns", "uid": "u1"}}, core_v1.Pod)
    bare = from_dict({"metadata": {"name": "n"}}, core_v1.Pod)
    for meta, want in ((pod.metadata, ObjectReference("v1", "Pod", "p", "u1", "ns")),
                       (bare.metadata, ObjectReference("v1", "Pod", "n", "", ""))):
        got = identity_from_event(Event(False, ADD, meta, None, "v1", "Pod"))
        assert type(got) is ObjectReference and got == want and hash(got) == hash(want)
        assert str(got) == str(want) and {want: 1}[got] == 1
        with pytest.raises(dataclasses.FrozenInstanceError):
            got.name = "x"                  # type: ignore[misc]
