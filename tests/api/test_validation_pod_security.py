"""Pod and container securityContext, with upstream's messages and paths (cases after
TestValidatePodSpec, TestValidateSecurityContext, TestValidateSysctls,
TestValidateWindowsSecurityContextOptions, TestValidateAppArmorProfileField in validation_test.go)."""
from __future__ import annotations

import copy
from typing import Any

import pytest

from kubeplane.apiserver.registry.scheme import set_defaults, validate

PSC = "spec.securityContext"
CSC = "spec.containers[0].securityContext"
RANGE = "must be between 0 and 2147483647, inclusive"
SYSCTL_MSG = ("must have at most 253 characters and match regex "
              "^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$")


def pod(sc: dict | None = None, csc: dict | None = None, **spec: Any) -> dict:
    container: dict = {"name": "app", "image": "nginx:1.25"}
    if csc is not None:
        container["securityContext"] = copy.deepcopy(csc)
    p = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
         "spec": {"containers": [container], **spec}}
    if sc is not None:
        p["spec"]["securityContext"] = copy.deepcopy(sc)
    set_defaults(p)
    return p


def strs(p: dict) -> list[str]:
    return [str(e) for e in validate(p)]


POD_CASES = [
    pytest.param({"fsGroup": 1000, "runAsUser": 1001, "runAsGroup": 0, "supplementalGroups": [1, 2147483647],
                  "fsGroupChangePolicy": "OnRootMismatch", "supplementalGroupsPolicy": "Strict",
                  "seLinuxChangePolicy": "MountOption", "seccompProfile": {"type": "RuntimeDefault"},
                  "appArmorProfile": {"type": "Localhost", "localhostProfile": "my-profile"},
                  "sysctls": [{"name": "kernel.shm_rmid_forced", "value": "1"}, {"name": "net/ipv4/ip_forward", "value": "1"}]},
                 {}, [], id="valid"),
    pytest.param({"fsGroup": -1}, {}, [f"{PSC}.fsGroup: Invalid value: -1: {RANGE}"], id="fs-group"),
    pytest.param({"runAsUser": 2147483648}, {}, [f"{PSC}.runAsUser: Invalid value: 2147483648: {RANGE}"],
                 id="run-as-user"),
    pytest.param({"runAsGroup": -1}, {}, [f"{PSC}.runAsGroup: Invalid value: -1: {RANGE}"], id="run-as-group"),
    pytest.param({"supplementalGroups": [1, -1]}, {}, [f"{PSC}.supplementalGroups[1]: Invalid value: -1: {RANGE}"],
                 id="supplemental-groups"),
    pytest.param({}, {"shareProcessNamespace": True, "hostPID": True},
                 [f"{PSC}.shareProcessNamespace: Invalid value: true: ShareProcessNamespace and HostPID cannot both "
                  "be enabled"], id="share-process-namespace-with-host-pid"),
    pytest.param({"fsGroupChangePolicy": "Sometimes"}, {},
                 [f'{PSC}.fsGroupChangePolicy: Unsupported value: "Sometimes": supported values: "Always", '
                  '"OnRootMismatch"'], id="fs-group-change-policy"),
    pytest.param({"supplementalGroupsPolicy": "Invalid"}, {},
                 [f'{PSC}.supplementalGroupsPolicy: Unsupported value: "Invalid": supported values: "Merge", "Strict"'],
                 id="supplemental-groups-policy"),
    pytest.param({"seLinuxChangePolicy": "Never"}, {},
                 [f'{PSC}.seLinuxChangePolicy: Unsupported value: "Never": supported values: "MountOption", '
                  '"Recursive"'], id="selinux-change-policy"),
    pytest.param({"sysctls": [{"name": "", "value": "1"}]}, {}, [f"{PSC}.sysctls[0].name: Required value"],
                 id="sysctl-name-required"),
    pytest.param({"sysctls": [{"name": "kernel/shm.rmid", "value": "1"}, {"name": "bad!", "value": "1"}]}, {},
                 [f'{PSC}.sysctls[1].name: Invalid value: "bad!": {SYSCTL_MSG}'], id="sysctl-name"),
    pytest.param({"sysctls": [{"name": "net.ipv4.ip_forward", "value": "1"},
                              {"name": "net.ipv4.ip_forward", "value": "0"}]}, {},
                 [f'{PSC}.sysctls[1].name: Duplicate value: "net.ipv4.ip_forward"'], id="sysctl-duplicate"),
    pytest.param({"sysctls": [{"name": "net.ipv4.ip_forward", "value": "1"}, {"name": "kernel.msgmax", "value": "1"}]},
                 {"hostNetwork": True, "hostIPC": True},
                 [f'{PSC}.sysctls[0].name: Invalid value: "net.ipv4.ip_forward": may not be specified when '
                  "'hostNetwork' is true",
                  f'{PSC}.sysctls[1].name: Invalid value: "kernel.msgmax": may not be specified when '
                  "'hostIPC' is true"], id="namespaced-sysctls-with-host-namespaces"),
    pytest.param({"sysctls": [{"name": "net/ipv4/ip_forward", "value": "1"}]}, {"hostNetwork": True},
                 [f'{PSC}.sysctls[0].name: Invalid value: "net/ipv4/ip_forward": may not be specified when '
                  "'hostNetwork' is true"], id="slash-sysctl-with-host-network"),
    pytest.param({"hostUsers": False}, {"hostNetwork": True, "hostPID": True, "hostIPC": True},
                 ["spec.hostNetwork: Forbidden: when `pod.Spec.HostUsers` is false",
                  "spec.HostPID: Forbidden: when `pod.Spec.HostUsers` is false",
                  "spec.HostIPC: Forbidden: when `pod.Spec.HostUsers` is false"], id="host-users-false"),
    pytest.param({"seccompProfile": {}}, {},
                 [f"{PSC}.seccompProfile.type: Required value: type is required when seccompProfile is set"],
                 id="seccomp-type-required"),
    pytest.param({"seccompProfile": {"type": "Custom"}}, {},
                 [f'{PSC}.seccompProfile.type: Unsupported value: "Custom": supported values: "Localhost", '
                  '"RuntimeDefault", "Unconfined"'], id="seccomp-type"),
    pytest.param({"seccompProfile": {"type": "Localhost"}}, {},
                 [f"{PSC}.seccompProfile.localhostProfile: Required value: must be set when seccomp type is Localhost"],
                 id="seccomp-localhost-required"),
    pytest.param({"seccompProfile": {"type": "Localhost", "localhostProfile": "/abs/../x"}}, {},
                 [f'{PSC}.seccompProfile.localhostProfile: Invalid value: "/abs/../x": must be a relative path',
                  f"{PSC}.seccompProfile.localhostProfile: Invalid value: \"/abs/../x\": must not contain '..'"],
                 id="seccomp-localhost-path"),
    pytest.param({"seccompProfile": {"type": "RuntimeDefault", "localhostProfile": "x.json"}}, {},
                 [f'{PSC}.seccompProfile.localhostProfile: Invalid value: {{"Type":"RuntimeDefault",'
                  '"LocalhostProfile":"x.json"}: can only be set when seccomp type is Localhost'],
                 id="seccomp-localhost-profile-not-localhost"),
    pytest.param({"appArmorProfile": {"type": "Localhost"}}, {},
                 [f"{PSC}.appArmorProfile.localhostProfile: Required value: must be set when AppArmor type is Localhost"],
                 id="apparmor-localhost-required"),
    pytest.param({"appArmorProfile": {"type": "Localhost", "localhostProfile": " p "}}, {},
                 [f'{PSC}.appArmorProfile.localhostProfile: Invalid value: " p ": must not be padded with whitespace'],
                 id="apparmor-padded"),
    pytest.param({"appArmorProfile": {"type": "Localhost", "localhostProfile": "p" * 4096}}, {},
                 [f"{PSC}.appArmorProfile.localhostProfile: Too long: may not be more than 4095 bytes"],
                 id="apparmor-too-long"),
    pytest.param({"appArmorProfile": {"type": "Unconfined", "localhostProfile": "p"}}, {},
                 [f'{PSC}.appArmorProfile.localhostProfile: Invalid value: "p": can only be set when AppArmor type '
                  "is Localhost"], id="apparmor-profile-not-localhost"),
    pytest.param({"appArmorProfile": {}}, {},
                 [f"{PSC}.appArmorProfile.type: Required value: type is required when appArmorProfile is set"],
                 id="apparmor-type-required"),
    pytest.param({"appArmorProfile": {"type": "Other"}}, {},
                 [f'{PSC}.appArmorProfile.type: Unsupported value: "Other": supported values: "Localhost", '
                  '"RuntimeDefault", "Unconfined"'], id="apparmor-type"),
]


