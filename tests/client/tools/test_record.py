"""The event recorder against a real in-process API server, on a fake clock.

Mirrors client-go tools/record event_test.go / events_cache_test.go: creation, count
patches, aggregation, the spam filter, retries, and the FakeRecorder format.
"""
from __future__ import annotations

import asyncio
import logging
import random
from typing import Any

import pytest

from kubeplane.api import errors
from kubeplane.api.types import apps_v1, core_v1, meta_v1
from kubeplane.apiserver.server import APIServer
from kubeplane.client.clientset import Clientset
from kubeplane.client.tools.record import (
    MAX_TRIES_PER_EVENT,
    EventBroadcaster,
    FakeRecorder,
    generate_event_name,
    sprintf,
)
from kubeplane.apiserver.inprocess import InProcessTransport
from kubeplane.client.transport import RawResponse
from kubeplane.storage import new_storage
from kubeplane.utils.clock import FakeClock, rfc3339

START = 1_600_000_000.0     # FakeClock's default start: 2020-09-13T12:26:40Z


class _ZeroRandom(random.Random):
    def random(self) -> float:
        return 0.0


class FlakyTransport:
    """Fails event writes with a connection error while `failures` > 0 (or forever if < 0)."""

    def __init__(self, inner: InProcessTransport) -> None:
        self.inner = inner
        self.failures = 0
        self.event_writes = 0

    async def request(self, method: str, path: str, query: dict[str, str] | None = None,
                      body: bytes | None = None, content_type: str = "application/json") -> RawResponse:
        if "/events" in path and method in ("POST", "PATCH"):
            self.event_writes += 1
            if self.failures != 0:
                self.failures -= 1
                raise ConnectionError("connection refused")
        return await self.inner.request(method, path, query, body, content_type)

    def stream(self, path: str, query: dict[str, str]) -> Any:
        return self.inner.stream(path, query)

    async def close(self) -> None:
        await self.inner.close()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
async def env(clock: FakeClock):
    api = APIServer(new_storage("memory"), clock=clock)
    await api.bootstrap()
    transport = FlakyTransport(InProcessTransport(api))
    cs = Clientset(transport)
    b = EventBroadcaster(cs, clock=clock, rng=_ZeroRandom())
    b.start()
    yield cs, b, transport
    await b.shutdown()


async def settle(n: int = 20) -> None:
    for _ in range(n):
        await asyncio.sleep(0)


def deployment(name: str = "web", ns: str = "default") -> apps_v1.Deployment:
    return apps_v1.Deployment(metadata=meta_v1.ObjectMeta(name=name, namespace=ns, uid="uid-1",
                                                          resource_version="42"))


async def events(cs: Clientset, ns: str = "default") -> list[core_v1.Event]:
    return sorted((await cs.core_v1().events(ns).list()).items, key=lambda e: e.metadata.name)


async def test_event_is_created_with_upstream_fields(env, clock):
    cs, b, _ = env
    b.new_recorder("deployment-controller", "node-1").eventf(
        deployment(), "Normal", "ScalingReplicaSet", "Scaled up replica set %s to %d", "web-5d9", 3)
    await b.flush()
    [ev] = await events(cs)
    assert ev.metadata.name == "web.16345785d8a00000"        # 1.6e18 ns in hex
    assert ev.metadata.namespace == "default"
    ref = ev.involved_object
    assert (ref.kind, ref.api_version, ref.namespace, ref.name, ref.uid, ref.resource_version) == \
        ("Deployment", "apps/v1", "default", "web", "uid-1", "42")
    assert (ev.type, ev.reason, ev.message) == ("Normal", "ScalingReplicaSet", "Scaled up replica set web-5d9 to 3")
    assert ev.source == core_v1.EventSource(component="deployment-controller", host="node-1")
    assert (ev.reporting_component, ev.reporting_instance) == ("deployment-controller", "node-1")
    assert ev.count == 1
    assert ev.first_timestamp == ev.last_timestamp == "2020-09-13T12:26:40Z"


async def test_repeated_event_patches_count_and_last_timestamp(env, clock):
    cs, b, transport = env
    rec = b.new_recorder("deployment-controller")
    for i in range(3):
        rec.event(deployment(), "Warning", "SelectingAll", "selects all pods")
        await b.flush()
        [ev] = await events(cs)
        assert ev.count == i + 1
        assert ev.first_timestamp == rfc3339(START)
        assert ev.last_timestamp == rfc3339(START + 10 * i)
        clock.step(10)
    assert transport.event_writes == 3            # one POST, then two PATCHes
    assert ev.metadata.name == generate_event_name("web", int(START * 1e9))


