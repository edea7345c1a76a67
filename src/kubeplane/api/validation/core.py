"""core/v1 validation: pod specs (shared by Pods and pod templates) and the other core kinds.

Upstream: pkg/apis/core/validation/validation.go. Only the checks that matter for the
fields we serve are mirrored; each function names its upstream counterpart.
"""
from __future__ import annotations

import ipaddress
from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

from . import meta as m
from .memo import remember_valid
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
from .quantity import PARSE_ERROR, parse_quantity

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


@remember_valid
def validate_pod_spec(spec: Obj, path: str, is_pod: bool) -> list[FieldError]:
    """Upstream: ValidatePodSpec (containers, volumes, policies, scheduling fields).

    Remembered when valid: the pods of a ReplicaSet repeat their template's spec."""
    errs: list[FieldError] = []
    if spec.get("terminationGracePeriodSeconds") is None:
        errs.append(errors.required(path + ".terminationGracePeriodSeconds"))
    volumes, verrs = validate_volumes(spec.get("volumes") or [], path + ".volumes")
    errs += verrs
    errs += validate_containers(spec.get("containers") or [], volumes, path + ".containers")
    errs += validate_init_containers(spec.get("initContainers") or [], spec.get("containers") or [], volumes,
                                     path + ".initContainers")
    errs += _validate_host_network_ports(spec, path, is_pod)
    errs += _required_enum(spec.get("restartPolicy"), path + ".restartPolicy", ["Always", "OnFailure", "Never"])
    errs += _required_enum(spec.get("dnsPolicy"), path + ".dnsPolicy",
                           ["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"])
    errs += m.validate_labels(spec.get("nodeSelector"), path + ".nodeSelector")
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
    """Upstream: ValidateResourceRequirements (names, non-negative quantities, requests ≤ limits).

    Example: limits cpu "1", requests cpu "1500m" ->
    `…resources.requests: Invalid value: "1500m": must be less than or equal to cpu limit of 1`.
    Hugepages are not overcommittable, so their request must equal the limit.
    """
    errs: list[FieldError] = []
    limits, requests = res.get("limits") or {}, res.get("requests") or {}
    parsed_limits = {}
    for kind, values in (("limits", limits), ("requests", requests)):
        for name, q in values.items():
            qp = f"{path}.{kind}[{name}]"
            errs += _validate_container_resource_name(name, qp)
            value = parse_quantity(q)
            if value is None:
                errs.append(errors.invalid(qp, q, PARSE_ERROR))
            elif value < 0:
                errs.append(errors.invalid(qp, str(q), m.IS_NEGATIVE))
            elif kind == "limits":
                parsed_limits[name] = value
            elif name in parsed_limits:
                errs += _request_vs_limit(name, q, value, limits[name], parsed_limits[name], path + ".requests")
    return errs


def _request_vs_limit(name: str, q: Any, value: Any, lq: Any, limit: Any, path: str) -> list[FieldError]:
    if name.startswith("hugepages-") and value != limit:
        return [errors.invalid(path, str(q), f"must be equal to {name} limit of {lq}")]
    if value > limit:
        return [errors.invalid(path, str(q), f"must be less than or equal to {name} limit of {lq}")]
    return []


def _validate_container_resource_name(name: str, path: str) -> list[FieldError]:
    """Upstream: validateContainerResourceName (standard names, or domain-prefixed extended ones)."""
    errs = [errors.invalid(path, name, msg) for msg in is_qualified_name(name)]
    if "/" not in name and name not in _STANDARD_CONTAINER_RESOURCES and not name.startswith("hugepages-"):
        errs.append(errors.invalid(path, name, "must be a standard resource for containers"))
    return errs


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


def validate_pod(pod: Obj) -> list[FieldError]:
    """Upstream: ValidatePodCreate"""
    errs = _validate_pod_metadata_and_spec(pod)
    if (pod.get("spec") or {}).get("ephemeralContainers"):
        errs.append(errors.forbidden("spec.ephemeralContainers", "cannot be set on create"))
    return errs


