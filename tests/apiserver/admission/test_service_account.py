"""The ServiceAccount admission plugin, with upstream's cases
(plugin/pkg/admission/serviceaccount/admission_test.go) on a memory store."""
from __future__ import annotations

import asyncio
import copy
from typing import Any

import orjson
import pytest

from kubeplane.api import errors
from kubeplane.apiserver.admission import Attributes, Operation
from kubeplane.apiserver.admission.plugins.service_account import ServiceAccount
from kubeplane.apiserver.request import Request
from kubeplane.apiserver.server import APIServer

NS = "myns"
MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_VOLUME = {"name": "kube-api-access-xxxxx", "projected": {"defaultMode": 420, "sources": [
    {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
    {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
    {"downwardAPI": {"items": [{"path": "namespace",
                                "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}
TOKEN_MOUNT = {"name": "kube-api-access-xxxxx", "readOnly": True, "mountPath": MOUNT_PATH}


pytestmark = pytest.mark.every_admission_plugin      # `server` with ServiceAccount (tests/apiserver/conftest.py)


@pytest.fixture
def plugin(server: APIServer) -> ServiceAccount:
    p = ServiceAccount(server)
    p.retry_interval = (0.0, 0.0)
    p.generate_name = lambda base: base + "xxxxx"          # type: ignore[method-assign]
    return p


async def add_sa(server: APIServer, name: str = "default", ns: str = NS, **fields: Any) -> None:
    meta: dict[str, Any] = {"name": name, "namespace": ns}
    if "annotations" in fields:
        meta["annotations"] = fields.pop("annotations")
    await server.storage.create(f"/registry/serviceaccounts/{ns}/{name}",
                                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta, **fields})


def pod(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "myname", "namespace": NS}, "spec": spec}


def mirror(**spec: Any) -> dict[str, Any]:
    p = pod(**spec)
    p["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "true"}
    return p


def attrs(obj: Any, op: Operation = Operation.CREATE, resource: str = "pods", subresource: str = "") -> Attributes:
    return Attributes(op, "", "v1", resource, "Pod", NS, "myname", obj, subresource=subresource)


async def admit(plugin: ServiceAccount, a: Attributes) -> None:
    """Both phases, as the chain runs them."""
    await plugin.admit(a)
    await plugin.validate(a)


async def refused(plugin: ServiceAccount, a: Attributes) -> str:
    with pytest.raises(errors.StatusError) as e:
        await admit(plugin, a)
    assert e.value.code == 403
    return e.value.message


@pytest.mark.parametrize("op", [Operation.UPDATE, Operation.DELETE, Operation.CONNECT])
async def test_ignores_non_create(plugin: ServiceAccount, op: Operation) -> None:
    p = pod()
    await admit(plugin, attrs(p, op))
    assert p == pod()


async def test_ignores_non_pod_resource(plugin: ServiceAccount) -> None:
    p = pod()
    await admit(plugin, attrs(p, resource="CustomResource"))
    assert p == pod()


async def test_ignores_nil_object(plugin: ServiceAccount) -> None:
    await admit(plugin, attrs(None))


async def test_ignores_non_pod_object(plugin: ServiceAccount) -> None:
    await admit(plugin, attrs({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}))


async def test_ignores_mirror_pod(plugin: ServiceAccount) -> None:
    p = mirror(volumes=[{"name": "v", "emptyDir": {}}])
    await admit(plugin, attrs(p))
    assert "serviceAccountName" not in p["spec"]


@pytest.mark.parametrize("spec, message", [
    ({"serviceAccountName": "default"}, "a mirror pod may not reference service accounts"),
    ({"volumes": [{"name": "v", "secret": {}}]}, "a mirror pod may not reference secrets"),
    ({"containers": [{"name": "c", "envFrom": [{"secretRef": {"name": "s"}}]}]},
     "a mirror pod may not reference secrets"),
    ({"volumes": [{"name": "v", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}]},
     "a mirror pod may not use ServiceAccountToken volume projections"),
], ids=["service-account", "secret-volume", "secret-env-from", "token-projection"])
async def test_rejects_mirror_pod(plugin: ServiceAccount, spec: dict[str, Any], message: str) -> None:
    assert await refused(plugin, attrs(mirror(**spec))) == f'pods "myname" is forbidden: {message}'


async def test_assigns_default_service_account_and_bound_token_with_no_secret_tokens(
        server: APIServer, plugin: ServiceAccount) -> None:
    await add_sa(server)
    p = pod(containers=[{"name": "c"}], initContainers=[{"name": "i"}])
    await admit(plugin, attrs(p))
    assert p["spec"]["serviceAccountName"] == "default"
    assert p["spec"]["serviceAccount"] == "default"            # the deprecated v1 field mirrors it
    assert p["spec"]["volumes"] == [TOKEN_VOLUME]
    assert p["spec"]["containers"][0]["volumeMounts"] == [TOKEN_MOUNT]
    assert p["spec"]["initContainers"][0]["volumeMounts"] == [TOKEN_MOUNT]


async def test_the_default_service_account_is_waited_for(server: APIServer, plugin: ServiceAccount) -> None:
    """getServiceAccount looks the default service account up ten times (its controller may be
    creating it just now); the pod is admitted once it appears."""
    plugin.retry_interval = (0.01, 0.01)

    async def create_later() -> None:
        await asyncio.sleep(0.02)
        await add_sa(server)
    task = asyncio.create_task(create_later())
    p = pod(containers=[{"name": "c"}])
    await admit(plugin, attrs(p))
    await task
    assert p["spec"]["serviceAccountName"] == "default"


async def test_denies_invalid_service_account(plugin: ServiceAccount) -> None:
    assert await refused(plugin, attrs(pod())) == (
        'pods "myname" is forbidden: error looking up service account myns/default: '
        'serviceaccount "default" not found')


async def test_denies_missing_named_service_account_at_once(server: APIServer, plugin: ServiceAccount) -> None:
    plugin.retry_interval = (60.0, 60.0)          # a named account is looked up once: no wait
    message = await asyncio.wait_for(refused(plugin, attrs(pod(serviceAccountName="robot"))), 5)
    assert message.endswith('error looking up service account myns/robot: serviceaccount "robot" not found')


async def test_deprecated_service_account_field_names_the_account(server: APIServer, plugin: ServiceAccount) -> None:
    await add_sa(server, "robot")
    p = pod(serviceAccount="robot", containers=[{"name": "c"}])
    await admit(plugin, attrs(p))
    assert p["spec"]["serviceAccountName"] == "robot"


async def test_automounts_api_token(server: APIServer, plugin: ServiceAccount) -> None:
    await add_sa(server, secrets=[{"name": "token-name"}])
    p = pod(containers=[{"name": "c"}], initContainers=[{"name": "i"}])
    await admit(plugin, attrs(p))
    assert p["spec"]["volumes"] == [TOKEN_VOLUME]
    assert p["spec"]["containers"][0]["volumeMounts"] == [TOKEN_MOUNT]
    assert p["spec"]["initContainers"][0]["volumeMounts"] == [TOKEN_MOUNT]


async def test_respects_existing_mount(server: APIServer, plugin: ServiceAccount) -> None:
    """A container with something at the token path keeps it; no volume is added for nobody."""
    await add_sa(server)
    custom = {"name": "my-custom-mount", "readOnly": False, "mountPath": MOUNT_PATH}
    p = pod(containers=[{"name": "c", "volumeMounts": [dict(custom)]}],
            initContainers=[{"name": "i", "volumeMounts": [dict(custom)]}])
    await admit(plugin, attrs(p))
    assert "volumes" not in p["spec"]
    assert p["spec"]["containers"][0]["volumeMounts"] == [custom]
    assert p["spec"]["initContainers"][0]["volumeMounts"] == [custom]


async def test_existing_token_volume_is_reused(server: APIServer, plugin: ServiceAccount) -> None:
    await add_sa(server)
    own = {"name": "kube-api-access-abcde", "emptyDir": {}}
    p = pod(containers=[{"name": "c"}], volumes=[dict(own)])
    await admit(plugin, attrs(p))
    assert p["spec"]["volumes"] == [own]
    assert p["spec"]["containers"][0]["volumeMounts"][0]["name"] == "kube-api-access-abcde"


@pytest.mark.parametrize("pod_automount, sa_automount, mounted", [
    (None, None, True), (None, True, True), (None, False, False),
    (True, None, True), (True, False, True), (False, None, False), (False, True, False),
])
async def test_automount(server: APIServer, plugin: ServiceAccount, pod_automount: bool | None,
                         sa_automount: bool | None, mounted: bool) -> None:
    """The pod's choice wins, then the service account's, then yes. Upstream: TestAutomount*"""
    await add_sa(server, **({} if sa_automount is None else {"automountServiceAccountToken": sa_automount}))
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if pod_automount is not None:
        spec["automountServiceAccountToken"] = pod_automount
    p = pod(**spec)
    await admit(plugin, attrs(p))
    assert ("volumes" in p["spec"]) is mounted
    assert ("volumeMounts" in p["spec"]["containers"][0]) is mounted


ENFORCE = {"kubernetes.io/enforce-mountable-secrets": "true"}


def env_secret(container: str, secret: str) -> dict[str, Any]:
    return {"name": container, "env": [{"name": "env-1", "valueFrom": {"secretKeyRef": {"name": secret, "key": "k"}}}]}


def env_from_secret(container: str, secret: str) -> dict[str, Any]:
    return {"name": container, "envFrom": [{"secretRef": {"name": secret}}]}


async def test_allows_referenced_secret(server: APIServer, plugin: ServiceAccount) -> None:
    await add_sa(server, annotations=ENFORCE, secrets=[{"name": "foo"}])
    for spec in ({"volumes": [{"name": "v", "secret": {"secretName": "foo"}}]},
                 {"containers": [env_secret("container-1", "foo")]},
                 {"containers": [env_from_secret("container-1", "foo")]},
                 {"initContainers": [env_secret("container-1", "foo")]},
                 {"initContainers": [env_from_secret("container-1", "foo")]}):
        await admit(plugin, attrs(pod(**spec)))


NOT_REFERENCED = "is not allowed because service account default does not reference that secret"


@pytest.mark.parametrize("spec, message", [
    ({"volumes": [{"name": "v", "secret": {"secretName": "foo"}}]},
     f'volume with secret.secretName="foo" {NOT_REFERENCED}'),
    ({"containers": [env_secret("container-1", "foo")]},
     f'container container-1 with envVar env-1 referencing secret.secretName="foo" {NOT_REFERENCED}'),
    ({"containers": [env_from_secret("container-1", "foo")]},
     f'container container-1 with envFrom referencing secret.secretName="foo" {NOT_REFERENCED}'),
    ({"initContainers": [env_secret("container-1", "foo")]},
     f'init container container-1 with envVar env-1 referencing secret.secretName="foo" {NOT_REFERENCED}'),
    ({"initContainers": [env_from_secret("container-1", "foo")]},
     f'init container container-1 with envFrom referencing secret.secretName="foo" {NOT_REFERENCED}'),
], ids=["volume", "env", "env-from", "init-env", "init-env-from"])
async def test_rejects_unreferenced_secret(server: APIServer, plugin: ServiceAccount, spec: dict[str, Any],
                                           message: str) -> None:
    await add_sa(server, annotations=ENFORCE)
    assert await refused(plugin, attrs(pod(**spec))) == f'pods "myname" is forbidden: {message}'


@pytest.mark.parametrize("container, message", [
    (env_secret("container-2", "foo"),
     f'ephemeral container container-2 with envVar env-1 referencing secret.secretName="foo" {NOT_REFERENCED}'),
    (env_from_secret("container-2", "foo"),
     f'ephemeral container container-2 with envFrom referencing secret.secretName="foo" {NOT_REFERENCED}'),
], ids=["env", "env-from"])
async def test_rejects_unreferenced_secret_in_ephemeral_container(
        server: APIServer, plugin: ServiceAccount, container: dict[str, Any], message: str) -> None:
    await add_sa(server, annotations=ENFORCE)
    p = pod(serviceAccountName="default", ephemeralContainers=[container])
    a = attrs(p, Operation.UPDATE, subresource="ephemeralcontainers")
    assert await refused(plugin, a) == f'pods "myname" is forbidden: {message}'


async def test_ephemeral_container_update_needs_a_service_account(plugin: ServiceAccount) -> None:
    a = attrs(pod(ephemeralContainers=[{"name": "debug"}]), Operation.UPDATE, subresource="ephemeralcontainers")
    assert await refused(plugin, a) == 'pods "myname" is forbidden: no service account specified for pod myns/myname'


async def test_allow_unreferenced_secret_volumes_for_permissive_sas(server: APIServer, plugin: ServiceAccount) -> None:
    await add_sa(server, annotations={"kubernetes.io/enforce-mountable-secrets": "false"})
    await admit(plugin, attrs(pod(volumes=[{"name": "v", "secret": {"secretName": "foo"}}])))


async def test_limit_secret_references_flag_enforces_for_every_account(server: APIServer,
                                                                       plugin: ServiceAccount) -> None:
    await add_sa(server)
    plugin.limit_secret_references = True
    message = await refused(plugin, attrs(pod(volumes=[{"name": "v", "secret": {"secretName": "foo"}}])))
    assert message.endswith(f'volume with secret.secretName="foo" {NOT_REFERENCED}')


async def test_allows_referenced_image_pull_secrets(server: APIServer, plugin: ServiceAccount) -> None:
    await add_sa(server, annotations=ENFORCE, imagePullSecrets=[{"name": "foo"}])
    await admit(plugin, attrs(pod(imagePullSecrets=[{"name": "foo"}])))


async def test_rejects_unreferenced_image_pull_secrets(server: APIServer, plugin: ServiceAccount) -> None:
    await add_sa(server, annotations=ENFORCE)
    assert await refused(plugin, attrs(pod(imagePullSecrets=[{"name": "foo"}]))) == (
        'pods "myname" is forbidden: imagePullSecrets[0].name="foo" is not allowed because service account '
        'default does not reference that imagePullSecret')


async def test_do_not_add_image_pull_secrets(server: APIServer, plugin: ServiceAccount) -> None:
    await add_sa(server, imagePullSecrets=[{"name": "foo"}, {"name": "bar"}])
    p = pod(imagePullSecrets=[{"name": "foo"}])
    await admit(plugin, attrs(p))
    assert p["spec"]["imagePullSecrets"] == [{"name": "foo"}]


async def test_add_image_pull_secrets(server: APIServer, plugin: ServiceAccount) -> None:
    await add_sa(server, imagePullSecrets=[{"name": "foo"}, {"name": "bar"}])
    p = pod()
    await admit(plugin, attrs(p))
    assert p["spec"]["imagePullSecrets"] == [{"name": "foo"}, {"name": "bar"}]


# --- through the API server -------------------------------------------------------------------

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"},
       "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


async def post_pod(server: APIServer, ns: str = "default", body: dict[str, Any] = POD) -> Any:
    resp = await server.route_trusted(Request.build("POST", f"/api/v1/namespaces/{ns}/pods", "",
                                                    {"content-type": "application/json"},
                                                    orjson.dumps(body)))
    return resp.status, orjson.loads(resp.body)


async def test_pod_create_gets_the_token_volume(server: APIServer) -> None:
    await add_sa(server, ns="default")
    status, body = await post_pod(server)
    assert status == 201, body
    spec = body["spec"]
    (volume,) = spec["volumes"]
    assert volume["name"].startswith("kube-api-access-") and len(volume["name"]) == len("kube-api-access-") + 5
    assert volume["projected"] == TOKEN_VOLUME["projected"]
    assert spec["containers"][0]["volumeMounts"] == [dict(TOKEN_MOUNT, name=volume["name"])]
    assert spec["serviceAccountName"] == spec["serviceAccount"] == "default"


async def test_pod_create_without_the_service_account_is_refused(server: APIServer) -> None:
    for p in server.admission.plugins:
        if isinstance(p, ServiceAccount):
            p.retry_interval = (0.0, 0.0)
    status, body = await post_pod(server, body=copy.deepcopy(POD))
    assert status == 403
    assert body["message"] == ('pods "web" is forbidden: error looking up service account default/default: '
                               'serviceaccount "default" not found')
    assert await server.storage.get("/registry/pods/default/web") is None
