"""Watch streams: resume points, synthetic ADDED, selector transitions, watch-list,
410 Expired, timeouts and periodic bookmarks — time driven by the fake clock, never slept.

Upstream references: handlers/watch.go (serveWatch), storage/cacher (cacheWatcher
convertToWatchEvent, nextBookmarkTime), apis/meta/internalversion/validation (validateWatchOptions).
"""
from __future__ import annotations

import asyncio

import pytest


def kinds(events):
    return [(e["type"], e["object"]["metadata"].get("name")) for e in events]


async def settle(clock=None, seconds: float = 0.0):
    """Let the stream task run (and move the fake clock first, if asked)."""
    if clock is not None and seconds:
        clock.step(seconds)
    for _ in range(10):
        await asyncio.sleep(0)


async def test_watch_from_resource_version_replays_later_changes(api):
    await api.create(api.CMS, api.configmap("a"))
    rv = await api.rv(f"{api.CMS}/a")
    await api.create(api.CMS, api.configmap("b"))
    cur = (await api.get(f"{api.CMS}/a")).json
    await api.call("PUT", f"{api.CMS}/a", body={**cur, "data": {"k": "2"}})
    await api.call("DELETE", f"{api.CMS}/b")
    w = await api.open_watch(api.CMS, {"resourceVersion": rv})
    assert w.status == 200
    evs = await w.events(3)
    assert kinds(evs) == [("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b")]
    # each event carries its own resourceVersion; DELETED carries the deletion's
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in evs]
    assert rvs == sorted(rvs) and rvs[-1] == api.storage.revision
    await api.create(api.CMS, api.configmap("c"))
    assert kinds(await w.events(1)) == [("ADDED", "c")]
    await w.close()


@pytest.mark.parametrize("rv", ["", "0"])
async def test_watch_without_resource_version_starts_with_synthetic_added(api, rv):
    await api.create(api.CMS, api.configmap("a"))
    await api.create(api.CMS, api.configmap("b"))
    w = await api.open_watch(api.CMS, {"resourceVersion": rv} if rv else {})
    assert kinds(await w.events(2)) == [("ADDED", "a"), ("ADDED", "b")]
    await api.call("DELETE", f"{api.CMS}/a")
    assert kinds(await w.events(1)) == [("DELETED", "a")]
    await w.close()


async def test_selector_transitions(api):
    await api.create(api.CMS, api.configmap("a", labels={"app": "web"}))
    await api.create(api.CMS, api.configmap("b", labels={"app": "db"}))
    w = await api.open_watch(api.CMS, {"labelSelector": "app=web"})
    assert kinds(await w.events(1)) == [("ADDED", "a")]

    async def relabel(name, app):
        r = await api.call("PATCH", f"{api.CMS}/{name}", body={"metadata": {"labels": {"app": app}}},
                           headers={"content-type": "application/merge-patch+json"})
        assert r.status == 200

    await relabel("a", "other")          # stops matching -> DELETED
    await relabel("b", "web")            # starts matching -> ADDED
    await relabel("b", "web2")           # and stops again
    await api.call("PATCH", f"{api.CMS}/a", body={"data": {"x": "y"}},   # a change the watcher never sees
                   headers={"content-type": "application/merge-patch+json"})
    await relabel("a", "web")
    evs = await w.events(4)
    assert kinds(evs) == [("DELETED", "a"), ("ADDED", "b"), ("DELETED", "b"), ("ADDED", "a")]
    assert evs[0]["object"]["metadata"]["labels"] == {"app": "other"}       # the new state, as upstream
    await w.close()


async def test_watch_one_object_by_name(api):
    for n in "abc":
        await api.create(api.CMS, api.configmap(n))
    rv = str(api.storage.revision)
    w1 = await api.open_watch(api.CMS, {"fieldSelector": "metadata.name=b", "resourceVersion": rv})
    w2 = await api.open_watch(f"{api.CMS}/b", {"resourceVersion": rv})
    w3 = await api.open_watch("/api/v1/watch/namespaces/default/configmaps/b", {"resourceVersion": rv})
    for n in "abc":
        await api.call("PATCH", f"{api.CMS}/{n}", body={"data": {"k": "2"}},
                       headers={"content-type": "application/merge-patch+json"})
    for w in (w1, w2, w3):
        assert kinds(await w.events(1)) == [("MODIFIED", "b")]
        assert await w.pending() == []
        await w.close()


