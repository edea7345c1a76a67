"""core/v1 validation: pod specs (shared by Pods and pod templates) and the other core kinds.

Upstream: pkg/apis/core/validation/validation.go. Only the checks that matter for the
fields we serve are mirrored; each function names its upstream counterpart.
"""
from __future__ import annotations

import base64
import ipaddress
import math
from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

from . import meta as m
from .memo import pod_spec_key, remember_valid
from .names import (
    inclusive_range_error,
    is_config_map_key,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_http_header_name,
    is_qualified_name,
    is_relaxed_env_var_name,
    is_valid_label_value,
    is_valid_port_name,
    is_valid_port_num,
    name_is_dns1035_label,
    name_is_dns_label,
    name_is_dns_subdomain,
    name_is_path_segment,
)
from .ip import is_valid_cidr, is_valid_ip, validate_non_special_ip
from .nodeselector import validate_node_selector
from .poddns import validate_pod_dns_config
from .podscheduling import validate_affinity, validate_topology_spread_constraints
from .securitycontext import validate_container_security_contexts, validate_pod_security_context
from ..decode import parse_json
from ..quantity import PARSE_ERROR, parse_quantity

Obj = dict[str, Any]
MAX_INT32 = 2**31 - 1
MAX_SECRET_SIZE = 1 << 20   # 1 MiB, core.MaxSecretSize (also the ConfigMap limit)


def _dns_label(value: str, path: str) -> list[FieldError]:
    return [errors.invalid(path, value, msg) for msg in is_dns1123_label(value)]


def _not_supported(path: str, value: Any, allowed: list[str]) -> list[FieldError]:
    return [] if value in allowed else [errors.not_supported(path, value, allowed)]


def _required_enum(value: Any, path: str, allowed: list[str]) -> list[FieldError]:
    """The `case "": Required; default: NotSupported` switch upstream uses for defaulted enums."""
    return [errors.required(path)] if not value else _not_supported(path, value, allowed)


# --- pod spec ---------------------------------------------------------------------------------------


