"""--runtime-config: upstream's TestParseRuntimeConfig cases (apiserver/pkg/server/resourceconfig/
helpers_test.go) on the same fake scheme, then the served set of a kubeplane server and
--feature-gates."""
from __future__ import annotations

import pytest

from kubeplane.api import resources as res
from kubeplane.api import upstream_resources as upstream
from kubeplane.apiserver import enablement
from kubeplane.apiserver import resourceconfig as rc

CORE, APPS, EXT = ("", "v1"), ("apps", "v1"), ("extensions", "v1beta1")
# newFakeScheme: core v1, apps/v1, extensions/v1beta1
REGISTRY = rc.GroupVersionRegistry((CORE, APPS, EXT))

INGRESSES, EXT_DEPLOYMENTS = ("extensions", "v1beta1", "ingresses"), ("extensions", "v1beta1", "deployments")
EXT_REPLICASETS, EXT_DAEMONSETS = ("extensions", "v1beta1", "replicasets"), ("extensions", "v1beta1", "daemonsets")
DEPLOYMENTS, PODS, APPS_OTHER = ("apps", "v1", "deployments"), ("", "v1", "pods"), ("apps", "v1", "other")
CHECKED = (INGRESSES, EXT_DEPLOYMENTS, EXT_REPLICASETS, EXT_DAEMONSETS, DEPLOYMENTS, PODS)


METRICS = "metrics.k8s.io"

def fake_default() -> rc.ResourceConfig:
    """Upstream: newFakeAPIResourceConfigSource."""
    c = rc.ResourceConfig()
    c.enable_versions(CORE, APPS, EXT)
    c.enable_resources(INGRESSES)
    c.disable_resources(EXT_DEPLOYMENTS, EXT_REPLICASETS, EXT_DAEMONSETS)
    return c


def enabled(*on: tuple[str, str, str]) -> dict[tuple[str, str, str], bool]:
    return {gvr: gvr in on for gvr in CHECKED}


DEFAULT_ENABLED = enabled(INGRESSES, DEPLOYMENTS, PODS)

CASES = [
    # (name, runtime config, expected enabled resources, or None when an error is expected)
    ("using-kind", {"apps/v1/Deployment": "false"}, None),
    ("everything-default-value", {}, DEFAULT_ENABLED),
    ("version-enabled-by-runtimeConfig-override", {"apps/v1": ""}, DEFAULT_ENABLED),
    ("disable-v1", {"/v1": "false"}, enabled(INGRESSES, DEPLOYMENTS)),
    ("invalid-runtime-config", {"invalidgroup/version": "false"}, DEFAULT_ENABLED),
    ("enable-all", {"api/all": "true"}, enabled(*CHECKED)),
    ("only-enable-v1", {"api/all": "false", "/v1": "true"}, enabled(PODS)),
    ("enable-specific-extensions-resources", {"extensions/v1beta1/deployments": "true"},
     enabled(INGRESSES, EXT_DEPLOYMENTS, DEPLOYMENTS, PODS)),
    ("disable-specific-extensions-resources", {"extensions/v1beta1/ingresses": "false"}, enabled(DEPLOYMENTS, PODS)),
    ("disable-all-extensions-resources", {"extensions/v1beta1": "false"}, enabled(DEPLOYMENTS, PODS)),
    ("disable-a-no-extensions-resources", {"apps/v1/deployments": "false"}, enabled(INGRESSES, PODS)),
    ("disable-all-beta-resources", {"api/beta": "false"}, enabled(DEPLOYMENTS, PODS)),
    ("user-explicit-disable-resource-over-user-version-enable",
     {"apps/v1": "true", "apps/v1/deployments": "false"}, enabled(INGRESSES, PODS)),
    ("user-explicit-enable-resource-over-user-version-disable",
     {"apps/v1": "false", "apps/v1/deployments": "true"}, enabled(INGRESSES, DEPLOYMENTS, PODS)),
    ("user-explicit-disable-resource-over-user-stability-enable",
     {"api/ga": "true", "apps/v1/deployments": "false"}, enabled(INGRESSES, PODS)),
    ("user-explicit-enable-resource-over-user-stability-disable",
     {"api/ga": "false", "apps/v1/deployments": "true"}, enabled(INGRESSES, DEPLOYMENTS)),
    ("user-explicit-disable-resource-over-user-version-enable-over-user-stability-disable",
     {"api/ga": "false", "apps/v1": "true", "apps/v1/deployments": "false"}, enabled(INGRESSES)),
    ("user-explicit-enable-resource-over-user-version-disable-over-user-stability-disable",
     {"api/ga": "false", "apps/v1": "false", "apps/v1/deployments": "true"}, enabled(INGRESSES, DEPLOYMENTS)),
    ("user-explicit-disable-resource-over-user-version-enable-over-user-stability-enable",
     {"api/ga": "true", "apps/v1": "true", "apps/v1/deployments": "false"}, enabled(INGRESSES, PODS)),
    ("user-explicit-enable-resource-over-user-version-disable-over-user-stability-enable",
     {"api/ga": "true", "apps/v1": "false", "apps/v1/deployments": "true"}, enabled(INGRESSES, DEPLOYMENTS, PODS)),
]


