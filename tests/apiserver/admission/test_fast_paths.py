"""The pod create path's plugins decide without waiting (admit_now/validate_now, from watch-fed
indexes) once their indexes are listed: the answers must be those of the awaited path, and an
object written after an index started (a ServiceAccount, LimitRange, PriorityClass, quota,
namespace) must count for the very next pod."""
from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from kubeplane.api import errors
from kubeplane.apiserver.admission import Attributes, Operation
from kubeplane.apiserver.admission.plugins.default_toleration_seconds import DefaultTolerationSeconds
from kubeplane.apiserver.admission.plugins.service_account import ServiceAccount
from kubeplane.apiserver.request import Request
from kubeplane.apiserver.server import APIServer

pytestmark = pytest.mark.every_admission_plugin      # `server` with ServiceAccount (tests/apiserver/conftest.py)


POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "web-"},
       "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


async def call(server: APIServer, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    resp = await server.route_trusted(Request.build(method, path, "", {"content-type": "application/json"},
                                                    orjson.dumps(body) if body is not None else b""))
    return resp.status, orjson.loads(resp.body) if resp.body else None


async def create_pod(server: APIServer, ns: str = "default", **spec: Any) -> tuple[int, Any]:
    body = copy.deepcopy(POD)
    body["spec"].update(spec)
    return await call(server, "POST", f"/api/v1/namespaces/{ns}/pods", body)


async def create(server: APIServer, path: str, obj: dict[str, Any]) -> None:
    status, body = await call(server, "POST", path, obj)
    assert status == 201, body


def sa(name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name}, **fields}


def plugin(server: APIServer, cls: type) -> Any:
    (p,) = [p for p in server.admission.plugins if isinstance(p, cls)]
    return p


async def test_service_account_written_after_the_index_started(server: APIServer) -> None:
    await create(server, "/api/v1/namespaces/default/serviceaccounts", sa("default"))
    status, body = await create_pod(server)
    assert status == 201, body
    assert plugin(server, ServiceAccount).index is not None          # the index is listed: admit_now decides
    await create(server, "/api/v1/namespaces/default/serviceaccounts",
                 sa("robot", imagePullSecrets=[{"name": "pull"}], automountServiceAccountToken=False))
    status, body = await create_pod(server, serviceAccountName="robot")
    assert status == 201, body
    assert body["spec"]["serviceAccountName"] == body["spec"]["serviceAccount"] == "robot"
    assert body["spec"]["imagePullSecrets"] == [{"name": "pull"}]
    assert "volumes" not in body["spec"]                              # the account opts out
    status, _ = await call(server, "DELETE", "/api/v1/namespaces/default/serviceaccounts/robot")
    assert status == 200
    plugin(server, ServiceAccount).retry_interval = (0.0, 0.0)
    status, body = await create_pod(server, serviceAccountName="robot")
    assert status == 403
    assert body["message"] == ('pods "web-" is forbidden: error looking up service account default/robot: '
                               'serviceaccount "robot" not found')


async def test_enforced_mountable_secrets_refused_from_the_index(server: APIServer) -> None:
    await create(server, "/api/v1/namespaces/default/serviceaccounts", sa("default"))
    assert (await create_pod(server))[0] == 201
    await create(server, "/api/v1/namespaces/default/serviceaccounts",
                 sa("strict", metadata={"name": "strict",
                                        "annotations": {"kubernetes.io/enforce-mountable-secrets": "true"}}))
    status, body = await create_pod(server, serviceAccountName="strict",
                                    volumes=[{"name": "s", "secret": {"secretName": "other"}}])
    assert status == 403
    assert body["message"].endswith('volume with secret.secretName="other" is not allowed because service account '
                                    "strict does not reference that secret")


SPECS = [
    {"containers": [{"name": "c"}], "initContainers": [{"name": "i"}]},
    {"containers": [{"name": "c", "volumeMounts": [{"name": "own", "mountPath": "/var/run/secrets/kubernetes.io/"
                                                    "serviceaccount"}]}], "volumes": [{"name": "own", "emptyDir": {}}]},
    {"containers": [{"name": "c"}], "volumes": [{"name": "kube-api-access-abcde", "emptyDir": {}}]},
    {"containers": [{"name": "c"}], "automountServiceAccountToken": False},
    {"containers": [{"name": "c"}], "serviceAccount": "robot"},
    {"containers": [{"name": "c"}], "imagePullSecrets": [{"name": "mine"}]},
]


@pytest.mark.parametrize("spec", SPECS, ids=["init", "own-mount", "own-volume", "no-automount", "deprecated-field",
                                             "own-pull-secrets"])
async def test_service_account_admits_the_same_with_and_without_the_index(server: APIServer,
                                                                         spec: dict[str, Any]) -> None:
    for name in ("default", "robot"):
        await server.storage.create(f"/registry/serviceaccounts/ns/{name}", {
            "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": "ns"},
            "imagePullSecrets": [{"name": "from-sa"}]})
    indexed, fresh = ServiceAccount(server), ServiceAccount(server)
    for p in (indexed, fresh):
        p.generate_name = lambda base: base + "xxxxx"        # type: ignore[method-assign]
    await indexed.service_account(attrs({"spec": {}}), "default")     # lists the index
    a, b = attrs({"spec": copy.deepcopy(spec)}), attrs({"spec": copy.deepcopy(spec)})
    assert indexed.admit_now(a) and indexed.validate_now(a)
    assert not fresh.admit_now(b)                                     # no index yet: awaited
    await fresh.admit(b)
    await fresh.validate(b)
    assert a.obj == b.obj


