"""The baseline checks: known privilege escalations are forbidden.

One function per check version, named after upstream's (policy/check_<id>.go), returning
upstream's exact reason and detail. BASELINE_CHECKS lists each check's versions.
"""
from __future__ import annotations

from ....api import errors
from .api import BASELINE, v1
from .check import (Check, CheckPodFn, Forbidden, Obj, VersionedCheck, containers_phrase, dict_, join_quote,
                    list_, name, pluralize, relax_for_user_namespace, security_context, visit_containers)

# --- appArmorProfile ------------------------------------------------------------------------

APPARMOR_ANNOTATION_PREFIX = "container.apparmor.security.beta.kubernetes.io/"
_APPARMOR_ALLOWED_TYPES = ("RuntimeDefault", "Localhost")


def _apparmor_annotation_allowed(value: str) -> bool:
    return not value or value == "runtime/default" or value.startswith("localhost/")


def _bad_profile_types(spec: Obj, field: str, allowed: tuple[str, ...]) -> tuple[list[str], set[str]]:
    """Who sets securityContext.<field>.type to a value not allowed ("pod", then the containers
    phrase), and the values."""
    bad_setters: list[str] = []
    bad_values: set[str] = set()
    pod_profile = security_context(spec).get(field)
    if isinstance(pod_profile, dict) and pod_profile.get("type") not in allowed:
        bad_setters.append("pod")
        bad_values.add(str(pod_profile.get("type") or ""))
    bad_containers = []
    for c in visit_containers(spec):
        profile = security_context(c).get(field)
        if isinstance(profile, dict) and profile.get("type") not in allowed:
            bad_containers.append(name(c))
            bad_values.add(str(profile.get("type") or ""))
    if bad_containers:
        bad_setters.append(containers_phrase(bad_containers))
    return bad_setters, bad_values


def app_armor_profile_1_0(meta: Obj, spec: Obj) -> Forbidden | None:
    bad_setters, bad_values = _bad_profile_types(spec, "appArmorProfile", _APPARMOR_ALLOWED_TYPES)
    forbidden_annotations = sorted(
        f"{k}={errors.go_quote(v)}" for k, v in dict_(meta.get("annotations")).items()
        if k.startswith(APPARMOR_ANNOTATION_PREFIX) and isinstance(v, str) and not _apparmor_annotation_allowed(v))
    bad_value_list = sorted(bad_values) + forbidden_annotations
    if forbidden_annotations:
        bad_setters.append(pluralize("annotation", "annotations", len(forbidden_annotations)))
    if bad_setters:
        return Forbidden(
            pluralize("forbidden AppArmor profile", "forbidden AppArmor profiles", len(bad_value_list)),
            f"{' and '.join(bad_setters)} must not set AppArmor profile type to {join_quote(bad_value_list)}")
    return None


# --- capabilities_baseline ------------------------------------------------------------------

CAPABILITIES_ALLOWED_1_0 = frozenset({
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
    "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"})


def capabilities_baseline_1_0(meta: Obj, spec: Obj) -> Forbidden | None:
    bad_containers = []
    non_default: set[str] = set()
    for c in visit_containers(spec):
        added = [str(cap) for cap in list_(dict_(security_context(c).get("capabilities")).get("add"))]
        bad = [cap for cap in added if cap not in CAPABILITIES_ALLOWED_1_0]
        if bad:
            non_default.update(bad)
            bad_containers.append(name(c))
    if bad_containers:
        return Forbidden("non-default capabilities",
                         f"{containers_phrase(bad_containers)} must not include {join_quote(sorted(non_default))} "
                         "in securityContext.capabilities.add")
    return None


# --- hostNamespaces -------------------------------------------------------------------------

def host_namespaces_1_0(meta: Obj, spec: Obj) -> Forbidden | None:
    used = [f"{field}=true" for field in ("hostNetwork", "hostPID", "hostIPC") if spec.get(field) is True]
    return Forbidden("host namespaces", ", ".join(used)) if used else None


