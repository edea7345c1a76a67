"""The scheduler's own informers: managedFields dropped (upstream's trim), and of a pod's status
only what the scheduler reads (cmd/scheduler.py trim_pod_status)."""
from __future__ import annotations

import orjson

from kubeplane.api import types
from kubeplane.api.types import core_v1
from kubeplane.client.clientset import Clientset
from kubeplane.cmd.scheduler import new_informer_factory, scheduler_transform

RUNNING = {
    "apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": "web-1", "namespace": "default", "resourceVersion": "7", "labels": {"app": "web"},
                 "managedFields": [{"manager": "kubectl", "operation": "Update", "apiVersion": "v1"}]},
    "spec": {"nodeName": "node-0", "containers": [{"name": "c", "image": "nginx",
                                                   "resources": {"requests": {"cpu": "100m"}}}]},
    "status": {"phase": "Running", "nominatedNodeName": "node-1", "qosClass": "Burstable",
               "hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.1"}], "podIP": "10.244.0.2",
               "podIPs": [{"ip": "10.244.0.2"}], "startTime": "2026-01-01T00:00:00Z",
               "resize": "InProgress",
               "conditions": [{"type": "Ready", "status": "True"},
                              {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
               "containerStatuses": [{"name": "c", "image": "nginx", "imageID": "sha", "ready": True, "restartCount": 0,
                                      "containerID": "sim://1", "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
                                      "allocatedResources": {"cpu": "100m"},
                                      "resources": {"requests": {"cpu": "100m"}}}]},
}


def test_a_pod_keeps_what_the_scheduler_reads() -> None:
    pod = scheduler_transform(types.decode(orjson.dumps(RUNNING), core_v1.Pod))
    assert pod.metadata.managed_fields is None
    assert pod.metadata.labels == {"app": "web"} and pod.spec.node_name == "node-0"
    st = pod.status
    assert (st.phase, st.nominated_node_name, st.resize) == ("Running", "node-1", "InProgress")
    assert [(c.type, c.status) for c in st.conditions] == [("PodScheduled", "True")]
    assert st.conditions[0].last_transition_time == "2026-01-01T00:00:00Z"
    (cs,) = st.container_statuses
    assert (cs.name, cs.allocated_resources, cs.resources.requests) == ("c", {"cpu": "100m"}, {"cpu": "100m"})
    assert cs.state is None and cs.container_id is None
    assert (st.pod_ip, st.pod_ips, st.host_ip, st.host_ips, st.start_time, st.qos_class) == (None,) * 6


def test_other_objects_lose_only_managed_fields() -> None:
    node = types.from_dict({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n", "managedFields": [
        {"manager": "kubelet", "operation": "Update"}]}, "status": {"nodeInfo": {"machineID": "m"}}}, core_v1.Node)
    out = scheduler_transform(node)
    assert out is node and node.metadata.managed_fields is None and node.status.node_info.machine_id == "m"


def test_the_schedulers_own_factory_uses_it() -> None:
    class NoTransport:
        pass
    factory = new_informer_factory(Clientset(NoTransport()))  # type: ignore[arg-type]
    assert factory.core_v1().pods().informer().transform is scheduler_transform