def _validate_pod_metadata_and_spec(pod: Obj) -> list[FieldError]:
    """Upstream: validatePodMetadataAndSpec (pods, unlike templates, reject padded images)."""
    errs = m.validate_object_meta(pod.get("metadata") or {}, True, name_is_dns_subdomain)
    spec = pod.get("spec") or {}
    errs += validate_pod_spec(spec, "spec", is_pod=True)
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
        if cond.get("type") not in ("PodScheduled", "Ready", "Initialized"):
            errs += [errors.invalid(f"metadata.conditions[{i}].Type", cond.get("type", ""), msg)
                     for msg in is_qualified_name(cond.get("type", ""))]
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
    seen: set[tuple[str, str]] = set()
    for i, t in enumerate((node.get("spec") or {}).get("taints") or []):
        ip = f"spec.taints[{i}]"
        errs += m.validate_label_name(t.get("key", ""), ip + ".key")
        if t.get("value"):
            errs += [errors.invalid(ip + ".value", t["value"], msg) for msg in is_valid_label_value(t["value"])]
        errs += _required_enum(t.get("effect"), ip + ".effect", ["NoSchedule", "PreferNoSchedule", "NoExecute"])
        key = (t.get("key", ""), t.get("effect", ""))
        if key in seen:
            errs.append(errors.duplicate(ip, t))
        seen.add(key)
    return errs + _validate_pod_cidrs((node.get("spec") or {}).get("podCIDRs") or [])


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
        total += len(str(value).encode())
    for key, value in binary.items():
        errs += [errors.invalid(f"binaryData[{key}]", key, msg) for msg in is_config_map_key(key)]
        if key in data:
            errs.append(errors.invalid(f"binaryData[{key}]", key, "duplicate of key present in data"))
        total += len(str(value)) * 3 // 4          # base64 text -> bytes
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


_SECRET_REQUIRED_KEYS = {"kubernetes.io/tls": ("tls.crt", "tls.key"), "kubernetes.io/ssh-auth": ("ssh-privatekey",),
                         "kubernetes.io/dockercfg": (".dockercfg",), "kubernetes.io/dockerconfigjson": (".dockerconfigjson",)}


def validate_secret(s: Obj) -> list[FieldError]:
    """Upstream: ValidateSecret (config keys, ≤ 1 MiB of data, the typed secrets' required keys)."""
    errs = m.validate_object_meta(s.get("metadata") or {}, True, name_is_dns_subdomain)
    data = dict(s.get("data") or {})
    total = 0
    for key, value in data.items():
        errs += [errors.invalid(f"data[{key}]", key, msg) for msg in is_config_map_key(key)]
        total += len(str(value)) * 3 // 4          # base64 text -> bytes
    for key, value in (s.get("stringData") or {}).items():   # merged into data by conversion
        errs += [errors.invalid(f"data[{key}]", key, msg) for msg in is_config_map_key(key)]
        total += len(str(value).encode())
    if total > MAX_SECRET_SIZE:
        errs.append(errors.too_long("data", MAX_SECRET_SIZE))
    keys = set(data) | set(s.get("stringData") or {})
    for key in _SECRET_REQUIRED_KEYS.get(s.get("type", ""), ()):
        if key not in keys:
            errs.append(errors.required(f"data[{key}]"))
    if s.get("type") == "kubernetes.io/service-account-token":
        if not ((s.get("metadata") or {}).get("annotations") or {}).get("kubernetes.io/service-account.name"):
            errs.append(errors.required("metadata.annotations[kubernetes.io/service-account.name]"))
    return errs


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
    """Upstream: ValidateService (DNS-1035 name, ports, selector, type and affinity enums)."""
    errs = m.validate_object_meta(svc.get("metadata") or {}, True, name_is_dns1035_label)
    spec = svc.get("spec") or {}
    ports = spec.get("ports") or []
    headless = spec.get("clusterIP") == "None"
    if not ports and not headless and spec.get("type") != "ExternalName":
        errs.append(errors.required("spec.ports"))
    names: set[str] = set()
    keys: set[tuple[str, int]] = set()
    for i, p in enumerate(ports):
        errs += _validate_service_port(p, len(ports) > 1, names, f"spec.ports[{i}]")
        key = (p.get("protocol", ""), p.get("port", 0))
        if key in keys:
            errs.append(errors.duplicate(f"spec.ports[{i}]", {"port": key[1], "protocol": key[0]}))
        keys.add(key)
    errs += m.validate_labels(spec.get("selector"), "spec.selector")
    errs += _required_enum(spec.get("type"), "spec.type", SERVICE_TYPES)
    return errs + _required_enum(spec.get("sessionAffinity"), "spec.sessionAffinity", ["ClientIP", "None"])


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
    return errs + validate_port_num_or_name(p.get("targetPort", 0), path + ".targetPort")


def validate_service_update(new: Obj, old: Obj) -> list[FieldError]:
    """Upstream: ValidateServiceUpdate (clusterIP may not change once set) + ValidateService."""
    errs = m.validate_object_meta_update(new.get("metadata") or {}, old.get("metadata") or {})
    old_ip = (old.get("spec") or {}).get("clusterIP")
    if old_ip and (old.get("spec") or {}).get("type") != "ExternalName":
        errs += m.immutable((new.get("spec") or {}).get("clusterIP"), old_ip, "spec.clusterIP")
    return errs + validate_service(new)


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
