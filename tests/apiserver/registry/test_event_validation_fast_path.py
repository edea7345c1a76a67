"""An Event create's validation shortcut (registry/core/event.py _plainly_valid) answers what
upstream's rules answer: legacyValidateEvent, then the generic ObjectMeta check with
ValidatePathSegmentName (validate_core_event, validate_core_event_meta)."""
from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubeplane.api.validation import core as validation
from kubeplane.apiserver.registry.core import event as event_registry

NAMESPACES = st.sampled_from(["default", "bench", "kube-system", "", "Bad_NS", "a" * 64, "a.b"])
NAMES = st.sampled_from(["web.17a3b2c1", "a/b", "a%b", ".", "..", "", "Node_1.1", None])
MAPS = st.sampled_from([("labels", None), ("labels", {}), ("labels", {"app": "web"}), ("labels", {"-bad-": "x"}),
                        ("annotations", {"a": "b"}), ("annotations", {"Bad Key": "x"}), ("finalizers", []),
                        ("finalizers", ["bad finalizer"]), ("finalizers", ["example.com/f"]),
                        ("ownerReferences", [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u"}]),
                        ("managedFields", [{"operation": "Patch"}])])


def full(ev: dict[str, Any]) -> list[Any]:
    return validation.validate_core_event(ev) or validation.validate_core_event_meta(ev)


@settings(max_examples=600, deadline=None)
@given(ns=NAMESPACES, involved_ns=NAMESPACES | st.none(), name=NAMES, event_time=st.sampled_from([None, "",
       "2026-01-01T00:00:00.000000Z"]), generation=st.sampled_from([None, 1, -1]),
       meta_map=MAPS)
def test_plainly_valid_events_are_those_the_rules_pass(ns: str, involved_ns: str | None, name: str | None,
                                                       event_time: str | None, generation: int | None,
                                                       meta_map: tuple[str, Any]) -> None:
    meta: dict[str, Any] = {"name": name, "namespace": ns, "generation": generation, meta_map[0]: meta_map[1]}
    involved = {"kind": "Pod", "name": "web", "namespace": involved_ns}
    ev = {"apiVersion": "v1", "kind": "Event", "metadata": meta, "involvedObject": involved, "reason": "Started",
          "eventTime": event_time, "reportingController": "kubelet", "reportingInstance": "n", "action": "a"}
    want = full(ev)
    assert event_registry.validate_event(ev) == want
    assert event_registry.validate_event(ev) == want          # again, with what the first call remembered
    if event_registry._plainly_valid(ev):
        assert want == []


def test_a_recorder_event_takes_the_shortcut_once_its_namespace_passed() -> None:
    ev = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "web.17a3b2c1", "namespace": "shortcut-ns"},
          "involvedObject": {"kind": "Pod", "name": "web", "namespace": "shortcut-ns"}, "reason": "Started"}
    assert not event_registry._plainly_valid(ev)               # a namespace not seen yet: the full rules
    assert event_registry.validate_event(ev) == []
    assert event_registry._plainly_valid(ev)
