"""The fused pod create (admission/fused.py) answers what the plugins answer one by one: over
many pod shapes (the cases of upstream's plugin tests: serviceaccount/admission_test.go,
priority/admission_test.go, defaulttolerationseconds/admission_test.go, lifecycle/admission_test.go,
limitranger's and podsecurity's), namespaces (plain, restricted by pod security, with a LimitRange,
with a quota, terminating, missing) and users (the admin, a node), the same object, refusal,
warnings and audit annotations with the fused phases as with every plugin asked in turn."""
from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest

from kubeplane.api import errors
from kubeplane.apiserver.admission import Attributes, Operation
from kubeplane.apiserver.admission import fused
from kubeplane.apiserver.admission.plugins.service_account import ServiceAccount
from kubeplane.apiserver.authentication.user import UserInfo
from kubeplane.apiserver.server import APIServer

pytestmark = pytest.mark.every_admission_plugin      # `server` with every default plugin, as `up`

ADMIN = UserInfo("kubernetes-admin", "", ("kubeadm:cluster-admins", "system:authenticated"))
NODE = UserInfo("system:node:n1", "", ("system:nodes", "system:authenticated"))
NAMESPACES = ("default", "restricted", "limited", "quota", "terminating", "missing")
TOKEN_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"


def c(name: str = "c", **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": "nginx", **fields}


# (id, spec fields, metadata fields, top-level fields)
SHAPES: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]] = [
    ("plain", {}, {}, {}),
    ("labels", {}, {"labels": {"app": "web"}}, {}),
    ("resources", {"containers": [c(resources={"requests": {"cpu": "100m", "memory": "64Mi"}})]}, {}, {}),
    ("two-containers", {"containers": [c("a"), c("b")]}, {}, {}),
    ("no-containers", {"containers": []}, {}, {}),
    ("sa-default", {"serviceAccountName": "default"}, {}, {}),
    ("sa-robot", {"serviceAccountName": "robot"}, {}, {}),
    ("sa-noauto", {"serviceAccountName": "noauto"}, {}, {}),
    ("sa-strict", {"serviceAccountName": "strict"}, {}, {}),
    ("sa-strict-secret", {"serviceAccountName": "strict",
                          "volumes": [{"name": "s", "secret": {"secretName": "s"}}]}, {}, {}),
    ("sa-strict-env", {"serviceAccountName": "strict", "containers": [c(env=[
        {"name": "E", "valueFrom": {"secretKeyRef": {"name": "other", "key": "k"}}}])]}, {}, {}),
    ("sa-missing", {"serviceAccountName": "nobody"}, {}, {}),
    ("sa-deprecated", {"serviceAccount": "robot"}, {}, {}),
    ("sa-empty", {"serviceAccountName": ""}, {}, {}),
    ("automount-false", {"automountServiceAccountToken": False}, {}, {}),
    ("automount-true-noauto", {"serviceAccountName": "noauto", "automountServiceAccountToken": True}, {}, {}),
    ("own-token-volume", {"volumes": [{"name": "kube-api-access-mine", "emptyDir": {}}]}, {}, {}),
    ("other-volume", {"volumes": [{"name": "data", "emptyDir": {}}],
                      "containers": [c(volumeMounts=[{"name": "data", "mountPath": "/data"}])]}, {}, {}),
    ("mount-at-token-path", {"volumes": [{"name": "t", "emptyDir": {}}],
                             "containers": [c(volumeMounts=[{"name": "t", "mountPath": TOKEN_PATH}])]}, {}, {}),
    ("init", {"initContainers": [c("i")]}, {}, {}),
    ("init-mounted", {"initContainers": [c("i", volumeMounts=[{"name": "t", "mountPath": TOKEN_PATH}])],
                      "volumes": [{"name": "t", "emptyDir": {}}]}, {}, {}),
    ("pull-secrets", {"imagePullSecrets": [{"name": "mine"}]}, {}, {}),
    ("pull-secrets-robot", {"serviceAccountName": "robot", "imagePullSecrets": [{"name": "mine"}]}, {}, {}),
    ("mirror", {}, {"annotations": {"kubernetes.io/config.mirror": "x"}}, {}),
    ("mirror-sa", {"serviceAccountName": "default"}, {"annotations": {"kubernetes.io/config.mirror": "x"}}, {}),
    ("mirror-node", {"nodeName": "n1"}, {"annotations": {"kubernetes.io/config.mirror": "x"}}, {}),
    ("annotated", {}, {"annotations": {"a": "b"}}, {}),
    ("priority-class", {"priorityClassName": "system-node-critical"}, {}, {}),
    ("priority-class-missing", {"priorityClassName": "nope"}, {}, {}),
    ("priority-class-empty", {"priorityClassName": ""}, {}, {}),
    ("priority-0", {"priority": 0}, {}, {}),
    ("priority-5", {"priority": 5}, {}, {}),
    ("priority-none", {"priority": None}, {}, {}),
    ("policy-never", {"preemptionPolicy": "Never"}, {}, {}),
    ("policy-lower", {"preemptionPolicy": "PreemptLowerPriority"}, {}, {}),
    ("tolerations-empty", {"tolerations": []}, {}, {}),
    ("tolerations-custom", {"tolerations": [{"key": "custom", "operator": "Exists"}]}, {}, {}),
    ("tolerations-not-ready", {"tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                                                "effect": "NoExecute", "tolerationSeconds": 60}]}, {}, {}),
    ("tolerations-wildcard", {"tolerations": [{"operator": "Exists"}]}, {}, {}),
    ("privileged", {"containers": [c(securityContext={"privileged": True})]}, {}, {}),
    ("host-network", {"hostNetwork": True}, {}, {}),
    ("restricted-ok", {"securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
                       "containers": [c(securityContext={"allowPrivilegeEscalation": False,
                                                         "capabilities": {"drop": ["ALL"]}})]}, {}, {}),
    ("no-spec", None, {}, {}),
    ("kind-missing", {}, {}, {"kind": None}),
    ("kind-other", {}, {}, {"kind": "Deployment"}),
]


def shape(spec: dict[str, Any] | None, meta: dict[str, Any], top: dict[str, Any], ns: str) -> dict[str, Any]:
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod",
                           "metadata": {"generateName": "web-", "namespace": ns, **copy.deepcopy(meta)}}
    if spec is not None:
        pod["spec"] = {"containers": [c()], **copy.deepcopy(spec)}
    for k, v in top.items():
        if v is None:
            pod.pop(k, None)
        else:
            pod[k] = v
    return pod


async def store(server: APIServer, key: str, obj: dict[str, Any]) -> None:
    await server.storage.create(key, obj)


async def populate(server: APIServer) -> None:
    """The namespaces, accounts, LimitRange and quota of the cases (straight into the store)."""
    for ns in NAMESPACES[1:-1]:
        meta: dict[str, Any] = {"name": ns}
        if ns == "restricted":
            meta["labels"] = {"pod-security.kubernetes.io/enforce": "restricted",
                              "pod-security.kubernetes.io/warn": "baseline"}
        status = {"phase": "Terminating" if ns == "terminating" else "Active"}
        await store(server, f"/registry/namespaces/{ns}",
                    {"apiVersion": "v1", "kind": "Namespace", "metadata": meta, "status": status})
    for ns in NAMESPACES[:-1]:
        for name, fields in (("default", {}), ("robot", {"imagePullSecrets": [{"name": "from-sa"}]}),
                             ("noauto", {"automountServiceAccountToken": False}),
                             ("strict", {"secrets": [{"name": "s"}]})):
            sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": ns}, **fields}
            if name == "strict":
                sa["metadata"]["annotations"] = {"kubernetes.io/enforce-mountable-secrets": "true"}
            await store(server, f"/registry/serviceaccounts/{ns}/{name}", sa)
    await store(server, "/registry/limitranges/limited/lr", {
        "apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr", "namespace": "limited"},
        "spec": {"limits": [{"type": "Container", "default": {"cpu": "500m"}, "defaultRequest": {"cpu": "200m"},
                             "max": {"cpu": "1"}}]}})
    await store(server, "/registry/resourcequotas/quota/q", {
        "apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q", "namespace": "quota"},
        "spec": {"hard": {"pods": "1000"}}, "status": {"hard": {"pods": "1000"}, "used": {"pods": "0"}}})


