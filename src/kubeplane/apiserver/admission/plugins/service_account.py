"""ServiceAccount: every pod runs as a service account that exists, and gets its API credentials
as a projected volume mounted in each container.

On pod create (admit): an empty serviceAccountName becomes "default"; the service account must
exist (the "default" one is looked up ten times, 100-200 ms apart, because the service account
controller creates it just after its namespace); unless the pod or the service account opts
out (automountServiceAccountToken: false), a `kube-api-access-<5 random>` projected volume
(a bound token, the cluster CA from the kube-root-ca.crt ConfigMap, the namespace) is added and
mounted read-only at /var/run/secrets/kubernetes.io/serviceaccount in every init container and
container that has nothing mounted there; a pod without imagePullSecrets gets the service
account's. Mirror pods (static pods the kubelet reflects) are never changed, and may reference
neither a service account nor secrets. A service account annotated
`kubernetes.io/enforce-mountable-secrets: "true"` limits the secrets a pod (or a later
ephemeral container) may use to the ones it lists.

The look-ups read an index of the service accounts kept current from the store's watch
(plugins/_index.py), as upstream's plugin reads its informer's lister.

Upstream: plugin/pkg/admission/serviceaccount/admission.go (Plugin.Admit, Validate,
getServiceAccount, limitSecretReferences, limitEphemeralContainerSecretReferences,
mountServiceAccountToken, TokenVolumeSource).
"""
from __future__ import annotations

import asyncio
import random
from typing import Any

from ....api import errors
from ....api.pod_visitors import pod_secret_names
from ....api.resources import ResourceInfo, lookup
from ...objects import generate_name
from ..chain import register
from ..interface import CREATE, UPDATE, Attributes, Operation, Plugin, forbidden
from ._index import PrefixIndex

Obj = dict[str, Any]

DEFAULT_SERVICE_ACCOUNT_NAME = "default"
ENFORCE_MOUNTABLE_SECRETS_ANNOTATION = "kubernetes.io/enforce-mountable-secrets"
SERVICE_ACCOUNT_VOLUME_NAME = "kube-api-access"
DEFAULT_API_TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
MIRROR_POD_ANNOTATION_KEY = "kubernetes.io/config.mirror"
# serviceaccount.WarnOnlyBoundTokenExpirationSeconds: an hour and 7 s, so the API server can
# tell tokens minted for this volume (and warn when a stale one is used) from others.
WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS = 3607
_VOLUME_PREFIX = SERVICE_ACCOUNT_VOLUME_NAME + "-"
PROJECTED_VOLUME_SOURCE_DEFAULT_MODE = 0o644      # corev1.ProjectedVolumeSourceDefaultMode (420)
# getServiceAccount: the default service account is retried, as its controller may be about to
# create it (a pod created right after its namespace).
DEFAULT_SA_ATTEMPTS = 10

_sa = lookup("", "v1", "serviceaccounts")
assert _sa is not None
_SERVICE_ACCOUNTS: ResourceInfo = _sa
_SA_PREFIX = _SERVICE_ACCOUNTS.prefix


