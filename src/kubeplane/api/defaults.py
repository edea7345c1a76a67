"""Defaulting for the kinds we serve, mirroring upstream's SetDefaults_* functions.

Which function defaults which kind is the kind's registry definition's (`defaulter`); the
API server applies it through apiserver/registry/scheme.py (set_defaults).

Sources: pkg/apis/apps/v1/defaults.go, pkg/apis/core/v1/defaults.go and the declarative
`+default=` tags of k8s.io/api/core/v1 (container port protocol, gRPC probe service).
Objects are plain JSON dicts; every function fills missing fields in place and never
overwrites a value the client sent.

Not defaults (applied elsewhere upstream, so not here): Namespace `spec.finalizers:
[kubernetes]` (namespace strategy PrepareForCreate, create only: use
`namespace_finalizers_on_create`), Pod status phase/qosClass (pod strategy), the
not-ready/unreachable tolerations and `serviceAccountName` (admission), ClusterIP/ipFamilies
allocation (service registry), resource quantity rounding (SetDefaults_ResourceList).
"""
from __future__ import annotations

import functools
from typing import Any

from . import pod_resources, zero_values

Obj = dict[str, Any]


def _sub(d: Obj, key: str) -> Obj:
    """d[key] as a dict, created empty when absent or null (Go's allocate-on-write)."""
    v = d.get(key)
    if not isinstance(v, dict):
        v = d[key] = {}
    return v


def _items(d: Obj, key: str) -> list[Obj]:
    """The dict entries of the list d[key] (missing or malformed lists give [])."""
    v = d.get(key)
    if not v or not isinstance(v, list):
        return []                       # mostly: initContainers, volumes, env ... absent
    return [x for x in v if isinstance(x, dict)]


# --- apps/v1 -------------------------------------------------------------------------------


def set_defaults_deployment(d: Obj) -> None:
    """Upstream: SetDefaults_Deployment (pkg/apis/apps/v1/defaults.go)

    The 25%/25% rollingUpdate block is only created for type RollingUpdate; a Recreate
    Deployment gets none (and validation rejects one the user sends).
    """
    spec = _sub(d, "spec")
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    strategy = _sub(spec, "strategy")
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
    if strategy["type"] == "RollingUpdate":
        ru = _sub(strategy, "rollingUpdate")
        if ru.get("maxUnavailable") is None:
            ru["maxUnavailable"] = "25%"
        if ru.get("maxSurge") is None:
            ru["maxSurge"] = "25%"
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    if spec.get("progressDeadlineSeconds") is None:
        spec["progressDeadlineSeconds"] = 600
    set_defaults_pod_template(spec)


def set_defaults_replica_set(rs: Obj) -> None:
    """Upstream: SetDefaults_ReplicaSet (pkg/apis/apps/v1/defaults.go)"""
    spec = _sub(rs, "spec")
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    set_defaults_pod_template(spec)


def set_defaults_pod_template(spec: Obj) -> None:
    """Default spec.template like every PodTemplateSpec (generated RegisterDefaults walk)."""
    template = _sub(spec, "template")
    set_defaults_pod_spec(_sub(template, "spec"))


# --- core/v1: pods ---------------------------------------------------------------------------


def set_defaults_pod(pod: Obj) -> None:
    """Upstream: SetDefaults_Pod + SetDefaults_PodSpec (pkg/apis/core/v1/defaults.go)

    Pod-only (not templates): requests default to limits per container, enableServiceLinks
    true, and with hostNetwork every containerPort is also the hostPort.
    """
    spec = _sub(pod, "spec")
    containers, inits = _items(spec, "containers"), _items(spec, "initContainers")
    for c in containers:
        _default_requests_to_limits(c)
    for c in inits:
        _default_requests_to_limits(c)
    if spec.get("resources"):
        pod_resources.set_defaults_pod_resources(pod)
    if spec.get("enableServiceLinks") is None:
        spec["enableServiceLinks"] = True
    if spec.get("hostNetwork"):
        for c in containers + inits:
            for p in _items(c, "ports"):
                if not p.get("hostPort"):
                    p["hostPort"] = p.get("containerPort", 0)
    _set_defaults_pod_spec(spec, containers, inits)


def _default_requests_to_limits(c: Obj) -> None:
    resources = c.get("resources")
    limits = resources.get("limits") if resources else None
    if not isinstance(limits, dict):
        return
    requests = _sub(_sub(c, "resources"), "requests")
    for k, v in limits.items():
        requests.setdefault(k, v)


def set_defaults_pod_spec(spec: Obj) -> None:
    """Upstream: SetDefaults_PodSpec, plus the per-field defaulters reached from a PodSpec."""
    _set_defaults_pod_spec(spec, _items(spec, "containers"), _items(spec, "initContainers"))