@pytest.mark.parametrize("name,runtime_config,expected", CASES, ids=[c[0] for c in CASES])
def test_merge_api_resource_configs(name: str, runtime_config: dict[str, str],
                                    expected: dict[tuple[str, str, str], bool] | None) -> None:
    if expected is None:
        with pytest.raises(rc.RuntimeConfigError):
            rc.merge_api_resource_configs(fake_default(), runtime_config, REGISTRY)
        return
    config = rc.merge_api_resource_configs(fake_default(), runtime_config, REGISTRY)
    assert {gvr: config.resource_enabled(gvr) for gvr in CHECKED} == expected


def test_explicit_preferences_are_recorded_as_upstream() -> None:
    config = rc.merge_api_resource_configs(fake_default(), {"apps/v1": "false", "apps/v1/deployments": "true"},
                                           REGISTRY)
    assert config.explicit_group_version_configs == {APPS: False}
    assert config.explicit_resource_configs == {DEPLOYMENTS: True}
    assert config.resource_enabled(APPS_OTHER) is False      # the version's, not the resource's


@pytest.mark.parametrize("overrides,message", [
    ({"apps/v1/Deployment": "false"},
     'invalid key apps/v1/Deployment: group/version/resource and resource is always lowercase plural, not "Deployment"'),
    ({"apps/v2": "true"}, "group version apps/v2 that has not been registered"),
    ({"apps/v1": "yes"}, 'invalid value of apps/v1: yes, err: strconv.ParseBool: parsing "yes": invalid syntax'),
    ({"api/all": "maybe"}, "invalid value api/all=maybe"),
])
def test_merge_errors_have_upstreams_messages(overrides: dict[str, str], message: str) -> None:
    with pytest.raises(rc.RuntimeConfigError) as e:
        rc.merge_api_resource_configs(fake_default(), overrides, REGISTRY)
    assert str(e.value) == message


@pytest.mark.parametrize("overrides,errors", [
    ({"api/all": "false"}, ["invalid runtime-config with only api/all=false"]),
    ({"api/all": "false", "/v1": "true"}, []),
    ({"foo.example.com/v1": "true", "bar/v2": "false"}, ["unknown api groups bar/v2,foo.example.com/v1"]),
    ({"a/b/c/d": "true"}, ["runtime-config invalid key a/b/c/d"]),
    ({"v1": "true"}, ["runtime-config invalid key v1"]),          # the parser's own; `up` maps it to /v1
])
def test_validate(overrides: dict[str, str], errors: list[str]) -> None:
    """Upstream: APIEnablementOptions.Validate."""
    assert rc.validate(overrides, REGISTRY) == errors


def test_configuration_map_parses_like_cliflag() -> None:
    assert rc.parse_configuration_map(["apps/v1=false, batch/v1", "apps/v1=true"]) == \
        {"apps/v1": "true", "batch/v1": ""}


# --- kubeplane's served set --------------------------------------------------------------------

def key(r: upstream.UpstreamResource) -> tuple[str, str, str]:
    return (r.group, r.version, r.resource)


def test_default_serves_exactly_upstreams_default_list() -> None:
    """Every resource of upstream_resources.json is on by default in 1.37 (resourceconfig's table),
    so a default kubeplane serves every one it has a definition for, and nothing else."""
    registered = {(r.group, r.version, r.plural) for r in res.RESOURCES}
    aggregated = {gvr for gvr in registered if gvr[0] == METRICS}    # metrics-server's, not kube-apiserver's
    assert registered - aggregated <= {key(r) for r in upstream.resources()}
    assert enablement.served() == registered


def test_runtime_config_turns_versions_and_resources_off() -> None:
    off = enablement.served({"batch/v1": "false", "apps/v1/daemonsets": "false", "v1": "true"})
    assert ("batch", "v1", "jobs") not in off and ("batch", "v1", "cronjobs") not in off
    assert ("apps", "v1", "daemonsets") not in off and ("apps", "v1", "deployments") in off
    only_core = enablement.served({"api/all": "false", "api/v1": "true"})
    # the aggregated metrics.k8s.io stays: --runtime-config is the kube-apiserver's
    assert only_core == {(r.group, r.version, r.plural) for r in res.RESOURCES if r.group in ("", METRICS)}


def test_an_upstream_version_kubeplane_lacks_is_accepted_and_serves_nothing_more() -> None:
    assert enablement.served({"coordination.k8s.io/v1beta1": "true"}) == enablement.served()
    with pytest.raises(rc.RuntimeConfigError, match="group version coordination.k8s.io/v7 that has not been registered"):
        enablement.served({"coordination.k8s.io/v7": "true"})


