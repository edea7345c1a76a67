"""The restricted checks: pod hardening best practices, on top of the baseline ones (some of
which they replace: capabilities, hostPath volumes, seccomp, procMount).

One function per check version, named after upstream's (policy/check_<id>.go), returning
upstream's exact reason and detail. RESTRICTED_CHECKS lists each check's versions.
"""
from __future__ import annotations

from .api import RESTRICTED, v1
from .check import (Check, Forbidden, Obj, VersionedCheck, containers_phrase, dict_, is_windows, join_quote,
                    list_, name, pluralize, relax_for_user_namespace, security_context, visit_containers)
from .checks_baseline import SECCOMP_ALLOWED_TYPES, proc_mount_1_0

# --- allowPrivilegeEscalation ---------------------------------------------------------------


def allow_privilege_escalation_1_8(meta: Obj, spec: Obj) -> Forbidden | None:
    bad = [name(c) for c in visit_containers(spec) if security_context(c).get("allowPrivilegeEscalation") is not False]
    if bad:
        return Forbidden("allowPrivilegeEscalation != false",
                         f"{containers_phrase(bad)} must set securityContext.allowPrivilegeEscalation=false")
    return None


def allow_privilege_escalation_1_25(meta: Obj, spec: Obj) -> Forbidden | None:
    """Windows pods cannot set the field (API validation refuses it): they pass."""
    return None if is_windows(spec) else allow_privilege_escalation_1_8(meta, spec)


# --- capabilities_restricted ----------------------------------------------------------------

def capabilities_restricted_1_22(meta: Obj, spec: Obj) -> Forbidden | None:
    missing_drop_all, adding_forbidden = [], []
    forbidden_caps: set[str] = set()
    for c in visit_containers(spec):
        caps = security_context(c).get("capabilities")
        if not isinstance(caps, dict):
            missing_drop_all.append(name(c))
            continue
        if "ALL" not in list_(caps.get("drop")):
            missing_drop_all.append(name(c))
        added = [str(cap) for cap in list_(caps.get("add")) if cap != "NET_BIND_SERVICE"]
        if added:
            forbidden_caps.update(added)
            adding_forbidden.append(name(c))
    details = []
    if missing_drop_all:
        details.append(f'{containers_phrase(missing_drop_all)} must set securityContext.capabilities.drop=["ALL"]')
    if adding_forbidden:
        details.append(f"{containers_phrase(adding_forbidden)} must not include {join_quote(sorted(forbidden_caps))} "
                       "in securityContext.capabilities.add")
    return Forbidden("unrestricted capabilities", "; ".join(details)) if details else None


def capabilities_restricted_1_25(meta: Obj, spec: Obj) -> Forbidden | None:
    return None if is_windows(spec) else capabilities_restricted_1_22(meta, spec)


# --- restrictedVolumes ----------------------------------------------------------------------

ALLOWED_VOLUME_SOURCES = ("configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image",
                          "persistentVolumeClaim", "projected", "secret")
# The order upstream names a refused volume's type in (the first one set).
RESTRICTED_VOLUME_SOURCES = (
    "hostPath", "gcePersistentDisk", "awsElasticBlockStore", "gitRepo", "nfs", "iscsi", "glusterfs", "rbd",
    "flexVolume", "cinder", "cephfs", "flocker", "fc", "azureFile", "vsphereVolume", "quobyte", "azureDisk",
    "photonPersistentDisk", "portworxVolume", "scaleIO", "storageos")


def restricted_volumes_1_0(meta: Obj, spec: Obj) -> Forbidden | None:
    bad_volumes = []
    bad_types: set[str] = set()
    for v in map(dict_, list_(spec.get("volumes"))):
        if any(v.get(src) is not None for src in ALLOWED_VOLUME_SOURCES):
            continue
        bad_volumes.append(name(v))
        bad_types.add(next((src for src in RESTRICTED_VOLUME_SOURCES if v.get(src) is not None), "unknown"))
    if bad_volumes:
        n = len(bad_volumes)
        return Forbidden(
            "restricted volume types",
            f'{pluralize("volume", "volumes", n)} {join_quote(bad_volumes)} {pluralize("uses", "use", n)} '
            f'{pluralize("restricted volume type", "restricted volume types", len(bad_types))} '
            f"{join_quote(sorted(bad_types))}")
    return None


# --- runAsNonRoot ---------------------------------------------------------------------------

