"""Chaos: rolling updates of a 200-replica Deployment while `kubeplane up` is killed with
SIGKILL five times, at random (seeded) moments, and restarted on the same data dir each time.

What must hold, observed from outside by watches that reconnect with their last
resourceVersion across the restarts (and are replayed in resourceVersion order, so every
state the API server went through is checked, not only those a poll happened to see):

- availableReplicas never below replicas - maxUnavailable once the first rollout is done, and
  the ReplicaSets' replicas never above replicas + maxSurge;
- no pod's Ready condition ever goes back (False again, or a new lastTransitionTime) while the
  pod is not being deleted, and no node leaves Ready;
- no watch ever gets 410 Gone (the history survives the restarts);
- the end state: exactly `replicas` pods, all of the newest template and owned by its
  ReplicaSet; every ReplicaSet owned by the Deployment; revisions 1..3 annotated in order, the
  old ReplicaSets at 0 and only revisionHistoryLimit of them kept;
- at most one Started event per container attempt of a pod (events are stored objects).

Sizes are parameters (environment): KUBEPLANE_CHAOS_REPLICAS (200), KUBEPLANE_CHAOS_KILLS (5),
KUBEPLANE_CHAOS_SEED (1). The defaults run in well under a minute on a 2-core machine.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import Any, Self

import aiohttp
import pytest

from kubeplane.testing.etcd import EtcdCluster, etcd_binary

from .cluster import Cluster, eventually
from .rollout_helpers import REVISION, Api, annotations, is_ready

REPLICAS = int(os.environ.get("KUBEPLANE_CHAOS_REPLICAS", "200"))
KILLS = int(os.environ.get("KUBEPLANE_CHAOS_KILLS", "5"))
SEED = int(os.environ.get("KUBEPLANE_CHAOS_SEED", "1"))
NODES = 5
MAX_SURGE, MAX_UNAVAILABLE = -(-REPLICAS // 4), REPLICAS // 4   # 25 % each: surge rounds up, unavailable down
HISTORY_LIMIT = 1
NS = "default"
NAME = "web"
KINDS = {"pods": f"/api/v1/namespaces/{NS}/pods", "replicasets": f"/apis/apps/v1/namespaces/{NS}/replicasets",
         "deployments": f"/apis/apps/v1/namespaces/{NS}/deployments", "nodes": "/api/v1/nodes"}


def manifest(image: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": NAME, "namespace": NS}, "spec": {
        "replicas": REPLICAS, "revisionHistoryLimit": HISTORY_LIMIT, "selector": {"matchLabels": {"app": NAME}},
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
        "template": {"metadata": {"labels": {"app": NAME}},
                     "spec": {"containers": [{"name": "c", "image": image}], "terminationGracePeriodSeconds": 5}}}}


class Watcher:
    """Watches KINDS from a background thread, reconnecting with the last resourceVersion (and
    the kubeconfig's new port) whenever the server goes away. events: (rv, kind, type, object)."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.events: list[tuple[int, str, str, dict[str, Any]]] = []
        self.initial: dict[str, list[dict[str, Any]]] = {}
        self.errors: list[str] = []
        self.rv: dict[str, str] = {}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_until_complete, args=(self._main(),), daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        eventually(lambda: len(self.rv) == len(KINDS), "the watches to start")
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def latest_rv(self) -> int:
        return max((e[0] for e in self.events), default=0)

    def caught_up(self, newest: dict[str, int]) -> bool:
        """Has each kind's stream delivered its newest object as listed? The streams are
        separate: the deployments' may be ahead of the busier pods' one."""
        seen: dict[str, int] = {kind: max((int(o["metadata"]["resourceVersion"]) for o in objs), default=0)
                                for kind, objs in self.initial.items()}
        for rv, kind, _, _ in list(self.events):
            seen[kind] = max(seen.get(kind, 0), rv)
        return all(seen.get(kind, 0) >= rv for kind, rv in newest.items())

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        tasks = [asyncio.ensure_future(self._watch(kind, path)) for kind, path in KINDS.items()]
        await self._stop.wait()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _watch(self, kind: str, path: str) -> None:
        from kubeplane.client.transport import HTTPTransport
        while True:
            tr = None
            try:
                tr = HTTPTransport.from_kubeconfig(self.cluster.kubeconfig)
                if kind not in self.rv:
                    listed = json.loads((await tr.request("GET", path)).body)
                    self.initial[kind] = listed["items"]
                    self.rv[kind] = listed["metadata"]["resourceVersion"]
                query = {"watch": "true", "resourceVersion": self.rv[kind], "allowWatchBookmarks": "true"}
                async for line in tr.stream(path, query):
                    self._record(kind, json.loads(line))
            except asyncio.CancelledError:
                raise
            except (OSError, ValueError, KeyError, RuntimeError, aiohttp.ClientError, TimeoutError):
                # the server went away, or is not up yet (no kubeconfig, the old port)
                await asyncio.sleep(0.05)
            finally:
                if tr is not None:
                    await tr.close()

    def _record(self, kind: str, ev: dict[str, Any]) -> None:
        obj = ev.get("object") or {}
        if ev.get("type") == "ERROR" or obj.get("kind") == "Status":
            self.errors.append(f"{kind}: {obj}")
            raise RuntimeError("watch error")      # reconnect (and fail the test: see errors)
        rv = obj["metadata"]["resourceVersion"]
        self.rv[kind] = rv
        if ev["type"] != "BOOKMARK":
            self.events.append((int(rv), kind, ev["type"], obj))

    def replay(self) -> Iterator[tuple[int, str, dict[str, Any], dict[str, dict[str, dict[str, Any]]]]]:
        """(rv, kind, object, {kind: {uid: object}}) after each event, in resourceVersion order."""
        state = {k: {o["metadata"]["uid"]: o for o in self.initial.get(k, ())} for k in KINDS}
        seen = set()
        for rv, kind, type_, obj in sorted(self.events, key=lambda e: e[0]):
            if (rv, kind, obj["metadata"]["uid"]) in seen:
                continue
            seen.add((rv, kind, obj["metadata"]["uid"]))
            if type_ == "DELETED":
                state[kind].pop(obj["metadata"]["uid"], None)
            else:
                state[kind][obj["metadata"]["uid"]] = obj
            yield rv, kind, obj, state


@pytest.fixture(params=["sqlite", "etcd"])
def chaos_cluster(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[Cluster]:
    """`up` on SQLite, or on a real etcd member (which outlives every kill of `up`)."""
    with contextlib.ExitStack() as stack:
        etcd = None
        if request.param == "etcd":
            if etcd_binary() is None:
                pytest.skip("no etcd binary (apt-get install etcd-server)")
            etcd = stack.enter_context(EtcdCluster(tmp_path / "etcd")).config()
        c = Cluster(tmp_path / "data", nodes=NODES, etcd=etcd).start()
        try:
            yield c
        finally:
            c.cleanup()


def roll(c: Cluster, image: str) -> None:
    """Change the template: a new revision."""
    api = Api(c)
    try:
        api.call("PATCH", f"/apis/apps/v1/namespaces/{NS}/deployments/{NAME}",
                 {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}},
                 "application/strategic-merge-patch+json")
    finally:
        api.close()


def newest_rvs(c: Cluster) -> dict[str, int]:
    """Each watched kind's newest object's resourceVersion, as listed now."""
    api = Api(c)
    try:
        return {kind: max((int(o["metadata"]["resourceVersion"]) for o in api.call("GET", path)["items"]), default=0)
                for kind, path in KINDS.items()}
    finally:
        api.close()


def kill_and_restart(c: Cluster) -> None:
    c.stop(signal.SIGKILL)
    c.start()


def progress(w: Watcher) -> int:
    """The newest ReplicaSet's replicas as last watched (how far the rollout has got)."""
    latest: dict[str, dict[str, Any]] = {}
    for _, kind, _, obj in list(w.events):
        if kind == "replicasets":
            latest[obj["metadata"]["uid"]] = obj
    revs = [(int(annotations(rs).get(REVISION, "0")), rs) for rs in latest.values()]
    return max(revs, key=lambda r: r[0])[1]["spec"].get("replicas", 0) if revs else 0


def complete(c: Cluster) -> bool:
    api = Api(c)
    try:
        d = api.get(NS, "deployments", NAME)
        pods = api.list(NS, "pods", f"app={NAME}")
    finally:
        api.close()
    st = d.get("status") or {}
    return (st.get("observedGeneration", 0) >= d["metadata"]["generation"]
            and st.get("updatedReplicas") == st.get("replicas") == st.get("availableReplicas") == REPLICAS
            and len(pods) == REPLICAS)


def test_rolling_updates_survive_kill_9_of_up(chaos_cluster: Cluster) -> None:
    c, rng = chaos_cluster, random.Random(SEED)
    c.apply_yaml(manifest("nginx:1"))
    eventually(lambda: complete(c), "the first rollout", timeout=120)
    kills = [KILLS // 2, KILLS - KILLS // 2]                 # during the second and the third rollout
    with Watcher(c) as w:
        start_rv = w.latest_rv()
        for image, n in zip(("nginx:2", "nginx:3"), kills):
            roll(c, image)
            # kill when the new ReplicaSet reaches a random size, a random moment after that
            targets = sorted(rng.sample(range(1, REPLICAS), n))
            for target in targets:
                deadline = time.monotonic() + 20
                while progress(w) < target and time.monotonic() < deadline:
                    time.sleep(0.02)
                time.sleep(rng.uniform(0, 0.3))
                print(f"kill at {image}: new ReplicaSet at {progress(w)} (target {target})")
                kill_and_restart(c)
            eventually(lambda: complete(c), f"the rollout to {image}", timeout=120)
        newest = newest_rvs(c)
        eventually(lambda: w.caught_up(newest), "every watch to catch up")
    assert w.errors == []                                    # never 410 Gone: no gap in the history
    check_history(w, start_rv)
    check_end_state(c)
    check_events(c)


def check_history(w: Watcher, start_rv: int) -> None:
    ready_since: dict[str, str] = {}
    for rv, kind, obj, state in w.replay():
        if kind == "deployments" and rv > start_rv:
            available = (obj.get("status") or {}).get("availableReplicas", 0)
            assert available >= REPLICAS - MAX_UNAVAILABLE, f"availableReplicas {available} at rv {rv}"
        elif kind == "replicasets":
            total = sum(rs["spec"].get("replicas", 0) for rs in state["replicasets"].values())
            assert total <= REPLICAS + MAX_SURGE, f"ReplicaSets want {total} pods at rv {rv}"
        elif kind == "pods" and not obj["metadata"].get("deletionTimestamp"):
            uid = obj["metadata"]["uid"]
            ready = next((cond for cond in (obj.get("status") or {}).get("conditions") or ()
                          if cond["type"] == "Ready"), None)
            if uid in ready_since:
                assert ready is not None and ready["status"] == "True", f"pod {obj['metadata']['name']} unready at {rv}"
                assert ready["lastTransitionTime"] == ready_since[uid], f"pod {obj['metadata']['name']} re-readied"
            elif ready is not None and ready["status"] == "True":
                ready_since[uid] = ready["lastTransitionTime"]
        elif kind == "nodes":
            cond = next(cd for cd in obj["status"]["conditions"] if cd["type"] == "Ready")
            assert cond["status"] == "True", f"node {obj['metadata']['name']} {cond} at rv {rv}"
    assert len(ready_since) >= 2 * REPLICAS                   # two new templates' pods were watched


def check_end_state(c: Cluster) -> None:
    api = Api(c)
    try:
        d = api.get(NS, "deployments", NAME)
        rss = api.list(NS, "replicasets")
        pods = api.list(NS, "pods")
    finally:
        api.close()
    assert annotations(d)[REVISION] == "3"
    by_rev = {int(annotations(rs)[REVISION]): rs for rs in rss}
    assert len(by_rev) == len(rss)                           # one ReplicaSet per revision
    assert sorted(by_rev) == [3 - HISTORY_LIMIT + i for i in range(HISTORY_LIMIT + 1)]   # older ones cleaned up
    for rs in rss:
        ref = next(r for r in rs["metadata"]["ownerReferences"] if r.get("controller"))
        assert (ref["kind"], ref["name"], ref["uid"]) == ("Deployment", NAME, d["metadata"]["uid"])
    new = by_rev[3]
    assert new["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:3"
    assert all(rs["spec"]["replicas"] == 0 and rs["status"].get("replicas", 0) == 0
               for rev, rs in by_rev.items() if rev != 3)
    assert len(pods) == REPLICAS
    for p in pods:
        ref = next(r for r in p["metadata"]["ownerReferences"] if r.get("controller"))
        assert (ref["kind"], ref["name"], ref["uid"]) == ("ReplicaSet", new["metadata"]["name"], new["metadata"]["uid"])
        assert p["spec"]["containers"][0]["image"] == "nginx:3" and is_ready(p)
        assert p["status"]["containerStatuses"][0]["restartCount"] == 0


def check_events(c: Cluster) -> None:
    events = c.get_json("events", "-n", NS)["items"]
    started: Counter[str] = Counter()
    for e in events:
        if e["reason"] == "Started" and e["involvedObject"]["kind"] == "Pod":
            started[e["involvedObject"]["uid"]] += e.get("count") or 1
    assert started, "no Started events recorded"
    repeated = {uid: n for uid, n in started.items() if n > 1}     # restartCount is 0 throughout
    assert repeated == {}, f"{len(repeated)} pods started their container more than once"
    per_reason: dict[str, int] = defaultdict(int)
    for e in events:
        per_reason[e["reason"]] += e.get("count") or 1
    assert per_reason["Started"] <= 3 * REPLICAS