@remember_valid(key=pod_spec_key)
def validate_pod_spec(spec: Obj, path: str, is_pod: bool, spec_json: bytes | None = None) -> list[FieldError]:
    """Upstream: ValidatePodSpec (containers, volumes, policies, scheduling fields).

    Remembered when valid: the pods of a ReplicaSet repeat their template's spec. `spec_json`:
    orjson.dumps(spec) when the caller has it, which the memo's key is built from (memo.pod_spec_key)."""
    errs: list[FieldError] = []
    if spec.get("terminationGracePeriodSeconds") is None:
        errs.append(errors.required(path + ".terminationGracePeriodSeconds"))
    volumes, verrs = validate_volumes(spec.get("volumes") or [], path + ".volumes")
    errs += verrs
    errs += validate_containers(spec.get("containers") or [], volumes, path + ".containers")
    errs += validate_init_containers(spec.get("initContainers") or [], spec.get("containers") or [], volumes,
                                     path + ".initContainers")
    errs += validate_container_security_contexts(spec, path)
    errs += _validate_host_network_ports(spec, path, is_pod)
    errs += _required_enum(spec.get("restartPolicy"), path + ".restartPolicy", ["Always", "OnFailure", "Never"])
    errs += _required_enum(spec.get("dnsPolicy"), path + ".dnsPolicy",
                           ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"])
    errs += m.validate_labels(spec.get("nodeSelector"), path + ".nodeSelector")
    errs += validate_pod_security_context(spec, path)
    if spec.get("affinity") is not None:
        errs += validate_affinity(spec["affinity"], path + ".affinity")
    if spec.get("dnsConfig") is not None or spec.get("dnsPolicy") == "None":
        errs += validate_pod_dns_config(spec.get("dnsConfig"), spec.get("dnsPolicy"), path + ".dnsConfig")
    if spec.get("topologySpreadConstraints"):
        errs += validate_topology_spread_constraints(spec["topologySpreadConstraints"],
                                                     path + ".topologySpreadConstraints")
    return errs + _validate_pod_spec_names(spec, path)


def _validate_pod_spec_names(spec: Obj, path: str) -> list[FieldError]:
    """The scalar tail of ValidatePodSpec: names, activeDeadlineSeconds, tolerations."""
    errs: list[FieldError] = []
    for key, fn in (("serviceAccountName", name_is_dns_subdomain), ("nodeName", name_is_dns_subdomain),
                    ("priorityClassName", name_is_dns_subdomain)):
        if spec.get(key):
            errs += [errors.invalid(f"{path}.{key}", spec[key], msg) for msg in fn(spec[key], False)]
    ads = spec.get("activeDeadlineSeconds")
    if ads is not None and not 1 <= ads <= MAX_INT32:
        errs.append(errors.invalid(path + ".activeDeadlineSeconds", ads, inclusive_range_error(1, MAX_INT32)))
    for key in ("hostname", "subdomain"):
        if spec.get(key):
            errs += _dns_label(spec[key], f"{path}.{key}")
    return errs + validate_tolerations(spec.get("tolerations") or [], path + ".tolerations")


def _validate_host_network_ports(spec: Obj, path: str, is_pod: bool) -> list[FieldError]:
    """Upstream: validatePodHostNetworkDeps (templates may leave hostPort 0; pods are defaulted)."""
    if not spec.get("hostNetwork"):
        return []
    errs = []
    for i, c in enumerate(spec.get("containers") or []):
        for j, p in enumerate(c.get("ports") or []):
            hp, cp = p.get("hostPort", 0), p.get("containerPort", 0)
            if (is_pod or hp != 0) and hp != cp:
                errs.append(errors.invalid(f"{path}.containers[{i}].ports[{j}].hostPort", hp,
                                           "must match `containerPort` when `hostNetwork` is true"))
    return errs


def validate_volumes(volumes: list[Obj], path: str) -> tuple[set[str], list[FieldError]]:
    """Upstream: ValidateVolumes (names are unique DNS labels; exactly one source each)."""
    names: set[str] = set()
    errs: list[FieldError] = []
    for i, vol in enumerate(volumes):
        name, name_path = vol.get("name") or "", f"{path}[{i}].name"
        el = _validate_volume_source(vol, f"{path}[{i}]")
        el += [errors.required(name_path)] if not name else _dns_label(name, name_path)
        if name in names:
            el.append(errors.duplicate(name_path, name))
        if not el:
            names.add(name)
        errs += el
    return names, errs


_VOLUME_SOURCES = ("hostPath", "emptyDir", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "secret",
                   "nfs", "iscsi", "glusterfs", "persistentVolumeClaim", "rbd", "flexVolume", "cinder", "cephfs",
                   "flocker", "downwardAPI", "fc", "azureFile", "configMap", "vsphereVolume", "quobyte", "azureDisk",
                   "photonPersistentDisk", "projected", "portworxVolume", "scaleIO", "storageos", "csi",
                   "ephemeral", "image")
FILE_MODE_ERROR = "must be a number between 0 and 0777 (octal), both inclusive"


def _validate_volume_source(vol: Obj, path: str) -> list[FieldError]:
    """Upstream: validateVolumeSource (the source count and the common sources' required fields)."""
    present = [k for k in _VOLUME_SOURCES if vol.get(k) is not None]
    if not present:
        return [errors.required(path, "must specify a volume type")]
    errs = [errors.forbidden(f"{path}.{k}", "may not specify more than 1 volume type") for k in present[1:]]
    src, src_path = vol[present[0]], f"{path}.{present[0]}"
    required = {"secret": "secretName", "configMap": "name", "persistentVolumeClaim": "claimName", "hostPath": "path"}
    if present[0] in required and not (src or {}).get(required[present[0]]):
        errs.append(errors.required(f"{src_path}.{required[present[0]]}"))
    mode = (src or {}).get("defaultMode") if isinstance(src, dict) else None
    if mode is not None and not 0 <= mode <= 0o777:
        errs.append(errors.invalid(src_path + ".defaultMode", mode, FILE_MODE_ERROR))
    return errs


def validate_containers(containers: list[Obj], volumes: set[str], path: str) -> list[FieldError]:
    """Upstream: validateContainers (required, common checks, unique names, probes)."""
    if not containers:
        return [errors.required(path)]
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, c in enumerate(containers):
        p = f"{path}[{i}]"
        errs += validate_container_common(c, volumes, p)
        if c.get("name", "") in names:
            errs.append(errors.duplicate(p + ".name", c.get("name", "")))
        names.add(c.get("name", ""))
        errs += _validate_probe(c.get("livenessProbe"), p + ".livenessProbe", success_must_be_one=True)
        errs += _validate_probe(c.get("readinessProbe"), p + ".readinessProbe")
        errs += _validate_probe(c.get("startupProbe"), p + ".startupProbe", success_must_be_one=True)
        if c.get("restartPolicy") is not None:
            errs.append(errors.forbidden(p + ".restartPolicy", "may not be set for non-init containers"))
    return errs + _host_port_conflicts(containers, path)


def validate_init_containers(inits: list[Obj], regular: list[Obj], volumes: set[str], path: str) -> list[FieldError]:
    """Upstream: validateInitContainers (names unique across init and regular containers)."""
    errs: list[FieldError] = []
    names = {c.get("name", "") for c in regular}
    for i, c in enumerate(inits):
        p = f"{path}[{i}]"
        errs += validate_container_common(c, volumes, p)
        sidecar = c.get("restartPolicy") == "Always"
        if c.get("restartPolicy") is not None and not sidecar:
            errs.append(errors.not_supported(p + ".restartPolicy", c["restartPolicy"], ["Always"]))
        if c.get("name", "") in names:
            errs.append(errors.duplicate(p + ".name", c.get("name", "")))
        elif c.get("name"):
            names.add(c["name"])
        for key in ("lifecycle", "livenessProbe", "readinessProbe", "startupProbe"):
            if c.get(key) is not None and not sidecar:
                errs.append(errors.forbidden(f"{p}.{key}", "may not be set for init containers without restartPolicy=Always"))
    return errs


def validate_container_common(c: Obj, volumes: set[str], path: str) -> list[FieldError]:
    """Upstream: validateContainerCommon (name, image, policies, ports, env, mounts, resources)."""
    errs: list[FieldError] = []
    name = c.get("name") or ""
    errs += [errors.required(path + ".name")] if not name else _dns_label(name, path + ".name")
    if not c.get("image"):
        errs.append(errors.required(path + ".image"))
    errs += _required_enum(c.get("terminationMessagePolicy"), path + ".terminationMessagePolicy",
                           ["File", "FallbackToLogsOnError"])
    errs += validate_container_ports(c.get("ports") or [], path + ".ports")
    errs += validate_env(c.get("env") or [], path + ".env")
    errs += validate_volume_mounts(c.get("volumeMounts") or [], volumes, path + ".volumeMounts")
    errs += _required_enum(c.get("imagePullPolicy"), path + ".imagePullPolicy", ["Always", "IfNotPresent", "Never"])
    return errs + validate_resource_requirements(c.get("resources") or {}, path + ".resources")


def validate_container_ports(ports: list[Obj], path: str) -> list[FieldError]:
    """Upstream: validateContainerPorts"""
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, p in enumerate(ports):
        ip = f"{path}[{i}]"
        if p.get("name"):
            msgs = is_valid_port_name(p["name"])
            if msgs:
                errs += [errors.invalid(ip + ".name", p["name"], msg) for msg in msgs]
            elif p["name"] in names:
                errs.append(errors.duplicate(ip + ".name", p["name"]))
            names.add(p["name"])
        cp = p.get("containerPort", 0)
        if not cp:
            errs.append(errors.required(ip + ".containerPort"))
        else:
            errs += [errors.invalid(ip + ".containerPort", cp, msg) for msg in is_valid_port_num(cp)]
        if p.get("hostPort"):
            errs += [errors.invalid(ip + ".hostPort", p["hostPort"], msg) for msg in is_valid_port_num(p["hostPort"])]
        errs += _required_enum(p.get("protocol"), ip + ".protocol", ["SCTP", "TCP", "UDP"])
    return errs


def _host_port_conflicts(containers: list[Obj], path: str) -> list[FieldError]:
    """Upstream: AccumulateUniqueHostPorts ("TCP//80" style keys: protocol/hostIP/port)."""
    seen: set[str] = set()
    errs = []
    for i, c in enumerate(containers):
        for j, p in enumerate(c.get("ports") or []):
            if not p.get("hostPort"):
                continue
            key = f"{p.get('protocol', '')}/{p.get('hostIP', '')}/{p['hostPort']}"
            if key in seen:
                errs.append(errors.duplicate(f"{path}[{i}].ports[{j}].hostPort", key))
            seen.add(key)
    return errs


def validate_env(env: list[Obj], path: str) -> list[FieldError]:
    """Upstream: ValidateEnv with relaxed names, and validateEnvVarValueFrom's source count."""
    errs: list[FieldError] = []
    for i, ev in enumerate(env):
        ip = f"{path}[{i}]"
        if not ev.get("name"):
            errs.append(errors.required(ip + ".name"))
        else:
            errs += [errors.invalid(ip + ".name", ev["name"], msg) for msg in is_relaxed_env_var_name(ev["name"])]
        errs += _validate_env_value_from(ev, ip + ".valueFrom")
    return errs


def _validate_env_value_from(ev: Obj, path: str) -> list[FieldError]:
    value_from = ev.get("valueFrom")
    if value_from is None:
        return []
    sources = [k for k in ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef") if value_from.get(k)]
    errs: list[FieldError] = []
    for key in ("configMapKeyRef", "secretKeyRef"):
        ref = value_from.get(key)
        if ref:
            errs += [errors.invalid(f"{path}.{key}.name", ref.get("name", ""), msg)
                     for msg in name_is_dns_subdomain(ref.get("name", ""), False)]
            if not ref.get("key"):
                errs.append(errors.required(f"{path}.{key}.key"))
            else:
                errs += [errors.invalid(f"{path}.{key}.key", ref["key"], msg) for msg in is_config_map_key(ref["key"])]
    if not sources:
        errs.append(errors.invalid(path, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"))
    elif ev.get("value"):
        errs.append(errors.invalid(path, "", "may not be specified when `value` is not empty"))
    elif len(sources) > 1:
        errs.append(errors.invalid(path, "", "may not have more than one field specified at a time"))
    return errs


def validate_volume_mounts(mounts: list[Obj], volumes: set[str], path: str) -> list[FieldError]:
    """Upstream: ValidateVolumeMounts (the mount must name a volume; mountPath unique)."""
    errs: list[FieldError] = []
    paths: set[str] = set()
    for i, mnt in enumerate(mounts):
        ip = f"{path}[{i}]"
        if not mnt.get("name"):
            errs.append(errors.required(ip + ".name"))
        if mnt.get("name", "") not in volumes:
            errs.append(errors.not_found(ip + ".name", mnt.get("name", "")))
        if not mnt.get("mountPath"):
            errs.append(errors.required(ip + ".mountPath"))
        if mnt.get("mountPath", "") in paths:
            errs.append(errors.invalid(ip + ".mountPath", mnt.get("mountPath", ""), "must be unique"))
        paths.add(mnt.get("mountPath", ""))
    return errs


_STANDARD_CONTAINER_RESOURCES = {"cpu", "memory", "ephemeral-storage"}


def validate_resource_requirements(res: Obj, path: str) -> list[FieldError]:
    """Upstream: validateResourceRequirements with validateContainerResourceName (names,
    ValidateResourceQuantityValue, requests ≤ limits, non-overcommittable resources).

    Example: limits cpu "1", requests cpu "1500m" ->
    `…resources.requests: Invalid value: "1500m": must be less than or equal to cpu limit of 1`.
    Hugepages and extended resources (nvidia.com/gpu) are not overcommittable: their request
    must equal the limit, and a request needs a limit (`…resources.limits: Required value: Limit
    must be set for non overcommitable resources`); hugepages need cpu or memory beside them.
    """
    errs: list[FieldError] = []
    limits, requests = res.get("limits") or {}, res.get("requests") or {}
    parsed_limits = {}
    cpu_or_memory = hugepages = False
    for kind, values in (("limits", limits), ("requests", requests)):
        for name, q in values.items():
            qp = f"{path}.{kind}[{name}]"
            errs += _validate_container_resource_name(name, qp)
            errs += _resource_quantity_value(name, q, qp)
            value = parse_quantity(q)
            cpu_or_memory = cpu_or_memory or name in ("cpu", "memory")
            hugepages = hugepages or name.startswith("hugepages-")
            if kind == "limits":
                if value is not None:
                    parsed_limits[name] = value
            elif name in parsed_limits:
                if value is not None:
                    errs += _request_vs_limit(name, q, value, limits[name], parsed_limits[name], path + ".requests")
            elif name not in limits and not _overcommit_allowed(name):
                errs.append(errors.required(path + ".limits", "Limit must be set for non overcommitable resources"))
    if hugepages and not cpu_or_memory:
        errs.append(errors.forbidden(path, "HugePages require cpu or memory"))
    return errs


def _request_vs_limit(name: str, q: Any, value: Any, lq: Any, limit: Any, path: str) -> list[FieldError]:
    if value != limit and not _overcommit_allowed(name):
        return [errors.invalid(path, str(q), f"must be equal to {name} limit of {lq}")]
    if value > limit:
        return [errors.invalid(path, str(q), f"must be less than or equal to {name} limit of {lq}")]
    return []


def _validate_container_resource_name(name: str, path: str) -> list[FieldError]:
    """Upstream: validateContainerResourceName: validateResourceName's errors, then a plain
    name must be one a container can ask for (cpu, memory, ephemeral-storage, hugepages-*),
    and a prefixed one outside kubernetes.io must be an extended resource name.

    Example: "gpu" -> `Invalid value: "gpu": must be a standard resource type or fully
    qualified` and `Invalid value: "gpu": must be a standard resource for containers`.
    """
    errs = _resource_name(name, path)
    if "/" not in name:
        if name not in _STANDARD_CONTAINER_RESOURCES and not name.startswith("hugepages-"):
            errs.append(errors.invalid(path, name, "must be a standard resource for containers"))
    elif not _is_native_resource(name) and not _is_extended_resource(name):
        errs.append(errors.invalid(path, name, "doesn't follow extended resource name standard"))
    return errs


def _is_native_resource(name: str) -> bool:
    """Upstream: helper.IsNativeResource (unprefixed, or in *kubernetes.io/)."""
    return "/" not in name or "kubernetes.io/" in name


def _is_extended_resource(name: str) -> bool:
    """Upstream: helper.IsExtendedResourceName (prefixed outside kubernetes.io, no "requests."
    prefix, and a qualified name once "requests." is put in front, as quota names it)."""
    return not _is_native_resource(name) and not name.startswith("requests.") and not is_qualified_name(
        "requests." + name)


def _overcommit_allowed(name: str) -> bool:
    """Upstream: helper.IsOvercommitAllowed (native resources other than hugepages)."""
    return _is_native_resource(name) and not name.startswith("hugepages-")


def _validate_probe(probe: Any, path: str, success_must_be_one: bool = False) -> list[FieldError]:
    """Upstream: validateProbe + validateLiveness/StartupProbe's successThreshold rule."""
    if probe is None:
        return []
    handlers = [k for k in ("exec", "httpGet", "tcpSocket", "grpc") if probe.get(k) is not None]
    errs = [errors.forbidden(f"{path}.{k}", "may not specify more than 1 handler type") for k in handlers[1:]]
    if not handlers:
        errs.append(errors.required(path, "must specify a handler type"))
    else:
        errs += _validate_handler(handlers[0], probe[handlers[0]], f"{path}.{handlers[0]}")
    for key in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"):
        errs += m.nonnegative(probe.get(key), f"{path}.{key}")
    if success_must_be_one and probe.get("successThreshold", 1) != 1:
        errs.append(errors.invalid(path + ".successThreshold", probe["successThreshold"], "must be 1"))
    return errs


def _validate_handler(kind: str, h: Obj, path: str) -> list[FieldError]:
    if kind == "exec":
        return [] if h.get("command") else [errors.required(path + ".command")]
    if kind == "grpc":
        return validate_port_num_or_name(h.get("port", 0), path + ".port")
    errs = validate_port_num_or_name(h.get("port", 0), path + ".port")
    if kind == "httpGet":
        if not h.get("path"):
            errs.append(errors.required(path + ".path"))
        errs += _not_supported(path + ".scheme", h.get("scheme", ""), ["HTTP", "HTTPS"])
        for header in h.get("httpHeaders") or []:
            errs += [errors.invalid(path + ".httpHeaders", header.get("name", ""), msg)
                     for msg in is_http_header_name(header.get("name", ""))]
    return errs


def validate_port_num_or_name(port: Any, path: str) -> list[FieldError]:
    """Upstream: ValidatePortNumOrName (an IntOrString port)."""
    if isinstance(port, int):
        return [errors.invalid(path, port, msg) for msg in is_valid_port_num(port)]
    return [errors.invalid(path, port, msg) for msg in is_valid_port_name(str(port))]


def validate_tolerations(tolerations: list[Obj], path: str) -> list[FieldError]:
    """Upstream: ValidateTolerations"""
    errs: list[FieldError] = []
    for i, t in enumerate(tolerations):
        ip = f"{path}[{i}]"
        key, op, effect = t.get("key", ""), t.get("operator", ""), t.get("effect", "")
        if key:
            errs += m.validate_label_name(key, ip + ".key")
        if not key and op != "Exists":
            errs.append(errors.invalid(ip + ".operator", op,
                                       'operator must be Exists when `key` is empty, which means "match all values and all keys"'))
        if t.get("tolerationSeconds") is not None and effect != "NoExecute":
            errs.append(errors.invalid(ip + ".effect", effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
        if op in ("Equal", ""):
            msgs = is_valid_label_value(t.get("value", ""))
            if msgs:
                errs.append(errors.invalid(ip + ".operator", t.get("value", ""), ";".join(msgs)))
        elif op == "Exists":
            if t.get("value"):
                errs.append(errors.invalid(ip + ".operator", t["value"], "value must be empty when `operator` is 'Exists'"))
        else:
            errs.append(errors.not_supported(ip + ".operator", op, ["Equal", "Exists"]))
        if effect:
            errs += _not_supported(ip + ".effect", effect, ["NoSchedule", "PreferNoSchedule", "NoExecute"])
    return errs


def validate_pod_template_spec(template: Obj, path: str) -> list[FieldError]:
    """Upstream: ValidatePodTemplateSpec (template labels/annotations and the pod spec)."""
    meta = template.get("metadata") or {}
    errs = m.validate_labels(meta.get("labels"), path + ".labels")
    errs += m.validate_annotations(meta.get("annotations"), path + ".annotations")
    return errs + validate_pod_spec(template.get("spec") or {}, path + ".spec", is_pod=False)


# --- Pod -----------------------------------------------------------------------------------------


def validate_pod(pod: Obj, spec_json: bytes | None = None) -> list[FieldError]:
    """Upstream: ValidatePodCreate. `spec_json`: orjson.dumps(pod["spec"]) when the caller has it
    (the registry store's create, which stores the same bytes): the spec is not encoded again."""
    errs = _validate_pod_metadata_and_spec(pod, spec_json)
    if (pod.get("spec") or {}).get("ephemeralContainers"):
        errs.append(errors.forbidden("spec.ephemeralContainers", "cannot be set on create"))
    return errs


def _validate_pod_metadata_and_spec(pod: Obj, spec_json: bytes | None = None) -> list[FieldError]:
    """Upstream: validatePodMetadataAndSpec (pods, unlike templates, reject padded images)."""
    errs = m.validate_object_meta(pod.get("metadata") or {}, True, name_is_dns_subdomain)
    spec = pod.get("spec") or {}
    errs += validate_pod_spec(spec, "spec", True, spec_json)
    for key in ("containers", "initContainers"):
        for i, c in enumerate(spec.get(key) or []):
            if c.get("image") and c["image"] != c["image"].strip():
                errs.append(errors.invalid(f"spec.{key}[{i}].image", c["image"], "must not have leading or trailing whitespace"))
    return errs


UPDATABLE_POD_SPEC_FIELDS = ",".join([
    "`spec.containers[*].image`", "`spec.initContainers[*].image`", "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
])


def validate_pod_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidatePodUpdate (only images, activeDeadlineSeconds, added tolerations may change).

    The Forbidden message is upstream's first line only: Go appends a cmp.Diff of the
    two specs, which cannot be reproduced byte for byte.
    """
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    errs += _validate_pod_metadata_and_spec(new)
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    for key in ("containers", "initContainers"):
        if len(ns.get(key) or []) != len(os_.get(key) or []):
            return errs + [errors.forbidden(f"spec.{key}", "pod updates may not add or remove containers")]
    errs += _validate_active_deadline_update(ns.get("activeDeadlineSeconds"), os_.get("activeDeadlineSeconds"))
    errs += _validate_only_added_tolerations(ns.get("tolerations") or [], os_.get("tolerations") or [])
    if not m.semantic_equal(_munge_pod_spec(ns, os_), os_):
        errs.append(errors.forbidden("spec", f"pod updates may not change fields other than {UPDATABLE_POD_SPEC_FIELDS}"))
    return errs


def _validate_active_deadline_update(new: Any, old: Any) -> list[FieldError]:
    if new is not None:
        if not 0 <= new <= MAX_INT32:
            return [errors.invalid("spec.activeDeadlineSeconds", new, inclusive_range_error(0, MAX_INT32))]
        if old is not None and old < new:
            return [errors.invalid("spec.activeDeadlineSeconds", new, "must be less than or equal to previous value")]
    elif old is not None:
        return [errors.invalid("spec.activeDeadlineSeconds", None, "must not update from a positive integer to nil value")]
    return []


def _validate_only_added_tolerations(new: list[Obj], old: list[Obj]) -> list[FieldError]:
    """Upstream: validateOnlyAddedTolerations (tolerationSeconds of an existing one may change)."""
    for o in old:
        if not any(m.semantic_equal({**o, "tolerationSeconds": n.get("tolerationSeconds")}, n) for n in new):
            return [errors.forbidden("spec.tolerations", "existing toleration can not be modified except its tolerationSeconds")]
    return validate_tolerations(new, "spec.tolerations")


def _munge_pod_spec(new: Obj, old: Obj) -> Obj:
    """The new spec with every updatable field copied from old (then it must equal old)."""
    munged = dict(new)
    for key in ("containers", "initContainers"):
        munged[key] = [{**c, "image": o.get("image")} for c, o in zip(new.get(key) or [], old.get(key) or [])]
    for key in ("activeDeadlineSeconds", "tolerations", "schedulingGates"):
        munged[key] = old.get(key)
    old_grace = old.get("terminationGracePeriodSeconds")
    if old_grace is not None and old_grace < 0 and new.get("terminationGracePeriodSeconds") == 1:
        munged["terminationGracePeriodSeconds"] = old_grace
    return munged


def validate_pod_status_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidatePodStatusUpdate (conditions, qosClass immutable, nominatedNodeName)."""
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    status, old_status = new.get("status") or {}, old.get("status") or {}
    for i, cond in enumerate(status.get("conditions") or []):
        if cond.get("type") not in ("PodScheduled", "Ready", "Initialized") and (
                msgs := is_qualified_name(cond.get("type", ""))):
            errs += [errors.invalid(f"metadata.conditions[{i}].Type", cond.get("type", ""), msg) for msg in msgs]
    if (new.get("spec") or {}).get("nodeName") != (old.get("spec") or {}).get("nodeName"):
        errs.append(errors.forbidden("status.nodeName", "may not be changed directly"))
    nominated = status.get("nominatedNodeName")
    if nominated and nominated != old_status.get("nominatedNodeName"):
        errs += [errors.invalid("status.nominatedNodeName", nominated, msg) for msg in is_dns1123_subdomain(nominated)]
    return errs + m.immutable(status.get("qosClass"), old_status.get("qosClass"), "status.qosClass")


def validate_binding(b: Obj) -> list[FieldError]:
    """Upstream: ValidatePodBinding (pods/binding body; its metadata is not validated)."""
    target = b.get("target") or {}
    errs = []
    if target.get("kind") and target["kind"] != "Node":
        errs.append(errors.not_supported("target.kind", target["kind"], ["Node", "<empty>"]))
    if not target.get("name"):
        errs.append(errors.required("target.name"))
    return errs


# --- Namespace, Node, ServiceAccount -------------------------------------------------------------


def validate_namespace(ns: Obj) -> list[FieldError]:
    """Upstream: ValidateNamespace (DNS-1123 label name, spec.finalizers are finalizer names)."""
    errs = m.validate_object_meta(ns.get("metadata") or {}, False, name_is_dns_label)
    return errs + validate_namespace_finalizers((ns.get("spec") or {}).get("finalizers") or [])


def validate_namespace_finalizers(finalizers: list[str]) -> list[FieldError]:
    """spec.finalizers are finalizer names (ValidateNamespace, ValidateNamespaceFinalizeUpdate)."""
    errs: list[FieldError] = []
    for i, f in enumerate(finalizers):
        errs += _validate_finalizer_name(f, f"spec.finalizers[{i}]")
    return errs


def _validate_finalizer_name(f: str, path: str) -> list[FieldError]:
    """Upstream: validateFinalizerName (qualified, and standard unless domain-prefixed)."""
    errs = [errors.invalid(path, f, msg) for msg in is_qualified_name(f)]
    if not errs and "/" not in f and f not in m.STANDARD_FINALIZERS:
        errs.append(errors.invalid(path, f, "name is neither a standard finalizer name nor is it fully qualified"))
    return errs


def validate_namespace_status_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateNamespaceStatusUpdate (phase follows deletionTimestamp)."""
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    phase = (new.get("status") or {}).get("phase", "")
    if not (new.get("metadata") or {}).get("deletionTimestamp"):
        if phase != "Active":
            errs.append(errors.invalid("status.Phase", phase, "may only be 'Active' if `deletionTimestamp` is empty"))
    elif phase != "Terminating":
        errs.append(errors.invalid("status.Phase", phase, "may only be 'Terminating' if `deletionTimestamp` is not empty"))
    return errs


def validate_node(node: Obj) -> list[FieldError]:
    """Upstream: ValidateNode (name, taints; the rest is kubelet-owned status)."""
    errs = m.validate_object_meta(node.get("metadata") or {}, False, name_is_dns_subdomain)
    errs += validate_node_taints((node.get("spec") or {}).get("taints") or [])
    return errs + _validate_pod_cidrs((node.get("spec") or {}).get("podCIDRs") or [])


def validate_node_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: nodeStrategy.ValidateUpdate = ValidateNode + ValidateNodeUpdate — the spec rules of
    ValidateNode once (upstream repeats the taint errors), podCIDRs and providerID set once."""
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    errs += validate_node_taints(spec.get("taints") or [])
    errs += _validate_pod_cidrs(spec.get("podCIDRs") or [])
    old_cidrs, cidrs = _list(old_spec.get("podCIDRs")), _list(spec.get("podCIDRs"))
    if old_cidrs:
        detail = 'node updates may not change podCIDR except from "" to valid'
        if len(old_cidrs) != len(cidrs):
            errs.append(errors.forbidden("spec.podCIDRs", detail))
        else:
            errs += [errors.forbidden("spec.podCIDRs", detail) for a, b in zip(old_cidrs, cidrs) if a != b]
    if old_spec.get("providerID") and old_spec.get("providerID") != spec.get("providerID"):
        errs.append(errors.forbidden("spec.providerID", 'node updates may not change providerID except from "" to valid'))
    if (spec.get("externalID") or "") != (old_spec.get("externalID") or ""):
        errs.append(errors.forbidden("spec.externalID", "may not be updated"))
    return errs


def validate_node_taints(taints: list[Obj]) -> list[FieldError]:
    """Upstream: validateNodeTaints — called with field.NewPath("metadata").Child("taints"), so the
    paths read metadata.taints[i] (sic); a taint's value problems are joined into one error; the
    duplicate's value is the internal core.Taint, which has no json tags (Go's field names)."""
    errs: list[FieldError] = []
    seen: set[tuple[str, str]] = set()
    for i, t in enumerate(taints):
        t = t if isinstance(t, dict) else {}
        ip = f"metadata.taints[{i}]"
        errs += m.validate_label_name(t.get("key", ""), ip + ".key")
        value_errs = is_valid_label_value(str(t.get("value") or ""))
        if value_errs:
            errs.append(errors.invalid(ip + ".value", t.get("value") or "", ";".join(value_errs)))
        errs += _required_enum(t.get("effect"), ip + ".effect", ["NoSchedule", "PreferNoSchedule", "NoExecute"])
        key = (t.get("key", ""), t.get("effect", ""))
        if key in seen:
            go_taint = {"Key": t.get("key", ""), "Value": t.get("value", ""), "Effect": t.get("effect", ""),
                        "TimeAdded": t.get("timeAdded")}
            errs.append(errors.FieldError(errors.DUPLICATE, ip, errors.JSONValue(go_taint),
                                          "taints must be unique by key and effect pair"))
            continue
        seen.add(key)
    return errs


def _validate_pod_cidrs(cidrs: list[str]) -> list[FieldError]:
    """ValidateNode's spec.podCIDRs: each a CIDR (IsValidCIDR), at most one per IP family."""
    errs: list[FieldError] = []
    families = []
    for i, value in enumerate(cidrs):
        try:
            families.append(ipaddress.ip_network(value, strict=False).version)
        except ValueError:
            errs.append(errors.invalid(f"spec.podCIDRs[{i}]", value,
                                       "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"))
    if not errs and len(cidrs) > 1 and (len(cidrs) > 2 or len(set(families)) != 2):
        errs.append(errors.invalid("spec.podCIDRs", cidrs, "may specify no more than one CIDR for each IP family"))
    return errs


def validate_service_account(sa: Obj) -> list[FieldError]:
    return m.validate_object_meta(sa.get("metadata") or {}, True, name_is_dns_subdomain)


# --- ConfigMap, Secret ---------------------------------------------------------------------------


def validate_config_map(cm: Obj) -> list[FieldError]:
    """Upstream: ValidateConfigMap (config keys, no key in both maps, total ≤ 1 MiB)."""
    errs = m.validate_object_meta(cm.get("metadata") or {}, True, name_is_dns_subdomain)
    data, binary = cm.get("data") or {}, cm.get("binaryData") or {}
    total = 0
    for key, value in data.items():
        errs += [errors.invalid(f"data[{key}]", key, msg) for msg in is_config_map_key(key)]
        if key in binary:
            errs.append(errors.invalid(f"data[{key}]", key, "duplicate of key present in binaryData"))
        total += len(str(value).encode())
    for key, value in binary.items():
        errs += [errors.invalid(f"binaryData[{key}]", key, msg) for msg in is_config_map_key(key)]
        total += _decoded_len(str(value))
    if total > MAX_SECRET_SIZE:
        errs.append(errors.too_long("", MAX_SECRET_SIZE))
    return errs


def validate_config_map_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateConfigMapUpdate (immutable ConfigMaps keep data and the flag)."""
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    if old.get("immutable"):
        errs += _immutable_data(new, old, ("data", "binaryData"))
    return errs + validate_config_map(new)


def _immutable_data(new: Obj, old: Obj, keys: tuple[str, ...]) -> list[FieldError]:
    errs = []
    if not new.get("immutable"):
        errs.append(errors.forbidden("immutable", "field is immutable when `immutable` is set"))
    for key in keys:
        if not m.semantic_equal(new.get(key), old.get(key)):
            errs.append(errors.forbidden(key, "field is immutable when `immutable` is set"))
    return errs


def _decoded_len(b64: str) -> int:
    """Bytes in canonical base64 text: 3 per 4 characters, less the padding."""
    return len(b64) * 3 // 4 - b64[-2:].count("=")




def validate_secret(s: Obj) -> list[FieldError]:
    """Upstream: ValidateSecret (config keys, ≤ 1 MiB of data, the typed secrets' required keys).

    stringData is merged into data before this runs (conversion.secret_v1_to_core), and data
    holds canonical base64 (decode.py), whose decoded size _decoded_len gives.
    """
    errs = m.validate_object_meta(s.get("metadata") or {}, True, name_is_dns_subdomain)
    data = s.get("data") or {}
    total = 0
    for key, value in data.items():
        errs += [errors.invalid(f"data[{key}]", key, msg) for msg in is_config_map_key(key)]
        total += _decoded_len(str(value))
    if total > MAX_SECRET_SIZE:
        errs.append(errors.too_long("data", MAX_SECRET_SIZE))
    return errs + _validate_secret_type(s.get("type") or "", data, (s.get("metadata") or {}).get("annotations") or {})


def _validate_secret_type(secret_type: str, data: Obj, annotations: Obj) -> list[FieldError]:
    """The `switch secret.Type` of ValidateSecret."""
    if secret_type == "kubernetes.io/service-account-token":
        if not annotations.get("kubernetes.io/service-account.name"):
            return [errors.required("metadata.annotations[kubernetes.io/service-account.name]")]
    elif secret_type in ("kubernetes.io/dockercfg", "kubernetes.io/dockerconfigjson"):
        key = ".dockercfg" if secret_type == "kubernetes.io/dockercfg" else ".dockerconfigjson"
        if key not in data:
            return [errors.required(f"data[{key}]")]
        problem = _json_object_error(str(data[key] or ""))
        if problem:
            return [errors.invalid(f"data[{key}]", "<secret contents redacted>", problem)]
    elif secret_type == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:   # either may be empty, one must be there
            return [errors.required("data[username]"), errors.required("data[password]")]
    elif secret_type == "kubernetes.io/ssh-auth":
        if not data.get("ssh-privatekey"):
            return [errors.required("data[ssh-privatekey]")]
    elif secret_type == "kubernetes.io/tls":
        return [errors.required(f"data[{key}]") for key in ("tls.crt", "tls.key") if key not in data]
    return []


def _json_object_error(b64: str) -> str:
    """json.Unmarshal(data, &map[string]interface{}{})'s error text ("" when it succeeds)."""
    try:
        value = parse_json(base64.b64decode(b64))
    except ValueError as e:
        return str(e)
    if value is None or isinstance(value, dict):
        return ""
    go_type = "array" if isinstance(value, list) else "string" if isinstance(value, str) \
        else "bool" if isinstance(value, bool) else "number"
    return f"json: cannot unmarshal {go_type} into Go value of type map[string]interface {{}}"


def validate_secret_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateSecretUpdate (type immutable; immutable Secrets keep their data)."""
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    errs += m.immutable(new.get("type"), old.get("type"), "type")
    if old.get("immutable"):
        errs += _immutable_data(new, old, ("data",))
    return errs + validate_secret(new)


# --- Service -------------------------------------------------------------------------------------

SERVICE_TYPES = ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]


def validate_service(svc: Obj) -> list[FieldError]:
    """Upstream: ValidateService, in its order (the clusterIP/ipFamily rules the allocators rely on
    are validate_service_type_fields; the rest of ValidateServiceClusterIPsRelatedFields runs
    before allocation, registry/core/service/validation.py)."""
    meta = svc.get("metadata") or {}
    errs = m.validate_object_meta(meta, True, name_is_dns1035_label)
    annotations = meta.get("annotations") or {}
    if TOPOLOGY_MODE_ANNOTATION in annotations and TOPOLOGY_HINTS_ANNOTATION in annotations \
            and annotations[TOPOLOGY_MODE_ANNOTATION] != annotations[TOPOLOGY_HINTS_ANNOTATION]:
        errs.append(errors.invalid(f"metadata.annotations[{TOPOLOGY_MODE_ANNOTATION}]",
                                   annotations[TOPOLOGY_MODE_ANNOTATION],
                                   f"must match annotations[{TOPOLOGY_HINTS_ANNOTATION}] when both are specified"))
    spec = svc.get("spec") or {}
    ports = [p if isinstance(p, dict) else {} for p in _list(spec.get("ports"))]
    t = spec.get("type")
    if not ports and spec.get("clusterIP") != "None" and t != "ExternalName":
        errs.append(errors.required("spec.ports"))
    if t == "LoadBalancer":
        errs += [errors.invalid(f"spec.ports[{i}]", KUBELET_PORT, f"may not expose port {KUBELET_PORT} externally "
                                                                   "since it is used by kubelet")
                 for i, p in enumerate(ports) if p.get("port") == KUBELET_PORT]
    errs += validate_service_type_fields(spec)
    names: set[str] = set()
    for i, p in enumerate(ports):
        errs += _validate_service_port(p, len(ports) > 1, names, f"spec.ports[{i}]")
    errs += m.validate_labels(spec.get("selector"), "spec.selector")
    errs += _required_enum(spec.get("sessionAffinity"), "spec.sessionAffinity", ["ClientIP", "None"])
    errs += _session_affinity_config(spec)
    for i, ip in enumerate(_list(spec.get("externalIPs"))):
        ip_errs = is_valid_ip(f"spec.externalIPs[{i}]", str(ip))
        errs += ip_errs or validate_non_special_ip(ip, f"spec.externalIPs[{i}]")
    errs += _required_enum(t, "spec.type", SERVICE_TYPES)
    errs += validate_service_node_ports(spec)
    keys: set[tuple[str, int]] = set()
    for i, p in enumerate(ports):
        key = (p.get("protocol", ""), p.get("port", 0))
        if key in keys:
            errs.append(errors.duplicate(f"spec.ports[{i}]", {"port": key[1], "protocol": key[0]}))
        keys.add(key)
    errs += _load_balancer_source_ranges(spec, annotations)
    if spec.get("allocateLoadBalancerNodePorts") is not None and t != "LoadBalancer":
        errs.append(errors.forbidden("spec.allocateLoadBalancerNodePorts", "may only be used when `type` is "
                                                                            "'LoadBalancer'"))
    if t == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        errs.append(errors.required("allocateLoadBalancerNodePorts"))      # sic: upstream's path
    errs += validate_load_balancer_class(None, spec)
    errs += _external_traffic_policy(spec)
    if spec.get("internalTrafficPolicy") is None and t in ("NodePort", "LoadBalancer", "ClusterIP"):
        errs.append(errors.required("spec.internalTrafficPolicy"))
    elif spec.get("internalTrafficPolicy") is not None:
        errs += _not_supported("spec.internalTrafficPolicy", spec["internalTrafficPolicy"], ["Cluster", "Local"])
    if spec.get("trafficDistribution") is not None:
        errs += _not_supported("spec.trafficDistribution", spec["trafficDistribution"], TRAFFIC_DISTRIBUTIONS)
    return errs


KUBELET_PORT = 10250
MAX_CLIENT_IP_SERVICE_AFFINITY_SECONDS = 86400
TOPOLOGY_MODE_ANNOTATION = "service.kubernetes.io/topology-mode"
TOPOLOGY_HINTS_ANNOTATION = "service.kubernetes.io/topology-aware-hints"
LB_SOURCE_RANGES_ANNOTATION = "service.beta.kubernetes.io/load-balancer-source-ranges"
# PreferSameZone and PreferSameNode joined PreferClose with PreferSameTrafficDistribution (GA in 1.35).
TRAFFIC_DISTRIBUTIONS = ["PreferClose", "PreferSameNode", "PreferSameZone"]


def _session_affinity_config(spec: Obj) -> list[FieldError]:
    """Upstream: validateClientIPAffinityConfig / validateAffinityTimeout, and the None case."""
    path, config = "spec.sessionAffinityConfig", spec.get("sessionAffinityConfig")
    if spec.get("sessionAffinity") == "None":
        return [errors.forbidden(path, "must not be set when session affinity is None")] if config is not None else []
    if spec.get("sessionAffinity") != "ClientIP":
        return []
    detail = "when session affinity type is ClientIP"
    if config is None:
        return [errors.required(path, detail)]
    client_ip = (config or {}).get("clientIP")
    if client_ip is None:
        return [errors.required(path + ".clientIP", detail)]
    timeout = (client_ip or {}).get("timeoutSeconds")
    if timeout is None:
        return [errors.required(path + ".clientIP.timeoutSeconds", detail)]
    if not isinstance(timeout, int) or not 0 < timeout <= MAX_CLIENT_IP_SERVICE_AFFINITY_SECONDS:
        return [errors.invalid(path + ".clientIP.timeoutSeconds", timeout,
                               f"must be greater than 0 and less than {MAX_CLIENT_IP_SERVICE_AFFINITY_SECONDS}")]
    return []


def _load_balancer_source_ranges(spec: Obj, annotations: Obj) -> list[FieldError]:
    """ValidateService's source ranges: the field, or else the legacy annotation."""
    errs: list[FieldError] = []
    lb = spec.get("type") == "LoadBalancer"
    ranges = _list(spec.get("loadBalancerSourceRanges"))
    if ranges:
        path = "spec.LoadBalancerSourceRanges"              # sic: upstream's path
        if not lb:
            errs.append(errors.forbidden(path, "may only be used when `type` is 'LoadBalancer'"))
        for i, value in enumerate(ranges):
            errs += is_valid_cidr(f"{path}[{i}]", str(value).strip())
    elif LB_SOURCE_RANGES_ANNOTATION in annotations:
        path = f"metadata.annotations[{LB_SOURCE_RANGES_ANNOTATION}]"
        if not lb:
            errs.append(errors.forbidden(path, "may only be used when `type` is 'LoadBalancer'"))
        value = str(annotations[LB_SOURCE_RANGES_ANNOTATION]).strip()
        for cidr in value.split(",") if value else []:
            errs += is_valid_cidr(path, cidr.strip())
    return errs


def validate_load_balancer_class(old: Obj | None, spec: Obj) -> list[FieldError]:
    """Upstream: validateLoadBalancerClassField (set once for a LoadBalancer, only there)."""
    errs: list[FieldError] = []
    path, value = "spec.loadBalancerClass", spec.get("loadBalancerClass")
    lb = spec.get("type") == "LoadBalancer"
    if old is not None and old.get("type") == "LoadBalancer" and lb and old.get("loadBalancerClass") != value:
        errs.append(errors.invalid(path, value, "may not change once set"))
    if lb and value is not None:
        errs += [errors.invalid(path, value, msg) for msg in is_qualified_name(str(value))]
    elif not lb and value is not None:
        errs.append(errors.forbidden(path, "may only be used when `type` is 'LoadBalancer'"))
    return errs


def _needs_health_check(spec: Obj) -> bool:
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def _external_traffic_policy(spec: Obj) -> list[FieldError]:
    """Upstream: validateServiceExternalTrafficPolicy (healthCheckNodePort comes from the allocator,
    which runs before validation)."""
    errs: list[FieldError] = []
    policy = spec.get("externalTrafficPolicy") or ""
    t = spec.get("type")
    accessible = t in ("LoadBalancer", "NodePort") or (t == "ClusterIP" and bool(spec.get("externalIPs")))
    if not accessible:
        if policy:
            errs.append(errors.invalid("spec.externalTrafficPolicy", policy,
                                       "may only be set for externally-accessible services"))
    elif not policy:
        errs.append(errors.required("spec.externalTrafficPolicy"))
    else:
        errs += _not_supported("spec.externalTrafficPolicy", policy, ["Cluster", "Local"])
    port = spec.get("healthCheckNodePort") or 0
    if not _needs_health_check(spec):
        if port:
            errs.append(errors.invalid("spec.healthCheckNodePort", port,
                                       "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` "
                                       "is 'Local'"))
    elif not port:
        errs.append(errors.required("spec.healthCheckNodePort"))
    else:
        errs += [errors.invalid("spec.healthCheckNodePort", port, msg) for msg in is_valid_port_num(port)]
    return errs


def validate_service_type_fields(spec: Obj) -> list[FieldError]:
    """Upstream: ValidateService's switch on spec.type (clusterIPs, ipFamilies, externalName)."""
    errs: list[FieldError] = []
    t, ips = spec.get("type"), _list(spec.get("clusterIPs"))
    if t in ("NodePort", "LoadBalancer") and ips[:1] == ["None"]:
        errs.append(errors.invalid("spec.clusterIPs[0]", "None", f"may not be set to 'None' for {t} services"))
    if t == "ExternalName":
        for field in ("clusterIPs", "ipFamilies"):
            if spec.get(field):
                errs.append(errors.forbidden(f"spec.{field}", "may not be set for ExternalName services"))
        if spec.get("ipFamilyPolicy") is not None:
            errs.append(errors.forbidden("spec.ipFamilyPolicy", "may not be set for ExternalName services"))
        cname = str(spec.get("externalName") or "").removesuffix(".")   # a trailing dot: fully qualified
        if cname:
            errs += [errors.invalid("spec.externalName", cname, msg) for msg in is_dns1123_subdomain(cname)]
        else:
            errs.append(errors.required("spec.externalName"))
    return errs


def validate_service_node_ports(spec: Obj) -> list[FieldError]:
    """ValidateService's nodePort rules: none on a ClusterIP service, then no (protocol, nodePort)
    twice (two loops, as upstream's: every Forbidden before any Duplicate)."""
    ports = [(i, p) for i, p in enumerate(_list(spec.get("ports"))) if isinstance(p, dict) and p.get("nodePort")]
    errs: list[FieldError] = []
    if spec.get("type") == "ClusterIP":
        errs += [errors.forbidden(f"spec.ports[{i}].nodePort", "may not be used when `type` is 'ClusterIP'")
                 for i, _ in ports]
    seen: set[tuple[Any, Any]] = set()
    for i, p in ports:
        if (p.get("protocol"), p["nodePort"]) in seen:
            errs.append(errors.duplicate(f"spec.ports[{i}].nodePort", p["nodePort"]))
        seen.add((p.get("protocol"), p["nodePort"]))
    return errs


def _validate_service_port(p: Obj, require_name: bool, names: set[str], path: str) -> list[FieldError]:
    """Upstream: validateServicePort"""
    errs: list[FieldError] = []
    name = p.get("name") or ""
    if require_name and not name:
        errs.append(errors.required(path + ".name"))
    elif name:
        errs += _dns_label(name, path + ".name")
        if name in names:
            errs.append(errors.duplicate(path + ".name", name))
        names.add(name)
    errs += [errors.invalid(path + ".port", p.get("port", 0), msg) for msg in is_valid_port_num(p.get("port", 0))]
    errs += _required_enum(p.get("protocol"), path + ".protocol", ["SCTP", "TCP", "UDP"])
    errs += validate_port_num_or_name(p.get("targetPort", 0), path + ".targetPort")
    if p.get("appProtocol") is not None:
        errs += [errors.invalid(path + ".appProtocol", p["appProtocol"], msg)
                 for msg in is_qualified_name(str(p["appProtocol"]))]
    return errs


def validate_service_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateServiceUpdate (clusterIPs may not change once set) + ValidateService."""
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    errs += validate_upgrade_downgrade_cluster_ips(old_spec, new_spec)
    errs += validate_load_balancer_class(old_spec, new_spec)
    if _needs_health_check(old_spec) and _needs_health_check(new_spec) \
            and new_spec.get("healthCheckNodePort") != old_spec.get("healthCheckNodePort"):
        errs.append(errors.forbidden("spec.healthCheckNodePort", "field is immutable"))
    return errs + validate_service(new)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def validate_upgrade_downgrade_cluster_ips(old: Obj, new: Obj) -> list[FieldError]:
    """Upstream: validateUpgradeDowngradeClusterIPs — a secondary ClusterIP may be added or
    released (the latter with ipFamilyPolicy SingleStack), the primary never changes; a change
    to or from ExternalName or between headless forms is free."""
    if "ExternalName" in (new.get("type"), old.get("type")):
        return []
    new_ips, old_ips = _list(new.get("clusterIPs")), _list(old.get("clusterIPs"))
    if new_ips[:1] == old_ips[:1] == ["None"] and new.get("type") == old.get("type") == "ClusterIP":
        return []
    value, errs = new_ips, []
    if len(old_ips) == len(new_ips):
        errs += [errors.invalid(f"spec.clusterIPs[{i}]", value, "may not change once set")
                 for i, ip in enumerate(old_ips) if ip != new_ips[i]]
    elif len(old_ips) > len(new_ips):
        if not new_ips:
            errs.append(errors.invalid("spec.clusterIPs[0]", value, "primary clusterIP can not be unset"))
        elif new_ips[0] != old_ips[0]:
            errs.append(errors.invalid("spec.clusterIPs[0]", value, "may not change once set"))
        if len(new_ips) == 1 and new.get("ipFamilyPolicy") != "SingleStack":
            errs.append(errors.invalid("spec.clusterIPs[0]", value, "`ipFamilyPolicy` must be set to 'SingleStack' "
                                       "when releasing the secondary clusterIP"))
    elif old_ips and new_ips[0] != old_ips[0]:
        errs.append(errors.invalid("spec.clusterIPs[0]", value, "may not change once set"))
    return errs


# --- core/v1 Event -------------------------------------------------------------------------------


def validate_core_event(ev: Obj) -> list[FieldError]:
    """Upstream: legacyValidateEvent (the only rules for core/v1 Events)."""
    meta, involved = ev.get("metadata") or {}, ev.get("involvedObject") or {}
    ns, ins = meta.get("namespace") or "", involved.get("namespace") or ""
    errs: list[FieldError] = []
    if not ev.get("eventTime"):
        if (not ins and ns not in ("", "default")) or (ins and ns != ins):
            errs.append(errors.invalid("involvedObject.namespace", ins, "does not match event.namespace"))
    else:
        errs += validate_event_reporting(ev, ns, ins)
    return errs + [errors.invalid("namespace", ns, msg) for msg in is_dns1123_subdomain(ns)]


def validate_event_reporting(ev: Obj, ns: str, ins: str) -> list[FieldError]:
    """The eventTime branch of legacyValidateEvent (fields named as in core/v1)."""
    errs: list[FieldError] = []
    if not ins and ns not in ("default", "kube-system"):
        errs.append(errors.invalid("involvedObject.namespace", ins, "does not match event.namespace"))
    controller = ev.get("reportingController") or ev.get("reportingComponent") or ""
    if not controller:
        errs.append(errors.required("reportingController"))
    errs += [errors.invalid("reportingController", controller, msg) for msg in is_qualified_name(controller)]
    for key, limit in (("reportingInstance", 128), ("action", 128), ("reason", 128)):
        if not ev.get(key):
            errs.append(errors.required(key))
        if len(ev.get(key) or "") > limit:
            errs.append(errors.invalid(key, "", f"can have at most {limit} characters"))
    if len(ev.get("message") or "") > 1024:
        errs.append(errors.invalid("message", "", "can have at most 1024 characters"))
    return errs


def validate_core_event_meta(ev: Obj) -> list[FieldError]:
    """The registry's generic ObjectMeta check (path-segment names) run after strategy validation."""
    meta = ev.get("metadata") or {}
    errs: list[FieldError] = []
    if not meta.get("name"):
        errs.append(errors.required("metadata.name", "name or generateName is required"))
    else:
        errs += [errors.invalid("metadata.name", meta["name"], msg) for msg in name_is_path_segment(meta["name"], False)]
    return errs + m._validate_meta_common(meta, True, "metadata")



# --- persistent volumes and claims, limit ranges, resource quotas, endpoints -------------------
# Upstream: pkg/apis/core/validation/validation.go (ValidatePersistentVolume[Update],
# ValidatePersistentVolumeClaim[Update|StatusUpdate], ValidateLimitRange, ValidateResourceQuota
# [Update|StatusUpdate], ValidateEndpoints[Update]). Left out: per-source rules of the in-tree
# volume plugins beyond their required fields (docs/validation-coverage.md). Immutability errors
# carry no Go cmp.Diff of the specs (upstream appends one).

SUPPORTED_ACCESS_MODES = ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"]
SUPPORTED_RECLAIM_POLICIES = ["Delete", "Recycle", "Retain"]
SUPPORTED_VOLUME_MODES = ["Block", "Filesystem"]
SUPPORTED_PORT_PROTOCOLS = ["SCTP", "TCP", "UDP"]
BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
# The sources of a PersistentVolumeSpec in upstream's check order, with their required fields.
_PV_SOURCES: dict[str, tuple[str, ...]] = {
    "hostPath": ("path",), "gcePersistentDisk": ("pdName",), "awsElasticBlockStore": ("volumeID",),
    "glusterfs": ("endpoints", "path"), "flocker": (), "nfs": ("server", "path"), "rbd": ("monitors", "image"),
    "quobyte": ("registry", "volume"), "cephfs": ("monitors",), "iscsi": ("targetPortal", "iqn"),
    "cinder": ("volumeID",), "fc": (), "flexVolume": ("driver",), "azureFile": ("secretName", "shareName"),
    "vsphereVolume": ("volumePath",), "photonPersistentDisk": ("pdID",), "portworxVolume": ("volumeID",),
    "azureDisk": ("diskName", "diskURI"), "csi": ("driver", "volumeHandle"), "scaleIO": ("gateway", "system"),
    "local": ("path",), "storageos": ("volumeName",),
}
_STANDARD_RESOURCES = {
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "services", "replicationcontrollers",
    "resourcequotas", "secrets", "persistentvolumeclaims", "storage", "requests.storage", "configmaps",
    "services.nodeports", "services.loadbalancers"}
_STANDARD_QUOTA_RESOURCES = _STANDARD_RESOURCES - {"storage"}
_INTEGER_RESOURCES = {"pods", "services", "replicationcontrollers", "resourcequotas", "services.nodeports",
                      "services.loadbalancers", "secrets", "configmaps", "persistentvolumeclaims"}
_STANDARD_LIMIT_TYPES = {"Pod", "Container", "PersistentVolumeClaim"}
STANDARD_QUOTA_SCOPES = ["Terminating", "NotTerminating", "BestEffort", "NotBestEffort", "PriorityClass",
                         "CrossNamespacePodAffinity", "VolumeAttributesClass"]
_POD_COMPUTE_QUOTA = {"cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu", "requests.memory"}
_CONFLICTING_SCOPES = ({"BestEffort", "NotBestEffort"}, {"Terminating", "NotTerminating"})
_EXIST_ONLY_SCOPES = {"BestEffort", "NotBestEffort", "Terminating", "NotTerminating", "CrossNamespacePodAffinity"}
INVALID_IP = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"


def _dict_of(obj: Any, key: str) -> Obj:
    v = obj.get(key) if isinstance(obj, dict) else None
    return v if isinstance(v, dict) else {}


def _class_name(name: str, path: str) -> list[FieldError]:
    """Upstream: ValidateClassName (a DNS subdomain)."""
    return [errors.invalid(path, name, msg) for msg in is_dns1123_subdomain(name)]


def _positive_quantity(q: Any, path: str) -> list[FieldError]:
    """Upstream: validateBasicResource + ValidatePositiveQuantityValue"""
    value = parse_quantity(q)
    if value is None:
        return [errors.invalid(path, q, PARSE_ERROR)]
    return [] if value > 0 else [errors.invalid(path, str(q), "must be greater than zero")]


def _access_modes(modes: list[Any], path: str) -> list[FieldError]:
    errs = [errors.not_supported(path, mode, SUPPORTED_ACCESS_MODES) for mode in modes
            if mode not in SUPPORTED_ACCESS_MODES]
    if "ReadWriteOncePod" in modes and any(mode in SUPPORTED_ACCESS_MODES and mode != "ReadWriteOncePod"
                                           for mode in modes):
        errs.append(errors.forbidden(path, "may not use ReadWriteOncePod with other access modes"))
    return errs


# The path upstream's source validators are given where it differs from the field's JSON name.
_PV_SOURCE_ERROR_PATHS = {"gcePersistentDisk": "persistentDisk"}
# Upstream passes a *field.Path as the bad value of the dataSource/dataSourceRef cross-checks; its
# fields are unexported, so json.Marshal renders it `{}`.
_FIELD_PATH_VALUE = errors.JSONValue({})
# Upstream: resizeStatusSet (sets.List order).
RESIZE_STATUSES = ["ControllerResizeInProgress", "ControllerResizeInfeasible", "NodeResizeInProgress",
                   "NodeResizeInfeasible", "NodeResizePending"]


def _pv_sources(spec: Obj, path: str, node_affinity_specified: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    count = 0
    for source, required in _PV_SOURCES.items():
        src = spec.get(source)
        if src is None:
            continue
        if count and source != "flexVolume":          # upstream counts flexVolume without the check
            errs.append(errors.forbidden(f"{path}.{source}", "may not specify more than 1 volume type"))
            continue
        count += 1
        src_path = f"{path}.{_PV_SOURCE_ERROR_PATHS.get(source, source)}"
        for key in required:
            if not (src or {}).get(key):
                errs.append(errors.required(f"{src_path}.{key}"))
        if source in ("hostPath", "local") and ".." in str((src or {}).get("path") or "").split("/"):
            errs.append(errors.invalid(f"{path}.{source}.path", src["path"], "must not contain '..'"))
        if source == "nfs" and (src or {}).get("path") and not str(src["path"]).startswith("/"):
            errs.append(errors.invalid(f"{path}.nfs.path", src["path"], "must be an absolute path"))
        if source == "local" and not node_affinity_specified:
            errs.append(errors.required(path + ".nodeAffinity", "Local volume requires node affinity"))
    if not count:
        errs.append(errors.required(path, "must specify a volume type"))
    return errs


def _volume_node_affinity(affinity: Any, path: str) -> list[FieldError]:
    """Upstream: validateVolumeNodeAffinity"""
    required = (affinity or {}).get("required")
    if required is None:
        return [errors.required(path + ".required", "must specify required node constraints")]
    return validate_node_selector(required or {}, path + ".required")


def validate_persistent_volume_spec(spec: Obj, path: str = "spec") -> list[FieldError]:
    """Upstream: ValidatePersistentVolumeSpec (not inline)."""
    errs: list[FieldError] = []
    modes = spec.get("accessModes") or []
    if not modes:
        errs.append(errors.required(path + ".accessModes"))
    errs += _access_modes(modes, path + ".accessModes")
    capacity = spec.get("capacity") or {}
    if not capacity:
        errs.append(errors.required(path + ".capacity"))
    if "storage" not in capacity or len(capacity) > 1:
        errs.append(errors.not_supported(path + ".capacity", capacity, ["storage"]))
    for name, q in capacity.items():
        errs += _positive_quantity(q, f"{path}.capacity[{name}]")
    policy = spec.get("persistentVolumeReclaimPolicy")
    if policy and policy not in SUPPORTED_RECLAIM_POLICIES:
        errs.append(errors.not_supported(path + ".persistentVolumeReclaimPolicy", policy, SUPPORTED_RECLAIM_POLICIES))
    affinity = spec.get("nodeAffinity")
    if affinity is not None:
        errs += _volume_node_affinity(affinity, path + ".nodeAffinity")
    errs += _pv_sources(spec, path, affinity is not None)
    host_path = _dict_of(spec, "hostPath").get("path")
    if host_path and host_path.rstrip("/") == "" and policy == "Recycle":
        errs.append(errors.forbidden(path + ".persistentVolumeReclaimPolicy",
                                     "may not be 'recycle' for a hostPath mount of '/'"))
    if spec.get("storageClassName"):
        errs += _class_name(spec["storageClassName"], path + ".storageClassName")
    mode = spec.get("volumeMode")
    if mode is not None and mode not in SUPPORTED_VOLUME_MODES:
        errs.append(errors.not_supported(path + ".volumeMode", mode, SUPPORTED_VOLUME_MODES))
    vac = spec.get("volumeAttributesClassName")
    if vac is not None:
        if not vac:
            errs.append(errors.required(path + ".volumeAttributesClassName", "an empty string is disallowed"))
        else:
            errs += _class_name(vac, path + ".volumeAttributesClassName")
        if spec.get("csi") is None:
            errs.append(errors.required(path + ".csi", "has to be specified when using volumeAttributesClassName"))
    return errs


def validate_persistent_volume(pv: Obj) -> list[FieldError]:
    """Upstream: ValidatePersistentVolume (name: a DNS subdomain)."""
    errs = m.validate_object_meta(pv.get("metadata") or {}, False, name_is_dns_subdomain)
    return errs + validate_persistent_volume_spec(pv.get("spec") or {})


def _volume_source_of(spec: Obj) -> Obj:
    return {k: spec[k] for k in _PV_SOURCES if spec.get(k) is not None}


def validate_persistent_volume_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidatePersistentVolumeUpdate — the volume source and mode are immutable; a CSI
    source may gain a controllerExpandSecretRef; nodeAffinity may be set once (it is immutable
    while the MutablePVNodeAffinity gate is off); volumeAttributesClassName may not be unset."""
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    errs += validate_persistent_volume(new)
    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    new_source, old_source = _volume_source_of(new_spec), _volume_source_of(old_spec)
    old_csi, new_csi = old_source.get("csi"), new_source.get("csi")
    if isinstance(old_csi, dict) and isinstance(new_csi, dict) and "controllerExpandSecretRef" not in old_csi:
        new_source["csi"] = {k: v for k, v in new_csi.items() if k != "controllerExpandSecretRef"}
    if not m.semantic_equal(new_source, old_source):
        errs.append(errors.forbidden("spec.persistentvolumesource",
                                     "spec.persistentvolumesource is immutable after creation"))
    errs += m.immutable(new_spec.get("volumeMode"), old_spec.get("volumeMode"), "volumeMode")
    if old_spec.get("nodeAffinity") is not None:
        errs += m.immutable(new_spec.get("nodeAffinity"), old_spec.get("nodeAffinity"), "nodeAffinity")
    if old_spec.get("volumeAttributesClassName") is not None and new_spec.get("volumeAttributesClassName") is None:
        errs.append(errors.forbidden("spec.volumeAttributesClassName", "update from non-nil value to nil is forbidden"))
    return errs


def validate_persistent_volume_status_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidatePersistentVolumeStatusUpdate"""
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    if not (new.get("metadata") or {}).get("resourceVersion"):
        errs.append(errors.required("resourceVersion"))
    return errs


def _data_source(ref: Obj, path: str, namespaced: bool) -> list[FieldError]:
    """Upstream: validateDataSource / validateDataSourceRef (namespaced: the latter)."""
    errs: list[FieldError] = []
    if not ref.get("name"):
        errs.append(errors.required(path + ".name"))
    kind = ref.get("kind") or ""
    if not kind:
        errs.append(errors.required(path + ".kind"))
    group = ref.get("apiGroup") or ""
    if not group and kind != "PersistentVolumeClaim":
        errs.append(errors.invalid(path, kind, "must be 'PersistentVolumeClaim' when referencing the default apiGroup"))
    if group:
        errs += [errors.invalid(path + ".apiGroup", group, msg) for msg in is_dns1123_subdomain(group)]
    ns = ref.get("namespace") if namespaced else None
    if ns:
        errs += [errors.invalid(path + ".namespace", ns, msg) for msg in name_is_dns_label(ns, False)]
    return errs


def _data_source_equal(ds: Obj, ref: Obj) -> bool:
    """Upstream: isDataSourceEqualDataSourceRef (apiGroup compared as a pointer: unset != "")."""
    return ds.get("apiGroup") == ref.get("apiGroup") and ds.get("kind") == ref.get("kind") \
        and ds.get("name") == ref.get("name")


def validate_persistent_volume_claim_spec(spec: Obj, path: str = "spec") -> list[FieldError]:
    """Upstream: ValidatePersistentVolumeClaimSpec"""
    errs: list[FieldError] = []
    modes = spec.get("accessModes") or []
    if not modes:
        errs.append(errors.required(path + ".accessModes", "at least 1 access mode is required"))
    if spec.get("selector") is not None:
        errs += m.validate_label_selector(spec["selector"], path + ".selector")
    errs += _access_modes(modes, path + ".accessModes")
    requests = _dict_of(spec.get("resources") or {}, "requests")
    storage_path = f"{path}.resources[storage]"
    if "storage" not in requests:
        errs.append(errors.required(storage_path))
    else:
        errs += _positive_quantity(requests["storage"], storage_path)
    if spec.get("storageClassName"):
        errs += _class_name(spec["storageClassName"], path + ".storageClassName")
    mode = spec.get("volumeMode")
    if mode is not None and mode not in SUPPORTED_VOLUME_MODES:
        errs.append(errors.not_supported(path + ".volumeMode", mode, SUPPORTED_VOLUME_MODES))
    ds, ref = spec.get("dataSource"), spec.get("dataSourceRef")
    if ds is not None:
        errs += _data_source(ds or {}, path + ".dataSource", False)
    if ref is not None:
        errs += _data_source(ref or {}, path + ".dataSourceRef", True)
    if ref and ref.get("namespace"):
        if ds is not None:
            errs.append(errors.invalid(path, _FIELD_PATH_VALUE,
                                       "may not be specified when dataSourceRef.namespace is specified"))
    elif ds is not None and ref is not None and not _data_source_equal(ds or {}, ref or {}):
        errs.append(errors.invalid(path, _FIELD_PATH_VALUE, "must match dataSourceRef"))
    if spec.get("volumeAttributesClassName"):
        errs += _class_name(spec["volumeAttributesClassName"], path + ".volumeAttributesClassName")
    return errs


def validate_persistent_volume_claim(pvc: Obj) -> list[FieldError]:
    """Upstream: ValidatePersistentVolumeClaim"""
    errs = m.validate_object_meta(pvc.get("metadata") or {}, True, name_is_dns_subdomain)
    return errs + validate_persistent_volume_claim_spec(pvc.get("spec") or {})


def _storage_class_upgrade(new_meta: Obj, old_meta: Obj, new_spec: Obj, old_spec: Obj) -> list[FieldError]:
    """The storage-class part of ValidatePersistentVolumeClaimUpdate: the beta annotation is
    immutable, and storageClassName may be set once from the annotation
    (validateStorageClassUpgradeFromAnnotation) or from nil (validateStorageClassUpgradeFromNil).
    Drops an allowed change from new_spec so the spec comparison does not see it."""
    new_ann, old_ann = new_meta.get("annotations") or {}, old_meta.get("annotations") or {}
    old_class = old_ann.get(BETA_STORAGE_CLASS_ANNOTATION)
    new_name, old_name = new_spec.get("storageClassName"), old_spec.get("storageClassName")
    if old_class is not None and old_name is None and new_name is not None and new_name == old_class \
            and new_ann.get(BETA_STORAGE_CLASS_ANNOTATION, old_class) == old_class:
        new_spec.pop("storageClassName")
        return []
    errs: list[FieldError] = []
    new_value = new_ann.get(BETA_STORAGE_CLASS_ANNOTATION) or ""
    if new_value != (old_class or ""):
        errs.append(errors.invalid(f"metadata.annotations.{BETA_STORAGE_CLASS_ANNOTATION}", new_value,
                                   m.FIELD_IMMUTABLE))
    if new_name is not None and old_name is None and (old_class is None or new_name == old_class):
        new_spec.pop("storageClassName")
    return errs


def validate_persistent_volume_claim_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidatePersistentVolumeClaimUpdate — the spec is immutable except volumeName
    (set once), storageClassName (set once, from nil or the beta annotation),
    volumeAttributesClassName (not back to nil or ""), and for a bound claim
    resources.requests.storage (not below status.capacity)."""
    new_meta, old_meta = new.get("metadata") or {}, old.get("metadata") or {}
    errs = m.validate_object_meta_update(new_meta, old_meta)
    errs += validate_persistent_volume_claim(new)
    new_spec, old_spec = dict(new.get("spec") or {}), dict(old.get("spec") or {})
    if not old_spec.get("volumeName"):
        old_spec["volumeName"] = new_spec.get("volumeName")
    errs += _storage_class_upgrade(new_meta, old_meta, new_spec, old_spec)
    old_storage = _dict_of(old_spec.get("resources") or {}, "requests").get("storage")
    new_storage = _dict_of(new_spec.get("resources") or {}, "requests").get("storage")
    if (new.get("status") or {}).get("phase") == "Bound" and _dict_of(new_spec.get("resources") or {}, "requests"):
        resources = dict(new_spec.get("resources") or {})
        resources["requests"] = {**_dict_of(resources, "requests"), "storage": old_storage}
        new_spec["resources"] = resources
    for spec in (new_spec, old_spec):                     # compared below on its own
        spec.pop("volumeAttributesClassName", None)
    if not m.semantic_equal(new_spec, old_spec):
        errs.append(errors.forbidden("spec", "spec is immutable after creation except resources.requests and "
                                             "volumeAttributesClassName for bound claims"))
    new_size, old_size = parse_quantity(new_storage), parse_quantity(old_storage)
    status_size = parse_quantity(_dict_of(old.get("status") or {}, "capacity").get("storage"))
    if new_size is not None and old_size is not None and new_size < old_size \
            and new_size <= (status_size or 0):
        errs.append(errors.forbidden("spec.resources.requests.storage", "field can not be less than status.capacity"))
    errs += m.immutable((new.get("spec") or {}).get("volumeMode"), (old.get("spec") or {}).get("volumeMode"),
                        "volumeMode")
    new_vac = (new.get("spec") or {}).get("volumeAttributesClassName")
    if (old.get("spec") or {}).get("volumeAttributesClassName") is not None:
        if new_vac is None:
            errs.append(errors.forbidden("spec.volumeAttributesClassName",
                                         "update from non-nil value to nil is forbidden"))
        elif new_vac == "":
            errs.append(errors.forbidden("spec.volumeAttributesClassName",
                                         "update from non-nil value to an empty string is forbidden"))
    return errs


def _basic_resource(q: Any, path: str) -> list[FieldError]:
    """Upstream: validateBasicResource (the value is Quantity.Value(), rounded up)."""
    value = parse_quantity(q)
    if value is None:
        return [errors.invalid(path, q, PARSE_ERROR)]
    return [errors.invalid(path, math.ceil(value), "must be a valid resource quantity")] if value < 0 else []


def _claim_resource_key(key: str, path: str) -> list[FieldError]:
    """Upstream: validatePersistentVolumeClaimResourceKey (native names: only storage)."""
    errs = [errors.invalid(path, key, msg) for msg in is_qualified_name(key)]
    if not errs and ("/" not in key or "kubernetes.io/" in key) and key != "storage":
        errs.append(errors.not_supported(path, key, ["storage"]))
    return errs


def validate_persistent_volume_claim_status_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidatePersistentVolumeClaimStatusUpdate (capacity, and the allocated
    resources and their resize statuses of RecoverVolumeExpansionFailure, GA in 1.34)."""
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    if not (new.get("metadata") or {}).get("resourceVersion"):
        errs.append(errors.required("resourceVersion"))
    if not (new.get("spec") or {}).get("accessModes"):
        errs.append(errors.required("Spec.accessModes"))
    status = new.get("status") or {}
    for name, q in _dict_of(status, "capacity").items():
        errs += _basic_resource(q, f"status.capacity[{name}]")
    status_path = "status.allocatedResourceStatus"
    for key, value in _dict_of(status, "allocatedResourceStatuses").items():
        errs += _claim_resource_key(key, status_path)
        if value not in RESIZE_STATUSES:
            errs.append(errors.not_supported(status_path, key, RESIZE_STATUSES))
    for key, q in _dict_of(status, "allocatedResources").items():
        key_errs = _claim_resource_key(key, "status.allocatedResources")
        if key_errs:
            errs += key_errs
            continue
        basic = _basic_resource(q, f"status.allocatedResources[{key}]")
        errs += basic or _resource_quantity_value("storage", q, f"status.allocatedResources[{key}]")
    return errs


def _is_quota_huge_page(name: str) -> bool:
    """Upstream: helper.IsQuotaHugePageResourceName"""
    return name.startswith(("hugepages-", "requests.hugepages-"))


def _resource_name(name: str, path: str) -> list[FieldError]:
    """Upstream: validateResourceName"""
    errs = [errors.invalid(path, name, msg) for msg in is_qualified_name(name)]
    if not errs and "/" not in name and name not in _STANDARD_RESOURCES and not _is_quota_huge_page(name):
        errs.append(errors.invalid(path, name, "must be a standard resource type or fully qualified"))
    return errs


def _quota_resource_name(name: str, path: str) -> list[FieldError]:
    """Upstream: ValidateResourceQuotaResourceName: validateResourceName's errors, and then,
    for a plain name, whether quota tracks it (both can be said of one name: "foo")."""
    errs = _resource_name(name, path)
    if "/" not in name and name not in _STANDARD_QUOTA_RESOURCES and not _is_quota_huge_page(name):
        errs.append(errors.invalid(path, name, "must be a standard resource for quota"))
    return errs


def _is_integer_resource(name: str) -> bool:
    """Upstream: helper.IsIntegerResourceName (object counts and extended resources)."""
    return name in _INTEGER_RESOURCES or _is_extended_resource(name)


def _resource_quantity_value(name: str, q: Any, path: str) -> list[FieldError]:
    """Upstream: ValidateResourceQuantityValue (non-negative; whole numbers for counts)."""
    value = parse_quantity(q)
    if value is None:
        return [errors.invalid(path, q, PARSE_ERROR)]
    if value < 0:
        return [errors.invalid(path, str(q), m.IS_NEGATIVE)]
    if _is_integer_resource(name) and value.denominator != 1:
        return [errors.invalid(path, str(q), "must be an integer")]
    return []


def _scope_valid_for(scope: str, resource: str) -> bool:
    """Upstream: helper.IsResourceQuotaScopeValidForResource"""
    if scope in ("Terminating", "NotTerminating", "NotBestEffort", "PriorityClass", "CrossNamespacePodAffinity"):
        return resource == "pods" or resource in _POD_COMPUTE_QUOTA
    if scope == "BestEffort":
        return resource == "pods"
    if scope == "VolumeAttributesClass":
        return resource in ("persistentvolumeclaims", "requests.storage")
    return True


def _quota_scopes(spec: Obj, hard: Obj) -> list[FieldError]:
    """Upstream: validateResourceQuotaScopes"""
    scopes = spec.get("scopes") or []
    errs: list[FieldError] = []
    for scope in scopes:
        if scope not in STANDARD_QUOTA_SCOPES:
            errs.append(errors.invalid("spec.scopes", scopes, "unsupported scope"))
        for resource in sorted(hard):
            if resource in _STANDARD_QUOTA_RESOURCES and not _scope_valid_for(scope, resource):
                errs.append(errors.invalid("spec.scopes", scopes, "unsupported scope applied to resource"))
    errs += [errors.invalid("spec.scopes", scopes, "conflicting scopes")
             for pair in _CONFLICTING_SCOPES if pair <= set(scopes)]
    return errs


def _quota_scope_selector(spec: Obj, hard: Obj) -> list[FieldError]:
    """Upstream: validateScopedResourceSelectorRequirement"""
    selector = spec.get("scopeSelector")
    if selector is None:
        return []
    path = "spec.scopeSelector"
    errs: list[FieldError] = []
    names: set[str] = set()
    for req in (selector or {}).get("matchExpressions") or []:
        scope, op, values = req.get("scopeName"), req.get("operator"), req.get("values") or []
        if scope not in STANDARD_QUOTA_SCOPES:
            errs.append(errors.invalid(path + ".matchExpressions.scopeName", scope, "unsupported scope"))
        for resource in sorted(hard):
            if resource in _STANDARD_QUOTA_RESOURCES and not _scope_valid_for(scope, resource):
                errs.append(errors.invalid(path + ".matchExpressions.scopeName", scope,
                                           "unsupported scope applied to resource"))
        if scope in _EXIST_ONLY_SCOPES and op != "Exists":
            errs.append(errors.invalid(
                path + ".matchExpressions.operator", op,
                "must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, "
                "ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort "
                "or ResourceQuotaScopeCrossNamespacePodAffinity"))
        if op in ("In", "NotIn"):
            if not values:
                errs.append(errors.required(path + ".matchExpressions.values",
                                            "must be at least one value when `operator` is 'In' or 'NotIn' for "
                                            "scope selector"))
        elif op in ("Exists", "DoesNotExist"):
            if values:
                errs.append(errors.invalid(path + ".matchExpressions.values", values,
                                           "must be no value when `operator` is 'Exist' or 'DoesNotExist' for "
                                           "scope selector"))
        else:
            errs.append(errors.invalid(path + ".matchExpressions.operator", op, "not a valid selector operator"))
        names.add(scope)
    errs += [errors.invalid(path, selector, "conflicting scopes") for pair in _CONFLICTING_SCOPES if pair <= names]
    return errs


def _quota_resource_list(values: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for name, q in values.items():
        rp = f"{path}[{name}]"
        errs += _quota_resource_name(name, rp) + _resource_quantity_value(name, q, rp)
    return errs


def _quota_status(status: Obj) -> list[FieldError]:
    return _quota_resource_list(_dict_of(status, "hard"), "status.hard") + \
        _quota_resource_list(_dict_of(status, "used"), "status.used")


def validate_resource_quota(quota: Obj) -> list[FieldError]:
    """Upstream: ValidateResourceQuota (spec.hard names and values, scopes, scope selector, status)."""
    errs = m.validate_object_meta(quota.get("metadata") or {}, True, name_is_dns_subdomain)
    spec = quota.get("spec") or {}
    hard = _dict_of(spec, "hard")
    errs += _quota_resource_list(hard, "spec.hard") + _quota_scopes(spec, hard) + _quota_scope_selector(spec, hard)
    return errs + _quota_status(quota.get("status") or {})


def validate_resource_quota_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateResourceQuotaUpdate — the scopes cannot change."""
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    spec = new.get("spec") or {}
    hard = _dict_of(spec, "hard")
    errs += _quota_resource_list(hard, "spec.hard") + _quota_scopes(spec, hard) + _quota_scope_selector(spec, hard)
    new_scopes, old_scopes = spec.get("scopes") or [], (old.get("spec") or {}).get("scopes") or []
    if set(new_scopes) != set(old_scopes):
        errs.append(errors.invalid("spec.scopes", new_scopes, m.FIELD_IMMUTABLE))
    return errs


def validate_resource_quota_status_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateResourceQuotaStatusUpdate"""
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    if not (new.get("metadata") or {}).get("resourceVersion"):
        errs.append(errors.required("metadata.resourceVersion"))
    return errs + _quota_status(new.get("status") or {})


def _limit_range_type(value: str, path: str) -> list[FieldError]:
    """Upstream: validateLimitRangeTypeName"""
    errs = [errors.invalid(path, value, msg) for msg in is_qualified_name(value)]
    if not errs and "/" not in value and value not in _STANDARD_LIMIT_TYPES:
        errs.append(errors.invalid(path, value, "must be a standard limit type or fully qualified"))
    return errs


def _limit_range_resource(limit_type: str, name: str, path: str) -> list[FieldError]:
    """Upstream: validateLimitRangeResourceName"""
    if limit_type in ("Pod", "Container"):
        return _validate_container_resource_name(name, path)
    return _resource_name(name, path)


def _limit_range_item(item: Obj, path: str) -> list[FieldError]:
    limit_type = item.get("type") or ""
    errs = _limit_range_type(limit_type, path + ".type")
    parsed: dict[str, dict[str, tuple[Any, Any]]] = {}
    keys: list[str] = []
    sections = ["max", "min"] + (["default", "defaultRequest"] if limit_type != "Pod" else []) + ["maxLimitRequestRatio"]
    if limit_type == "Pod":
        errs += [errors.forbidden(f"{path}.{s}", "may not be specified when `type` is 'Pod'")
                 for s in ("default", "defaultRequest") if _dict_of(item, s)]
    if limit_type == "PersistentVolumeClaim" and "storage" not in _dict_of(item, "min") \
            and "storage" not in _dict_of(item, "max"):
        errs.append(errors.required(path + ".limits",
                                    "either minimum or maximum storage value is required, but neither was provided"))
    for section in sections:
        parsed[section] = {}
        for name, q in _dict_of(item, section).items():
            errs += _limit_range_resource(limit_type, name, f"{path}.{section}[{name}]")
            value = parse_quantity(q)
            if value is None:
                errs.append(errors.invalid(f"{path}.{section}[{name}]", q, PARSE_ERROR))
                continue
            parsed[section][name] = (str(q), value)
            if name not in keys:
                keys.append(name)
    for k in keys:
        errs += _limit_range_bounds(k, parsed, path)
    return errs


def _limit_range_bounds(k: str, parsed: dict[str, dict[str, tuple[Any, Any]]], path: str) -> list[FieldError]:
    """The order checks of ValidateLimitRange for one resource: min ≤ defaultRequest ≤ default ≤ max."""
    mn, mx = parsed["min"].get(k), parsed["max"].get(k)
    df, dr = parsed.get("default", {}).get(k), parsed.get("defaultRequest", {}).get(k)
    ratio = parsed["maxLimitRequestRatio"].get(k)
    errs: list[FieldError] = []
    if mn and mx and mn[1] > mx[1]:
        errs.append(errors.invalid(f"{path}.min[{k}]", mn[0], f"min value {mn[0]} is greater than max value {mx[0]}"))
    if dr and mn and mn[1] > dr[1]:
        errs.append(errors.invalid(f"{path}.defaultRequest[{k}]", dr[0],
                                   f"min value {mn[0]} is greater than default request value {dr[0]}"))
    if dr and mx and dr[1] > mx[1]:
        errs.append(errors.invalid(f"{path}.defaultRequest[{k}]", dr[0],
                                   f"default request value {dr[0]} is greater than max value {mx[0]}"))
    if dr and df and dr[1] > df[1]:
        errs.append(errors.invalid(f"{path}.defaultRequest[{k}]", dr[0],
                                   f"default request value {dr[0]} is greater than default limit value {df[0]}"))
    if df and mn and mn[1] > df[1]:
        errs.append(errors.invalid(f"{path}.default[{k}]", mn[0],
                                   f"min value {mn[0]} is greater than default value {df[0]}"))
    if df and mx and df[1] > mx[1]:
        errs.append(errors.invalid(f"{path}.default[{k}]", mx[0],
                                   f"default value {df[0]} is greater than max value {mx[0]}"))
    if ratio and ratio[1] < 1:
        errs.append(errors.invalid(f"{path}.maxLimitRequestRatio[{k}]", ratio[0], f"ratio {ratio[0]} is less than 1"))
    if ratio and mn and mx and mn[1] > 0:
        limit = mx[1] / mn[1]
        if ratio[1] > limit:
            errs.append(errors.invalid(f"{path}.maxLimitRequestRatio[{k}]", ratio[0],
                                       f"ratio {ratio[0]} is greater than max/min = {float(limit):f}"))
    overcommit = ("/" not in k or "kubernetes.io/" in k) and not k.startswith("hugepages-")   # IsOverCommitAllowed
    if not overcommit and df and dr and df[1] != dr[1]:
        errs.append(errors.invalid(f"{path}.defaultRequest[{k}]", dr[0],
                                   f"default value {df[0]} must equal to defaultRequest value {dr[0]} in {k}"))
    return errs


def validate_limit_range(lr: Obj) -> list[FieldError]:
    """Upstream: ValidateLimitRange (types once each, resource names, min ≤ defaults ≤ max, ratios)."""
    errs = m.validate_object_meta(lr.get("metadata") or {}, True, name_is_dns_subdomain)
    seen: set[str] = set()
    for i, item in enumerate((lr.get("spec") or {}).get("limits") or []):
        path = f"spec.limits[{i}]"
        errs += _limit_range_item(item, path)
        if item.get("type") in seen:
            errs.append(errors.duplicate(path + ".type", item.get("type")))
        seen.add(item.get("type"))
    return errs


def validate_limit_range_update(new: Obj, old: Obj) -> list[FieldError]:
    return m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {}) + \
        [e for e in validate_limit_range(new) if not e.field.startswith("metadata.")]


def validate_endpoint_ip(ip: str, path: str) -> list[FieldError]:
    """Upstream: ValidateEndpointIP (no unspecified, loopback, link-local or link-local multicast)."""
    try:
        addr = ipaddress.ip_address(ip)
    except ValueError:
        return []
    if addr.is_unspecified:
        return [errors.invalid(path, ip, "may not be unspecified (0.0.0.0)")]
    if addr.is_loopback:
        return [errors.invalid(path, ip, "may not be in the loopback range (127.0.0.0/8, ::1/128)")]
    if addr.is_link_local:
        return [errors.invalid(path, ip, "may not be in the link-local range (169.254.0.0/16, fe80::/10)")]
    if addr in ipaddress.ip_network("224.0.0.0/24") or addr in ipaddress.ip_network("ff02::/16"):
        return [errors.invalid(path, ip, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)")]
    return []


def is_valid_ip_for_legacy_field(ip: Any, path: str) -> list[FieldError]:
    """Upstream: IsValidIPForLegacyField (IPv4 octets may carry leading zeros)."""
    text = str(ip or "")
    try:
        ipaddress.ip_address(text)
        return []
    except ValueError:
        parts = text.split(".")
        if len(parts) == 4 and all(p.isdigit() and len(p) <= 3 and int(p) < 256 for p in parts):
            return []
        return [errors.invalid(path, ip or "", INVALID_IP)]


def _endpoint_address(addr: Obj, path: str) -> list[FieldError]:
    errs = is_valid_ip_for_legacy_field(addr.get("ip"), path + ".ip")
    if addr.get("hostname"):
        errs += _dns_label(addr["hostname"], path + ".hostname")
    if addr.get("nodeName") is not None:
        errs += [errors.invalid(path + ".nodeName", addr["nodeName"], msg)
                 for msg in is_dns1123_subdomain(addr["nodeName"])]
    if not errs:
        errs += validate_endpoint_ip(addr.get("ip") or "", path + ".ip")
    return errs


def _endpoint_port(port: Obj, require_name: bool, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if require_name and not port.get("name"):
        errs.append(errors.required(path + ".name"))
    elif port.get("name"):
        errs += _dns_label(port["name"], path + ".name")
    errs += [errors.invalid(path + ".port", port.get("port", 0), msg) for msg in is_valid_port_num(port.get("port", 0))]
    protocol = port.get("protocol")
    if not protocol:
        errs.append(errors.required(path + ".protocol"))
    elif protocol not in SUPPORTED_PORT_PROTOCOLS:
        errs.append(errors.not_supported(path + ".protocol", protocol, SUPPORTED_PORT_PROTOCOLS))
    if port.get("appProtocol") is not None:
        errs += [errors.invalid(path + ".appProtocol", port["appProtocol"], msg)
                 for msg in is_qualified_name(port["appProtocol"])]
    return errs


def validate_endpoints(ep: Obj) -> list[FieldError]:
    """Upstream: ValidateEndpoints / validateEndpointSubsets"""
    errs = m.validate_object_meta(ep.get("metadata") or {}, True, name_is_dns_subdomain)
    for i, ss in enumerate(ep.get("subsets") or []):
        path = f"subsets[{i}]"
        if not ss.get("addresses") and not ss.get("notReadyAddresses"):
            errs.append(errors.required(path, "must specify `addresses` or `notReadyAddresses`"))
        for key in ("addresses", "notReadyAddresses"):
            for j, addr in enumerate(ss.get(key) or []):
                errs += _endpoint_address(addr, f"{path}.{key}[{j}]")
        ports = ss.get("ports") or []
        for j, port in enumerate(ports):
            errs += _endpoint_port(port, len(ports) > 1, f"{path}.ports[{j}]")
    return errs


def validate_endpoints_update(new: Obj, old: Obj) -> list[FieldError]:
    return m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {}) + \
        [e for e in validate_endpoints(new) if not e.field.startswith("metadata.")]


# --- ReplicationController and PodTemplate (appended; the workloads kinds of issue 11) ----------


def validate_replication_controller(rc: Obj) -> list[FieldError]:
    """Upstream: ValidateReplicationController (names: ValidateReplicationControllerName)."""
    errs = m.validate_object_meta(rc.get("metadata") or {}, True, name_is_dns_subdomain)
    return errs + validate_replication_controller_spec(rc.get("spec") or {}, "spec")


def validate_replication_controller_spec(spec: Obj, path: str) -> list[FieldError]:
    """Upstream: ValidateReplicationControllerSpec (ValidateNonEmptySelector,
    ValidatePodTemplateSpecForRC)."""
    errs = m.nonnegative(spec.get("minReadySeconds"), path + ".minReadySeconds")
    selector = spec.get("selector") or {}
    if not selector:
        errs.append(errors.required(path + ".selector"))
    errs += m.nonnegative(spec.get("replicas"), path + ".replicas")
    template = spec.get("template")
    if template is None:
        return errs + [errors.required(path + ".template")]
    tpath = path + ".template"
    labels = (template.get("metadata") or {}).get("labels") or {}
    if selector and any(labels.get(k) != v for k, v in selector.items()):
        errs.append(errors.invalid(tpath + ".metadata.labels", labels, "`selector` does not match template `labels`"))
    errs += validate_pod_template_spec(template, tpath)
    tspec = template.get("spec") or {}
    if tspec.get("restartPolicy", "") != "Always":
        errs.append(errors.not_supported(tpath + ".spec.restartPolicy", tspec.get("restartPolicy", ""), ["Always"]))
    if tspec.get("activeDeadlineSeconds") is not None:
        errs.append(errors.forbidden(tpath + ".spec.activeDeadlineSeconds",
                                     "activeDeadlineSeconds in ReplicationController is not Supported"))
    return errs


def validate_replication_controller_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateReplicationControllerUpdate (the selector may change)."""
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    return errs + validate_replication_controller_spec(new.get("spec") or {}, "spec")


def validate_replication_controller_status_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateReplicationControllerStatusUpdate / ValidateReplicationControllerStatus"""
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    status = new.get("status") or {}
    for key in ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration"):
        errs += m.nonnegative(status.get(key), f"status.{key}")
    replicas = status.get("replicas") or 0
    for key in ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"):
        if (status.get(key) or 0) > replicas:
            errs.append(errors.invalid(f"status.{key}", status.get(key) or 0, "cannot be greater than status.replicas"))
    if (status.get("availableReplicas") or 0) > (status.get("readyReplicas") or 0):
        errs.append(errors.invalid("status.availableReplicas", status.get("availableReplicas") or 0,
                                   "cannot be greater than readyReplicas"))
    return errs


def replication_controller_warnings(rc: Obj) -> list[str]:
    """Upstream: rcStrategy.WarningsOnCreate (the name ends up in pod hostnames)."""
    name = (rc.get("metadata") or {}).get("name") or ""
    msgs = is_dns1123_label(name)
    if not name or not msgs:
        return []
    return ["metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; "
            f"a DNS label is recommended: [{' '.join(msgs)}]"]


def validate_pod_template(pt: Obj) -> list[FieldError]:
    """Upstream: ValidatePodTemplate (names: ValidatePodName, a DNS subdomain)."""
    errs = m.validate_object_meta(pt.get("metadata") or {}, True, name_is_dns_subdomain)
    return errs + validate_pod_template_spec(pt.get("template") or {}, "template")


def validate_pod_template_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidatePodTemplateUpdate"""
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    return errs + validate_pod_template_spec(new.get("template") or {}, "template")