def _set_defaults_pod_spec(spec: Obj, containers: list[Obj], inits: list[Obj]) -> None:
    """set_defaults_pod_spec with the (init)containers set_defaults_pod already listed (the
    lists hold the same dicts: requests-to-limits changed them in place, not the lists)."""
    if not spec.get("dnsPolicy"):
        spec["dnsPolicy"] = "ClusterFirst"
    if not spec.get("restartPolicy"):
        spec["restartPolicy"] = "Always"
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    if spec.get("terminationGracePeriodSeconds") is None:
        spec["terminationGracePeriodSeconds"] = 30
    if not spec.get("schedulerName"):
        spec["schedulerName"] = "default-scheduler"
    for c in containers:
        set_defaults_container(c)
    for c in inits:
        set_defaults_container(c)
    if spec.get("ephemeralContainers"):
        for c in _items(spec, "ephemeralContainers"):
            set_defaults_container(c)
    if spec.get("volumes"):
        for v in _items(spec, "volumes"):
            set_defaults_volume(v)


_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")


def set_defaults_container(c: Obj) -> None:
    """Upstream: SetDefaults_Container, plus ports, env fieldRefs, probes and lifecycle hooks.

    `resources: {}` is not a Go default but Go always serialises the (non-pointer)
    ResourceRequirements struct, so every container a real apiserver returns carries it.
    """
    get = c.get
    if not get("imagePullPolicy"):
        c["imagePullPolicy"] = "Always" if image_tag(get("image") or "") == "latest" else "IfNotPresent"
    if not get("terminationMessagePath"):
        c["terminationMessagePath"] = "/dev/termination-log"
    if not get("terminationMessagePolicy"):
        c["terminationMessagePolicy"] = "File"
    if get("resources") is None:
        c["resources"] = {}
    if get("ports"):
        for p in _items(c, "ports"):
            if not p.get("protocol"):
                p["protocol"] = "TCP"          # +default="TCP" on ContainerPort.Protocol
    if get("env"):
        for e in _items(c, "env"):
            field_ref = (e.get("valueFrom") or {}).get("fieldRef")
            if isinstance(field_ref, dict) and not field_ref.get("apiVersion"):
                field_ref["apiVersion"] = "v1"  # SetDefaults_ObjectFieldSelector
    for key in _PROBES:
        probe = get(key)
        if isinstance(probe, dict):
            set_defaults_probe(probe)
    lifecycle = get("lifecycle")
    if lifecycle and isinstance(lifecycle, dict):
        for hook in ("postStart", "preStop"):
            handler = lifecycle.get(hook)
            if isinstance(handler, dict):
                _default_handler(handler)


@functools.lru_cache(maxsize=1024)
def image_tag(image: str) -> str:
    """The tag parsers.ParseImageName reports: "latest" when neither tag nor digest is given.

    Examples: "nginx" -> "latest", "nginx:1.25" -> "1.25", "nginx@sha256:ab.." -> "" (a
    digest counts as pinned), "localhost:5000/app" -> "latest" (the port is not a tag).
    An unparsable reference (e.g. upper case) gives "" like the ignored error upstream.
    Remembered (bounded): every pod of a Deployment names the same images.
    """
    if not image or image != image.strip():
        return ""
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = last.rsplit(":", 1)[1] if ":" in last else ""
    repo = name[: len(name) - len(tag) - 1] if tag else name
    if repo.split("/", 1)[-1] != repo.split("/", 1)[-1].lower():
        return ""
    if not tag and not digest:
        return "latest"
    return tag


def set_defaults_probe(p: Obj) -> None:
    """Upstream: SetDefaults_Probe (zero means unset for these int32 fields)."""
    for key, default in (("timeoutSeconds", 1), ("periodSeconds", 10),
                         ("successThreshold", 1), ("failureThreshold", 3)):
        if not p.get(key):
            p[key] = default
    _default_handler(p)


def _default_handler(h: Obj) -> None:
    """SetDefaults_HTTPGetAction (path "/", scheme HTTP) and GRPCAction.service `+default=""`."""
    http = h.get("httpGet")
    if isinstance(http, dict):
        if not http.get("path"):
            http["path"] = "/"
        if not http.get("scheme"):
            http["scheme"] = "HTTP"
    grpc = h.get("grpc")
    if isinstance(grpc, dict) and grpc.get("service") is None:
        grpc["service"] = ""


