"""Helpers for the Deployment e2e tests: manifests, polling, marking pods Ready, and a watch
recorder whose event log is replayed in resourceVersion order to check rollout invariants at
every step the API server went through (not only at the moments a poll happened to look).
"""
from __future__ import annotations

import asyncio
import base64
import datetime
import http.client
import json
import ssl
import threading
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import yaml

from .cluster import Cluster, eventually

POD_TEMPLATE_HASH = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
CHANGE_CAUSE = "kubernetes.io/change-cause"


def ready_patch() -> dict[str, Any]:
    """Ready since now, as upstream's integration tests mark pods (minReadySeconds counts from it)."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"status": {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True", "lastTransitionTime": now}]}}




def deployment(name: str, replicas: int, image: str = "nginx:1", *, labels: dict[str, str] | None = None,
               strategy: dict[str, Any] | None = None, **spec: Any) -> dict[str, Any]:
    labels = labels or {"app": name}
    body: dict[str, Any] = {
        "replicas": replicas, "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels},
                     "spec": {"containers": [{"name": "c", "image": image}], "terminationGracePeriodSeconds": 0}},
        **spec}
    if strategy is not None:
        body["strategy"] = strategy
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": body}


def rolling(max_surge: int | str, max_unavailable: int | str) -> dict[str, Any]:
    return {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": max_surge, "maxUnavailable": max_unavailable}}


def is_ready(pod: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def owner_name(obj: dict[str, Any]) -> str | None:
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            return ref["name"]
    return None


def annotations(obj: dict[str, Any]) -> dict[str, str]:
    return obj["metadata"].get("annotations") or {}


def condition(d: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in (d.get("status") or {}).get("conditions") or [] if c["type"] == type_), None)


def complete(d: dict[str, Any]) -> bool:
    """kubectl rollout status's success test, plus the generation caught up."""
    st, want = d.get("status") or {}, d["spec"]["replicas"]
    return (st.get("observedGeneration", 0) >= d["metadata"]["generation"]
            and st.get("updatedReplicas", 0) == want and st.get("replicas", 0) == want
            and st.get("availableReplicas", 0) == want)


class Api:
    """Direct HTTPS calls (one keep-alive connection, the kubeconfig's CA and token) for the
    fast bookkeeping around the kubectl commands under test: listing, marking pods Ready."""

    def __init__(self, c: Cluster) -> None:
        cfg = yaml.safe_load(c.kubeconfig.read_text())
        cluster, user = cfg["clusters"][0]["cluster"], cfg["users"][0]["user"]
        url = urllib.parse.urlsplit(cluster["server"])
        ctx = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
        self.conn = http.client.HTTPSConnection(url.hostname, url.port, context=ctx, timeout=30)
        self.headers = {"Authorization": f"Bearer {user['token']}", "Accept": "application/json"}

    def call(self, method: str, path: str, body: Any = None, content_type: str = "application/json") -> Any:
        data = json.dumps(body).encode() if body is not None else None
        self.conn.request(method, path, data, {**self.headers, "Content-Type": content_type})
        resp = self.conn.getresponse()
        out = resp.read()
        if resp.status >= 300:
            raise AssertionError(f"{method} {path}: {resp.status} {out[:500]!r}")
        return json.loads(out) if out else None

    def list(self, ns: str, plural: str, selector: str = "") -> list[dict[str, Any]]:
        base = "/api/v1" if plural == "pods" else "/apis/apps/v1"
        q = "?" + urllib.parse.urlencode({"labelSelector": selector}) if selector else ""
        return self.call("GET", f"{base}/namespaces/{ns}/{plural}{q}")["items"]

    def get(self, ns: str, plural: str, name: str) -> dict[str, Any]:
        base = "/api/v1" if plural == "pods" else "/apis/apps/v1"
        return self.call("GET", f"{base}/namespaces/{ns}/{plural}/{name}")

    def mark_ready(self, ns: str, name: str) -> None:
        self.call("PATCH", f"/api/v1/namespaces/{ns}/pods/{name}/status", ready_patch(),
                  "application/merge-patch+json")

    def unready_pods(self, ns: str, selector: str = "") -> list[dict[str, Any]]:
        return [p for p in self.list(ns, "pods", selector)
                if not p["metadata"].get("deletionTimestamp") and not is_ready(p)]

    def mark_all_ready_until(self, ns: str, done: Callable[[], bool], what: str, selector: str = "") -> None:
        """Mark every pod Ready as it appears until done() holds (a kubelet stand-in for --nodes 0)."""
        def step() -> bool:
            for p in self.unready_pods(ns, selector):
                self.mark_ready(ns, p["metadata"]["name"])
            return done()
        eventually(step, what)

    def close(self) -> None:
        self.conn.close()


@dataclass
class Recorder:
    """Watches pods, ReplicaSets and Deployments of a namespace from a background thread.

    events holds (resourceVersion, kind, type, object) in arrival order; replay() re-applies
    them in resourceVersion order (the API server's one global order) onto the state listed
    at start, and yields the state after each step.
    """

    cluster: Cluster
    ns: str
    kinds: tuple[str, ...] = ("pods", "replicasets", "deployments")
    events: list[tuple[int, str, str, dict[str, Any]]] = field(default_factory=list)
    initial: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._error: BaseException | None = None

    def __enter__(self) -> Recorder:
        self._thread.start()
        if not self._ready.wait(10):
            raise AssertionError("recorder did not start")
        if self._error:
            raise self._error
        return self

    def __exit__(self, *exc: Any) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def _run(self) -> None:
        self._loop.run_until_complete(self._main())

    async def _main(self) -> None:
        from kubeplane.client.transport import HTTPTransport
        self._stop = asyncio.Event()
        tr = HTTPTransport.from_kubeconfig(self.cluster.kubeconfig)
        try:
            tasks = []
            for kind in self.kinds:
                path = f"{'/api/v1' if kind == 'pods' else '/apis/apps/v1'}/namespaces/{self.ns}/{kind}"
                raw = await tr.request("GET", path)
                lst = json.loads(raw.body)
                self.initial[kind] = {o["metadata"]["name"]: o for o in lst["items"]}
                tasks.append(asyncio.ensure_future(self._watch(tr, kind, path, lst["metadata"]["resourceVersion"])))
            self._ready.set()
            await self._stop.wait()
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        except BaseException as err:            # surfaced by __enter__
            self._error = err
            self._ready.set()
        finally:
            await tr.close()

    async def _watch(self, tr: Any, kind: str, path: str, rv: str) -> None:
        async for line in tr.stream(path, {"watch": "true", "resourceVersion": rv}):
            ev = json.loads(line)
            obj = ev["object"]
            if ev["type"] in ("ADDED", "MODIFIED", "DELETED"):
                self.events.append((int(obj["metadata"]["resourceVersion"]), kind, ev["type"], obj))

    def replay(self) -> Iterator[tuple[int, dict[str, dict[str, dict[str, Any]]]]]:
        """(resourceVersion, {kind: {name: object}}) after each recorded event, in order.

        A DELETED event carries the object's last state at a new resourceVersion, so sorting
        by resourceVersion orders deletions correctly against the other kinds' writes.
        """
        state = {k: dict(v) for k, v in self.initial.items()}
        for rv, kind, type_, obj in sorted(self.events, key=lambda e: e[0]):
            if type_ == "DELETED":
                state[kind].pop(obj["metadata"]["name"], None)
            else:
                state[kind][obj["metadata"]["name"]] = obj
            yield rv, state


def rs_by_revision(rss: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    return {int(annotations(rs)[REVISION]): rs for rs in rss if REVISION in annotations(rs)}
