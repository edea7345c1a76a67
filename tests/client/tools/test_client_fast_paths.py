"""The client-side fast paths keep their contracts: event names, correlator copies, the
event sink's client cache, and the indexer's update shortcut."""
from __future__ import annotations

import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.api.types import core_v1, meta_v1
from kubeplane.api.validation.names import name_is_dns_subdomain
from kubeplane.client.tools.cache import Indexer
from kubeplane.client.tools.record.event import EventSinkImpl
from kubeplane.client.tools.record.events_cache import EventLogger
from kubeplane.client.tools.record.util import generate_event_name, get_reference
from kubeplane.utils.clock import FakeClock

NAMES = st.text(alphabet="ab-.1_A", max_size=8) | st.sampled_from(["web", "a" * 236, "a" * 237, "a" * 260])


@settings(max_examples=300, deadline=None)
@given(NAMES, st.integers(0, 2 ** 63))
def test_event_name_is_the_stamped_name_exactly_when_that_is_valid(ref_name: str, nanos: int) -> None:
    stamped = f"{ref_name}.{nanos:x}"
    got = generate_event_name(ref_name, nanos)
    if not name_is_dns_subdomain(stamped, False):
        assert got == stamped
    else:
        assert uuid.UUID(got)


def event(msg: str) -> core_v1.Event:
    return core_v1.Event(metadata=meta_v1.ObjectMeta(name="web.1", namespace="default", resource_version="7"),
                         involved_object=core_v1.ObjectReference(kind="ReplicaSet", name="web", namespace="default"),
                         message=msg, count=1, first_timestamp="t0", last_timestamp="t1")


def test_event_observe_never_modifies_the_event_it_is_given() -> None:
    logger = EventLogger(16, FakeClock(0.0))
    given = event("m")
    first, patch = logger.event_observe(given, "k")
    assert patch is None and first.metadata is not None
    assert first is given and first.metadata.resource_version == "7"    # a first occurrence: the caller's own
    first.metadata.resource_version = None        # what record_event does before a create
    first.metadata.name = "web.2"
    logger.update_state(first)
    original = event("m")
    repeat, patch = logger.event_observe(original, "k")
    assert patch == {"count": 2, "lastTimestamp": "t1", "message": "m"}
    assert repeat.count == 2
    assert original.count == 1 and original.metadata.name == "web.1" and original.metadata.resource_version == "7"


def test_get_reference_of_a_reference_is_an_independent_copy() -> None:
    ref = core_v1.ObjectReference(kind="Pod", name="p", namespace="default")
    got = get_reference(ref)
    got.name = "q"
    assert got is not ref and ref.name == "p"


def test_event_sink_builds_one_client_per_namespace() -> None:
    built: list[str] = []

    class CoreV1:
        def events(self, ns: str) -> Any:
            built.append(ns)
            return object()

    class Clientset:
        def core_v1(self) -> CoreV1:
            return CoreV1()

    sink = EventSinkImpl(Clientset())  # type: ignore[arg-type]
    a = sink._events(event("x"))
    assert sink._events(event("y")) is a
    other = event("z")
    assert other.metadata is not None
    other.metadata.namespace = "kube-system"
    assert sink._events(other) is not a
    assert built == ["default", "kube-system"]


class Obj:
    def __init__(self, name: str, node: str) -> None:
        self.metadata = meta_v1.ObjectMeta(name=name, namespace="default")
        self.node = node


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["add", "delete"]), st.sampled_from(["p1", "p2", "p3"]),
                          st.sampled_from(["n1", "n2", ""])), max_size=30))
def test_indexer_keeps_its_invariant_when_updates_keep_or_change_index_values(ops: list[tuple[str, str, str]]) -> None:
    idx = Indexer(indexers={"node": lambda o: [o.node] if o.node else []})
    for op, name, node in ops:
        if op == "add":
            idx.add(Obj(name, node))
        else:
            idx.delete(Obj(name, node))
        idx._check_invariants()
    for node in ("n1", "n2"):
        assert sorted(o.metadata.name for o in idx.by_index("node", node)) == sorted(
            o.metadata.name for o in idx.list() if o.node == node)
