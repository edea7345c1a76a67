"""A container's environment and argv, composed as the kubelet composes them.

    env = await make_environment(pod, container, lookup=fetch, base=host_env(pod))
    argv = command_argv(container, env)      # command + args with $(VAR) expanded

Upstream: makeEnvironmentVariables (pkg/kubelet/kubelet_pods.go), podFieldSelectorRuntimeValue
and third_party/forked/golang/expansion (the $(VAR) syntax).
"""
from __future__ import annotations

import base64
import os
import re
from typing import Awaitable, Callable

from ....api.types import core_v1

HOST_IP = "127.0.0.1"           # every process pod shares the host's loopback network
POD_IP = HOST_IP

# (kind, namespace, name) -> the object's string data, or None if it does not exist.
Lookup = Callable[[str, str, str], Awaitable["dict[str, str] | None"]]

# What a process inherits from the kubelet: enough to find programs and decode text.
INHERITED = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR")

_ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")
_LABEL_PATH = re.compile(r"^metadata\.(labels|annotations)\['(.*)'\]$")


class ConfigError(Exception):
    """The container cannot be created as specified (CreateContainerConfigError)."""


def expand(s: str, mapping: dict[str, str]) -> str:
    """Replace $(VAR) with mapping's value; `$$` escapes a `$`; unknown references stay as written.

    Example: expand("$(A)-$$(A)-$(B)", {"A": "x"}) == "x-$(A)-$(B)".
    Upstream: expansion.Expand
    """
    out: list[str] = []
    i, n = 0, len(s)
    while i < n:
        if s[i] != "$" or i + 1 >= n:
            out.append(s[i])
            i += 1
            continue
        nxt = s[i + 1]
        if nxt == "$":
            out.append("$")
            i += 2
        elif nxt == "(" and (j := s.find(")", i + 2)) != -1:
            name = s[i + 2:j]
            out.append(mapping[name] if name in mapping else s[i:j + 1])
            i = j + 1
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


def host_env(pod: core_v1.Pod) -> dict[str, str]:
    """The environment every container starts from (an image would set its own; we have none)."""
    from ...network.hosts import pod_hostname_and_domain
    env = {k: os.environ[k] for k in INHERITED if k in os.environ}
    env["HOSTNAME"] = pod_hostname_and_domain(pod, "")[0]     # spec.hostname, else the pod's name (63 at most)
    return env


def field_value(pod: core_v1.Pod, path: str, pod_ip: str = POD_IP) -> str:
    """Upstream: podFieldSelectorRuntimeValue + fieldpath.ExtractFieldPathAsString (pod_ip: the
    sandbox's, which the kubelet passes in since the pod's status may not carry it yet)."""
    m, spec = pod.metadata, pod.spec or core_v1.PodSpec()
    simple = {"metadata.name": m.name, "metadata.namespace": m.namespace, "metadata.uid": m.uid,
              "spec.nodeName": spec.node_name, "spec.serviceAccountName": spec.service_account_name,
              "status.hostIP": HOST_IP, "status.hostIPs": HOST_IP, "status.podIP": pod_ip,
              "status.podIPs": pod_ip}
    if path in simple:
        return simple[path] or ""
    if (lm := _LABEL_PATH.match(path)) is not None:
        table = (m.labels if lm.group(1) == "labels" else m.annotations) or {}
        return table.get(lm.group(2), "")
    raise ConfigError(f"unsupported fieldPath: {path}")


async def _source_data(kind: str, ns: str, name: str, lookup: Lookup, optional: bool) -> dict[str, str] | None:
    data = await lookup(kind, ns, name)
    if data is None and not optional:
        raise ConfigError(f'{kind.lower()} "{name}" not found')
    return data


async def _env_from(pod: core_v1.Pod, c: core_v1.Container, lookup: Lookup, env: dict[str, str]) -> None:
    ns = pod.metadata.namespace or "default"
    for src in c.env_from or ():
        ref = src.config_map_ref or src.secret_ref
        if ref is None:
            continue
        kind = "ConfigMap" if src.config_map_ref is not None else "Secret"
        data = await _source_data(kind, ns, ref.name or "", lookup, bool(ref.optional))
        for k, v in (data or {}).items():
            key = (src.prefix or "") + k
            if _ENV_NAME.match(key):          # invalid names are skipped (upstream: an event)
                env[key] = v


async def _var_value(pod: core_v1.Pod, v: core_v1.EnvVar, lookup: Lookup, env: dict[str, str],
                     pod_ip: str) -> str | None:
    if v.value_from is None:
        return expand(v.value or "", env)
    vf, ns = v.value_from, pod.metadata.namespace or "default"
    if vf.field_ref is not None:
        return field_value(pod, vf.field_ref.field_path or "", pod_ip)
    sel = vf.config_map_key_ref or vf.secret_key_ref
    if sel is not None:
        kind = "ConfigMap" if vf.config_map_key_ref is not None else "Secret"
        data = await _source_data(kind, ns, sel.name or "", lookup, bool(sel.optional))
        if data is None:
            return None
        if sel.key not in data:
            if sel.optional:
                return None
            raise ConfigError(f"couldn't find key {sel.key} in {kind} {ns}/{sel.name}")
        return data[sel.key or ""]
    return ""                            # resourceFieldRef / fileKeyRef: not modelled here


async def make_environment(pod: core_v1.Pod, c: core_v1.Container, *, lookup: Lookup,
                           base: dict[str, str], pod_ip: str = POD_IP) -> dict[str, str]:
    """envFrom first, then env in order, each value expanded against the variables before it.

    Upstream: makeEnvironmentVariables
    """
    env = dict(base)
    await _env_from(pod, c, lookup, env)
    for v in c.env or ():
        value = await _var_value(pod, v, lookup, env, pod_ip)
        if value is not None:
            env[v.name or ""] = value
    return env


def command_argv(c: core_v1.Container, env: dict[str, str]) -> list[str]:
    """command + args with $(VAR) expanded. Upstream: kubecontainer.ExpandContainerCommandAndArgs"""
    return [expand(s, env) for s in (c.command or [])] + [expand(s, env) for s in (c.args or [])]


def decode_secret(data: dict[str, str] | None) -> dict[str, str]:
    """A Secret's data (base64 on the wire) as text."""
    return {k: base64.b64decode(v).decode("utf-8", "replace") for k, v in (data or {}).items()}
