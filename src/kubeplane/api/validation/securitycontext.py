"""A pod spec's security contexts: the pod's and each container's.

Upstream: validatePodSpecSecurityContext, validateSysctls, IsValidSysctlName, ValidateHostSysctl,
validateHostUsers, ValidateSecurityContext, ValidateProcMountType, validateSeccompProfileField,
ValidateAppArmorProfileField, validateWindowsSecurityContextOptions,
validateLocalDescendingPath, validateFSGroupChangePolicy, validateSupplementalGroupsPolicy,
validateSELinuxChangePolicy (pkg/apis/core/validation/validation.go); IsValidUserID,
IsValidGroupID (apimachinery pkg/util/validation); GetNamespace (component-helpers sysctl).

Privileged containers are allowed (a kube-apiserver started with --allow-privileged=true, as
kubeadm and kind start it), and so is every seLinuxChangePolicy (the SELinuxChangePolicy gate is
on by default). Upstream validates the internal types, which carry no JSON tags: a whole struct
given as the bad value renders with its Go field names, and so it does here.
"""
from __future__ import annotations

import re
from typing import Any

from kubeplane.api import errors
from kubeplane.api.errors import FieldError

from .names import inclusive_range_error, is_dns1123_subdomain

Obj = dict[str, Any]
MAX_INT32 = 2**31 - 1
ID_RANGE = inclusive_range_error(0, MAX_INT32)     # IsValidUserID / IsValidGroupID

SYSCTL_SEGMENT_FMT = "[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
SYSCTL_CONTAIN_SLASH_FMT = "(" + SYSCTL_SEGMENT_FMT + "[\\./])*" + SYSCTL_SEGMENT_FMT
SYSCTL_MAX_LENGTH = 253
_SYSCTL_RE = re.compile(SYSCTL_CONTAIN_SLASH_FMT)
SYSCTL_NAME_MSG = (f"must have at most {SYSCTL_MAX_LENGTH} characters and match regex "
                   f"^{SYSCTL_CONTAIN_SLASH_FMT}$")
# component-helpers/node/util/sysctl: the namespaced sysctls, by name and by prefix
_IPC_SYSCTLS = {"kernel.sem"}
_SYSCTL_PREFIXES = (("kernel.shm", "ipc"), ("kernel.msg", "ipc"), ("fs.mqueue.", "ipc"), ("net.", "net"))

_MAX_GMSA_SPEC_KIB = 64
_MAX_DOMAIN_LENGTH = 256
_MAX_USER_LENGTH = 104
_CTRL_RE = re.compile("[\x00-\x1f\x7f]")
_NETBIOS_RE = re.compile(r'[^\\/:*?"<>|.][^\\/:*?"<>|]{0,14}')
_DNS_LABEL = "[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?"
_WINDOWS_DOMAIN_DNS_RE = re.compile(f"{_DNS_LABEL}(?:\\.{_DNS_LABEL})*")
_USER_CHARS_RE = re.compile(r'["/\\:;|=,+*?<>@\[\]]')
_USER_DOTS_SPACES_RE = re.compile(r"[. ]+")

# Go's field order of the internal structs given whole as bad values
_SECURITY_CONTEXT_FIELDS = (
    ("Capabilities", "capabilities"), ("Privileged", "privileged"), ("SELinuxOptions", "seLinuxOptions"),
    ("WindowsOptions", "windowsOptions"), ("RunAsUser", "runAsUser"), ("RunAsGroup", "runAsGroup"),
    ("RunAsNonRoot", "runAsNonRoot"), ("ReadOnlyRootFilesystem", "readOnlyRootFilesystem"),
    ("AllowPrivilegeEscalation", "allowPrivilegeEscalation"), ("ProcMount", "procMount"),
    ("SeccompProfile", "seccompProfile"), ("AppArmorProfile", "appArmorProfile"))
_NESTED_FIELDS = {
    "capabilities": (("Add", "add"), ("Drop", "drop")),
    "seLinuxOptions": (("User", "user"), ("Role", "role"), ("Type", "type"), ("Level", "level")),
    "windowsOptions": (("GMSACredentialSpecName", "gmsaCredentialSpecName"),
                       ("GMSACredentialSpec", "gmsaCredentialSpec"), ("RunAsUserName", "runAsUserName"),
                       ("HostProcess", "hostProcess")),
    "seccompProfile": (("Type", "type"), ("LocalhostProfile", "localhostProfile")),
    "appArmorProfile": (("Type", "type"), ("LocalhostProfile", "localhostProfile")),
}
_STRING_FIELDS = {"User", "Role", "Type", "Level"}          # Go strings: "" when unset, not null