# --- hostPathVolumes ------------------------------------------------------------------------

def host_path_volumes_1_0(meta: Obj, spec: Obj) -> Forbidden | None:
    volumes = [name(v) for v in list_(spec.get("volumes")) if dict_(v).get("hostPath") is not None]
    if volumes:
        return Forbidden("hostPath volumes", f'{pluralize("volume", "volumes", len(volumes))} {join_quote(volumes)}')
    return None


# --- hostPorts ------------------------------------------------------------------------------

def host_ports_1_0(meta: Obj, spec: Obj) -> Forbidden | None:
    bad_containers = []
    ports: set[str] = set()             # sorted as strings, as upstream's sets.String
    for c in visit_containers(spec):
        used = [str(p.get("hostPort")) for p in map(dict_, list_(c.get("ports"))) if p.get("hostPort", 0) != 0]
        if used:
            ports.update(used)
            bad_containers.append(name(c))
    if bad_containers:
        n = len(bad_containers)
        return Forbidden("hostPort",
                         f'{containers_phrase(bad_containers)} {pluralize("uses", "use", n)} '
                         f'{pluralize("hostPort", "hostPorts", len(ports))} {", ".join(sorted(ports))}')
    return None


# --- hostProbesAndHostLifecycle -------------------------------------------------------------

def _handler_hosts(handler: object) -> list[str]:
    """The hosts a probe or lifecycle handler's httpGet and tcpSocket set."""
    h = dict_(handler)
    hosts = (dict_(h.get("httpGet")).get("host"), dict_(h.get("tcpSocket")).get("host"))
    return [str(x) for x in hosts if x]


def host_probes_and_host_lifecycle_1_34(meta: Obj, spec: Obj) -> Forbidden | None:
    bad_containers: set[str] = set()
    hosts: set[str] = set()
    for c in visit_containers(spec):
        lifecycle = dict_(c.get("lifecycle"))
        handlers = (c.get("livenessProbe"), c.get("readinessProbe"), c.get("startupProbe"),
                    lifecycle.get("postStart"), lifecycle.get("preStop"))
        for h in handlers:
            if bad := _handler_hosts(h):
                bad_containers.add(name(c))
                hosts.update(bad)
    if bad_containers:
        return Forbidden(
            "probe or lifecycle host",
            f'{containers_phrase(sorted(bad_containers))} {pluralize("uses", "use", len(bad_containers))} '
            f'{pluralize("probe or lifecycle host", "probe or lifecycle hosts", len(hosts))} {join_quote(sorted(hosts))}')
    return None


# --- privileged -----------------------------------------------------------------------------

def privileged_1_0(meta: Obj, spec: Obj) -> Forbidden | None:
    bad = [name(c) for c in visit_containers(spec) if security_context(c).get("privileged") is True]
    if bad:
        return Forbidden("privileged", f"{containers_phrase(bad)} must not set securityContext.privileged=true")
    return None


# --- procMount ------------------------------------------------------------------------------

def proc_mount_1_0(meta: Obj, spec: Obj) -> Forbidden | None:
    """Unmasked /proc is forbidden unconditionally (also the restricted procMount_restricted)."""
    bad_containers = []
    types: set[str] = set()
    for c in visit_containers(spec):
        pm = security_context(c).get("procMount")
        if pm is not None and pm != "Default":
            bad_containers.append(name(c))
            types.add(str(pm))
    if bad_containers:
        return Forbidden("procMount", f"{containers_phrase(bad_containers)} must not set securityContext.procMount "
                                      f"to {join_quote(sorted(types))}")
    return None


def proc_mount_1_35_baseline(meta: Obj, spec: Obj) -> Forbidden | None:
    """Any procMount in a user namespace (hostUsers: false)."""
    return None if relax_for_user_namespace(spec) else proc_mount_1_0(meta, spec)


# --- seLinuxOptions -------------------------------------------------------------------------