# Volume sources a volume may carry; a volume with none of them becomes an emptyDir.
_VOLUME_SOURCES = (
    "hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret",
    "nfs", "iscsi", "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder", "cephfs",
    "flocker", "downwardAPI", "fc", "azureFile", "configMap", "vsphereVolume", "quobyte",
    "azureDisk", "photonPersistentDisk", "projected", "portworxVolume", "scaleIO", "storageos",
    "csi", "ephemeral", "image",
)
DEFAULT_MODE = 0o644  # 420: Secret/ConfigMap/DownwardAPI/Projected VolumeSourceDefaultMode


def set_defaults_volume(v: Obj) -> None:
    """Upstream: SetDefaults_Volume and the per-source defaulters (modes, hostPath type)."""
    if not any(v.get(k) is not None for k in _VOLUME_SOURCES):
        v["emptyDir"] = {}
    for key in ("secret", "configMap", "downwardAPI", "projected"):
        src = v.get(key)
        if isinstance(src, dict) and src.get("defaultMode") is None:
            src["defaultMode"] = DEFAULT_MODE
    host_path = v.get("hostPath")
    if isinstance(host_path, dict) and host_path.get("type") is None:
        host_path["type"] = ""                           # HostPathUnset
    for source in _items(v.get("projected") or {}, "sources"):
        token = source.get("serviceAccountToken")
        if isinstance(token, dict) and token.get("expirationSeconds") is None:
            token["expirationSeconds"] = 3600
    image = v.get("image")
    if isinstance(image, dict) and not image.get("pullPolicy"):
        image["pullPolicy"] = "Always" if image_tag(image.get("reference") or "") == "latest" else "IfNotPresent"


# --- core/v1: everything else ------------------------------------------------------------------


def set_defaults_namespace(ns: Obj) -> None:
    """Upstream: SetDefaults_Namespace + SetDefaults_NamespaceStatus.

    The kubernetes.io/metadata.name label mirrors the name (skipped for generateName-only
    objects, whose name is not known yet); status.phase starts Active.
    """
    meta = _sub(ns, "metadata")
    if meta.get("name"):
        _sub(meta, "labels")["kubernetes.io/metadata.name"] = meta["name"]
    status = _sub(ns, "status")
    if not status.get("phase"):
        status["phase"] = "Active"


def namespace_finalizers_on_create(ns: Obj) -> None:
    """Upstream: namespaceStrategy.PrepareForCreate's finalizer step (create only, not a default).

    Adds "kubernetes" to spec.finalizers unless present. It is deliberately not part of
    set_defaults: the namespace controller removes it during deletion, and defaulting
    runs on every update too.
    """
    finalizers = _sub(ns, "spec").setdefault("finalizers", [])
    if "kubernetes" not in finalizers:
        finalizers.append("kubernetes")


def set_defaults_secret(s: Obj) -> None:
    """Upstream: SetDefaults_Secret"""
    if not s.get("type"):
        s["type"] = "Opaque"


def set_defaults_service(svc: Obj) -> None:
    """Upstream: SetDefaults_Service (allocation of clusterIP/nodePorts/ipFamilies happens elsewhere)."""
    spec = _sub(svc, "spec")
    if not spec.get("sessionAffinity"):
        spec["sessionAffinity"] = "None"
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        client_ip = _sub(_sub(spec, "sessionAffinityConfig"), "clientIP")
        if client_ip.get("timeoutSeconds") is None:
            client_ip["timeoutSeconds"] = 10800      # DefaultClientIPServiceAffinitySeconds
    if not spec.get("type"):
        spec["type"] = "ClusterIP"
    for p in _items(spec, "ports"):
        if not p.get("protocol"):
            p["protocol"] = "TCP"
        if p.get("targetPort") in (None, 0, ""):
            p["targetPort"] = p.get("port", 0)
    if _externally_accessible(spec) and not spec.get("externalTrafficPolicy"):
        spec["externalTrafficPolicy"] = "Cluster"
    if spec.get("internalTrafficPolicy") is None and spec["type"] in ("NodePort", "LoadBalancer", "ClusterIP"):
        spec["internalTrafficPolicy"] = "Cluster"
    if spec["type"] == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        spec["allocateLoadBalancerNodePorts"] = True


def _externally_accessible(spec: Obj) -> bool:
    """Upstream: service.ExternallyAccessible (LoadBalancer, NodePort, or ClusterIP with externalIPs)."""
    t = spec.get("type")
    return t in ("LoadBalancer", "NodePort") or (t == "ClusterIP" and bool(spec.get("externalIPs")))


def set_defaults_node(node: Obj) -> None:
    """Upstream: SetDefaults_NodeStatus (allocatable defaults to capacity); then the fields Go
    always writes (zero_values.fill_node)."""
    status = node.get("status")
    if isinstance(status, dict) and status.get("allocatable") is None and isinstance(status.get("capacity"), dict):
        status["allocatable"] = dict(status["capacity"])
    zero_values.fill_node(node)
