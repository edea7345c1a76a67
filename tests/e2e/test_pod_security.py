"""PodSecurity with the real kubectl: namespace labels refuse or warn as upstream's admission does."""
from __future__ import annotations

import json
import pathlib
from typing import Any

import pytest

from .cluster import Cluster


def pod(name: str, ns: str, *, privileged: bool = False) -> str:
    container: dict[str, Any] = {"name": "c", "image": "nginx"}
    spec: dict[str, Any] = {"containers": [container]}
    if privileged:
        container["securityContext"] = {"privileged": True}
    else:        # what restricted asks for
        container["securityContext"] = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
        spec["securityContext"] = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns}, "spec": spec})


def test_enforce_restricted_and_warn_baseline(cluster: Cluster) -> None:
    cluster.kubectl("create", "namespace", "psa-r")
    cluster.kubectl("label", "namespace", "psa-r", "pod-security.kubernetes.io/enforce=restricted")
    res = cluster.kubectl("create", "-f", "-", input=pod("bad", "psa-r", privileged=True), check=False)
    assert res.returncode != 0
    assert res.stderr.strip() == (
        'Error from server (Forbidden): error when creating "STDIN": pods "bad" is forbidden: '
        'violates PodSecurity "restricted:latest": '
        'privileged (container "c" must not set securityContext.privileged=true), '
        'allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), '
        'unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), '
        'runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), '
        'seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to '
        '"RuntimeDefault" or "Localhost")')
    assert cluster.kubectl("get", "pod", "bad", "-n", "psa-r", check=False).returncode != 0
    res = cluster.kubectl("create", "-f", "-", input=pod("good", "psa-r"))
    assert res.stdout.strip() == "pod/good created" and "Warning" not in res.stderr

    cluster.kubectl("create", "namespace", "psa-w")
    cluster.kubectl("label", "namespace", "psa-w", "pod-security.kubernetes.io/warn=baseline")
    res = cluster.kubectl("create", "-f", "-", input=pod("priv", "psa-w", privileged=True))
    assert res.stdout.strip() == "pod/priv created"
    assert res.stderr.strip() == ('Warning: would violate PodSecurity "baseline:latest": '
                                  'privileged (container "c" must not set securityContext.privileged=true)')


ADMISSION_CONFIG = """\
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults:
      enforce: %s
    exemptions:
      namespaces: [psa-exempt]
"""


def test_admission_control_config_file(tmp_path: pathlib.Path) -> None:
    """Defaults and exemptions from --admission-control-config-file; a bad file stops `up`."""
    config = tmp_path / "admission.yaml"
    config.write_text(ADMISSION_CONFIG % "baseline")
    c = Cluster(extra_args=("--admission-control-config-file", str(config))).start()
    try:
        res = c.kubectl("create", "-f", "-", input=pod("bad", "default", privileged=True), check=False)
        assert 'pods "bad" is forbidden: violates PodSecurity "baseline:latest": privileged' in res.stderr
        c.kubectl("create", "namespace", "psa-exempt")
        res = c.kubectl("create", "-f", "-", input=pod("bad", "psa-exempt", privileged=True))
        assert res.stdout.strip() == "pod/bad created"
    finally:
        c.cleanup()
    config.write_text(ADMISSION_CONFIG % "strict")
    bad = Cluster(extra_args=("--admission-control-config-file", str(config)))
    try:
        with pytest.raises(RuntimeError, match='failed to initialize admission: PodSecurity invalid: '
                                               'defaults.enforce: Invalid value: "strict"'):
            bad.start()
    finally:
        bad.cleanup()
