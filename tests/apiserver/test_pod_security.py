"""The PodSecurity admission plugin through the API: the namespace labels decide per mode."""
from __future__ import annotations

from typing import Any

import pytest

RESTRICTED_POD_SPEC: dict[str, Any] = {
    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    "containers": [{"name": "c", "image": "nginx",
                    "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}],
}


def warnings_of(r: Any) -> list[str]:
    return [v for k, v in r.headers if k.lower() == "warning"]


async def namespace(api: Any, name: str, labels: dict[str, str] | None = None) -> Any:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels or {}}}
    return await api.call("POST", "/api/v1/namespaces", body=body)


def privileged_pod(api: Any, name: str, ns: str) -> dict[str, Any]:
    p = api.pod(name, ns)
    p["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    return p


async def test_enforce_restricted_refuses_with_upstreams_message(api: Any) -> None:
    assert (await namespace(api, "r", {"pod-security.kubernetes.io/enforce": "restricted"})).status == 201
    r = await api.call("POST", "/api/v1/namespaces/r/pods", body=privileged_pod(api, "p", "r"))
    assert r.status == 403, r.json
    assert r.json["reason"] == "Forbidden"
    assert r.json["message"] == (
        'pods "p" is forbidden: violates PodSecurity "restricted:latest": '
        'privileged (container "c" must not set securityContext.privileged=true), '
        'allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), '
        'unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), '
        'runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), '
        'seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to '
        '"RuntimeDefault" or "Localhost")')
    assert r.json["details"] == {"name": "p", "kind": "pods"}
    assert (await api.get("/api/v1/namespaces/r/pods/p")).status == 404
    ok = api.pod("ok", "r", **RESTRICTED_POD_SPEC)
    r = await api.call("POST", "/api/v1/namespaces/r/pods", body=ok)
    assert r.status == 201, r.json
    assert warnings_of(r) == []


def warning(text: str) -> str:
    return '299 - "' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


PRIVILEGED_DETAIL = 'privileged (container "c" must not set securityContext.privileged=true)'


async def test_warn_baseline_accepts_with_a_warning_header(api: Any) -> None:
    await namespace(api, "w", {"pod-security.kubernetes.io/warn": "baseline"})
    r = await api.call("POST", "/api/v1/namespaces/w/pods", body=privileged_pod(api, "p", "w"))
    assert r.status == 201, r.json
    assert warnings_of(r) == [warning(f'would violate PodSecurity "baseline:latest": {PRIVILEGED_DETAIL}')]
    r = await api.call("POST", "/api/v1/namespaces/w/pods", {"dryRun": "All"}, body=privileged_pod(api, "q", "w"))
    assert r.status == 201 and len(warnings_of(r)) == 1          # a dry run warns too
    r = await api.call("POST", "/api/v1/namespaces/w/pods", body=api.pod("plain", "w"))
    assert r.status == 201 and warnings_of(r) == []               # baseline allows a plain pod


async def test_no_labels_is_privileged(api: Any) -> None:
    r = await api.call("POST", api.PODS, body=privileged_pod(api, "p", "default"))
    assert r.status == 201 and warnings_of(r) == []


async def test_enforce_baseline_warns_at_restricted(api: Any) -> None:
    await namespace(api, "b", {"pod-security.kubernetes.io/enforce": "baseline",
                               "pod-security.kubernetes.io/warn": "restricted"})
    r = await api.call("POST", "/api/v1/namespaces/b/pods", body=privileged_pod(api, "p", "b"))
    assert r.status == 403
    assert r.json["message"] == f'pods "p" is forbidden: violates PodSecurity "baseline:latest": {PRIVILEGED_DETAIL}'
    assert warnings_of(r) == []                                   # no warnings on a refusal
    r = await api.call("POST", "/api/v1/namespaces/b/pods", body=api.pod("plain", "b"))
    assert r.status == 201
    [w] = warnings_of(r)
    assert w.startswith(warning('would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false')[:-1])


async def test_enforce_version_picks_that_versions_checks(api: Any) -> None:
    """net.ipv4.tcp_notsent_lowat is allowed from policy v1.37 on."""
    await namespace(api, "v", {"pod-security.kubernetes.io/enforce": "baseline",
                               "pod-security.kubernetes.io/enforce-version": "v1.36"})
    p = api.pod("p", "v", securityContext={"sysctls": [{"name": "net.ipv4.tcp_notsent_lowat", "value": "1"}]})
    r = await api.call("POST", "/api/v1/namespaces/v/pods", body=p)
    assert r.status == 403
    assert r.json["message"] == ('pods "p" is forbidden: violates PodSecurity "baseline:v1.36": '
                                 "forbidden sysctls (net.ipv4.tcp_notsent_lowat)")
    await namespace(api, "l", {"pod-security.kubernetes.io/enforce": "baseline"})
    p["metadata"]["namespace"] = "l"
    assert (await api.call("POST", "/api/v1/namespaces/l/pods", body=p)).status == 201


async def test_generate_name_pod_refused_without_a_name(api: Any) -> None:
    await namespace(api, "g", {"pod-security.kubernetes.io/enforce": "baseline"})
    p = privileged_pod(api, "", "g")
    p["metadata"]["generateName"] = "web-"
    r = await api.call("POST", "/api/v1/namespaces/g/pods", body=p)
    assert r.status == 403
    assert r.json["message"] == f'pods is forbidden: violates PodSecurity "baseline:latest": {PRIVILEGED_DETAIL}'


async def test_pod_controllers_warn_but_are_never_refused(api: Any) -> None:
    await namespace(api, "d", {"pod-security.kubernetes.io/enforce": "restricted"})
    d = api.deployment("web")
    d["spec"]["template"]["spec"]["containers"][0]["securityContext"] = {"privileged": True}
    r = await api.call("POST", "/apis/apps/v1/namespaces/d/deployments", body=d)
    assert r.status == 201, r.json
    [w] = warnings_of(r)          # warn defaults to the (stricter) enforce level
    assert w.startswith(warning(f'would violate PodSecurity "restricted:latest": {PRIVILEGED_DETAIL}, ')[:-1])


@pytest.mark.parametrize("labels, message", [
    ({"pod-security.kubernetes.io/enforce": "strict"},
     'Namespace "bad" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": '
     "must be one of privileged, baseline, restricted"),
    ({"pod-security.kubernetes.io/warn-version": "v1.05", "pod-security.kubernetes.io/audit": "x"},
     'Namespace "bad" is invalid: [metadata.labels[pod-security.kubernetes.io/audit]: Invalid value: "x": '
     "must be one of privileged, baseline, restricted, metadata.labels[pod-security.kubernetes.io/warn-version]: "
     'Invalid value: "v1.05": must be "latest" or "v1.x"]'),
])
async def test_namespace_labels_are_validated(api: Any, labels: dict[str, str], message: str) -> None:
    r = await namespace(api, "bad", labels)
    assert r.status == 422
    assert r.json["message"] == message
    assert (await api.get("/api/v1/namespaces/bad")).status == 404


async def test_one_namespace_read_per_pod_and_labels_seen_at_once(api: Any, monkeypatch: Any) -> None:
    """PodSecurity uses the namespace NamespaceLifecycle read (no second storage read; and
    NamespaceLifecycle reads its watch-fed index once it has listed the namespaces), and a
    label added later counts for the very next pod."""
    await namespace(api, "fast")
    reads: list[str] = []
    get = api.storage.get

    async def counting_get(key: str) -> Any:
        reads.append(key)
        return await get(key)

    monkeypatch.setattr(api.storage, "get", counting_get)
    for name in ("a", "b"):
        r = await api.call("POST", "/api/v1/namespaces/fast/pods", body=privileged_pod(api, name, "fast"))
        assert r.status == 201
    assert [k for k in reads if k.startswith("/registry/namespaces/")] in ([], ["/registry/namespaces/fast"])
    r = await api.call("PATCH", "/api/v1/namespaces/fast", body={"metadata": {"labels": {
        "pod-security.kubernetes.io/enforce": "baseline"}}},
        headers={"content-type": "application/merge-patch+json"})
    assert r.status == 200, r.json
    r = await api.call("POST", "/api/v1/namespaces/fast/pods", body=privileged_pod(api, "c", "fast"))
    assert r.status == 403



async def test_configured_exemption_warns_on_namespace_create(api: Any, tmp_path: Any) -> None:
    """--admission-control-config-file reaches the plugin; an exempt namespace asking for a
    policy is told it will be ignored (upstream: exemptNamespaceWarning)."""
    from kubeplane.apiserver.options import ServerRunOptions
    from kubeplane.apiserver.server import APIServer
    from kubeplane.storage import new_storage

    config = tmp_path / "admission.yaml"
    config.write_text(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n"
        "- name: PodSecurity\n  configuration:\n    apiVersion: pod-security.admission.config.k8s.io/v1\n"
        "    kind: PodSecurityConfiguration\n    exemptions:\n      namespaces: [ops]\n")
    from kubeplane.testing.fake import WITHOUT_CONTROLLER_MANAGER
    options = ServerRunOptions(admission_control_config_file=str(config),
                               disable_admission_plugins=WITHOUT_CONTROLLER_MANAGER.disable_admission_plugins)
    server = APIServer(new_storage("memory"), clock=api.clock, options=options)
    await server.bootstrap()
    exempt = type(api)(server, api.clock)
    try:
        r = await namespace(exempt, "ops", {"pod-security.kubernetes.io/enforce": "restricted"})
        assert r.status == 201
        assert warnings_of(r) == [warning('namespace "ops" is exempt from Pod Security, and the policy '
                                          "(enforce=restricted:latest) will be ignored")]
        r = await exempt.call("POST", "/api/v1/namespaces/ops/pods", body=privileged_pod(api, "p", "ops"))
        assert r.status == 201 and warnings_of(r) == []
        r = await namespace(exempt, "dev", {"pod-security.kubernetes.io/enforce": "restricted"})
        assert r.status == 201 and warnings_of(r) == []
    finally:
        await server.storage.close()
