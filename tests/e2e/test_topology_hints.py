"""Topology Aware Routing with real kubectl (`kubeplane up --nodes 2`): nodes labelled into two
zones, a Service annotated `service.kubernetes.io/topology-mode: Auto` gets zone hints on its
EndpointSlice's endpoints (three pods in zone-a, one in zone-b: zone-a gives one to zone-b,
as their equal CPU asks) and a TopologyAwareHintsEnabled event; without the annotation the
hints go, with a TopologyAwareHintsDisabled Warning."""
from __future__ import annotations

from collections import Counter
from typing import Any, Iterator

import pytest

from .cluster import Cluster, eventually, running

ZONE = "topology.kubernetes.io/zone"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    yield from running(nodes=2)


def hints(c: Cluster) -> dict[str, str | None]:
    """pod -> the zone its endpoint is hinted for."""
    out: dict[str, str | None] = {}
    for s in c.get_json("endpointslices", "-l", "kubernetes.io/service-name=web")["items"]:
        for ep in s.get("endpoints") or ():
            zones = (ep.get("hints") or {}).get("forZones") or [{}]
            out[ep["targetRef"]["name"]] = zones[0].get("name")
    return out


def pod(name: str, node: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default",
                                                            "labels": {"app": "web"}},
            "spec": {"nodeName": node, "containers": [{"name": "web", "image": "nginx"}]}}


def test_zone_hints_follow_the_topology_mode_annotation(cluster: Cluster) -> None:
    c = cluster
    c.kubectl("label", "node", "kubeplane-node-0", f"{ZONE}=zone-a")
    c.kubectl("label", "node", "kubeplane-node-1", f"{ZONE}=zone-b")
    for name, node in (("web-a0", "kubeplane-node-0"), ("web-a1", "kubeplane-node-0"), ("web-a2", "kubeplane-node-0"),
                       ("web-b0", "kubeplane-node-1")):
        c.apply_yaml(pod(name, node))
    c.apply_yaml({"apiVersion": "v1", "kind": "Service",
                  "metadata": {"name": "web", "namespace": "default",
                               "annotations": {"service.kubernetes.io/topology-mode": "Auto"}},
                  "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}})
    got = eventually(lambda: (h := hints(c)) and len(h) == 4 and all(h.values()) and h,
                     "every endpoint of the 4 ready pods hinted", timeout=60)
    assert Counter(got.values()) == {"zone-a": 2, "zone-b": 2}
    assert got["web-b0"] == "zone-b" and sum(got[p] == "zone-b" for p in ("web-a0", "web-a1", "web-a2")) == 1
    zones = {e["zone"] for s in c.get_json("endpointslices", "-l", "kubernetes.io/service-name=web")["items"]
             for e in s["endpoints"]}
    assert zones == {"zone-a", "zone-b"}
    events = c.kubectl("get", "events", "--field-selector", "involvedObject.kind=Service,involvedObject.name=web").stdout
    assert "TopologyAwareHintsEnabled" in events and "Topology Aware Hints has been enabled, addressType: IPv4" in events

    c.kubectl("annotate", "service", "web", "service.kubernetes.io/topology-mode-")
    eventually(lambda: (h := hints(c)) and len(h) == 4 and not any(h.values()), "the hints removed", timeout=60)
    events = c.kubectl("get", "events", "--field-selector", "involvedObject.kind=Service,involvedObject.name=web").stdout
    assert "Topology Aware Hints has been disabled, addressType: IPv4" in events
