"""Credentials a webhook client presents, per webhook host, from --admission-control-config-file.

Upstream: the ValidatingAdmissionWebhook / MutatingAdmissionWebhook entries of the
AdmissionConfiguration hold an apiserver.config.k8s.io/v1 WebhookAdmissionConfiguration whose
`kubeConfigFile` (an absolute path) names a kubeconfig (LoadConfig, plugin/webhook/config/
kubeconfig.go); its users are looked up by the webhook's host (defaultAuthenticationInfoResolver.
clientConfig, pkg/util/webhook/authentication.go), in this order:

  1. the exact `host:port` ("webhook.example.com:8443"; a service as `<name>.<namespace>.svc:<port>`)
  2. wildcards of it, longest first ("*.example.com:8443", "*.com:8443")
  3. for port 443, the same two without the port ("webhook.example.com", "*.example.com")
  4. "*", then the current context's user, else anonymous

A user gives a bearer token (`token`, else `tokenFile`'s contents), a client certificate
(`client-certificate[-data]` + `client-key[-data]`), basic auth (`username`/`password`) and
impersonation (`as`, `as-uid`, `as-groups`, `as-user-extra`), as restConfigFromKubeconfig reads
them; an `auth-provider` is refused ("auth provider not supported"). Exec plugins are not run here:
such a user is a failed call (failurePolicy decides).
"""
from __future__ import annotations

import base64
import pathlib
from dataclasses import dataclass, field
from typing import Any

import yaml

Obj = dict[str, Any]

WEBHOOK_PLUGINS = ("ValidatingAdmissionWebhook", "MutatingAdmissionWebhook")
API_VERSION = "apiserver.config.k8s.io/v1"
KIND = "WebhookAdmissionConfiguration"


@dataclass(frozen=True, slots=True)
class AuthInfo:
    """What a webhook request carries: headers (Authorization, Impersonate-*) and a client certificate."""
    headers: tuple[tuple[str, str], ...] = ()
    client_cert: tuple[bytes, bytes] | None = None
    error: str = ""                   # a user that cannot be used: the call fails with it


ANONYMOUS = AuthInfo()


def read_document(path: pathlib.Path) -> Obj:
    """A YAML or JSON document as a dict; every failure a ValueError naming the file."""
    try:
        doc = yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise ValueError(f"unable to read admission control configuration from {str(path)!r}: {e}") from None
    if doc is not None and not isinstance(doc, dict):
        raise ValueError(f"unable to read admission control configuration from {str(path)!r}: not an object")
    return doc or {}


def _read_bytes(user: Obj, key: str) -> bytes | None:
    if user.get(f"{key}-data"):
        return base64.b64decode(str(user[f"{key}-data"]))
    return pathlib.Path(str(user[key])).read_bytes() if user.get(key) else None


def auth_info_from_user(user: Obj) -> AuthInfo:
    """Upstream: restConfigFromKubeconfig. Files are read now (at start-up): a missing one is a
    ValueError naming it."""
    if user.get("auth-provider"):
        return AuthInfo(error="auth provider not supported")
    if user.get("exec"):
        return AuthInfo(error="exec credential plugins are not supported by kubeplane")
    headers: list[tuple[str, str]] = []
    try:
        token = str(user.get("token") or "")
        if not token and user.get("tokenFile"):
            token = pathlib.Path(str(user["tokenFile"])).read_text()
        cert, key = _read_bytes(user, "client-certificate"), _read_bytes(user, "client-key")
    except (OSError, ValueError) as e:
        raise ValueError(f"webhook admission kubeconfig: {e}") from None
    if token:
        headers.append(("Authorization", f"Bearer {token}"))
    elif user.get("username") or user.get("password"):
        basic = base64.b64encode(f"{user.get('username') or ''}:{user.get('password') or ''}".encode()).decode()
        headers.append(("Authorization", f"Basic {basic}"))
    if user.get("as"):
        headers.append(("Impersonate-User", str(user["as"])))
        if user.get("as-uid"):
            headers.append(("Impersonate-Uid", str(user["as-uid"])))
        headers.extend(("Impersonate-Group", str(g)) for g in user.get("as-groups") or ())
        for k, values in (user.get("as-user-extra") or {}).items():
            headers.extend((f"Impersonate-Extra-{k}", str(v)) for v in values or ())
    return AuthInfo(tuple(headers), (cert, key) if cert and key else None)


@dataclass
class AuthenticationInfoResolver:
    """Upstream: defaultAuthenticationInfoResolver — kubeconfig users by webhook host."""
    users: dict[str, AuthInfo] = field(default_factory=dict)
    current: AuthInfo | None = None           # the current context's user

    @classmethod
    def from_kubeconfig(cls, path: str | pathlib.Path) -> AuthenticationInfoResolver:
        cfg = read_document(pathlib.Path(path))
        users = {str(u.get("name")): auth_info_from_user(u.get("user") or {})
                 for u in cfg.get("users") or () if isinstance(u, dict)}
        current = None
        ctx_name = cfg.get("current-context")
        for c in cfg.get("contexts") or ():
            if isinstance(c, dict) and ctx_name and c.get("name") == ctx_name:
                current = users.get(str((c.get("context") or {}).get("user") or ""))
        return cls(users, current)

    def client_config_for(self, host_port: str) -> AuthInfo:
        """Upstream: ClientConfigFor / clientConfig (the lookup order in the module docstring)."""
        found = self._exact_or_wildcard(host_port)
        if found is None:
            host, _, port = host_port.rpartition(":")
            if port == "443":
                found = self._exact_or_wildcard(host)
        if found is None:
            found = self.users.get("*", self.current)
        return found or ANONYMOUS

    def client_config_for_service(self, name: str, namespace: str, port: int) -> AuthInfo:
        return self.client_config_for(f"{name}.{namespace}.svc:{port}")

    def _exact_or_wildcard(self, target: str) -> AuthInfo | None:
        if target in self.users:
            return self.users[target]
        steps = target.split(".")
        for i in range(1, len(steps)):
            nick = "*." + ".".join(steps[i:])
            if nick in self.users:
                return self.users[nick]
        return None


def load_webhook_admission(config_file: str | pathlib.Path | None, plugin: str) -> AuthenticationInfoResolver:
    """The resolver of plugin's entry in an AdmissionConfiguration file (none: anonymous
    everywhere). Upstream: LoadConfig — a ValueError with its messages for a bad entry."""
    resolver = AuthenticationInfoResolver()
    if not config_file:
        return resolver
    path = pathlib.Path(config_file)
    for entry in read_document(path).get("plugins") or ():
        if not isinstance(entry, dict) or entry.get("name") != plugin:
            continue
        cfg = entry.get("configuration")
        if not isinstance(cfg, dict) and entry.get("path"):
            p = pathlib.Path(str(entry["path"]))
            cfg = read_document(p if p.is_absolute() else path.parent / p)
        if not isinstance(cfg, dict):
            continue
        if cfg.get("apiVersion") != API_VERSION or cfg.get("kind") != KIND:
            raise ValueError(f"{plugin}: unexpected type: expected {API_VERSION}, Kind={KIND}, "
                             f"got {cfg.get('apiVersion')}, Kind={cfg.get('kind')}")
        kubeconfig = str(cfg.get("kubeConfigFile") or "")
        if kubeconfig and not pathlib.PurePosixPath(kubeconfig).is_absolute():
            raise ValueError(f'kubeConfigFile: Invalid value: "{kubeconfig}": must be an absolute file path')
        if kubeconfig:
            resolver = AuthenticationInfoResolver.from_kubeconfig(kubeconfig)
    return resolver
