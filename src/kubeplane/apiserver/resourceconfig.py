"""Which resources the API server serves: --runtime-config and the feature gates that gate resources.

Upstream: ResourceConfig (apiserver/pkg/server/storage/resource_config.go), MergeAPIResourceConfigs
and ParseGroupVersions (apiserver/pkg/server/resourceconfig/helpers.go), APIEnablementOptions
(apiserver/pkg/server/options/api_enablement.go), DefaultAPIResourceConfigSource
(pkg/controlplane/instance.go) and the REST storage providers' feature-gate checks
(pkg/registry/*/rest, listed by pkg/controlplane/apirequirements in 1.37).

What a default 1.37 kube-apiserver serves, and why (the decisions table)
========================================================================
DefaultAPIResourceConfigSource enables every stable group/version (`stableAPIGroupVersions-
EnabledByDefault`) and disables every beta and alpha one (`betaAPIGroupVersionsDisabledByDefault`,
`alphaAPIGroupVersionsDisabledByDefault`: KEP-3136, beta APIs off by default since 1.24;
`legacyBetaEnabledByDefaultResources` is empty since flowcontrol v1beta3 went in 1.32). Inside an
enabled version a provider may still leave a resource out unless a feature gate is on; in 1.37
those gates are exactly the ones pkg/controlplane/apirequirements declares (its test checks the
declaration against every `if resource := ...; ResourceEnabled(...) { if Enabled(features.X)`
in pkg/registry/*/rest), plus the generic (k8s.io/apiserver) MutatingAdmissionPolicy gate:

| resource (group/version)                        | 1.37 default | upstream source                                  |
|-------------------------------------------------|--------------|--------------------------------------------------|
| every resource of the GA versions in            | served       | DefaultAPIResourceConfigSource: EnableVersions(  |
| upstream_resources.json (core v1, apps/v1, ...) |              | stableAPIGroupVersionsEnabledByDefault...)       |
| certificates.k8s.io/v1 clustertrustbundles      | served       | gate ClusterTrustBundle, GA + on by default in   |
|                                                 |              | 1.37 (kubernetes#139437 "The ClusterTrustBundle  |
|                                                 |              | and ClusterTrustBundleProjection features move   |
|                                                 |              | to stable and enabled by default, along with the |
|                                                 |              | ClusterTrustBundle API"); apirequirements:       |
|                                                 |              | ClusterTrustBundle since 1.27                    |
| certificates.k8s.io/v1 podcertificaterequests   | served       | gate PodCertificateRequest, GA in 1.37           |
|                                                 |              | (kubernetes#139579 "Promote PodCertificate       |
|                                                 |              | feature to GA"); apirequirements since 1.34      |
| storagemigration.k8s.io/v1                      | served       | gate StorageVersionMigrator, GA in 1.37 and      |
|   storageversionmigrations                      |              | "enabled by default" (KEP-4192 GA blog, website  |
|                                                 |              | #56483); apirequirements since 1.30              |
| admissionregistration.k8s.io/v1                 | served       | generic gate MutatingAdmissionPolicy:            |
|   mutatingadmissionpolicies(+bindings)          |              | {1.36, Default: true, GA} (apiserver             |
|                                                 |              | pkg/features/kube_features.go)                   |
| resource.k8s.io/v1 devicetaintrules             | served       | DRADeviceTaintRules: {1.37, Default: true, GA}   |
|                                                 |              | (pkg/features, DRA gates); not gated by a        |
|                                                 |              | provider check in 1.37 (apirequirements test)    |
| networking.k8s.io/v1 servicecidrs, ipaddresses  | served       | MultiCIDRServiceAllocator GA (1.33) and gone: no |
|                                                 |              | provider check in 1.37                           |
| storage.k8s.io/v1 volumeattributesclasses       | served       | VolumeAttributesClass {1.36, true, GA, locked};  |
|                                                 |              | no provider check in 1.37                        |
| core/v1 pods/resize                             | served       | InPlacePodVerticalScaling {1.35, true, GA,       |
|                                                 |              | locked} (a subresource: never a requirement)     |
| every version in notServedByDefault (alpha,     | not served   | betaAPIGroupVersionsDisabledByDefault /          |
| beta: coordination v1beta1 leasecandidates,     |              | alphaAPIGroupVersionsDisabledByDefault;          |
| scheduling workloads, resource v1beta1/2, ...)  |              | kubeplane has no definitions for them            |
| scheduling.k8s.io workloads, podgroups,         | not served   | GenericWorkload {1.37, false, Beta},             |
|   compositepodgroups; lifecycle.k8s.io          |              | CompositePodGroup / EvictionRequestAPI alpha     |

So the 70 resources of upstream_resources.json are exactly a default 1.37 server's list.
kubeplane serves only versions it has definitions for: `--runtime-config` may name the other
versions upstream registers (notServedByDefault), which are accepted and logged as not served
here (an upstream server would serve them); a version of a known group that upstream does not
register is refused with upstream's error, an unknown group as upstream's Validate does.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

GroupVersion = tuple[str, str]
GroupVersionResource = tuple[str, str, str]

API_ALL, API_GA, API_BETA, API_ALPHA = "api/all", "api/ga", "api/beta", "api/alpha"

_GA = re.compile(r"^v\d+$")
_BETA = re.compile(r"^v\d+beta\d+$")
_ALPHA = re.compile(r"^v\d+alpha\d+$")

# Upstream: groupVersionMatchers, applied in groupVersionMatchersOrder.
GROUP_VERSION_MATCHERS: dict[str, Callable[[GroupVersion], bool]] = {
    API_ALL: lambda gv: True,
    API_GA: lambda gv: bool(_GA.match(gv[1])),
    API_BETA: lambda gv: bool(_BETA.match(gv[1])),
    API_ALPHA: lambda gv: bool(_ALPHA.match(gv[1])),
}


class RuntimeConfigError(ValueError):
    """An invalid --runtime-config (the message is upstream's)."""


@dataclass
class ResourceConfig:
    """Enabled group/versions, and per-resource preferences that win over their version's.

    Upstream: ResourceConfig (apiserver/pkg/server/storage/resource_config.go).
    """
    group_version_configs: dict[GroupVersion, bool] = field(default_factory=dict)
    resource_configs: dict[GroupVersionResource, bool] = field(default_factory=dict)
    explicit_group_version_configs: dict[GroupVersion, bool] = field(default_factory=dict)
    explicit_resource_configs: dict[GroupVersionResource, bool] = field(default_factory=dict)

    def _remove_resource_preferences(self, gv: GroupVersion) -> None:
        for gvr in [k for k in self.resource_configs if k[:2] == gv]:
            del self.resource_configs[gvr]
            self.explicit_resource_configs.pop(gvr, None)

    def _set_matching(self, matcher: Callable[[GroupVersion], bool], enabled: bool) -> None:
        for gv in list(self.group_version_configs):
            if matcher(gv):
                self.group_version_configs[gv] = enabled
                self._remove_resource_preferences(gv)

    def enable_matching_versions(self, matcher: Callable[[GroupVersion], bool]) -> None:
        self._set_matching(matcher, True)

    def disable_matching_versions(self, matcher: Callable[[GroupVersion], bool]) -> None:
        self._set_matching(matcher, False)

    def enable_versions(self, *gvs: GroupVersion) -> None:
        for gv in gvs:
            self.group_version_configs[gv] = True
            self._remove_resource_preferences(gv)

    def disable_versions(self, *gvs: GroupVersion) -> None:
        for gv in gvs:
            self.group_version_configs[gv] = False
            self._remove_resource_preferences(gv)

    def explicitly_enable_versions(self, *gvs: GroupVersion) -> None:
        self.explicit_group_version_configs.update(dict.fromkeys(gvs, True))
        self.enable_versions(*gvs)

    def explicitly_disable_versions(self, *gvs: GroupVersion) -> None:
        self.explicit_group_version_configs.update(dict.fromkeys(gvs, False))
        self.disable_versions(*gvs)

    def enable_resources(self, *gvrs: GroupVersionResource) -> None:
        self.resource_configs.update(dict.fromkeys(gvrs, True))

    def disable_resources(self, *gvrs: GroupVersionResource) -> None:
        self.resource_configs.update(dict.fromkeys(gvrs, False))

    def explicitly_enable_resources(self, *gvrs: GroupVersionResource) -> None:
        self.explicit_resource_configs.update(dict.fromkeys(gvrs, True))
        self.enable_resources(*gvrs)

    def explicitly_disable_resources(self, *gvrs: GroupVersionResource) -> None:
        self.explicit_resource_configs.update(dict.fromkeys(gvrs, False))
        self.disable_resources(*gvrs)

    def resource_enabled(self, gvr: GroupVersionResource) -> bool:
        """A resource's own preference, else its version's (off when the version is unknown)."""
        if gvr in self.resource_configs:
            return self.resource_configs[gvr]
        return self.group_version_configs.get(gvr[:2], False)


@dataclass(frozen=True)
class GroupVersionRegistry:
    """The group/versions the server knows, in priority order. Upstream: GroupVersionRegistry
    (the scheme's IsGroupRegistered / IsVersionRegistered)."""
    group_versions: tuple[GroupVersion, ...]

    def is_group_registered(self, group: str) -> bool:
        return any(g == group for g, _ in self.group_versions)

    def is_version_registered(self, gv: GroupVersion) -> bool:
        return gv in self.group_versions


def parse_configuration_map(values: Iterable[str]) -> dict[str, str]:
    """`k1=v1,k2=v2` (the flag may repeat; later keys win; a key without `=` gets "").
    Upstream: cliflag.ConfigurationMap.Set."""
    out: dict[str, str] = {}
    for value in values:
        for item in value.split(","):
            item = item.strip()
            if not item:
                continue
            key, _, val = item.partition("=")
            out[key.strip()] = val.strip()
    return out


def parse_group_version(s: str) -> GroupVersion:
    """Upstream: schema.ParseGroupVersion ("" and "v1" are the core group; one slash at most)."""
    if not s or s == "/":
        return ("", "")
    if s.count("/") == 0:
        return ("", s)
    if s.count("/") == 1:
        g, v = s.split("/")
        return (g, v)
    raise RuntimeConfigError(f"unexpected GroupVersion string: {s}")


def parse_group_versions(overrides: Mapping[str, str]) -> list[GroupVersion]:
    """Upstream: ParseGroupVersions."""
    out = []
    for key in overrides:
        if key in GROUP_VERSION_MATCHERS:
            continue
        tokens = key.split("/")
        if len(tokens) not in (2, 3):
            raise RuntimeConfigError(f"runtime-config invalid key {key}")
        try:
            out.append(parse_group_version(tokens[0] + "/" + tokens[1]))
        except RuntimeConfigError:
            raise RuntimeConfigError(f"runtime-config invalid key {key}") from None
    return out


def validate(overrides: Mapping[str, str], registry: GroupVersionRegistry) -> list[str]:
    """Upstream: APIEnablementOptions.Validate — its messages."""
    if overrides.get(API_ALL) == "false" and len(overrides) == 1:
        return [f"invalid runtime-config with only {API_ALL}=false"]
    try:
        gvs = parse_group_versions(overrides)
    except RuntimeConfigError as e:
        return [str(e)]
    unknown = sorted({f"{g}/{v}" if g else v for g, v in gvs if not registry.is_group_registered(g)})
    return [f"unknown api groups {','.join(unknown)}"] if unknown else []


def _bool(key: str, value: str) -> bool:
    """Upstream: getRuntimeConfigValue ("" is true; strconv.ParseBool's spellings)."""
    if value == "":
        return True
    if value in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if value in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    raise RuntimeConfigError(f'invalid value of {key}: {value}, err: strconv.ParseBool: parsing "{value}": invalid syntax')


def merge_api_resource_configs(config: ResourceConfig, overrides: Mapping[str, str],
                               registry: GroupVersionRegistry) -> ResourceConfig:
    """Apply --runtime-config to the defaults: api/all|ga|beta|alpha first, then group/version
    keys, then group/version/resource keys (the most specific wins). Upstream:
    MergeAPIResourceConfigs + applyVersionAndResourcePreferences."""
    for key in (API_ALL, API_GA, API_BETA, API_ALPHA):
        if key in overrides:
            value = overrides[key]
            if value == "false":
                config.disable_matching_versions(GROUP_VERSION_MATCHERS[key])
            elif value == "true":
                config.enable_matching_versions(GROUP_VERSION_MATCHERS[key])
            else:
                raise RuntimeConfigError(f"invalid value {key}={value}")
    versions: list[tuple[GroupVersion, bool]] = []
    resources: list[tuple[GroupVersionResource, bool]] = []
    for key, value in overrides.items():
        if key in GROUP_VERSION_MATCHERS:
            continue
        tokens = key.split("/")
        if len(tokens) < 2 or len(tokens) > 3:
            continue
        try:
            gv = parse_group_version(tokens[0] + "/" + tokens[1])
        except RuntimeConfigError:
            raise RuntimeConfigError(f"invalid key {key}") from None
        if not registry.is_group_registered(gv[0]):
            continue
        if not registry.is_version_registered(gv):
            raise RuntimeConfigError(f"group version {gv[0]}/{gv[1]} that has not been registered")
        enabled = _bool(key, value)
        if len(tokens) == 2:
            versions.append((gv, enabled))
        else:
            if tokens[2].lower() != tokens[2]:
                raise RuntimeConfigError(f"invalid key {key}: group/version/resource and resource is always "
                                         f'lowercase plural, not "{tokens[2]}"')
            resources.append(((gv[0], gv[1], tokens[2]), enabled))
    for gv, enabled in versions:
        (config.explicitly_enable_versions if enabled else config.explicitly_disable_versions)(gv)
    for gvr, enabled in resources:
        (config.explicitly_enable_resources if enabled else config.explicitly_disable_resources)(gvr)
    return config


def normalize_core_keys(overrides: Mapping[str, str]) -> dict[str, str]:
    """The core group is `/v1` to the parser; kube-apiserver's help documents `v1=true|false`
    and users write `api/v1`: both mean `/v1`."""
    return {("/v1" if k in ("v1", "api/v1") else k): v for k, v in overrides.items()}