async def test_watch_list_ends_initial_events_with_a_bookmark(api):
    await api.create(api.CMS, api.configmap("a"))
    await api.create(api.CMS, api.configmap("b"))
    rev = api.storage.revision
    w = await api.open_watch(api.CMS, {"sendInitialEvents": "true", "resourceVersionMatch": "NotOlderThan",
                                       "allowWatchBookmarks": "true", "resourceVersion": ""})
    evs = await w.events(3)
    assert kinds(evs[:2]) == [("ADDED", "a"), ("ADDED", "b")]
    assert evs[2] == {"type": "BOOKMARK", "object": {
        "kind": "ConfigMap", "apiVersion": "v1",
        "metadata": {"resourceVersion": str(rev), "annotations": {"k8s.io/initial-events-end": "true"}}}}
    await api.create(api.CMS, api.configmap("c"))
    assert kinds(await w.events(1)) == [("ADDED", "c")]
    await w.close()


async def test_watch_list_send_initial_events_false_starts_now(api):
    await api.create(api.CMS, api.configmap("a"))
    w = await api.open_watch(api.CMS, {"sendInitialEvents": "false", "resourceVersionMatch": "NotOlderThan"})
    assert await w.pending() == []
    await api.create(api.CMS, api.configmap("b"))
    assert kinds(await w.events(1)) == [("ADDED", "b")]
    await w.close()


@pytest.mark.parametrize("query,message", [
    ({"sendInitialEvents": "true"},
     'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
     "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"),
    ({"resourceVersionMatch": "NotOlderThan"},
     'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
     "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"),
    ({"sendInitialEvents": "true", "resourceVersionMatch": "Exact"},
     'ListOptions.meta.k8s.io "" is invalid: [resourceVersionMatch: Forbidden: sendInitialEvents requires setting '
     'resourceVersionMatch to NotOlderThan, resourceVersionMatch: Unsupported value: "Exact": '
     'supported values: "NotOlderThan"]'),
])
async def test_invalid_watch_options_are_422(api, query, message):
    r = await api.call("GET", api.CMS, {"watch": "1", **query})
    assert r.status == 422 and r.json["reason"] == "Invalid"
    assert r.json["message"] == message


async def test_compacted_resource_version_is_one_error_event(api):
    for n in "abc":
        await api.create(api.CMS, api.configmap(n))
    await api.storage.compact(api.storage.revision - 1)
    oldest = api.storage.oldest_revision
    w = await api.open_watch(api.CMS, {"resourceVersion": "2"})
    assert w.status == 200                     # the stream itself is fine, as upstream
    evs = await w.events(1)
    assert evs == [{"type": "ERROR", "object": {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f"too old resource version: 2 ({oldest})", "reason": "Expired", "code": 410}}]
    assert await w.pending() == [] and w.ended


async def test_bad_resource_version_is_400(api):
    r = await api.call("GET", api.CMS, {"watch": "1", "resourceVersion": "x1"})
    assert r.status == 400 and r.json["message"].startswith("invalid resource version")


async def test_timeout_seconds_ends_the_stream_on_the_clock(api, clock):
    w = await api.open_watch(api.CMS, {"timeoutSeconds": "30", "resourceVersion": str(api.storage.revision)})
    assert await w.pending() == []
    await settle(clock, 29)
    assert await w.pending() == [] and not w.ended
    await api.create(api.CMS, api.configmap("a"))
    assert kinds(await w.events(1)) == [("ADDED", "a")]
    await settle(clock, 1)
    assert await w.pending() == [] and w.ended


