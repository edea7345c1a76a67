"""What the files of a configMap, secret, downwardAPI or projected volume hold: payloads.

    payload = await collect(pod, volume, source)     # {"app.conf": FileProjection(b"...", 0o644)}
    AtomicWriter(dir).write(payload)

`source` fetches what a payload is made of (VolumeSource: ConfigMaps, Secrets, service account
tokens); a missing object is None. Errors are VolumeError, whose message is what upstream's
SetUp returns (the FailedMount event reads `MountVolume.SetUp failed for volume "x" : <it>`);
several errors of one projected or downwardAPI volume are joined as upstream's
utilerrors.NewAggregate joins them (`[a, b]`).

Upstream: configmap.MakePayload (pkg/volume/configmap/configmap.go), secret.MakePayload
(pkg/volume/secret/secret.go), downwardapi.CollectData (pkg/volume/downwardapi),
projectedVolumeMounter.collectData (pkg/volume/projected/projected.go), fieldpath.FormatMap /
ExtractFieldPathAsString and resource.ExtractContainerResourceValue (pkg/api/v1/resource).
"""
from __future__ import annotations

import base64
import math
import re
from dataclasses import dataclass
from typing import Protocol

from ...api import quantity
from ...api.types import core_v1
from .atomic_writer import FileProjection

DEFAULT_MODE = 0o644                      # corev1.ConfigMapVolumeSourceDefaultMode & co. (420)
DEFAULT_TOKEN_EXPIRATION_SECONDS = 3600   # TokenRequestSpec's default
NODE_ALLOCATABLE = {"cpu": "4", "memory": "16Gi", "ephemeral-storage": "100Gi"}   # NodeOptions' defaults

_LABEL_PATH = re.compile(r"^metadata\.(labels|annotations)\['(.*)'\]$")


class VolumeError(Exception):
    """A volume cannot be set up; str(err) is upstream's message for it."""


@dataclass(frozen=True)
class Token:
    """A TokenRequest's answer: the token and when it expires (epoch seconds)."""

    token: str
    expiration: float
    expiration_seconds: int


class VolumeSource(Protocol):
    """What payloads are made of, fetched from the API server (as the pod's node)."""

    async def configmap(self, namespace: str, name: str) -> core_v1.ConfigMap | None:
        """The ConfigMap, or None if it does not exist."""

    async def secret(self, namespace: str, name: str) -> core_v1.Secret | None:
        """The Secret, or None if it does not exist."""

    async def token(self, pod: core_v1.Pod, audience: str, expiration_seconds: int) -> Token:
        """A token of the pod's service account bound to the pod (TokenRequest)."""


def aggregate(errs: list[str]) -> str:
    """Upstream: utilerrors.NewAggregate(errs).Error()"""
    return errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"


def configmap_payload(items: list[core_v1.KeyToPath] | None, cm: core_v1.ConfigMap, default_mode: int,
                      optional: bool) -> dict[str, FileProjection]:
    """Every key as a file, or only the listed ones at their paths. Upstream: configmap.MakePayload"""
    data = {k: v.encode() for k, v in (cm.data or {}).items()}
    data.update({k: base64.b64decode(v) for k, v in (cm.binary_data or {}).items()})
    return _key_payload(items, data, default_mode, optional, "configmap references non-existent config key")


def secret_payload(items: list[core_v1.KeyToPath] | None, secret: core_v1.Secret, default_mode: int,
                   optional: bool) -> dict[str, FileProjection]:
    """Upstream: secret.MakePayload"""
    data = {k: base64.b64decode(v) for k, v in (secret.data or {}).items()}
    return _key_payload(items, data, default_mode, optional, "references non-existent secret key")


def _key_payload(items: list[core_v1.KeyToPath] | None, data: dict[str, bytes], default_mode: int,
                 optional: bool, missing: str) -> dict[str, FileProjection]:
    if not items:
        return {k: FileProjection(v, default_mode) for k, v in data.items()}
    payload = {}
    for ktp in items:
        if ktp.key not in data:
            if optional:
                continue
            raise VolumeError(f"{missing}: {ktp.key}")
        mode = ktp.mode if ktp.mode is not None else default_mode
        payload[ktp.path or ""] = FileProjection(data[ktp.key or ""], mode)
    return payload


def format_map(m: dict[str, str] | None) -> str:
    """key="value" lines in key order, values quoted as Go's %q. Upstream: fieldpath.FormatMap"""
    return "\n".join(f"{k}={_go_quote(v)}" for k, v in sorted((m or {}).items()))