def _go_struct(obj: Obj, fields: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for go_name, key in fields:
        value = obj.get(key)
        if key in _NESTED_FIELDS and isinstance(value, dict):
            value = _go_struct(value, _NESTED_FIELDS[key])
        out[go_name] = "" if value is None and go_name in _STRING_FIELDS else value
    return out


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _id(value: Any, path: str) -> list[FieldError]:
    if value is None or (isinstance(value, int) and 0 <= value <= MAX_INT32):
        return []
    return [errors.invalid(path, value, ID_RANGE)]


# --- the pod's securityContext ---------------------------------------------------------------------


def validate_pod_security_context(spec: Obj, path: str) -> list[FieldError]:
    """Upstream: validatePodSpecSecurityContext and validateHostUsers (`path` is the spec's).

    The internal PodSecurityContext holds hostNetwork/hostPID/hostIPC, hence the
    spec.securityContext.shareProcessNamespace path of a v1 spec.shareProcessNamespace."""
    sc = _dict(spec.get("securityContext"))     # the internal one exists whenever a host* field is set
    sc_path = path + ".securityContext"
    errs: list[FieldError] = []
    if spec.get("shareProcessNamespace") and spec.get("hostPID"):
        errs.append(errors.invalid(sc_path + ".shareProcessNamespace", True,
                                   "ShareProcessNamespace and HostPID cannot both be enabled"))
    if not sc:                                   # defaulted to {}: nothing more to check
        return errs
    errs += _id(sc.get("fsGroup"), sc_path + ".fsGroup")
    errs += _id(sc.get("runAsUser"), sc_path + ".runAsUser")
    errs += _id(sc.get("runAsGroup"), sc_path + ".runAsGroup")
    for g, gid in enumerate(sc.get("supplementalGroups") or []):
        errs += _id(gid, f"{sc_path}.supplementalGroups[{g}]")
    if sc.get("sysctls"):
        errs += _validate_sysctls(sc["sysctls"], spec, sc_path + ".sysctls")
    errs += _enum(sc.get("fsGroupChangePolicy"), sc_path + ".fsGroupChangePolicy", ["Always", "OnRootMismatch"])
    errs += _seccomp_profile(sc.get("seccompProfile"), sc_path + ".seccompProfile")
    errs += _windows_options(sc.get("windowsOptions"), sc_path + ".windowsOptions")
    errs += _app_armor_profile(sc.get("appArmorProfile"), sc_path + ".appArmorProfile")
    errs += _enum(sc.get("supplementalGroupsPolicy"), sc_path + ".supplementalGroupsPolicy", ["Merge", "Strict"])
    errs += _enum(sc.get("seLinuxChangePolicy"), sc_path + ".seLinuxChangePolicy", ["MountOption", "Recursive"])
    if sc.get("hostUsers") is False:                                             # validateHostUsers
        for key, name in (("hostNetwork", "hostNetwork"), ("hostPID", "HostPID"), ("hostIPC", "HostIPC")):
            if spec.get(key):
                errs.append(errors.forbidden(f"{path}.{name}", "when `pod.Spec.HostUsers` is false"))
    return errs


def _enum(value: Any, path: str, allowed: list[str]) -> list[FieldError]:
    return [] if value is None or value in allowed else [errors.not_supported(path, value, allowed)]


def is_valid_sysctl_name(name: str) -> bool:
    """Upstream: IsValidSysctlName"""
    return len(name) <= SYSCTL_MAX_LENGTH and _SYSCTL_RE.fullmatch(name) is not None


def _sysctl_namespace(name: str) -> str:
    """Upstream: sysctl.GetNamespace, after NormalizeName (a name written with slashes)."""
    sep = re.search("[./]", name)
    if sep and sep.group() == "/":
        name = name.translate(str.maketrans("./", "/."))
    if name in _IPC_SYSCTLS:
        return "ipc"
    return next((ns for prefix, ns in _SYSCTL_PREFIXES if name.startswith(prefix)), "")


def _validate_sysctls(sysctls: Any, spec: Obj, path: str) -> list[FieldError]:
    """Upstream: validateSysctls, ValidateHostSysctl"""
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, s in enumerate(sysctls if isinstance(sysctls, list) else []):
        name = str(_dict(s).get("name") or "")
        name_path = f"{path}[{i}].name"
        if not name:
            errs.append(errors.required(name_path))
        elif not is_valid_sysctl_name(name):
            errs.append(errors.invalid(name_path, name, SYSCTL_NAME_MSG))
        elif name in names:
            errs.append(errors.duplicate(name_path, name))
        ns = _sysctl_namespace(name)
        if spec.get("hostNetwork") and ns == "net":
            errs.append(errors.invalid(name_path, name, "may not be specified when 'hostNetwork' is true"))
        elif spec.get("hostIPC") and ns == "ipc":
            errs.append(errors.invalid(name_path, name, "may not be specified when 'hostIPC' is true"))
        names.add(name)
    return errs


# --- profiles and Windows options (pod and container) ----------------------------------------------


def _local_descending_path(target: str, path: str) -> list[FieldError]:
    """Upstream: validateLocalDescendingPath"""
    errs = []
    if target.startswith("/"):
        errs.append(errors.invalid(path, target, "must be a relative path"))
    if ".." in target.split("/"):
        errs.append(errors.invalid(path, target, "must not contain '..'"))
    return errs


def _seccomp_profile(sp: Any, path: str) -> list[FieldError]:
    """Upstream: validateSeccompProfileField, validateSeccompProfileType"""
    if not isinstance(sp, dict):
        return []
    errs: list[FieldError] = []
    kind = sp.get("type") or ""
    if not kind:
        errs.append(errors.required(path + ".type", "type is required when seccompProfile is set"))
    elif kind not in ("Localhost", "RuntimeDefault", "Unconfined"):
        errs.append(errors.not_supported(path + ".type", kind, ["Localhost", "RuntimeDefault", "Unconfined"]))
    localhost = sp.get("localhostProfile")
    if kind == "Localhost":
        if localhost is None:
            errs.append(errors.required(path + ".localhostProfile", "must be set when seccomp type is Localhost"))
        else:
            errs += _local_descending_path(str(localhost), path + ".localhostProfile")
    elif localhost is not None:
        errs.append(errors.invalid(path + ".localhostProfile",
                                   errors.JSONValue(_go_struct(sp, _NESTED_FIELDS["seccompProfile"])),
                                   "can only be set when seccomp type is Localhost"))
    return errs


def _app_armor_profile(profile: Any, path: str) -> list[FieldError]:
    """Upstream: ValidateAppArmorProfileField"""
    if not isinstance(profile, dict):
        return []
    kind, localhost = profile.get("type") or "", profile.get("localhostProfile")
    lp_path = path + ".localhostProfile"
    if kind == "Localhost":
        if localhost is None:
            return [errors.required(lp_path, "must be set when AppArmor type is Localhost")]
        localhost = str(localhost)
        errs: list[FieldError] = []
        if localhost.strip() != localhost:
            errs.append(errors.invalid(lp_path, localhost, "must not be padded with whitespace"))
        elif not localhost:
            errs.append(errors.required(lp_path, "must be set when AppArmor type is Localhost"))
        if len(localhost.encode()) > 4095:                                        # PATH_MAX - 1
            errs.append(errors.too_long(lp_path, 4095))
        return errs
    if kind in ("RuntimeDefault", "Unconfined"):
        return [] if localhost is None else [
            errors.invalid(lp_path, localhost, "can only be set when AppArmor type is Localhost")]
    if not kind:
        return [errors.required(path + ".type", "type is required when appArmorProfile is set")]
    return [errors.not_supported(path + ".type", kind, ["Localhost", "RuntimeDefault", "Unconfined"])]


def _windows_options(options: Any, path: str) -> list[FieldError]:
    """Upstream: validateWindowsSecurityContextOptions"""
    if not isinstance(options, dict):
        return []
    errs: list[FieldError] = []
    name = options.get("gmsaCredentialSpecName")
    if name is not None:
        errs += [errors.invalid(path + ".gmsaCredentialSpecName", name, msg) for msg in is_dns1123_subdomain(str(name))]
    spec = options.get("gmsaCredentialSpec")
    if spec is not None:
        if not spec:
            errs.append(errors.invalid(path + ".gmsaCredentialSpec", spec, "gmsaCredentialSpec cannot be an empty string"))
        elif len(str(spec).encode()) > _MAX_GMSA_SPEC_KIB * 1024:
            errs.append(errors.invalid(path + ".gmsaCredentialSpec", spec,
                                       f"gmsaCredentialSpec size must be under {_MAX_GMSA_SPEC_KIB} KiB"))
    user_name = options.get("runAsUserName")
    if user_name is not None:
        errs += [errors.invalid(path + ".runAsUserName", user_name, msg) for msg in _run_as_user_name(str(user_name))]
    return errs


def _run_as_user_name(value: str) -> list[str]:
    if not value:
        return ["runAsUserName cannot be an empty string"]
    if _CTRL_RE.search(value):
        return ["runAsUserName cannot contain control characters"]
    parts = value.split("\\")
    if len(parts) > 2:
        return ["runAsUserName cannot contain more than one backslash"]
    domain, user = (parts[0], parts[1]) if len(parts) == 2 else ("", parts[0])
    msgs = []
    if len(domain.encode()) >= _MAX_DOMAIN_LENGTH:
        msgs.append(f"runAsUserName's Domain length must be under {_MAX_DOMAIN_LENGTH} characters")
    if len(parts) == 2 and not (_NETBIOS_RE.fullmatch(domain) or _WINDOWS_DOMAIN_DNS_RE.fullmatch(domain)):
        msgs.append("runAsUserName's Domain doesn't match the NetBios nor the DNS format")
    if not user:
        msgs.append("runAsUserName's User cannot be empty")
    elif len(user.encode()) > _MAX_USER_LENGTH:
        msgs.append(f"runAsUserName's User length must not be longer than {_MAX_USER_LENGTH} characters")
    if _USER_DOTS_SPACES_RE.fullmatch(user):
        msgs.append("runAsUserName's User cannot contain only periods or spaces")
    if _USER_CHARS_RE.search(user):
        msgs.append('runAsUserName\'s User cannot contain the following characters: "/\\:;|=,+*?<>@[]')
    return msgs


# --- each container's securityContext --------------------------------------------------------------


def validate_container_security_contexts(spec: Obj, path: str) -> list[FieldError]:
    """ValidateSecurityContext for every container and init container of a spec."""
    host_users = _dict(spec.get("securityContext")).get("hostUsers") is not False
    errs: list[FieldError] = []
    for key in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(key) or []):
            sc = _dict(c).get("securityContext")
            if sc and isinstance(sc, dict):
                errs += validate_security_context(sc, f"{path}.{key}[{i}].securityContext", host_users)
    return errs