def run_phases_counted(server: APIServer, monkeypatch: pytest.MonkeyPatch) -> dict[str, list[int]]:
    """Record what the fused phases answer (how many plugins they ran)."""
    seen: dict[str, list[int]] = {"admit": [], "validate": []}
    chain = server.admission
    chain.fuse = True
    chain._routes.clear()
    pod_create = chain._route(Attributes(Operation.CREATE, "", "v1", "pods", "Pod", "default", "", {}))
    assert pod_create is chain._fused_route and chain._fused is not None
    admit, validate = fused.PodCreate.admit, fused.PodCreate.validate

    def counted_admit(self: fused.PodCreate, a: Attributes) -> int:
        seen["admit"].append(n := admit(self, a))
        return n

    def counted_validate(self: fused.PodCreate, a: Attributes) -> int:
        seen["validate"].append(n := validate(self, a))
        return n
    monkeypatch.setattr(fused.PodCreate, "admit", counted_admit)
    monkeypatch.setattr(fused.PodCreate, "validate", counted_validate)
    return seen


async def outcome(server: APIServer, fuse: bool, pod: dict[str, Any], ns: str, user: UserInfo,
                  between: Any = None) -> Any:
    """What the chain makes of the pod (`between`: changes the object after the mutating phase)."""
    chain = server.admission
    if chain.fuse != fuse:
        chain.fuse = fuse
        chain._routes.clear()
    a = Attributes(Operation.CREATE, "", "v1", "pods", "Pod", ns, "", pod, user=user, warnings=[],
                   audit_annotations={})
    try:
        await chain.admit(a)
        if between is not None:
            between(a.obj)
        await chain.validate(a)
        error = None
    except errors.StatusError as e:
        error = (e.code, e.reason, e.message, e.details)
    return error, a.obj, a.warnings, a.audit_annotations, a.namespace_obj, a.service_account is not None


