"""Webhook clients' credentials from --admission-control-config-file: a WebhookAdmissionConfiguration
naming a kubeconfig whose users are looked up by the webhook's host (upstream:
plugin/webhook/config LoadConfig and its kubeconfig_test.go; pkg/util/webhook/authentication.go
defaultAuthenticationInfoResolver and authentication_test.go)."""
from __future__ import annotations

import base64
import dataclasses
import pathlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
import yaml
from conftest import NS, call
from kubeplane.testing.webhook_server import WebhookServer

from kubeplane.apiserver.admission.webhook.authentication import (
    ANONYMOUS, AuthenticationInfoResolver, auth_info_from_user, load_webhook_admission,
)
from kubeplane.apiserver.server import APIServer
from kubeplane.storage import new_storage
from kubeplane.testing.fake import WITHOUT_CONTROLLER_MANAGER

Obj = dict[str, Any]
PODS = f"/api/v1/namespaces/{NS}/pods"


def write_config(tmp: pathlib.Path, users: list[Obj], plugins: tuple[str, ...] = ("ValidatingAdmissionWebhook",),
                 current_user: str = "") -> pathlib.Path:
    kubeconfig = tmp / "webhook-kubeconfig.yaml"
    doc: Obj = {"apiVersion": "v1", "kind": "Config", "users": users}
    if current_user:
        doc["contexts"] = [{"name": "c", "context": {"user": current_user}}]
        doc["current-context"] = "c"
    kubeconfig.write_text(yaml.safe_dump(doc))
    config = tmp / "admission.yaml"
    config.write_text(yaml.safe_dump({
        "apiVersion": "apiserver.config.k8s.io/v1", "kind": "AdmissionConfiguration",
        "plugins": [{"name": p, "configuration": {"apiVersion": "apiserver.config.k8s.io/v1",
                                                  "kind": "WebhookAdmissionConfiguration",
                                                  "kubeConfigFile": str(kubeconfig)}} for p in plugins]}))
    return config


def token_user(name: str, token: str) -> Obj:
    return {"name": name, "user": {"token": token}}


@pytest.mark.parametrize(("users", "target", "want"), [
    pytest.param(["webhook.example.com:8443"], "webhook.example.com:8443", "webhook.example.com:8443", id="exact"),
    pytest.param(["*.example.com:8443", "*.com:8443"], "webhook.example.com:8443", "*.example.com:8443",
                 id="longest-wildcard-first"),
    pytest.param(["webhook.example.com"], "webhook.example.com:443", "webhook.example.com", id="443-without-port"),
    pytest.param(["*.example.com"], "webhook.example.com:443", "*.example.com", id="443-wildcard-without-port"),
    pytest.param(["webhook.example.com"], "webhook.example.com:8443", None, id="other-port-needs-the-port"),
    pytest.param(["*", "other:443"], "webhook.example.com:443", "*", id="star-default"),
    pytest.param(["svc.ns.svc:443"], "svc.ns.svc:443", "svc.ns.svc:443", id="service"),
])
def test_resolver_lookup_order(users: list[str], target: str, want: str | None) -> None:
    r = AuthenticationInfoResolver({u: auth_info_from_user({"token": u}) for u in users})
    info = r.client_config_for(target)
    assert info == (ANONYMOUS if want is None else auth_info_from_user({"token": want}))


def test_resolver_current_context_then_anonymous(tmp_path: pathlib.Path) -> None:
    cfg = write_config(tmp_path, [token_user("me", "t0")], current_user="me")
    r = load_webhook_admission(cfg, "ValidatingAdmissionWebhook")
    assert r.client_config_for("anything:443").headers == (("Authorization", "Bearer t0"),)
    assert load_webhook_admission(cfg, "MutatingAdmissionWebhook").client_config_for("anything:443") == ANONYMOUS
    assert load_webhook_admission(None, "MutatingAdmissionWebhook").client_config_for("anything:443") == ANONYMOUS


def test_user_fields(tmp_path: pathlib.Path) -> None:
    """restConfigFromKubeconfig: token wins over tokenFile, basic auth, impersonation; no auth-provider."""
    (tmp_path / "tok").write_text("from-file")
    assert auth_info_from_user({"tokenFile": str(tmp_path / "tok")}).headers == (("Authorization", "Bearer from-file"),)
    assert auth_info_from_user({"token": "t", "tokenFile": "/nonexistent"}).headers == (("Authorization", "Bearer t"),)
    basic = base64.b64encode(b"u:p").decode()
    assert auth_info_from_user({"username": "u", "password": "p"}).headers == (("Authorization", f"Basic {basic}"),)
    assert auth_info_from_user({"as": "bob", "as-groups": ["g1", "g2"], "as-user-extra": {"k": ["v"]}}).headers == (
        ("Impersonate-User", "bob"), ("Impersonate-Group", "g1"), ("Impersonate-Group", "g2"),
        ("Impersonate-Extra-k", "v"))
    assert auth_info_from_user({"auth-provider": {"name": "gcp"}}).error == "auth provider not supported"
    with pytest.raises(ValueError):
        auth_info_from_user({"tokenFile": str(tmp_path / "missing")})