async def test_different_messages_create_different_events(env, clock):
    cs, b, _ = env
    rec = b.new_recorder("deployment-controller")
    rec.event(deployment(), "Normal", "ScalingReplicaSet", "Scaled up replica set web-1 to 1")
    clock.step(1)
    rec.event(deployment(), "Normal", "ScalingReplicaSet", "Scaled up replica set web-1 to 2")
    await b.flush()
    evs = await events(cs)
    assert [e.message for e in evs] == ["Scaled up replica set web-1 to 1", "Scaled up replica set web-1 to 2"]
    assert [e.count for e in evs] == [1, 1]


async def test_cluster_scoped_object_events_go_to_default_namespace(env):
    cs, b, _ = env
    node = core_v1.Node(metadata=meta_v1.ObjectMeta(name="node-1", uid="n1"))
    b.new_recorder("node-controller").event(node, "Normal", "RegisteredNode", "registered")
    await b.flush()
    [ev] = await events(cs, "default")
    assert ev.involved_object.namespace is None
    assert (ev.involved_object.kind, ev.involved_object.api_version) == ("Node", "v1")


async def test_object_reference_is_used_as_is_and_bad_type_is_dropped(env):
    cs, b, _ = env
    rec = b.new_recorder("c")
    ref = core_v1.ObjectReference(kind="Pod", api_version="v1", namespace="kube-system", name="p",
                                  field_path="spec.containers{app}")
    rec.event(ref, "Normal", "Pulled", "pulled")
    rec.event(ref, "Info", "Pulled", "not a valid type")
    await b.flush()
    [ev] = await events(cs, "kube-system")
    assert ev.involved_object == ref
    assert ev.message == "pulled"


async def test_similar_events_are_aggregated_after_ten_messages(env):
    cs, b, _ = env
    rec = b.new_recorder("c")
    for i in range(12):
        rec.event(deployment(), "Warning", "FailedCreate", f"error {i}")
    await b.flush()
    evs = await events(cs)
    combined = [e for e in evs if e.message.startswith("(combined")]
    assert len(evs) == 10                    # 9 plain events + 1 combined
    [c] = combined
    assert c.message == "(combined from similar events): error 11"
    assert c.count == 3                      # errors 9, 10, 11


async def test_spam_filter_drops_after_burst_and_refills(env, clock):
    cs, b, transport = env
    rec = b.new_recorder("c")
    for _ in range(30):
        rec.event(deployment(), "Warning", "BackOff", "back-off")
    await b.flush()
    [ev] = await events(cs)
    assert ev.count == 25                    # burst of 25; occurrences 26..30 dropped
    assert transport.event_writes == 25
    clock.step(299)
    rec.event(deployment(), "Warning", "BackOff", "back-off")
    await b.flush()
    assert transport.event_writes == 25      # no token yet
    clock.step(1)
    rec.event(deployment(), "Warning", "BackOff", "back-off")
    await b.flush()
    [ev] = await events(cs)
    assert ev.count == 32                    # dropped occurrences still count


async def test_spam_filter_is_per_object(env):
    cs, b, _ = env
    rec = b.new_recorder("c")
    for _ in range(26):
        rec.event(deployment("a"), "Warning", "BackOff", "back-off")
    rec.event(deployment("b"), "Warning", "BackOff", "back-off")
    await b.flush()
    counts = {e.involved_object.name: e.count for e in await events(cs)}
    assert counts == {"a": 25, "b": 1}


async def test_failed_write_is_retried_on_the_clock(env, clock):
    cs, b, transport = env
    transport.failures = 2
    b.new_recorder("c").event(deployment(), "Normal", "R", "m")
    await settle()
    # the first retry waits a random fraction of 10 s (0 here), the second 10 s
    assert transport.event_writes == 2
    assert await events(cs) == []
    clock.step(9.9)
    await settle()
    assert transport.event_writes == 2
    clock.step(0.1)
    await b.flush()
    assert transport.event_writes == 3
    assert [e.message for e in await events(cs)] == ["m"]


async def test_event_is_dropped_after_max_tries(env, clock):
    cs, b, transport = env
    transport.failures = -1
    b.new_recorder("c").event(deployment(), "Normal", "R", "m")
    for _ in range(20):
        await settle()
        clock.step(10)
    await b.flush()
    assert transport.event_writes == MAX_TRIES_PER_EVENT
    transport.failures = 0
    assert await events(cs) == []


async def test_server_rejection_is_not_retried(env, clock):
    cs, b, transport = env
    rec = b.new_recorder("c")
    rec.event(deployment(ns="no-such-namespace"), "Normal", "R", "m")
    await b.flush()
    assert transport.event_writes == 1