def _go_quote(s: str) -> str:
    out = ['"']
    for ch in s:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def field_path_value(pod: core_v1.Pod, path: str) -> str:
    """A downward API volume's fieldRef. Upstream: fieldpath.ExtractFieldPathAsString"""
    m = pod.metadata
    if path == "metadata.annotations":
        return format_map(m.annotations)
    if path == "metadata.labels":
        return format_map(m.labels)
    if path in ("metadata.name", "metadata.namespace", "metadata.uid"):
        return getattr(m, path.split(".")[1]) or ""
    if (lm := _LABEL_PATH.match(path)) is not None:
        table = (m.labels if lm.group(1) == "labels" else m.annotations) or {}
        return table.get(lm.group(2), "")
    raise VolumeError(f"unsupported fieldPath: {path}")


def resource_value(pod: core_v1.Pod, sel: core_v1.ResourceFieldSelector, container: str,
                   allocatable: dict[str, str] = NODE_ALLOCATABLE) -> str:
    """A resourceFieldRef: the container's limit (the node's allocatable when it has none) or
    request, divided by the divisor and rounded up.

    Example: limits.cpu "250m" with divisor "1m" -> "250"; with the default divisor "1" -> "1".
    Upstream: ExtractContainerResourceValue after MergeContainerResourceLimits
    """
    name = sel.container_name or container
    c = next((c for c in (pod.spec.containers or []) + (pod.spec.init_containers or []) if c.name == name), None)
    if c is None:
        raise VolumeError(f"container {name} not found")
    kind, _, res = (sel.resource or "").partition(".")
    resources = c.resources or core_v1.ResourceRequirements()
    table = dict((resources.limits if kind == "limits" else resources.requests) or {})
    if kind == "limits" and res not in table and res in allocatable:
        table[res] = allocatable[res]
    if kind not in ("limits", "requests") or res not in ("cpu", "memory", "ephemeral-storage"):
        raise VolumeError(f"unsupported container resource : {sel.resource}")
    divisor = quantity.parse(sel.divisor if sel.divisor not in (None, "", 0) else "1")
    if res == "cpu":
        value = quantity.parse(table.get(res, 0)).milli_value() / max(1, divisor.milli_value())
    else:
        value = quantity.parse(table.get(res, 0)).int_value() / max(1, divisor.int_value())
    return str(math.ceil(value))


def downward_api_payload(pod: core_v1.Pod, items: list[core_v1.DownwardAPIVolumeFile] | None, default_mode: int,
                         container: str = "") -> dict[str, FileProjection]:
    """Upstream: downwardapi.CollectData"""
    payload, errs = {}, []
    for item in items or ():
        mode = item.mode if item.mode is not None else default_mode
        try:
            if item.field_ref is not None:
                text = field_path_value(pod, item.field_ref.field_path or "")
            elif item.resource_field_ref is not None:
                text = resource_value(pod, item.resource_field_ref, container)
            else:
                continue
        except VolumeError as err:
            errs.append(str(err))
            continue
        payload[item.path or ""] = FileProjection(text.encode(), mode)
    if errs:
        raise VolumeError(aggregate(errs))
    return payload


async def collect(pod: core_v1.Pod, volume: core_v1.Volume, source: VolumeSource,
                  tokens: dict[str, Token] | None = None, now: float | None = None) -> dict[str, FileProjection]:
    """The payload of one configMap, secret, downwardAPI or projected volume of pod.

    tokens: the projected tokens of this volume by path, filled in here; one not yet due for
    renewal at `now` is used again (the kubelet's token manager caches them: a ConfigMap update
    rewriting the volume asks for no new token). The caller rewrites the volume when one is due.
    """
    ns = pod.metadata.namespace or "default"
    if (cm := volume.config_map) is not None:
        return await _configmap_files(source, ns, cm.name, cm.items, _mode(cm.default_mode), bool(cm.optional))
    if (sv := volume.secret) is not None:
        return await _secret_files(source, ns, sv.secret_name, sv.items, _mode(sv.default_mode), bool(sv.optional))
    if (dv := volume.downward_api) is not None:
        return downward_api_payload(pod, dv.items, _mode(dv.default_mode))
    if (pv := volume.projected) is not None:
        return await projected_payload(pod, pv, source, tokens if tokens is not None else {}, now)
    raise VolumeError(f"volume {volume.name} has no projected content")