async def compare(server: APIServer, shapes: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]]) -> int:
    """Each case through both, in both orders; the number of cases."""
    n = 0
    for (name, spec, meta, top), ns, user in itertools.product(shapes, NAMESPACES, (ADMIN, NODE)):
        for order in ((True, False), (False, True)):
            got = [await outcome(server, fuse, shape(spec, meta, top, ns), ns, user) for fuse in order]
            assert got[0] == got[1], (name, ns, user.name, order)
            n += 1
    server.admission.fuse = True
    server.admission._routes.clear()
    return n


@pytest.fixture
async def cluster(server: APIServer) -> APIServer:
    await populate(server)
    sa = next(p for p in server.admission.plugins if isinstance(p, ServiceAccount))
    sa.generate_name = lambda base: base + "xxxxx"        # type: ignore[method-assign]
    sa.retry_interval = (0.0, 0.0)
    # list every index (a first pod through the awaited path)
    await outcome(server, False, shape({}, {}, {}, "default"), "default", ADMIN)
    return server


async def test_fused_equals_each_plugin_in_turn(cluster: APIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    seen = run_phases_counted(cluster, monkeypatch)
    assert await compare(cluster, SHAPES) == len(SHAPES) * len(NAMESPACES) * 2 * 2
    # the fused phases took the whole way for the common case, and handed over at every plugin
    assert fused.PodCreate.ADMITTERS in seen["admit"] and fused.PodCreate.VALIDATORS in seen["validate"]
    assert set(seen["admit"]) == {0, 1, 2, 3, 4, 6}
    assert set(seen["validate"]) == {0, 1, 2, 3, 4}


async def test_fused_equals_each_plugin_in_turn_with_a_default_priority_class(cluster: APIServer) -> None:
    await store(cluster, "/registry/priorityclasses/everyday", {
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "everyday"},
        "value": 100, "globalDefault": True, "preemptionPolicy": "Never"})
    await compare(cluster, SHAPES)