def validate_security_context(sc: Obj, path: str, host_users: bool) -> list[FieldError]:
    """Upstream: ValidateSecurityContext"""
    errs = _id(sc.get("runAsUser"), path + ".runAsUser")
    errs += _id(sc.get("runAsGroup"), path + ".runAsGroup")
    proc_mount = sc.get("procMount")
    if proc_mount is not None:
        if proc_mount not in ("Default", "Unmasked"):                             # ValidateProcMountType
            errs.append(errors.not_supported(path + ".procMount", proc_mount, ["Default", "Unmasked"]))
        if host_users and proc_mount == "Unmasked":
            errs.append(errors.invalid(path + ".procMount", proc_mount, "`hostUsers` must be false to use `Unmasked`"))
    errs += _seccomp_profile(sc.get("seccompProfile"), path + ".seccompProfile")
    if sc.get("allowPrivilegeEscalation") is False:
        if sc.get("privileged") is True:
            errs.append(errors.invalid(path, _sc_value(sc),
                                       "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
        for cap in _dict(sc.get("capabilities")).get("add") or []:
            if cap == "CAP_SYS_ADMIN":
                errs.append(errors.invalid(path, _sc_value(sc), "cannot set `allowPrivilegeEscalation` to false "
                                                                "and `capabilities.Add` CAP_SYS_ADMIN"))
    errs += _windows_options(sc.get("windowsOptions"), path + ".windowsOptions")
    return errs + _app_armor_profile(sc.get("appArmorProfile"), path + ".appArmorProfile")


def _sc_value(sc: Obj) -> errors.JSONValue:
    return errors.JSONValue(_go_struct(sc, _SECURITY_CONTEXT_FIELDS))