def token_volume_source() -> Obj:
    """The projected volume of a pod's API credentials. Upstream: TokenVolumeSource"""
    return {"defaultMode": PROJECTED_VOLUME_SOURCE_DEFAULT_MODE, "sources": [
        {"serviceAccountToken": {"expirationSeconds": WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
                                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
    ]}


# One instance shared by every admitted pod: stored objects are never changed in place (the
# storage contract: a write hands over a new object), so the pods may share it. Building it per
# pod cost ~1.5 µs, and its 13 dicts and lists per stored pod were a quarter of what the
# collector traverses for each pod.
TOKEN_VOLUME_SOURCE = token_volume_source()


@register
class ServiceAccount(Plugin):
    NAME = "ServiceAccount"
    OPERATIONS = frozenset({Operation.CREATE, Operation.UPDATE})
    RESOURCES = frozenset({("", "pods")})
    SUBRESOURCES = frozenset({"", "ephemeralcontainers"})
    MUTATING = True
    VALIDATING = True
    # LimitSecretReferences: upstream leaves it off (the annotation turns it on per account).
    limit_secret_references = False
    mount_service_account_token = True
    # Test seams: the pause between look-ups of a missing default service account, and the
    # volume name generator.
    retry_interval: tuple[float, float] = (0.1, 0.2)
    generate_name = staticmethod(generate_name)
    # The service accounts, kept current from the store's watch (built on first use).
    index: PrefixIndex | None = None

    # admit_now and validate_now run on every pod create: the helpers' tests are written out
    # where they would cost a call each (~1,000 instructions; admit + validate were ~50k): the
    # look-up (the index's get_now of the account's key) and limit_secrets' test of the flag and
    # the account's annotations.

    def admit_now(self, a: Attributes) -> bool:
        pod = a.obj
        if (a.operation is not CREATE or a.resource != "pods" or a.group or a.subresource not in _SUBRESOURCES
                or not isinstance(pod, dict) or pod.get("kind", "Pod") != "Pod"):     # _should_ignore
            return True
        meta = pod.get("metadata")
        if meta and (annotations := meta.get("annotations")) and MIRROR_POD_ANNOTATION_KEY in annotations:
            return self.validate_now(a)
        spec = pod.get("spec") or {}
        name = spec.get("serviceAccountName") or spec.get("serviceAccount") or DEFAULT_SERVICE_ACCOUNT_NAME
        index = self.index                 # _service_account_now
        sa = index.get_now(a.namespace, f"{_SA_PREFIX}{a.namespace}/{name}") if index is not None else None
        if type(sa) is not dict or index is None:           # (index is set when sa was found in it)
            return False
        a.service_account = (name, sa, index.generation)
        self._admit(a, name, sa)
        return True

    async def admit(self, a: Attributes) -> None:
        """Upstream: Plugin.Admit"""
        if a.operation is not CREATE or _should_ignore(a):
            return
        assert a.obj is not None
        if _is_mirror_pod(a.obj):
            return await self.validate(a)
        name = _service_account_name(a.obj)
        self._admit(a, name, await self.service_account(a, name))

    def _admit(self, a: Attributes, name: str, sa: Obj) -> None:
        spec = a.obj.setdefault("spec", {})  # type: ignore[union-attr]
        # v1's deprecated spec.serviceAccount mirrors the name on the way out (upstream: the
        # v1 PodSpec conversion).
        spec["serviceAccountName"] = spec["serviceAccount"] = name
        # should_automount, written out
        automount = spec.get("automountServiceAccountToken")
        if automount is None:
            automount = sa.get("automountServiceAccountToken")
        if self.mount_service_account_token and (automount is None or automount):
            self.mount_service_account_token_volume(spec)
        if not spec.get("imagePullSecrets") and sa.get("imagePullSecrets"):
            spec["imagePullSecrets"] = [{"name": s.get("name", "")} for s in sa["imagePullSecrets"]]
        # Upstream's Admit ends with Validate; the account was just read (same name).
        if self.limit_secret_references or (sa.get("metadata") or {}).get("annotations"):
            self.limit_secrets(a, sa, spec)

    def validate_now(self, a: Attributes) -> bool:
        if a.operation is not CREATE:      # only an ephemeral containers' update is looked at
            return _should_ignore(a) or a.subresource != "ephemeralcontainers"
        pod = a.obj
        if (a.resource != "pods" or a.group or a.subresource not in _SUBRESOURCES
                or not isinstance(pod, dict) or pod.get("kind", "Pod") != "Pod"):     # _should_ignore
            return True
        spec = pod.get("spec") or {}
        meta = pod.get("metadata")
        if meta and (annotations := meta.get("annotations")) and MIRROR_POD_ANNOTATION_KEY in annotations:
            validate_mirror_pod(a, spec)
            return True
        name = spec.get("serviceAccountName") or ""
        index = self.index                 # _service_account_now
        found = a.service_account
        if (found is not None and found[0] == name and index is not None and found[2] == index.generation
                and (waiter := index._waiter) is not None and not waiter.done()):
            sa = found[1]                  # what get_now would answer: nothing changed in the index since
        else:
            looked_up = index.get_now(a.namespace, f"{_SA_PREFIX}{a.namespace}/{name}") \
                if name and index is not None else None
            if type(looked_up) is not dict:
                return False
            sa = looked_up
        if self.limit_secret_references or (sa.get("metadata") or {}).get("annotations"):
            self.limit_secrets(a, sa, spec)
        return True

    async def validate(self, a: Attributes) -> None:
        """Upstream: Plugin.Validate"""
        if _should_ignore(a):
            return
        pod = a.obj
        assert pod is not None
        spec = pod.get("spec") or {}
        if a.operation is UPDATE and a.subresource == "ephemeralcontainers":
            return await self.limit_ephemeral_container_secret_references(a, pod)
        if a.operation is not CREATE:
            return
        if _is_mirror_pod(pod):
            return validate_mirror_pod(a, spec)
        name = spec.get("serviceAccountName") or ""
        if not name:
            raise forbidden(a, f"no service account specified for pod {a.namespace}/{a.name}")
        self.limit_secrets(a, await self.service_account(a, name), spec)

    def limit_secrets(self, a: Attributes, sa: Obj, spec: Obj) -> None:
        """Refuse secrets the account does not list, when it enforces that."""
        if self.enforce_mountable_secrets(sa):
            if (msg := limit_secret_references(sa, spec)) is not None:
                raise forbidden(a, msg)

    async def service_account(self, a: Attributes, name: str) -> Obj:
        """The pod's service account, or a 403 naming why not. Upstream: getServiceAccount
        (from the informer's lister, then live reads while the default one is missing)."""
        if self.index is None:
            self.index = PrefixIndex(self.api.storage, _SERVICE_ACCOUNTS.prefix)
        key = _SERVICE_ACCOUNTS.key(a.namespace, name)
        sa = await self.index.get(a.namespace, key)
        if sa is not None:
            return sa
        attempts = DEFAULT_SA_ATTEMPTS if name == DEFAULT_SERVICE_ACCOUNT_NAME else 1
        pause = random.uniform(*self.retry_interval)
        for _ in range(attempts - 1):
            await asyncio.sleep(pause)
            sa = await self.index.get(a.namespace, key)
            if sa is not None:
                return sa
        err = errors.NotFound("", "serviceaccount", name)
        raise forbidden(a, f"error looking up service account {a.namespace}/{name}: {err.message}")

    def enforce_mountable_secrets(self, sa: Obj) -> bool:
        """Upstream: enforceMountableSecrets (strconv.ParseBool of the annotation)."""
        if self.limit_secret_references:
            return True
        value = ((sa.get("metadata") or {}).get("annotations") or {}).get(ENFORCE_MOUNTABLE_SECRETS_ANNOTATION)
        return value in ("1", "t", "T", "true", "TRUE", "True")

    def mount_service_account_token_volume(self, spec: Obj) -> None:
        """Mount the token volume (added unless the pod has one already) in every init
        container and container with nothing at the token path. Upstream: mountServiceAccountToken"""
        volumes = spec.get("volumes") or []
        volume_name = ""
        for v in volumes:
            name = v.get("name")
            if type(name) is str and name.startswith(_VOLUME_PREFIX):
                volume_name = name
                break
        has_volume = bool(volume_name)
        if not has_volume:
            volume_name = self.generate_name(_VOLUME_PREFIX)
        init = spec.get("initContainers")
        needs_volume = bool(init) and _mount(init, volume_name)
        needs_volume = _mount(spec.get("containers"), volume_name) or needs_volume
        if not has_volume and needs_volume:
            volumes.append({"name": volume_name, "projected": TOKEN_VOLUME_SOURCE})
            spec["volumes"] = volumes

    async def limit_ephemeral_container_secret_references(self, a: Attributes, pod: Obj) -> None:
        """Upstream: limitEphemeralContainerSecretReferences"""
        spec = pod.get("spec") or {}
        name = spec.get("serviceAccountName") or ""
        if not name:
            raise forbidden(a, f"no service account specified for pod {a.namespace}/{a.name}")
        sa = await self.service_account(a, name)
        if not self.enforce_mountable_secrets(sa):
            return
        mountable = {s.get("name") for s in sa.get("secrets") or ()}
        for c in spec.get("ephemeralContainers") or ():
            if (msg := _container_secret_refs(c, mountable, "ephemeral container", sa)) is not None:
                raise forbidden(a, msg)


def _mount(containers: list[Obj] | None, volume_name: str) -> bool:
    """Mount volume_name at the token path in each container with nothing there; whether any
    was."""
    mounted = False
    for c in containers or ():
        mounts = c.get("volumeMounts")
        if mounts:
            if any(m.get("mountPath") == DEFAULT_API_TOKEN_MOUNT_PATH for m in mounts):
                continue
            mounts.append({"name": volume_name, "readOnly": True, "mountPath": DEFAULT_API_TOKEN_MOUNT_PATH})
        else:
            c["volumeMounts"] = [{"name": volume_name, "readOnly": True, "mountPath": DEFAULT_API_TOKEN_MOUNT_PATH}]
        mounted = True
    return mounted


def _is_mirror_pod(pod: Obj) -> bool:
    return MIRROR_POD_ANNOTATION_KEY in ((pod.get("metadata") or {}).get("annotations") or {})


def _service_account_name(pod: Obj) -> str:
    """v1's deprecated spec.serviceAccount stands in for an empty serviceAccountName."""
    spec = pod.get("spec") or {}
    return spec.get("serviceAccountName") or spec.get("serviceAccount") or DEFAULT_SERVICE_ACCOUNT_NAME


_SUBRESOURCES = ("", "ephemeralcontainers")


def _should_ignore(a: Attributes) -> bool:
    """Only pods (and their ephemeralcontainers) are this plugin's. Upstream: shouldIgnore
    (written out in admit_now and validate_now)"""
    return (a.resource != "pods" or a.group != "" or a.subresource not in _SUBRESOURCES
            or not isinstance(a.obj, dict) or a.obj.get("kind", "Pod") != "Pod")


def should_automount(sa: Obj, spec: Obj) -> bool:
    """The pod's choice, else the service account's, else yes. Upstream: shouldAutomount"""
    if spec.get("automountServiceAccountToken") is not None:
        return bool(spec["automountServiceAccountToken"])
    if sa.get("automountServiceAccountToken") is not None:
        return bool(sa["automountServiceAccountToken"])
    return True


def validate_mirror_pod(a: Attributes, spec: Obj) -> None:
    """A mirror pod may reference no service account, no secret, no token projection."""
    if spec.get("serviceAccountName"):
        raise forbidden(a, "a mirror pod may not reference service accounts")
    if next(pod_secret_names(spec), None) is not None:
        raise forbidden(a, "a mirror pod may not reference secrets")
    for v in spec.get("volumes") or ():
        for source in (v.get("projected") or {}).get("sources") or ():
            if source.get("serviceAccountToken") is not None:
                raise forbidden(a, "a mirror pod may not use ServiceAccountToken volume projections")


def limit_secret_references(sa: Obj, spec: Obj) -> str | None:
    """Why the pod may not use a secret its service account does not list, or None.
    Upstream: limitSecretReferences"""
    sa_name = (sa.get("metadata") or {}).get("name", "")
    mountable = {s.get("name") for s in sa.get("secrets") or ()}
    for v in spec.get("volumes") or ():
        secret = v.get("secret")
        if secret is not None and secret.get("secretName", "") not in mountable:
            return (f'volume with secret.secretName="{secret.get("secretName", "")}" is not allowed because '
                    f"service account {sa_name} does not reference that secret")
    for field, what in (("initContainers", "init container"), ("containers", "container")):
        for c in spec.get(field) or ():
            if (msg := _container_secret_refs(c, mountable, what, sa)) is not None:
                return msg
    pull_secrets = {s.get("name") for s in sa.get("imagePullSecrets") or ()}
    for i, ref in enumerate(spec.get("imagePullSecrets") or ()):
        if ref.get("name", "") not in pull_secrets:
            return (f'imagePullSecrets[{i}].name="{ref.get("name", "")}" is not allowed because service account '
                    f"{sa_name} does not reference that imagePullSecret")
    return None


def _container_secret_refs(c: Obj, mountable: set[Any], what: str, sa: Obj) -> str | None:
    sa_name = (sa.get("metadata") or {}).get("name", "")
    for env in c.get("env") or ():
        ref = (env.get("valueFrom") or {}).get("secretKeyRef")
        if ref is not None and ref.get("name", "") not in mountable:
            return (f'{what} {c.get("name", "")} with envVar {env.get("name", "")} referencing '
                    f'secret.secretName="{ref.get("name", "")}" is not allowed because service account '
                    f"{sa_name} does not reference that secret")
    for env_from in c.get("envFrom") or ():
        ref = env_from.get("secretRef")
        if ref is not None and ref.get("name", "") not in mountable:
            return (f'{what} {c.get("name", "")} with envFrom referencing secret.secretName="{ref.get("name", "")}" '
                    f"is not allowed because service account {sa_name} does not reference that secret")
    return None
