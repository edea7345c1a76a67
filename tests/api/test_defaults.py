"""Defaulting: upstream's SetDefaults_* per kind, and the object a real apiserver stores for
`kubectl create deployment nginx --image nginx`."""
from __future__ import annotations

import copy

import pytest

from kubeplane.api.defaults import image_tag, namespace_finalizers_on_create
from kubeplane.apiserver.registry.scheme import set_defaults

# What kubectl 1.37 sends for `kubectl create deployment nginx --image nginx`.
KUBECTL_CREATE_DEPLOYMENT = {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "nginx", "namespace": "default", "labels": {"app": "nginx"}},
    "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "nginx"}},
             "template": {"metadata": {"labels": {"app": "nginx"}},
                          "spec": {"containers": [{"name": "nginx", "image": "nginx", "resources": {}}]}},
             "strategy": {}},
    "status": {},
}

# `kubectl get deployment nginx -o yaml` from a real apiserver, minus server-set metadata/status.
EXPECTED_DEPLOYMENT = {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "nginx", "namespace": "default", "labels": {"app": "nginx"}},
    "spec": {
        "progressDeadlineSeconds": 600,
        "replicas": 1,
        "revisionHistoryLimit": 10,
        "selector": {"matchLabels": {"app": "nginx"}},
        "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}, "type": "RollingUpdate"},
        "template": {
            "metadata": {"labels": {"app": "nginx"}},
            "spec": {
                "containers": [{
                    "image": "nginx", "imagePullPolicy": "Always", "name": "nginx", "resources": {},
                    "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                }],
                "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler",
                "securityContext": {}, "terminationGracePeriodSeconds": 30,
            },
        },
    },
    "status": {},
}


def test_kubectl_create_deployment_matches_real_apiserver() -> None:
    d = copy.deepcopy(KUBECTL_CREATE_DEPLOYMENT)
    set_defaults(d)
    assert d == EXPECTED_DEPLOYMENT


def test_defaulting_is_idempotent() -> None:
    d = copy.deepcopy(KUBECTL_CREATE_DEPLOYMENT)
    set_defaults(d)
    again = copy.deepcopy(d)
    set_defaults(again)
    assert again == d


def _dep(spec: dict) -> dict:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": spec}


@pytest.mark.parametrize("strategy,expected", [
    pytest.param({}, {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
                 id="empty-gets-rolling-25-25"),
    pytest.param({"type": "Recreate"}, {"type": "Recreate"}, id="recreate-gets-no-rollingUpdate"),
    pytest.param({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0}},
                 {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "25%"}},
                 id="explicit-zero-surge-kept"),
    pytest.param({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2, "maxSurge": "50%"}},
                 {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2, "maxSurge": "50%"}},
                 id="explicit-values-kept"),
])
def test_deployment_strategy_defaults(strategy: dict, expected: dict) -> None:
    d = _dep({"strategy": strategy, "template": {"spec": {"containers": []}}})
    set_defaults(d)
    assert d["spec"]["strategy"] == expected


def test_deployment_keeps_explicit_numbers() -> None:
    d = _dep({"replicas": 0, "revisionHistoryLimit": 0, "progressDeadlineSeconds": 30})
    set_defaults(d)
    assert (d["spec"]["replicas"], d["spec"]["revisionHistoryLimit"], d["spec"]["progressDeadlineSeconds"]) == (0, 0, 30)