def attrs(pod: dict[str, Any]) -> Attributes:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}, **pod}
    return Attributes(Operation.CREATE, "", "v1", "pods", "Pod", "ns", "p", pod)


async def test_limit_range_written_after_the_index_started(server: APIServer) -> None:
    await create(server, "/api/v1/namespaces/default/serviceaccounts", sa("default"))
    status, body = await create_pod(server)
    assert status == 201 and "limits" not in body["spec"]["containers"][0].get("resources", {})
    await server.storage.create("/registry/limitranges/default/lr", {
        "apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr", "namespace": "default"},
        "spec": {"limits": [{"type": "Container", "default": {"cpu": "200m"}, "max": {"memory": "1Gi"}}]}})
    status, body = await create_pod(server)
    assert status == 201, body
    assert body["spec"]["containers"][0]["resources"]["limits"] == {"cpu": "200m", "memory": "1Gi"}
    assert body["metadata"]["annotations"]["kubernetes.io/limit-ranger"].startswith("LimitRanger plugin set:")
    status, body = await create_pod(server, containers=[{"name": "c", "image": "nginx",
                                                        "resources": {"limits": {"memory": "2Gi"}}}])
    assert status == 403 and "maximum memory usage per Container is 1Gi" in body["message"], body


async def test_default_priority_class_written_after_pods_were_admitted(server: APIServer) -> None:
    await create(server, "/api/v1/namespaces/default/serviceaccounts", sa("default"))
    status, body = await create_pod(server)
    assert (body["spec"]["priority"], body["spec"]["preemptionPolicy"]) == (0, "PreemptLowerPriority")
    assert "priorityClassName" not in body["spec"]
    await create(server, "/apis/scheduling.k8s.io/v1/priorityclasses", {
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "everyone"},
        "value": 7, "globalDefault": True, "preemptionPolicy": "Never"})
    status, body = await create_pod(server)
    assert status == 201, body
    assert (body["spec"]["priorityClassName"], body["spec"]["priority"], body["spec"]["preemptionPolicy"]) == (
        "everyone", 7, "Never")
    status, body = await create_pod(server, priority=3)
    assert status == 403 and "must not be provided in pod spec" in body["message"]


async def test_quota_and_namespace_written_after_the_indexes_started(server: APIServer) -> None:
    await create(server, "/api/v1/namespaces/default/serviceaccounts", sa("default"))
    assert (await create_pod(server))[0] == 201
    status, body = await create_pod(server, "team")
    assert status == 404 and body["reason"] == "NotFound"
    await create(server, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    await create(server, "/api/v1/namespaces/team/serviceaccounts", sa("default"))
    await server.storage.create("/registry/resourcequotas/team/q", {      # as its controller would leave it
        "apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q", "namespace": "team"},
        "spec": {"hard": {"pods": "1"}}, "status": {"hard": {"pods": "1"}, "used": {"pods": "1"}}})
    status, body = await create_pod(server, "team")
    assert status == 403 and "exceeded quota: q" in body["message"], body


def test_default_toleration_seconds_never_changes_the_pods_list_in_place(server: APIServer) -> None:
    """On UPDATE the new pod's lists may be the stored pod's: the tolerations are a new list."""
    stored = [{"key": "custom", "operator": "Exists"}]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"tolerations": stored}}
    a = Attributes(Operation.UPDATE, "", "v1", "pods", "Pod", "ns", "p", pod, old_obj=copy.deepcopy(pod))
    assert DefaultTolerationSeconds(server).admit_now(a)
    assert stored == [{"key": "custom", "operator": "Exists"}]
    assert [t["key"] for t in pod["spec"]["tolerations"]] == [
        "custom", "node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"]


@pytest.mark.parametrize("polled_between", [False, True])
async def test_service_account_changed_between_admit_and_validate_counts(server: APIServer,
                                                                         polled_between: bool) -> None:
    """validate_now reuses admit_now's look-up (Attributes.service_account) only while the index
    did not move: an account written in between (seen by a look-up of another request, or not
    yet) is read again, as upstream's Validate reads its lister again."""
    await create(server, "/api/v1/namespaces/default/serviceaccounts", sa("default"))
    p = plugin(server, ServiceAccount)
    assert (await create_pod(server))[0] == 201            # the index is listed
    pod = copy.deepcopy(POD)
    pod["spec"]["volumes"] = [{"name": "s", "secret": {"secretName": "s"}}]
    a = Attributes(Operation.CREATE, "", "v1", "pods", "Pod", "default", "", pod)
    assert p.admit_now(a) and a.service_account is not None
    assert p.validate_now(a)                                # nothing changed: the same answer
    status, body = await call(server, "PUT", "/api/v1/namespaces/default/serviceaccounts/default", sa(
        "default", metadata={"name": "default", "annotations": {
            "kubernetes.io/enforce-mountable-secrets": "true"}}))
    assert status == 200, body
    if polled_between:                                      # another request's look-up applied it
        p.index.get_now("default", "/registry/serviceaccounts/default/default")
        assert a.service_account[2] != p.index.generation
    with pytest.raises(errors.StatusError, match="does not reference that secret"):
        p.validate_now(a)