async def test_periodic_bookmarks_carry_the_progress(api, clock):
    w = await api.open_watch(api.CMS, {"allowWatchBookmarks": "true", "timeoutSeconds": "150",
                                       "resourceVersion": str(api.storage.revision)})
    assert await w.pending() == []
    await api.create(api.CMS, api.configmap("a"))
    assert kinds(await w.events(1)) == [("ADDED", "a")]
    rev = api.storage.revision
    await settle(clock, 59)
    assert await w.pending() == []
    await settle(clock, 1)
    evs = await w.pending()
    assert evs == [{"type": "BOOKMARK", "object": {"kind": "ConfigMap", "apiVersion": "v1",
                                                   "metadata": {"resourceVersion": str(rev)}}}]
    # writes elsewhere: the bookmark never goes backwards, and is at least what was sent
    await api.create(api.PODS, api.pod("p"))
    await settle(clock, 60)
    evs = await w.pending()
    assert [e["type"] for e in evs] == ["BOOKMARK"]
    assert rev <= int(evs[0]["object"]["metadata"]["resourceVersion"]) <= api.storage.revision
    # the next would be at 180, capped 2 s before the timeout (148), then the stream ends at 150
    await settle(clock, 27)
    assert await w.pending() == []
    await settle(clock, 1)
    assert [e["type"] for e in await w.pending()] == ["BOOKMARK"]
    await settle(clock, 2)
    assert await w.pending() == [] and w.ended


async def test_no_bookmarks_unless_allowed(api, clock):
    w = await api.open_watch(api.CMS, {"timeoutSeconds": "500", "resourceVersion": str(api.storage.revision)})
    assert await w.pending() == []
    for _ in range(3):
        await settle(clock, 60)
    assert await w.pending() == [] and not w.ended
    await w.close()


async def test_table_watch_sends_column_definitions_once(api):
    await api.create(api.CMS, api.configmap("a"))
    await api.create(api.CMS, api.configmap("b"))
    w = await api.open_watch(api.CMS, headers={"accept": "application/json;as=Table;v=v1;g=meta.k8s.io"})
    first, second = await w.events(2)
    assert first["object"]["kind"] == "Table" and first["object"]["columnDefinitions"]
    assert first["object"]["rows"][0]["cells"][0] == "a"
    assert not second["object"].get("columnDefinitions")
    assert second["object"]["rows"][0]["cells"][0] == "b"
    await w.close()


async def test_watch_of_events_k8s_io_converts_each_event(api):
    ev = {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"}, "reason": "R",
          "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}}
    rv = str(api.storage.revision)
    w = await api.open_watch("/apis/events.k8s.io/v1/namespaces/default/events", {"resourceVersion": rv})
    await api.create("/api/v1/namespaces/default/events", ev)
    (e,) = await w.events(1)
    assert e["type"] == "ADDED"
    assert e["object"]["apiVersion"] == "events.k8s.io/v1" and e["object"]["regarding"]["name"] == "p"
    await w.close()


async def test_a_watch_from_before_the_lean_lag_sees_the_same_events(api, monkeypatch):
    """Replaced versions older than watch_log.LEAN_LAG keep only their bytes: an unfiltered watch
    sends them as stored, a selector's transitions decode them (prev included)."""
    from kubeplane.storage import watch_log
    monkeypatch.setattr(watch_log, "LEAN_LAG", 2)

    async def relabel(name, app):
        r = await api.call("PATCH", f"{api.CMS}/{name}", body={"metadata": {"labels": {"app": app}}},
                           headers={"content-type": "application/merge-patch+json"})
        assert r.status == 200

    await api.create(api.CMS, api.configmap("a", labels={"app": "web"}))
    rv = await api.rv(f"{api.CMS}/a")
    await relabel("a", "other")
    await relabel("a", "web")
    await api.call("DELETE", f"{api.CMS}/a")
    for i in range(4):                                      # what came before is now lean
        await api.create(api.CMS, api.configmap(f"x{i}"))
    everything = await api.open_watch(api.CMS, {"resourceVersion": rv})
    evs = await everything.events(7)
    assert kinds(evs)[:3] == [("MODIFIED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]
    assert [e["object"]["metadata"]["labels"]["app"] for e in evs[:3]] == ["other", "web", "web"]
    web = await api.open_watch(api.CMS, {"resourceVersion": rv, "labelSelector": "app=web"})
    assert kinds(await web.events(3)) == [("DELETED", "a"), ("ADDED", "a"), ("DELETED", "a")]
    await everything.close()
    await web.close()
