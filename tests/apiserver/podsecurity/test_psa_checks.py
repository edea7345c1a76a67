"""Each check against upstream's test table (policy/check_*_test.go): the exact reason and detail."""
from __future__ import annotations

from typing import Any

import pytest

from kubeplane.apiserver.admission.podsecurity import checks_baseline as b
from kubeplane.apiserver.admission.podsecurity import checks_restricted as r
from kubeplane.apiserver.admission.podsecurity.check import Forbidden


def c(name: str, **sc: Any) -> dict[str, Any]:
    """A container; keyword arguments become its securityContext (sc=None: none at all)."""
    return {"name": name} if not sc else {"name": name, "securityContext": sc}


def spec(*containers: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"containers": list(containers), **fields}


APPARMOR = "container.apparmor.security.beta.kubernetes.io/"
SECCOMP_C = "container.seccomp.security.alpha.kubernetes.io/"

CASES = [
    # allowPrivilegeEscalation
    pytest.param(r.allow_privilege_escalation_1_25, {}, spec(
        c("a"), c("b", allowPrivilegeEscalation=None), c("b2", capabilities={}),
        c("c", allowPrivilegeEscalation=True), c("d", allowPrivilegeEscalation=False)),
        Forbidden("allowPrivilegeEscalation != false",
                  'containers "a", "b", "b2", "c" must set securityContext.allowPrivilegeEscalation=false'),
        id="allowPrivilegeEscalation-multiple"),
    pytest.param(r.allow_privilege_escalation_1_25, {}, spec(c("a"), os={"name": "windows"}), None,
                 id="allowPrivilegeEscalation-windows"),
    pytest.param(r.allow_privilege_escalation_1_25, {}, spec(c("a"), os={"name": "linux"}),
                 Forbidden("allowPrivilegeEscalation != false",
                           'container "a" must set securityContext.allowPrivilegeEscalation=false'),
                 id="allowPrivilegeEscalation-linux"),
    pytest.param(r.allow_privilege_escalation_1_8, {}, spec(c("a"), os={"name": "windows"}),
                 Forbidden("allowPrivilegeEscalation != false",
                           'container "a" must set securityContext.allowPrivilegeEscalation=false'),
                 id="allowPrivilegeEscalation-1.8-windows-not-exempt"),
    # appArmorProfile
    pytest.param(b.app_armor_profile_1_0, {"annotations": {APPARMOR + "test": "runtime/default", "env": "prod"}},
                 {}, None, id="appArmor-runtime-default-annotation"),
    pytest.param(b.app_armor_profile_1_0, {"annotations": {APPARMOR + "test": "localhost/sec-profile01"}},
                 {}, None, id="appArmor-localhost-annotation"),
    pytest.param(b.app_armor_profile_1_0, {}, {"securityContext": {"appArmorProfile": {"type": "Unconfined"}}},
                 Forbidden("forbidden AppArmor profile", 'pod must not set AppArmor profile type to "Unconfined"'),
                 id="appArmor-unconfined-pod"),
    pytest.param(b.app_armor_profile_1_0, {}, spec(
        c("foo"), securityContext={"appArmorProfile": {"type": "RuntimeDefault"}},
        initContainers=[c("bar", appArmorProfile={"type": "Unconfined"})]),
        Forbidden("forbidden AppArmor profile", 'container "bar" must not set AppArmor profile type to "Unconfined"'),
        id="appArmor-unconfined-init-container"),
    pytest.param(b.app_armor_profile_1_0, {"annotations": {
        APPARMOR: "bogus", APPARMOR + "a": "", APPARMOR + "b": "runtime/default", APPARMOR + "c": "localhost/",
        APPARMOR + "d": "localhost/foo", APPARMOR + "e": "unconfined", APPARMOR + "f": "unknown"}}, {},
        Forbidden("forbidden AppArmor profiles", "annotations must not set AppArmor profile type to "
                  f'"{APPARMOR}="bogus"", "{APPARMOR}e="unconfined"", "{APPARMOR}f="unknown""'),
        id="appArmor-annotations"),
    # capabilities
    pytest.param(b.capabilities_baseline_1_0, {}, spec(
        c("a", capabilities={"add": ["FOO", "BAR"]}), c("b", capabilities={"add": ["BAR", "BAZ"]})),
        Forbidden("non-default capabilities",
                  'containers "a", "b" must not include "BAR", "BAZ", "FOO" in securityContext.capabilities.add'),
        id="capabilities_baseline"),
    pytest.param(r.capabilities_restricted_1_25, {}, spec(
        c("a", capabilities={"add": ["FOO", "BAR"]}), c("b", capabilities={"add": ["BAR", "BAZ"]}),
        c("c", capabilities={"add": ["NET_BIND_SERVICE", "CHOWN"], "drop": ["ALL", "FOO"]})),
        Forbidden("unrestricted capabilities",
                  'containers "a", "b" must set securityContext.capabilities.drop=["ALL"]; containers "a", "b", "c" '
                  'must not include "BAR", "BAZ", "CHOWN", "FOO" in securityContext.capabilities.add'),
        id="capabilities_restricted"),
    pytest.param(r.capabilities_restricted_1_25, {}, spec(c("a"), os={"name": "windows"}), None,
                 id="capabilities_restricted-windows"),
    # host namespaces, hostPath, hostPorts
    pytest.param(b.host_namespaces_1_0, {}, {"hostNetwork": True, "hostIPC": True, "hostPID": True},
                 Forbidden("host namespaces", "hostNetwork=true, hostPID=true, hostIPC=true"), id="hostNamespaces"),
    pytest.param(b.host_path_volumes_1_0, {}, {"volumes": [
        {"name": "a", "hostPath": {}}, {"name": "b", "hostPath": {}}, {"name": "c", "emptyDir": {}}]},
        Forbidden("hostPath volumes", 'volumes "a", "b"'), id="hostPathVolumes"),
    pytest.param(b.host_ports_1_0, {}, spec(
        {"name": "a", "ports": [{"hostPort": 0}]}, {"name": "b", "ports": [{"hostPort": 0}, {"hostPort": 20}]}),
        Forbidden("hostPort", 'container "b" uses hostPort 20'), id="hostPorts-one"),
    pytest.param(b.host_ports_1_0, {}, spec(
        {"name": "a", "ports": [{"hostPort": 0}]},
        {"name": "b", "ports": [{"hostPort": 0}, {"hostPort": 10}, {"hostPort": 20}]},
        {"name": "c", "ports": [{"hostPort": 0}, {"hostPort": 10}, {"hostPort": 30}]}),
        Forbidden("hostPort", 'containers "b", "c" use hostPorts 10, 20, 30'), id="hostPorts-multiple"),
    # hostProbesAndHostLifecycle
    pytest.param(b.host_probes_and_host_lifecycle_1_34, {}, spec(
        {"name": "a", "livenessProbe": {"httpGet": {"host": "127.0.0.1"}},
         "readinessProbe": {"tcpSocket": {"host": "::1"}}, "startupProbe": {"httpGet": {"host": "localhost"}}}),
        Forbidden("probe or lifecycle host", 'container "a" uses probe or lifecycle hosts "127.0.0.1", "::1", "localhost"'),
        id="hostProbes-local"),
    pytest.param(b.host_probes_and_host_lifecycle_1_34, {}, spec(
        {"name": "d", "lifecycle": {"postStart": {"tcpSocket": {"host": "invalid.host"}}}}),
        Forbidden("probe or lifecycle host", 'container "d" uses probe or lifecycle host "invalid.host"'),
        id="hostProbes-poststart"),
    pytest.param(b.host_probes_and_host_lifecycle_1_34, {}, spec(
        {"name": "a", "livenessProbe": {"httpGet": {"host": ""}, "tcpSocket": {}}}), None, id="hostProbes-unset"),
    # privileged, procMount
    pytest.param(b.privileged_1_0, {}, spec(
        c("a"), {"name": "b", "securityContext": {}}, c("c", privileged=False), c("d", privileged=True),
        c("e", privileged=True)),
        Forbidden("privileged", 'containers "d", "e" must not set securityContext.privileged=true'), id="privileged"),
    pytest.param(b.proc_mount_1_35_baseline, {}, spec(
        c("a"), c("c", procMount="Default"), c("d", procMount="Unmasked"), c("e", procMount="other"), hostUsers=True),
        Forbidden("procMount", 'containers "d", "e" must not set securityContext.procMount to "Unmasked", "other"'),
        id="procMount"),
    pytest.param(b.proc_mount_1_35_baseline, {}, spec(c("d", procMount="Unmasked"), hostUsers=False), None,
                 id="procMount-userns"),
    pytest.param(b.proc_mount_1_0, {}, spec(c("d", procMount="Unmasked"), hostUsers=False),
                 Forbidden("procMount", 'container "d" must not set securityContext.procMount to "Unmasked"'),
                 id="procMount_restricted-userns"),
    # restrictedVolumes
    pytest.param(r.restricted_volumes_1_0, {}, {"volumes": [
        *({"name": f"a{i}", src: {}} for i, src in enumerate(r.ALLOWED_VOLUME_SOURCES, 1)),
        *({"name": f"b{i}", src: {}} for i, src in enumerate(r.RESTRICTED_VOLUME_SOURCES, 1)),
        {"name": "c1"}]},
        Forbidden("restricted volume types",
                  'volumes "b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8", "b9", "b10", "b11", "b12", "b13", "b14", '
                  '"b15", "b16", "b17", "b18", "b19", "b20", "b21", "c1" use restricted volume types '
                  '"awsElasticBlockStore", "azureDisk", "azureFile", "cephfs", "cinder", "fc", "flexVolume", '
                  '"flocker", "gcePersistentDisk", "gitRepo", "glusterfs", "hostPath", "iscsi", "nfs", '
                  '"photonPersistentDisk", "portworxVolume", "quobyte", "rbd", "scaleIO", "storageos", "unknown", '
                  '"vsphereVolume"'),
        id="restrictedVolumes"),
    # runAsNonRoot, runAsUser
    pytest.param(r.run_as_non_root_1_35, {}, spec(c("a")),
                 Forbidden("runAsNonRoot != true", 'pod or container "a" must set securityContext.runAsNonRoot=true'),
                 id="runAsNonRoot-unset"),
    pytest.param(r.run_as_non_root_1_35, {}, spec(c("a"), securityContext={"runAsNonRoot": False}),
                 Forbidden("runAsNonRoot != true", "pod must not set securityContext.runAsNonRoot=false"),
                 id="runAsNonRoot-pod-false"),
    pytest.param(r.run_as_non_root_1_35, {}, spec(
        c("a"), {"name": "b", "securityContext": {}}, c("c", runAsNonRoot=False), c("d", runAsNonRoot=False),
        c("e", runAsNonRoot=True), securityContext={"runAsNonRoot": True}),
        Forbidden("runAsNonRoot != true", 'containers "c", "d" must not set securityContext.runAsNonRoot=false'),
        id="runAsNonRoot-containers-false"),
    pytest.param(r.run_as_non_root_1_35, {}, spec(
        c("a"), {"name": "b", "securityContext": {}}, c("d", runAsNonRoot=True)),
        Forbidden("runAsNonRoot != true", 'pod or containers "a", "b" must set securityContext.runAsNonRoot=true'),
        id="runAsNonRoot-fallthrough"),
    pytest.param(r.run_as_non_root_1_35, {}, {"hostUsers": False, "containers": [c("a")]}, None,
                 id="runAsNonRoot-userns"),
    pytest.param(r.run_as_user_1_35, {}, spec(c("a"), securityContext={"runAsUser": 0}),
                 Forbidden("runAsUser=0", "pod must not set runAsUser=0"), id="runAsUser-pod"),
    pytest.param(r.run_as_user_1_35, {}, spec(c("a"), securityContext={"runAsUser": 1000}), None,
                 id="runAsUser-pod-nonzero"),
    pytest.param(r.run_as_user_1_35, {}, spec(
        c("a"), {"name": "b", "securityContext": {}}, c("c", runAsUser=0), c("d", runAsUser=0), c("e", runAsUser=1)),
        Forbidden("runAsUser=0", 'containers "c", "d" must not set runAsUser=0'), id="runAsUser-containers"),
    pytest.param(r.run_as_user_1_35, {}, spec(c("c", runAsUser=0), hostUsers=False), None, id="runAsUser-userns"),
    # seLinuxOptions
    pytest.param(b.se_linux_options_1_31, {}, spec(
        c("a", seLinuxOptions={"type": "container_t"}), c("b", seLinuxOptions={"type": "container_init_t"}),
        c("c", seLinuxOptions={"type": "container_kvm_t"}), c("d", seLinuxOptions={"type": "container_engine_t"}),
        c("e", seLinuxOptions={"type": "bar"}), c("f", seLinuxOptions={"user": "bar"}),
        c("g", seLinuxOptions={"role": "baz"}),
        securityContext={"seLinuxOptions": {"type": "foo", "user": "bar", "role": "baz"}}),
        Forbidden("seLinuxOptions", 'pod and containers "e", "f", "g" set forbidden securityContext.seLinuxOptions: '
                                    'types "bar", "foo"; user may not be set; role may not be set'),
        id="seLinuxOptions-pod-and-containers"),
    pytest.param(b.se_linux_options_1_0, {}, spec(c("d", seLinuxOptions={"type": "container_engine_t"})),
                 Forbidden("seLinuxOptions", 'container "d" set forbidden securityContext.seLinuxOptions: '
                                             'type "container_engine_t"'),
                 id="seLinuxOptions-1.0-engine-type"),
    pytest.param(b.se_linux_options_1_31, {}, {"securityContext": {"seLinuxOptions": {"role": "bad"}}},
                 Forbidden("seLinuxOptions", "pod set forbidden securityContext.seLinuxOptions: role may not be set"),
                 id="seLinuxOptions-role"),
    # seccompProfile
    pytest.param(b.seccomp_profile_baseline_1_0, {"annotations": {
        "seccomp.security.alpha.kubernetes.io/pod": "unconfined", SECCOMP_C + "a": "unconfined",
        SECCOMP_C + "b": "unknown", SECCOMP_C + "c": "runtime/default"}}, spec(c("a"), c("b"), c("c")),
        Forbidden("seccompProfile", f'forbidden annotations {SECCOMP_C}a="unconfined", {SECCOMP_C}b="unknown", '
                                    'seccomp.security.alpha.kubernetes.io/pod="unconfined"'),
        id="seccomp_baseline-annotations"),
    pytest.param(b.seccomp_profile_baseline_1_19, {}, spec(
        c("a"), c("c", seccompProfile={"type": "Unconfined"}), c("d", seccompProfile={"type": "Unconfined"}),
        c("e", seccompProfile={"type": "RuntimeDefault"}), securityContext={"seccompProfile": {"type": "Unconfined"}}),
        Forbidden("seccompProfile", 'pod and containers "c", "d" must not set securityContext.seccompProfile.type '
                                    'to "Unconfined"'),
        id="seccomp_baseline-fields"),
    pytest.param(r.seccomp_profile_restricted_1_25, {}, spec(c("a")),
                 Forbidden("seccompProfile", 'pod or container "a" must set securityContext.seccompProfile.type to '
                                             '"RuntimeDefault" or "Localhost"'),
                 id="seccomp_restricted-unset"),
    pytest.param(r.seccomp_profile_restricted_1_25, {}, spec(c("a"), os={"name": "windows"}), None,
                 id="seccomp_restricted-windows"),
    pytest.param(r.seccomp_profile_restricted_1_25, {}, spec(
        c("a"), {"name": "b", "securityContext": {}}, c("d", seccompProfile={"type": "RuntimeDefault"})),
        Forbidden("seccompProfile", 'pod or containers "a", "b" must set securityContext.seccompProfile.type to '
                                    '"RuntimeDefault" or "Localhost"'),
        id="seccomp_restricted-fallthrough"),
    # sysctls
    pytest.param(b.sysctls_1_37, {}, {"securityContext": {"sysctls": [{"name": "a"}, {"name": "b"}]}},
                 Forbidden("forbidden sysctls", "a, b"), id="sysctls"),
    pytest.param(b.sysctls_1_0, {}, {"securityContext": {"sysctls": [{"name": "net.ipv4.ip_local_reserved_ports"}]}},
                 Forbidden("forbidden sysctls", "net.ipv4.ip_local_reserved_ports"), id="sysctls-1.0-new-one"),
    pytest.param(b.sysctls_1_32, {}, {"securityContext": {"sysctls": [{"name": "net.ipv4.tcp_notsent_lowat"}]}},
                 Forbidden("forbidden sysctls", "net.ipv4.tcp_notsent_lowat"), id="sysctls-1.32-new-in-1.37"),
    pytest.param(b.sysctls_1_37, {}, {"securityContext": {"sysctls": [{"name": "net.ipv4.tcp_notsent_lowat"}]}},
                 None, id="sysctls-1.37"),
    # windowsHostProcess
    pytest.param(b.windows_host_process_1_0, {}, spec(
        c("a"), {"name": "b", "securityContext": {}}, c("c", windowsOptions={}),
        c("d", windowsOptions={"hostProcess": False}), c("e", windowsOptions={"hostProcess": True}),
        c("f", windowsOptions={"hostProcess": True}), securityContext={"windowsOptions": {"hostProcess": True}}),
        Forbidden("hostProcess", 'pod and containers "e", "f" must not set securityContext.windowsOptions.hostProcess=true'),
        id="windowsHostProcess"),
]


@pytest.mark.parametrize("check, meta, pod_spec, expected", CASES)
def test_check(check: Any, meta: dict[str, Any], pod_spec: dict[str, Any], expected: Forbidden | None) -> None:
    assert check(meta, pod_spec) == expected


@pytest.mark.parametrize("hostile", [
    {"containers": "x"}, {"containers": [None, 3, {"securityContext": "x"}]}, {"volumes": [None, {"name": 1}]},
    {"securityContext": {"sysctls": [None], "seccompProfile": [], "seLinuxOptions": 5}},
    {"containers": [{"name": "a", "ports": [None], "lifecycle": [], "livenessProbe": {"httpGet": 1}}]},
])
def test_ill_typed_specs_never_raise(hostile: dict[str, Any]) -> None:
    """A template validated less strictly than a pod must not break a check (never a 500)."""
    from kubeplane.apiserver.admission.podsecurity.registry import DEFAULT_EVALUATOR
    from kubeplane.apiserver.admission.podsecurity.api import LevelVersion, parse_version
    for version in ("v1.0", "v1.19", "latest"):
        DEFAULT_EVALUATOR.evaluate_pod(LevelVersion("restricted", parse_version(version)), {"annotations": 1}, hostile)