def test_replica_set_defaults_replicas_and_template() -> None:
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "r"},
          "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}}}
    set_defaults(rs)
    assert rs["spec"]["replicas"] == 1
    assert "strategy" not in rs["spec"] and "revisionHistoryLimit" not in rs["spec"]
    assert rs["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"


@pytest.mark.parametrize("image,tag,policy", [
    pytest.param("nginx", "latest", "Always", id="untagged"),
    pytest.param("nginx:latest", "latest", "Always", id="latest"),
    pytest.param("nginx:1.25", "1.25", "IfNotPresent", id="tagged"),
    pytest.param("nginx@sha256:" + "a" * 64, "", "IfNotPresent", id="digest"),
    pytest.param("nginx:1.25@sha256:" + "a" * 64, "1.25", "IfNotPresent", id="tag-and-digest"),
    pytest.param("localhost:5000/app", "latest", "Always", id="registry-port-not-a-tag"),
    pytest.param("localhost:5000/app:v2", "v2", "IfNotPresent", id="registry-port-and-tag"),
    pytest.param("", "", "IfNotPresent", id="empty-image"),
])
def test_image_pull_policy_by_tag(image: str, tag: str, policy: str) -> None:
    assert image_tag(image) == tag
    pod = {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": "c", "image": image}]}}
    set_defaults(pod)
    assert pod["spec"]["containers"][0]["imagePullPolicy"] == policy


def test_pod_defaults() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {
        "containers": [{
            "name": "c", "image": "app:1", "ports": [{"containerPort": 80}],
            "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}},
            "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
            "livenessProbe": {"httpGet": {"port": 80}},
            "readinessProbe": {"grpc": {"port": 9000}, "periodSeconds": 5},
        }],
        "initContainers": [{"name": "i", "image": "init:1", "resources": {"limits": {"cpu": "2"}}}],
        "volumes": [{"name": "a"}, {"name": "b", "configMap": {"name": "cm"}}, {"name": "s", "secret": {"secretName": "x"}},
                    {"name": "h", "hostPath": {"path": "/tmp"}}],
    }}
    set_defaults(pod)
    spec = pod["spec"]
    c = spec["containers"][0]
    assert spec["enableServiceLinks"] is True
    assert c["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert c["resources"]["requests"] == {"cpu": "500m", "memory": "1Gi"}   # only the missing one from limits
    assert spec["initContainers"][0]["resources"]["requests"] == {"cpu": "2"}
    assert c["env"][0]["valueFrom"]["fieldRef"] == {"fieldPath": "spec.nodeName", "apiVersion": "v1"}
    assert c["livenessProbe"] == {"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
                                  "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}
    assert c["readinessProbe"]["periodSeconds"] == 5 and c["readinessProbe"]["grpc"] == {"port": 9000, "service": ""}
    assert spec["volumes"] == [{"name": "a", "emptyDir": {}}, {"name": "b", "configMap": {"name": "cm", "defaultMode": 420}},
                               {"name": "s", "secret": {"secretName": "x", "defaultMode": 420}},
                               {"name": "h", "hostPath": {"path": "/tmp", "type": ""}}]
    assert (spec["restartPolicy"], spec["dnsPolicy"], spec["schedulerName"], spec["terminationGracePeriodSeconds"]) == \
        ("Always", "ClusterFirst", "default-scheduler", 30)
    assert "tolerations" not in spec        # the NoExecute tolerations come from admission, not defaulting


def test_pod_defaults_reach_every_container_list_and_hook() -> None:
    """SetDefaults_Container for containers, initContainers and ephemeralContainers alike, and
    the lifecycle hooks' handlers (upstream's generated RegisterDefaults walk of a PodSpec)."""
    pod = {"apiVersion": "v1", "kind": "Pod", "spec": {
        "containers": [{"name": "c", "image": "a", "lifecycle": {"preStop": {"httpGet": {"port": 80}},
                                                                 "postStart": {"exec": {"command": ["x"]}}}}],
        "initContainers": [{"name": "i", "image": "b:1", "ports": [{"containerPort": 1}]}],
        "ephemeralContainers": [{"name": "e", "image": "c:latest"}],
    }}
    set_defaults(pod)
    spec = pod["spec"]
    assert spec["containers"][0]["lifecycle"] == {"preStop": {"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}},
                                                  "postStart": {"exec": {"command": ["x"]}}}
    assert spec["containers"][0]["imagePullPolicy"] == "Always"
    init = spec["initContainers"][0]
    assert (init["imagePullPolicy"], init["terminationMessagePath"], init["terminationMessagePolicy"],
            init["resources"], init["ports"]) == ("IfNotPresent", "/dev/termination-log", "File", {},
                                                  [{"containerPort": 1, "protocol": "TCP"}])
    assert spec["ephemeralContainers"][0]["imagePullPolicy"] == "Always"
    assert spec["ephemeralContainers"][0]["terminationMessagePolicy"] == "File"


def test_pod_template_gets_no_enable_service_links_or_requests() -> None:
    d = _dep({"template": {"spec": {"containers": [{"name": "c", "image": "a:1", "resources": {"limits": {"cpu": "1"}}}]}}})
    set_defaults(d)
    tspec = d["spec"]["template"]["spec"]
    assert "enableServiceLinks" not in tspec
    assert tspec["containers"][0]["resources"] == {"limits": {"cpu": "1"}}


def test_pod_host_network_defaults_host_ports() -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "spec": {"hostNetwork": True,
                                                       "containers": [{"name": "c", "image": "a", "ports": [{"containerPort": 8080}]}]}}
    set_defaults(pod)
    assert pod["spec"]["containers"][0]["ports"][0]["hostPort"] == 8080


def test_namespace_defaults() -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}
    set_defaults(ns)
    assert ns["metadata"]["labels"] == {"kubernetes.io/metadata.name": "team-a"}
    assert ns["status"] == {"phase": "Active"}
    assert "spec" not in ns            # finalizers are a create-time strategy step, not a default
    namespace_finalizers_on_create(ns)
    namespace_finalizers_on_create(ns)
    assert ns["spec"]["finalizers"] == ["kubernetes"]


def test_secret_type_opaque() -> None:
    s = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}
    set_defaults(s)
    assert s["type"] == "Opaque"


@pytest.mark.parametrize("spec,expected", [
    pytest.param({"ports": [{"port": 80}]},
                 {"ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}], "sessionAffinity": "None",
                  "type": "ClusterIP", "internalTrafficPolicy": "Cluster"}, id="cluster-ip"),
    pytest.param({"type": "NodePort", "ports": [{"port": 80, "targetPort": "http", "protocol": "UDP"}]},
                 {"type": "NodePort", "ports": [{"port": 80, "targetPort": "http", "protocol": "UDP"}],
                  "sessionAffinity": "None", "externalTrafficPolicy": "Cluster", "internalTrafficPolicy": "Cluster"},
                 id="node-port"),
    pytest.param({"type": "LoadBalancer", "sessionAffinity": "ClientIP"},
                 {"type": "LoadBalancer", "sessionAffinity": "ClientIP",
                  "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}},
                  "externalTrafficPolicy": "Cluster", "internalTrafficPolicy": "Cluster",
                  "allocateLoadBalancerNodePorts": True}, id="load-balancer-client-ip"),
    pytest.param({"type": "ExternalName", "externalName": "example.com"},
                 {"type": "ExternalName", "externalName": "example.com", "sessionAffinity": "None"}, id="external-name"),
])
def test_service_defaults(spec: dict, expected: dict) -> None:
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "spec": spec}
    set_defaults(svc)
    assert svc["spec"] == expected


def test_node_allocatable_defaults_to_capacity() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}, "status": {"capacity": {"cpu": "4", "pods": "110"}}}
    set_defaults(node)
    assert node["status"]["allocatable"] == {"cpu": "4", "pods": "110"}


@pytest.mark.parametrize("obj", [
    pytest.param({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"}}, id="event"),
    pytest.param({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}, "spec": {}}, id="lease"),
    pytest.param({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}, id="configmap"),
    pytest.param({"apiVersion": "example.com/v1", "kind": "Widget", "spec": {}}, id="unknown-kind"),
])
def test_kinds_without_defaults_are_untouched(obj: dict) -> None:
    before = copy.deepcopy(obj)
    set_defaults(obj)
    assert obj == before