@pytest.mark.parametrize("sc,spec,expected", POD_CASES)
def test_pod_security_context(sc: dict, spec: dict, expected: list[str]) -> None:
    assert strs(pod(sc, **spec)) == expected


WIN = f"{CSC}.windowsOptions"

CONTAINER_CASES = [
    pytest.param({"runAsUser": 0, "runAsGroup": 0, "procMount": "Default", "allowPrivilegeEscalation": False,
                  "capabilities": {"add": ["NET_ADMIN"]}, "seccompProfile": {"type": "Unconfined"}}, None, [],
                 id="valid"),
    pytest.param({"privileged": True, "allowPrivilegeEscalation": True}, None, [], id="privileged-allowed"),
    pytest.param({"runAsUser": -1, "runAsGroup": -2}, None,
                 [f"{CSC}.runAsUser: Invalid value: -1: {RANGE}", f"{CSC}.runAsGroup: Invalid value: -2: {RANGE}"],
                 id="ids"),
    pytest.param({"procMount": "Other"}, None,
                 [f'{CSC}.procMount: Unsupported value: "Other": supported values: "Default", "Unmasked"'],
                 id="proc-mount"),
    pytest.param({"procMount": "Unmasked"}, None,
                 [f'{CSC}.procMount: Invalid value: "Unmasked": `hostUsers` must be false to use `Unmasked`'],
                 id="unmasked-needs-user-namespace"),
    pytest.param({"procMount": "Unmasked"}, {"hostUsers": False}, [], id="unmasked-with-user-namespace"),
    pytest.param({"privileged": True, "allowPrivilegeEscalation": False}, None,
                 [f'{CSC}: Invalid value: {{"Capabilities":null,"Privileged":true,"SELinuxOptions":null,'
                  '"WindowsOptions":null,"RunAsUser":null,"RunAsGroup":null,"RunAsNonRoot":null,'
                  '"ReadOnlyRootFilesystem":null,"AllowPrivilegeEscalation":false,"ProcMount":null,'
                  '"SeccompProfile":null,"AppArmorProfile":null}: cannot set `allowPrivilegeEscalation` to false '
                  "and `privileged` to true"], id="no-escalation-but-privileged"),
    pytest.param({"capabilities": {"add": ["CAP_SYS_ADMIN"]}, "allowPrivilegeEscalation": False}, None,
                 [f'{CSC}: Invalid value: {{"Capabilities":{{"Add":["CAP_SYS_ADMIN"],"Drop":null}},'
                  '"Privileged":null,"SELinuxOptions":null,"WindowsOptions":null,"RunAsUser":null,"RunAsGroup":null,'
                  '"RunAsNonRoot":null,"ReadOnlyRootFilesystem":null,"AllowPrivilegeEscalation":false,'
                  '"ProcMount":null,"SeccompProfile":null,"AppArmorProfile":null}: cannot set '
                  "`allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN"],
                 id="no-escalation-but-sys-admin"),
    pytest.param({"seccompProfile": {"type": "Localhost", "localhostProfile": "../x"}}, None,
                 [f"{CSC}.seccompProfile.localhostProfile: Invalid value: \"../x\": must not contain '..'"],
                 id="container-seccomp"),
    pytest.param({"windowsOptions": {"gmsaCredentialSpecName": "Not_A_Name"}}, None,
                 [f'{WIN}.gmsaCredentialSpecName: Invalid value: "Not_A_Name": a lowercase RFC 1123 subdomain must '
                  "consist of lower case alphanumeric characters, '-' or '.', and must start and end with an "
                  "alphanumeric character (e.g. 'example.com', regex used for validation is "
                  "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"], id="gmsa-name"),
    pytest.param({"windowsOptions": {"gmsaCredentialSpec": ""}}, None,
                 [f'{WIN}.gmsaCredentialSpec: Invalid value: "": gmsaCredentialSpec cannot be an empty string'],
                 id="gmsa-spec-empty"),
    pytest.param({"windowsOptions": {"runAsUserName": "Container. User"}}, None, [], id="valid-run-as-user-name"),
    pytest.param({"windowsOptions": {"runAsUserName": "NT AUTHORITY\\NETWORK SERVICE"}}, None, [],
                 id="valid-domain-user"),
    pytest.param({"windowsOptions": {"runAsUserName": ""}}, None,
                 [f'{WIN}.runAsUserName: Invalid value: "": runAsUserName cannot be an empty string'],
                 id="run-as-user-name-empty"),
    pytest.param({"windowsOptions": {"runAsUserName": "a\\b\\c"}}, None,
                 [f'{WIN}.runAsUserName: Invalid value: "a\\\\b\\\\c": runAsUserName cannot contain more than one '
                  "backslash"], id="two-backslashes"),
    pytest.param({"windowsOptions": {"runAsUserName": "user\x07"}}, None,
                 [f'{WIN}.runAsUserName: Invalid value: "user\\a": runAsUserName cannot contain control characters'],
                 id="control-characters"),
    pytest.param({"windowsOptions": {"runAsUserName": "..."}}, None,
                 [f'{WIN}.runAsUserName: Invalid value: "...": runAsUserName\'s User cannot contain only periods '
                  "or spaces"], id="only-periods"),
    pytest.param({"windowsOptions": {"runAsUserName": "a" * 105}}, None,
                 [f'{WIN}.runAsUserName: Invalid value: "{"a" * 105}": runAsUserName\'s User length must not be '
                  "longer than 104 characters"], id="user-too-long"),
    pytest.param({"windowsOptions": {"runAsUserName": "Container@User"}}, None,
                 [f'{WIN}.runAsUserName: Invalid value: "Container@User": runAsUserName\'s User cannot contain the '
                  'following characters: "/\\:;|=,+*?<>@[]'], id="user-characters"),
    pytest.param({"windowsOptions": {"runAsUserName": "-domain-\\user"}}, None, [], id="netbios-domain"),
    pytest.param({"windowsOptions": {"runAsUserName": ".domain\\user"}}, None,
                 [f'{WIN}.runAsUserName: Invalid value: ".domain\\\\user": runAsUserName\'s Domain doesn\'t match '
                  "the NetBios nor the DNS format"], id="domain-format"),
    pytest.param({"windowsOptions": {"runAsUserName": "domain\\"}}, None,
                 [f'{WIN}.runAsUserName: Invalid value: "domain\\\\": runAsUserName\'s User cannot be empty'],
                 id="user-empty"),
]


@pytest.mark.parametrize("csc,sc,expected", CONTAINER_CASES)
def test_container_security_context(csc: dict, sc: dict | None, expected: list[str]) -> None:
    assert strs(pod(sc, csc)) == expected


def test_init_container_security_context_is_checked() -> None:
    p = pod()
    p["spec"]["initContainers"] = [{"name": "init", "image": "busybox", "securityContext": {"runAsUser": -1}}]
    set_defaults(p)
    assert strs(p) == [f"spec.initContainers[0].securityContext.runAsUser: Invalid value: -1: {RANGE}"]