async def test_deleted_event_is_recreated_on_repeat(env, clock):
    cs, b, _ = env
    rec = b.new_recorder("c")
    rec.event(deployment(), "Normal", "R", "m")
    await b.flush()
    [ev] = await events(cs)
    await cs.core_v1().events("default").delete(ev.metadata.name)
    clock.step(5)
    rec.event(deployment(), "Normal", "R", "m")
    await b.flush()
    [ev2] = await events(cs)
    assert ev2.metadata.name == ev.metadata.name
    assert ev2.count == 2


async def test_recording_never_blocks_and_the_queue_is_bounded(clock):
    api = APIServer(new_storage("memory"), clock=clock)
    await api.bootstrap()
    cs = Clientset(InProcessTransport(api))
    b = EventBroadcaster(cs, clock=clock, max_queued_events=2)
    rec = b.new_recorder("c")
    for i in range(3):
        rec.event(deployment(), "Normal", "R", f"m{i}")     # not started: only queued
    assert b.pending() == 2
    b.start()
    await b.flush()
    assert sorted(e.message for e in await events(cs)) == ["m0", "m1"]
    await b.shutdown()
    rec.event(deployment(), "Normal", "R", "late")           # dropped, not raised
    assert b.pending() == 0


async def test_shutdown_abandons_retry_sleep(env, clock):
    cs, b, transport = env
    transport.failures = -1
    b.new_recorder("c").event(deployment(), "Normal", "R", "m")
    await settle()
    assert transport.event_writes == 2        # tried, slept 0, tried, now sleeping 10 s
    await asyncio.wait_for(b.shutdown(), 1)   # returns without the clock moving
    assert transport.event_writes == 2


def test_fake_recorder_formats_like_upstream():
    r = FakeRecorder()
    r.eventf(deployment(), "Normal", "ScalingReplicaSet", "Scaled up replica set %s to %d", "web-1", 3)
    r.event(deployment(), "Warning", "SelectingAll", "100% of pods")
    assert r.events == ["Normal ScalingReplicaSet Scaled up replica set web-1 to 3",
                        "Warning SelectingAll 100% of pods"]
    r2 = FakeRecorder(include_object=True)
    r2.annotated_eventf(deployment(), {"k": "v"}, "Normal", "R", "m")
    assert r2.events == ["Normal R m involvedObject{kind=Deployment,apiVersion=apps/v1} map[k:v]"]


@pytest.mark.parametrize(("fmt", "args", "want"), [
    ("Scaled up replica set %s to %d from %d", ("web", 3, 1), "Scaled up replica set web to 3 from 1"),
    ('Failed to create new replica set %q: %v', ("web", errors.NotFound("", "pods", "x")),
     'Failed to create new replica set "web": pods "x" not found'),
    ("%v %v %v", (True, None, [1, 2]), "true <nil> [1 2]"),
    ("100%% done %5.1f", (2.25,), "100% done   2.2"),
    ("%d", (), "%!d(MISSING)"),
    ("x", (1,), "x%!(EXTRA int=1)"),
])
def test_sprintf_matches_go(fmt, args, want):
    assert sprintf(fmt, *args) == want


def test_generate_event_name_falls_back_to_uuid_for_invalid_names():
    assert generate_event_name("web", 255) == "web.ff"
    name = generate_event_name("Node_1", 255)
    assert len(name) == 36 and name.count("-") == 4


def test_a_write_refused_by_a_terminating_namespace_is_final_and_not_an_error(caplog: pytest.LogCaptureFixture) -> None:
    from kubeplane.apiserver.admission import Attributes, Operation
    from kubeplane.apiserver.admission.plugins.namespace_lifecycle import namespace_terminating
    from kubeplane.client.tools.record.event import _is_final
    err = namespace_terminating(Attributes(Operation.CREATE, "", "v1", "events", "Event", "gone", "e1"))
    event = core_v1.Event(metadata=meta_v1.ObjectMeta(name="e1", namespace="gone"))
    with caplog.at_level(logging.DEBUG, logger="kubeplane.client.tools.record.event"):
        assert _is_final(err, event)
    assert [r.levelname for r in caplog.records] == ["DEBUG"]


def test_an_object_without_kind_is_logged_and_dropped(env, caplog: pytest.LogCaptureFixture) -> None:
    """The log record's fields must not clash with LogRecord's own (`message` would raise KeyError)."""
    _, b, _ = env
    rec = b.new_recorder("c")
    with caplog.at_level(logging.DEBUG, logger="kubeplane.client.tools.record.event"):
        rec.event(object(), "Normal", "Pulled", "pulled")
    [r] = caplog.records
    assert (r.getMessage(), r.note) == ("Could not construct reference, will not report event", "pulled")
