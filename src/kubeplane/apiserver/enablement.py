"""The resources this process serves: the registry less what --runtime-config and --feature-gates
turn off (decisions and sources: resourceconfig.py).

Routing, discovery (legacy and aggregated), /openapi/v2, /openapi/v3 and the APIService
auto-registration read the served set from here, so a resource that is off is a 404 and absent
from every document, as upstream (where it is never installed). It is process-wide: one API
server per process, configured before it serves (`configure`); unit tests that change it put
the default back (`reset`).
"""
from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..api import resources as res
from ..api import upstream_resources as upstream
from . import resourceconfig as rc

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class FeatureGate:
    default: bool
    pre_release: str             # ALPHA | BETA | GA (upstream's PreRelease)
    resources: tuple[rc.GroupVersionResource, ...]
    lock_to_default: bool = False


# The gates that decide whether a resource of an enabled version is installed, with their 1.37
# defaults (resourceconfig.py's table says where each comes from).
FEATURE_GATES: dict[str, FeatureGate] = {
    "ClusterTrustBundle": FeatureGate(True, "GA", (("certificates.k8s.io", "v1", "clustertrustbundles"),)),
    "PodCertificateRequest": FeatureGate(True, "GA", (("certificates.k8s.io", "v1", "podcertificaterequests"),)),
    "StorageVersionMigrator": FeatureGate(True, "GA", (("storagemigration.k8s.io", "v1", "storageversionmigrations"),)),
    "MutatingAdmissionPolicy": FeatureGate(True, "GA", (
        ("admissionregistration.k8s.io", "v1", "mutatingadmissionpolicies"),
        ("admissionregistration.k8s.io", "v1", "mutatingadmissionpolicybindings"))),
    "DRADeviceTaintRules": FeatureGate(True, "GA", (("resource.k8s.io", "v1", "devicetaintrules"),)),
}


class FeatureGateError(ValueError):
    """An invalid --feature-gates (upstream's messages)."""


def parse_feature_gates(values: Iterable[str]) -> dict[str, bool]:
    """`Name=true,Other=false` -> {Name: True, ...}. Upstream: featureGate.Set/SetFromMap
    (component-base/featuregate/feature_gate.go)."""
    out: dict[str, bool] = {}
    for key, value in rc.parse_configuration_map(values).items():
        gate = FEATURE_GATES.get(key)
        if gate is None:
            raise FeatureGateError(f"unrecognized feature gate: {key}")
        if value.lower() not in ("true", "false", "1", "0", "t", "f"):
            raise FeatureGateError(f"invalid value of {key}={value}, err: strconv.ParseBool: "
                                   f'parsing "{value}": invalid syntax')
        enabled = value.lower() in ("true", "1", "t")
        if gate.lock_to_default and enabled != gate.default:
            raise FeatureGateError(f"cannot set feature gate {key} to {str(enabled).lower()}, "
                                   f"feature is locked to {str(gate.default).lower()}")
        out[key] = enabled
    return out


def registry() -> rc.GroupVersionRegistry:
    """Every group/version upstream 1.37 registers: kubeplane's, then the alpha/beta ones it lacks."""
    known = list(res.GROUP_VERSIONS)
    for gv in upstream.document().get("notServedByDefault", ()):
        known.append(rc.parse_group_version(gv))
    return rc.GroupVersionRegistry(tuple(dict.fromkeys(known)))


def default_resource_config(reg: rc.GroupVersionRegistry) -> rc.ResourceConfig:
    """Stable versions on, beta and alpha off. Upstream: DefaultAPIResourceConfigSource."""
    config = rc.ResourceConfig()
    config.enable_versions(*(gv for gv in reg.group_versions if rc.GROUP_VERSION_MATCHERS[rc.API_GA](gv)))
    config.disable_versions(*(gv for gv in reg.group_versions if not rc.GROUP_VERSION_MATCHERS[rc.API_GA](gv)))
    return config