async def projected_payload(pod: core_v1.Pod, pv: core_v1.ProjectedVolumeSource, source: VolumeSource,
                            tokens: dict[str, Token], now: float | None = None) -> dict[str, FileProjection]:
    """Every source's files in one payload (later sources win a path). Upstream: collectData"""
    ns, mode = pod.metadata.namespace or "default", _mode(pv.default_mode)
    payload: dict[str, FileProjection] = {}
    errs: list[str] = []
    for src in pv.sources or ():
        try:
            payload.update(await _projection(pod, ns, src, mode, source, tokens, now))
        except VolumeError as err:
            errs.append(str(err))
    if errs:
        raise VolumeError(aggregate(errs))
    return payload


async def _projection(pod: core_v1.Pod, ns: str, src: core_v1.VolumeProjection, mode: int, source: VolumeSource,
                      tokens: dict[str, Token], now: float | None) -> dict[str, FileProjection]:
    if (cm := src.config_map) is not None:
        return await _configmap_files(source, ns, cm.name, cm.items, mode, bool(cm.optional))
    if (sp := src.secret) is not None:
        return await _secret_files(source, ns, sp.name, sp.items, mode, bool(sp.optional))
    if (dp := src.downward_api) is not None:
        return downward_api_payload(pod, dp.items, mode)
    if (tp := src.service_account_token) is not None:
        path = tp.path or ""
        tok = tokens.get(path)
        if tok is None or now is None or requires_refresh(tok, now):
            tok = await source.token(pod, tp.audience or "", tp.expiration_seconds or DEFAULT_TOKEN_EXPIRATION_SECONDS)
            tokens[path] = tok
        return {path: FileProjection(tok.token.encode(), mode)}
    return {}                              # clusterTrustBundle, podCertificate: not served here


async def _configmap_files(source: VolumeSource, ns: str, name: str | None, items: list[core_v1.KeyToPath] | None,
                           mode: int, optional: bool) -> dict[str, FileProjection]:
    """The files of a configMap volume or projection: a missing ConfigMap is an error unless
    optional (then it has no files). Upstream: configMapVolumeMounter.SetUpAt, collectData's
    configMap case."""
    obj = await source.configmap(ns, name or "")
    if obj is None:
        if not optional:
            raise VolumeError(f'configmap "{name}" not found')
        obj = core_v1.ConfigMap()
    return configmap_payload(items, obj, mode, optional)


async def _secret_files(source: VolumeSource, ns: str, name: str | None, items: list[core_v1.KeyToPath] | None,
                        mode: int, optional: bool) -> dict[str, FileProjection]:
    """The files of a secret volume or projection, as _configmap_files. Upstream:
    secretVolumeMounter.SetUpAt, collectData's secret case."""
    sec = await source.secret(ns, name or "")
    if sec is None:
        if not optional:
            raise VolumeError(f'secret "{name}" not found')
        sec = core_v1.Secret()
    return secret_payload(items, sec, mode, optional)


def requires_refresh(tok: Token, now: float) -> bool:
    """Whether a projected token is due for renewal: past 80 % of its lifetime (the kubelet's
    token manager renews within the last 20 % of the TTL, or after 24 h).

    Example: a 3607 s token minted at 0 is renewed from 2885.6 s on.
    Upstream: Manager.requiresRefresh (pkg/kubelet/token/token_manager.go), without the jitter.
    """
    return now >= refresh_at(tok)


def refresh_at(tok: Token) -> float:
    issued = tok.expiration - tok.expiration_seconds
    return min(tok.expiration - tok.expiration_seconds * 0.2, issued + 24 * 3600)


def _mode(m: int | None) -> int:
    return DEFAULT_MODE if m is None else m


def referenced_objects(volume: core_v1.Volume) -> list[tuple[str, str]]:
    """(kind, name) of every ConfigMap and Secret the volume projects, for change watches."""
    out: list[tuple[str, str]] = []
    if volume.config_map is not None:
        out.append(("ConfigMap", volume.config_map.name or ""))
    if volume.secret is not None:
        out.append(("Secret", volume.secret.secret_name or ""))
    for src in (volume.projected.sources or []) if volume.projected is not None else []:
        if src.config_map is not None:
            out.append(("ConfigMap", src.config_map.name or ""))
        if src.secret is not None:
            out.append(("Secret", src.secret.name or ""))
    return out


def is_projected(volume: core_v1.Volume) -> bool:
    """Whether the volume's files come from an AtomicWriter payload (and follow updates)."""
    return any(getattr(volume, k) is not None for k in ("config_map", "secret", "downward_api", "projected"))