SELINUX_ALLOWED_TYPES_1_0 = frozenset({"", "container_t", "container_init_t", "container_kvm_t"})
SELINUX_ALLOWED_TYPES_1_31 = SELINUX_ALLOWED_TYPES_1_0 | {"container_engine_t"}


def _se_linux_options(spec: Obj, allowed_types: frozenset[str]) -> Forbidden | None:
    bad_types: set[str] = set()
    set_user = set_role = False

    def valid(opts: Obj) -> bool:
        nonlocal set_user, set_role
        ok = True
        t = opts.get("type") or ""
        if t not in allowed_types:
            ok = False
            bad_types.add(str(t))
        if opts.get("user"):
            ok, set_user = False, True
        if opts.get("role"):
            ok, set_role = False, True
        return ok

    bad_setters = []
    pod_opts = security_context(spec).get("seLinuxOptions")
    if isinstance(pod_opts, dict) and not valid(pod_opts):
        bad_setters.append("pod")
    bad_containers = [name(c) for c in visit_containers(spec)
                      if isinstance(opts := security_context(c).get("seLinuxOptions"), dict) and not valid(opts)]
    if bad_containers:
        bad_setters.append(containers_phrase(bad_containers))
    if not bad_setters:
        return None
    bad_data = []
    if bad_types:
        bad_data.append(f'{pluralize("type", "types", len(bad_types))} {join_quote(sorted(bad_types))}')
    if set_user:
        bad_data.append("user may not be set")
    if set_role:
        bad_data.append("role may not be set")
    return Forbidden("seLinuxOptions", f"{' and '.join(bad_setters)} set forbidden securityContext.seLinuxOptions: "
                                       f"{'; '.join(bad_data)}")


def se_linux_options_1_0(meta: Obj, spec: Obj) -> Forbidden | None:
    return _se_linux_options(spec, SELINUX_ALLOWED_TYPES_1_0)


def se_linux_options_1_31(meta: Obj, spec: Obj) -> Forbidden | None:
    return _se_linux_options(spec, SELINUX_ALLOWED_TYPES_1_31)


# --- seccompProfile_baseline ----------------------------------------------------------------

SECCOMP_POD_ANNOTATION = "seccomp.security.alpha.kubernetes.io/pod"
SECCOMP_CONTAINER_ANNOTATION_PREFIX = "container.seccomp.security.alpha.kubernetes.io/"
SECCOMP_ALLOWED_TYPES = ("RuntimeDefault", "Localhost")


def _seccomp_annotation_allowed(value: object) -> bool:
    return value in ("runtime/default", "docker/default") or (isinstance(value, str) and value.startswith("localhost/"))


def seccomp_profile_baseline_1_0(meta: Obj, spec: Obj) -> Forbidden | None:
    """Before 1.19: the alpha annotations."""
    annotations = dict_(meta.get("annotations"))
    keys = [SECCOMP_POD_ANNOTATION] + [SECCOMP_CONTAINER_ANNOTATION_PREFIX + name(c) for c in visit_containers(spec)]
    forbidden = sorted({f"{k}={errors.go_quote(str(annotations[k]))}" for k in keys
                        if k in annotations and not _seccomp_annotation_allowed(annotations[k])})
    if forbidden:
        return Forbidden("seccompProfile",
                         f'forbidden {pluralize("annotation", "annotations", len(forbidden))} {", ".join(forbidden)}')
    return None


def seccomp_profile_baseline_1_19(meta: Obj, spec: Obj) -> Forbidden | None:
    bad_setters, bad_values = _bad_profile_types(spec, "seccompProfile", SECCOMP_ALLOWED_TYPES)
    if bad_setters:
        return Forbidden("seccompProfile", f"{' and '.join(bad_setters)} must not set securityContext.seccompProfile.type "
                                           f"to {join_quote(sorted(bad_values))}")
    return None


# --- sysctls --------------------------------------------------------------------------------