def served(runtime_config: Mapping[str, str] | None = None,
           feature_gates: Mapping[str, bool] | None = None) -> frozenset[rc.GroupVersionResource]:
    """The (group, version, plural) of every registered resource this configuration serves.

    Raises RuntimeConfigError with upstream's message for an invalid --runtime-config.
    """
    reg = registry()
    overrides = rc.normalize_core_keys(runtime_config or {})
    errs = rc.validate(overrides, reg)
    if errs:
        raise rc.RuntimeConfigError("; ".join(errs))
    config = rc.merge_api_resource_configs(default_resource_config(reg), overrides, reg)
    gates = {name: (feature_gates or {}).get(name, g.default) for name, g in FEATURE_GATES.items()}
    gated_off = {gvr for name, g in FEATURE_GATES.items() if not gates[name] for gvr in g.resources}
    ours = set(res.GROUP_VERSIONS)
    for gv, on in config.group_version_configs.items():
        if on and gv not in ours:
            log.warning("--runtime-config enables %s, which kubeplane does not serve", "/".join(filter(None, gv)))
    # metrics.k8s.io is an aggregated API (metrics-server's upstream): --runtime-config has no say.
    return frozenset((r.group, r.version, r.plural) for r in res.RESOURCES
                     if (config.resource_enabled((r.group, r.version, r.plural))
                         and (r.group, r.version, r.plural) not in gated_off) or r.group == "metrics.k8s.io")


_DEFAULT = frozenset((r.group, r.version, r.plural) for r in res.RESOURCES)
_served: frozenset[rc.GroupVersionResource] = _DEFAULT


def configure(enabled: frozenset[rc.GroupVersionResource]) -> None:
    """Serve exactly `enabled` from now on (the documents built so far are dropped)."""
    global _served
    _served = _DEFAULT if enabled == _DEFAULT else enabled      # the default keeps the fast paths
    res.set_disabled(_DEFAULT - _served)
    _clear_caches()


def reset() -> None:
    configure(_DEFAULT)


def is_default() -> bool:
    return _served == _DEFAULT


# Resources served at runtime (the CRDs' served versions, apiextensions/controller.py), after
# the built-in ones in discovery; a built-in lookup never reaches this table.
_runtime: dict[rc.GroupVersionResource, res.ResourceInfo] = {}


def enabled(group: str, version: str, plural: str) -> bool:
    gvr = (group, version, plural)
    return gvr in _served or gvr in _runtime


def set_runtime(resources: dict[rc.GroupVersionResource, res.ResourceInfo]) -> None:
    """Serve exactly these runtime resources from now on (the documents built so far are dropped)."""
    if resources == _runtime:
        return
    _runtime.clear()
    _runtime.update(resources)
    _clear_caches()


def resources() -> tuple[res.ResourceInfo, ...]:
    """The served resources, in discovery order."""
    builtin = res.RESOURCES if _served is _DEFAULT else tuple(r for r in res.RESOURCES
                                                              if (r.group, r.version, r.plural) in _served)
    return builtin + tuple(_runtime.values()) if _runtime else builtin


def group_versions() -> tuple[tuple[str, str], ...]:
    """The served (group, version) pairs in discovery order (a version with nothing served is gone)."""
    if _served is _DEFAULT and not _runtime:
        return res.GROUP_VERSIONS
    return tuple(dict.fromkeys((r.group, r.version) for r in resources()))


def resources_in(group: str, version: str) -> list[res.ResourceInfo]:
    return [r for r in resources() if r.group == group and r.version == version]


def _clear_caches() -> None:
    import sys
    for name in ("discovery", "openapi", "openapi_v2", "tables.columns"):
        mod = sys.modules.get(f"{__package__}.{name}")
        if mod is None:
            continue
        for attr in vars(mod).values():
            clear = getattr(attr, "cache_clear", None)
            if clear is not None and getattr(attr, "__module__", None) == mod.__name__:
                clear()