def run_as_non_root_1_0(meta: Obj, spec: Obj) -> Forbidden | None:
    bad_setters = []
    pod_value = security_context(spec).get("runAsNonRoot")
    if pod_value is False:
        bad_setters.append("pod")
    pod_run_as_non_root = pod_value is True
    explicitly_bad, implicitly_bad = [], []
    for c in visit_containers(spec):
        value = security_context(c).get("runAsNonRoot")
        if value is not None:
            if value is False:
                explicitly_bad.append(name(c))
        elif not pod_run_as_non_root:
            implicitly_bad.append(name(c))
    if explicitly_bad:
        bad_setters.append(containers_phrase(explicitly_bad))
    if bad_setters:
        return Forbidden("runAsNonRoot != true",
                         f"{' and '.join(bad_setters)} must not set securityContext.runAsNonRoot=false")
    if implicitly_bad:
        return Forbidden("runAsNonRoot != true",
                         f"pod or {containers_phrase(implicitly_bad)} must set securityContext.runAsNonRoot=true")
    return None


def run_as_non_root_1_35(meta: Obj, spec: Obj) -> Forbidden | None:
    return None if relax_for_user_namespace(spec) else run_as_non_root_1_0(meta, spec)


# --- runAsUser ------------------------------------------------------------------------------

def _is_root(sc: Obj) -> bool:
    uid = sc.get("runAsUser")
    return type(uid) is int and uid == 0


def run_as_user_1_23(meta: Obj, spec: Obj) -> Forbidden | None:
    bad_setters = ["pod"] if _is_root(security_context(spec)) else []
    bad_containers = [name(c) for c in visit_containers(spec) if _is_root(security_context(c))]
    if bad_containers:
        bad_setters.append(containers_phrase(bad_containers))
    if bad_setters:
        return Forbidden("runAsUser=0", f"{' and '.join(bad_setters)} must not set runAsUser=0")
    return None


def run_as_user_1_35(meta: Obj, spec: Obj) -> Forbidden | None:
    return None if relax_for_user_namespace(spec) else run_as_user_1_23(meta, spec)


# --- seccompProfile_restricted --------------------------------------------------------------

def seccomp_profile_restricted_1_19(meta: Obj, spec: Obj) -> Forbidden | None:
    bad_setters = []
    bad_values: set[str] = set()
    pod_seccomp_set = False
    pod_profile = security_context(spec).get("seccompProfile")
    if isinstance(pod_profile, dict):
        if pod_profile.get("type") not in SECCOMP_ALLOWED_TYPES:
            bad_setters.append("pod")
            bad_values.add(str(pod_profile.get("type") or ""))
        else:
            pod_seccomp_set = True
    explicitly_bad, implicitly_bad = [], []
    for c in visit_containers(spec):
        profile = security_context(c).get("seccompProfile")
        if isinstance(profile, dict):
            if profile.get("type") not in SECCOMP_ALLOWED_TYPES:
                explicitly_bad.append(name(c))
                bad_values.add(str(profile.get("type") or ""))
        elif not pod_seccomp_set:
            implicitly_bad.append(name(c))
    if explicitly_bad:
        bad_setters.append(containers_phrase(explicitly_bad))
    if bad_setters:
        return Forbidden("seccompProfile", f"{' and '.join(bad_setters)} must not set securityContext.seccompProfile.type "
                                           f"to {join_quote(sorted(bad_values))}")
    if implicitly_bad:
        return Forbidden("seccompProfile", f"pod or {containers_phrase(implicitly_bad)} must set "
                                           'securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"')
    return None


def seccomp_profile_restricted_1_25(meta: Obj, spec: Obj) -> Forbidden | None:
    return None if is_windows(spec) else seccomp_profile_restricted_1_19(meta, spec)


def _check(check_id: str, *versions: VersionedCheck) -> Check:
    return Check(check_id, RESTRICTED, versions)


RESTRICTED_CHECKS = (
    _check("allowPrivilegeEscalation", VersionedCheck(v1(8), allow_privilege_escalation_1_8),
           VersionedCheck(v1(25), allow_privilege_escalation_1_25)),
    _check("capabilities_restricted",
           VersionedCheck(v1(22), capabilities_restricted_1_22, ("capabilities_baseline",)),
           VersionedCheck(v1(25), capabilities_restricted_1_25, ("capabilities_baseline",))),
    # Before 1.35 the baseline procMount check was this one; from 1.35 baseline relaxes it for
    # user namespaces, and restricted keeps refusing unmasked /proc in every pod.
    _check("procMount_restricted", VersionedCheck(v1(35), proc_mount_1_0, ("procMount",))),
    _check("restrictedVolumes", VersionedCheck(v1(0), restricted_volumes_1_0, ("hostPathVolumes",))),
    _check("runAsNonRoot", VersionedCheck(v1(0), run_as_non_root_1_0), VersionedCheck(v1(35), run_as_non_root_1_35)),
    _check("runAsUser", VersionedCheck(v1(23), run_as_user_1_23), VersionedCheck(v1(35), run_as_user_1_35)),
    _check("seccompProfile_restricted",
           VersionedCheck(v1(19), seccomp_profile_restricted_1_19, ("seccompProfile_baseline",)),
           VersionedCheck(v1(25), seccomp_profile_restricted_1_25, ("seccompProfile_baseline",))),
)