async def test_the_common_case_takes_the_fused_way(cluster: APIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """A kubectl-like pod in a namespace without LimitRanges, quotas or pod-security labels, by
    the admin: one call per phase; the account's own choices still count."""
    seen = run_phases_counted(cluster, monkeypatch)
    for spec in ({}, {"serviceAccountName": "noauto"}, {"tolerations": [{"key": "k", "operator": "Exists"}]},
                 {"volumes": [{"name": "data", "emptyDir": {}}]}, {"initContainers": [c("i")]}):
        await outcome(cluster, True, shape(spec, {}, {}, "default"), "default", ADMIN)
    assert seen == {"admit": [6] * 5, "validate": [4] * 5}


async def test_objects_written_between_requests_count(cluster: APIServer) -> None:
    """A LimitRange, an account change, a default class or a namespace's labels written after
    the fused phases found the common case apply to the very next pod (the indexes' waiters)."""
    pod = shape({}, {}, {}, "default")
    base = await outcome(cluster, True, copy.deepcopy(pod), "default", ADMIN)
    await store(cluster, "/registry/limitranges/default/lr", {
        "apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr", "namespace": "default"},
        "spec": {"limits": [{"type": "Container", "defaultRequest": {"cpu": "200m"}}]}})
    got = await outcome(cluster, True, copy.deepcopy(pod), "default", ADMIN)
    assert got[1]["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "200m"}}
    assert got[1]["metadata"]["annotations"]["kubernetes.io/limit-ranger"]
    await cluster.storage.delete("/registry/limitranges/default/lr")
    assert await outcome(cluster, True, copy.deepcopy(pod), "default", ADMIN) == base
    kv = await cluster.storage.get("/registry/serviceaccounts/default/default")
    assert kv is not None
    await cluster.storage.update(kv.key, {**kv.obj, "imagePullSecrets": [{"name": "p"}]})
    got = await outcome(cluster, True, copy.deepcopy(pod), "default", ADMIN)
    assert got[1]["spec"]["imagePullSecrets"] == [{"name": "p"}]
    await compare(cluster, SHAPES[:3])


@pytest.mark.parametrize("setting", ["limit_secret_references", "no_token_mount"])
async def test_fused_equals_each_plugin_in_turn_with_the_plugins_settings(cluster: APIServer, setting: str) -> None:
    """ServiceAccount's settings changed after the fused phases found the common case (the
    test seams): its own code decides again."""
    await compare(cluster, SHAPES[:3])                    # the common case found
    sa = next(p for p in cluster.admission.plugins if isinstance(p, ServiceAccount))
    if setting == "limit_secret_references":
        sa.limit_secret_references = True
    else:
        sa.mount_service_account_token = False
    await compare(cluster, SHAPES)
    got = await outcome(cluster, True, shape({}, {}, {}, "default"), "default", ADMIN)
    assert ("volumes" in got[1]["spec"]) is (setting == "limit_secret_references")


async def test_the_validating_phase_judges_the_object_it_is_given(cluster: APIServer) -> None:
    """The validating phase looks at the object again (what changed since the mutating phase
    counts): a secret the account does not list, with mountable secrets enforced, or a mirror
    annotation."""
    sa = next(p for p in cluster.admission.plugins if isinstance(p, ServiceAccount))
    sa.limit_secret_references = True

    def add_secret(pod: dict[str, Any]) -> None:
        pod["spec"]["volumes"].append({"name": "s", "secret": {"secretName": "unlisted"}})

    def mirror(pod: dict[str, Any]) -> None:
        pod["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "x"}

    for change in (add_secret, mirror):
        got = [await outcome(cluster, fuse, shape({}, {}, {}, "default"), "default", ADMIN, change)
               for fuse in (True, False)]
        assert got[0] == got[1]
        assert got[0][0] is not None and got[0][0][0] == 403, change.__name__