def test_feature_gates_gate_their_resources() -> None:
    served = enablement.served(feature_gates=enablement.parse_feature_gates(
        ["ClusterTrustBundle=false,MutatingAdmissionPolicy=false"]))
    gone = enablement.served() - served
    assert gone == {("certificates.k8s.io", "v1", "clustertrustbundles"),
                    ("admissionregistration.k8s.io", "v1", "mutatingadmissionpolicies"),
                    ("admissionregistration.k8s.io", "v1", "mutatingadmissionpolicybindings")}


@pytest.mark.parametrize("flag,message", [
    ("NoSuchGate=true", "unrecognized feature gate: NoSuchGate"),
    ("ClusterTrustBundle=yes",
     'invalid value of ClusterTrustBundle=yes, err: strconv.ParseBool: parsing "yes": invalid syntax'),
])
def test_feature_gate_errors(flag: str, message: str) -> None:
    with pytest.raises(enablement.FeatureGateError) as e:
        enablement.parse_feature_gates([flag])
    assert str(e.value) == message


# --- a server with a version and a gated resource turned off ---------------------------------

@pytest.fixture
def batch_off_ctb_off():
    enablement.configure(enablement.served({"batch/v1": "false"}, {"ClusterTrustBundle": False}))
    yield
    enablement.reset()


async def test_turned_off_resources_are_404_and_in_no_document(api, batch_off_ctb_off) -> None:
    from kubeplane.apiserver import openapi
    for path in ("/apis/batch/v1/namespaces/default/jobs", "/apis/batch/v1/cronjobs",
                 "/apis/certificates.k8s.io/v1/clustertrustbundles"):
        r = await api.get(path)
        assert r.status == 404 and r.json["reason"] == "NotFound", path
    assert (await api.get("/apis/batch/v1")).status == 404
    assert (await api.get("/apis/batch")).status == 404
    groups = [g["name"] for g in (await api.get("/apis")).json["groups"]]
    assert "batch" not in groups and "apps" in groups
    csr = [r["name"] for r in (await api.get("/apis/certificates.k8s.io/v1")).json["resources"]]
    assert "clustertrustbundles" not in csr and "certificatesigningrequests" in csr
    agg = await api.call("GET", "/apis", headers={"accept": discovery_accept()})
    names = [i["metadata"]["name"] for i in agg.json["items"]]
    assert "batch" not in names
    index = openapi.openapi_index()["paths"]
    assert "apis/batch/v1" not in index and "apis/apps/v1" in index
    cert_paths = orjson_loads(openapi.openapi_document("apis/certificates.k8s.io/v1"))["paths"]
    assert not any("clustertrustbundles" in p for p in cert_paths)
    assert (await api.get("/apis/apps/v1/namespaces/default/deployments")).status == 200


async def test_reset_serves_everything_again(api, batch_off_ctb_off) -> None:
    enablement.reset()
    assert (await api.get("/apis/batch/v1/namespaces/default/jobs")).status == 200
    assert "batch" in [g["name"] for g in (await api.get("/apis")).json["groups"]]


def test_openapi_v2_leaves_out_turned_off_resources(batch_off_ctb_off) -> None:
    from kubeplane.apiserver import openapi_v2
    paths = openapi_v2.build_document()["paths"]
    assert not any(p.startswith("/apis/batch/") for p in paths)
    assert not any("clustertrustbundles" in p for p in paths)
    assert "/apis/apps/v1/deployments" in paths


def discovery_accept() -> str:
    from kubeplane.apiserver.discovery import AGGREGATED_CT
    return AGGREGATED_CT


def orjson_loads(b: bytes | None):
    import orjson
    assert b is not None
    return orjson.loads(b)


async def test_autoregister_removes_the_apiservices_of_versions_turned_off(api) -> None:
    from kubeplane.apiserver.registry.apiregistration import apiservice

    async def names() -> set[str]:
        return {i["metadata"]["name"] for i in (await api.get("/apis/apiregistration.k8s.io/v1/apiservices")).json["items"]}

    assert "v1.batch" in await names()
    enablement.configure(enablement.served({"batch/v1": "false"}))
    try:
        await apiservice.autoregister(api.server)       # what the next start does
        after = await names()
        assert "v1.batch" not in after and "v1.apps" in after and "v1." in after
    finally:
        enablement.reset()
    await apiservice.autoregister(api.server)
    assert "v1.batch" in await names()


def test_in_process_controllers_skip_what_is_not_served(batch_off_ctb_off) -> None:
    from kubeplane.cmd.controller_manager import _serves
    from kubeplane.controller.garbagecollector.graph_builder import monitored_resources
    from kubeplane.controller.namespace.deletion.namespaced_resources_deleter import deletable_resources
    assert not any(r.group == "batch" for r in monitored_resources())
    assert not any(r.group == "batch" for r in deletable_resources())
    assert any(r.plural == "deployments" for r in monitored_resources())
    assert not _serves("batch", "v1", "jobs") and _serves("apps", "v1", "deployments", "replicasets")
    enablement.reset()
    assert any(r.group == "batch" for r in monitored_resources())