SYSCTLS_ALLOWED_1_0 = frozenset({"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
                                 "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start"})
SYSCTLS_ALLOWED_1_27 = SYSCTLS_ALLOWED_1_0 | {"net.ipv4.ip_local_reserved_ports"}
SYSCTLS_ALLOWED_1_29 = SYSCTLS_ALLOWED_1_27 | {"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
                                               "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"}
SYSCTLS_ALLOWED_1_32 = SYSCTLS_ALLOWED_1_29 | {"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"}
SYSCTLS_ALLOWED_1_37 = SYSCTLS_ALLOWED_1_32 | {"net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_notsent_lowat"}


def _sysctls(allowed: frozenset[str]) -> CheckPodFn:
    def sysctls(meta: Obj, spec: Obj) -> Forbidden | None:
        names = [str(dict_(s).get("name")) for s in list_(security_context(spec).get("sysctls"))]
        bad = [n for n in names if n not in allowed]
        return Forbidden("forbidden sysctls", ", ".join(bad)) if bad else None
    return sysctls


sysctls_1_0 = _sysctls(SYSCTLS_ALLOWED_1_0)
sysctls_1_27 = _sysctls(SYSCTLS_ALLOWED_1_27)
sysctls_1_29 = _sysctls(SYSCTLS_ALLOWED_1_29)
sysctls_1_32 = _sysctls(SYSCTLS_ALLOWED_1_32)
sysctls_1_37 = _sysctls(SYSCTLS_ALLOWED_1_37)


# --- windowsHostProcess ---------------------------------------------------------------------

def _host_process(sc: Obj) -> bool:
    return dict_(sc.get("windowsOptions")).get("hostProcess") is True


def windows_host_process_1_0(meta: Obj, spec: Obj) -> Forbidden | None:
    bad_containers = [name(c) for c in visit_containers(spec) if _host_process(security_context(c))]
    setters = ["pod"] if _host_process(security_context(spec)) else []
    if bad_containers:
        setters.append(containers_phrase(bad_containers))
    if setters:
        return Forbidden("hostProcess",
                         f"{' and '.join(setters)} must not set securityContext.windowsOptions.hostProcess=true")
    return None


def _check(check_id: str, *versions: VersionedCheck) -> Check:
    return Check(check_id, BASELINE, versions)


BASELINE_CHECKS = (
    _check("appArmorProfile", VersionedCheck(v1(0), app_armor_profile_1_0)),
    _check("capabilities_baseline", VersionedCheck(v1(0), capabilities_baseline_1_0)),
    _check("hostNamespaces", VersionedCheck(v1(0), host_namespaces_1_0)),
    _check("hostPathVolumes", VersionedCheck(v1(0), host_path_volumes_1_0)),
    _check("hostPorts", VersionedCheck(v1(0), host_ports_1_0)),
    _check("hostProbesAndHostLifecycle", VersionedCheck(v1(34), host_probes_and_host_lifecycle_1_34)),
    _check("privileged", VersionedCheck(v1(0), privileged_1_0)),
    _check("procMount", VersionedCheck(v1(0), proc_mount_1_0), VersionedCheck(v1(35), proc_mount_1_35_baseline)),
    _check("seLinuxOptions", VersionedCheck(v1(0), se_linux_options_1_0), VersionedCheck(v1(31), se_linux_options_1_31)),
    _check("seccompProfile_baseline", VersionedCheck(v1(0), seccomp_profile_baseline_1_0),
           VersionedCheck(v1(19), seccomp_profile_baseline_1_19)),
    _check("sysctls", VersionedCheck(v1(0), sysctls_1_0), VersionedCheck(v1(27), sysctls_1_27),
           VersionedCheck(v1(29), sysctls_1_29), VersionedCheck(v1(32), sysctls_1_32),
           VersionedCheck(v1(37), sysctls_1_37)),
    _check("windowsHostProcess", VersionedCheck(v1(0), windows_host_process_1_0)),
)