@pytest.mark.parametrize(("configuration", "message"), [
    pytest.param({"apiVersion": "apiserver.config.k8s.io/v1", "kind": "WebhookAdmissionConfiguration",
                  "kubeConfigFile": "relative/kubeconfig"},
                 'kubeConfigFile: Invalid value: "relative/kubeconfig": must be an absolute file path', id="relative"),
    pytest.param({"apiVersion": "v1", "kind": "Pod"}, "unexpected type", id="wrong-kind"),
])
def test_load_config_errors(tmp_path: pathlib.Path, configuration: Obj, message: str) -> None:
    cfg = tmp_path / "admission.yaml"
    cfg.write_text(yaml.safe_dump({"apiVersion": "apiserver.config.k8s.io/v1", "kind": "AdmissionConfiguration",
                                   "plugins": [{"name": "ValidatingAdmissionWebhook",
                                                "configuration": configuration}]}))
    with pytest.raises(ValueError, match=message):
        load_webhook_admission(cfg, "ValidatingAdmissionWebhook")


@pytest.fixture
async def server_with(tmp_path: pathlib.Path) -> AsyncIterator[Any]:
    servers: list[APIServer] = []

    async def make(config: pathlib.Path) -> APIServer:
        s = APIServer(new_storage("memory"),
                      options=dataclasses.replace(WITHOUT_CONTROLLER_MANAGER, admission_control_config_file=str(config)))
        await s.bootstrap()
        await s.storage.create(f"/registry/namespaces/{NS}", {
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}, "status": {"phase": "Active"}})
        servers.append(s)
        return s
    yield make
    for s in servers:
        await s.admission.close()
        await s.storage.close()


def validating_config(hooks: WebhookServer, path: str, failure_policy: str = "Fail") -> Obj:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "v"}, "webhooks": [{
                "name": "auth.example.com", "clientConfig": {"url": hooks.url(path), "caBundle": hooks.ca_bundle},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
                "sideEffects": "None", "admissionReviewVersions": ["v1"], "failurePolicy": failure_policy}]}


POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": NS},
       "spec": {"containers": [{"name": "c", "image": "busybox"}]}}


async def test_webhook_client_presents_the_hosts_token(tmp_path: pathlib.Path, hooks: WebhookServer,
                                                       server_with: Any) -> None:
    """A webhook that requires a bearer token is called with the kubeconfig user of its host:port."""
    hooks.token = "s3cret"
    api = await server_with(write_config(tmp_path, [token_user(f"127.0.0.1:{hooks.port}", "s3cret"),
                                                    token_user("*", "wrong")]))
    status, body, _ = await call(api, "POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
                                 validating_config(hooks, "/v"))
    assert status == 201, body
    status, body, _ = await call(api, "POST", PODS, POD)
    assert status == 201, body
    assert len(hooks.reviews["/v"]) == 1 and hooks.refused == []


async def test_webhook_without_credentials_is_refused(tmp_path: pathlib.Path, hooks: WebhookServer,
                                                      server_with: Any) -> None:
    """Without a user for its host the call is anonymous: the webhook's 401 is a failed call,
    and failurePolicy Fail refuses the request with it."""
    hooks.token = "s3cret"
    api = await server_with(write_config(tmp_path, [token_user("elsewhere:443", "s3cret")]))
    status, body, _ = await call(api, "POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
                                 validating_config(hooks, "/v"))
    assert status == 201, body
    status, body, _ = await call(api, "POST", PODS, POD)
    assert status == 500, body
    assert body["message"] == ('Internal error occurred: failed calling webhook "auth.example.com": '
                               "failed to call webhook: Unauthorized")
    assert hooks.refused == [""] and "/v" not in hooks.reviews


def test_client_certificate_contexts(tmp_path: pathlib.Path) -> None:
    """A user's client certificate is loaded into the TLS context (one per caBundle and
    certificate); one that does not load is a client-config error, not a crash."""
    from kubeplane.testing.webhook_server import make_pki

    from kubeplane.apiserver.admission.webhook.client import ClientConfigError, ClientManager

    _, cert, key = make_pki()
    (tmp_path / "c.crt").write_bytes(cert)
    info = auth_info_from_user({"client-certificate": str(tmp_path / "c.crt"),
                                "client-key-data": base64.b64encode(key).decode()})
    assert info.client_cert == (cert, key) and info.headers == ()
    cm = ClientManager(None)  # type: ignore[arg-type]
    ctx = cm.tls_context("", info.client_cert)
    assert cm.tls_context("", info.client_cert) is ctx and cm.tls_context("") is not ctx
    with pytest.raises(ClientConfigError, match="unable to load client certificate"):
        cm.tls_context("", (cert, b"not a key"))
